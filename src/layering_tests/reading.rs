//! Reads one source file as the compiler would see its paths: comments and
//! literals left out, every form of `use` (grouped, nested, `self`,
//! `super`, renamed, globs) and every path written in code
//! (`crate::x::y()`, `super::Z`), each with the module it is written in.

/// One path a file names, from where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    /// The module the path is written in, from the crate root, inline
    /// modules included (`["decisions", "plan", "tests"]`).
    pub(super) within: Vec<String>,
    /// The path as written, a group's prefix joined to each of its items
    /// (`["crate", "decisions", "plan"]`, `["super", "Plan"]`).
    pub(super) path: Vec<String>,
    pub(super) line: usize,
    /// Inside an item under `#[cfg(test)]`.
    pub(super) test: bool,
}

/// What one file names, and the modules it declares under `#[cfg(test)]`
/// (`mod tests;`), whose files are test code.
#[derive(Debug, Default)]
pub(super) struct Reading {
    pub(super) named: Vec<Named>,
    pub(super) test_children: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens that matter for paths, each with its line: identifiers,
/// `::` and punctuation. Comments, strings, chars, numbers and lifetimes
/// are dropped.
pub(super) fn tokens(source: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && next == Some('"')) {
            i += if c == '"' { 1 } else { 2 };
            while i < chars.len() && chars[i] != '"' {
                line += usize::from(chars[i] == '\n');
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if let Some(hashes) = raw_string_start(&chars[i..]) {
            // r"..", r#".."#, br#".."#: ends at a quote and as many #.
            i += hashes.1;
            let end: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes.0))
                .collect();
            while i < chars.len() && !chars[i..].starts_with(&end) {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += end.len();
        } else if c == '\'' {
            // A char literal ('a', '\n', '\''), else a lifetime or label.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if c == ':' && next == Some(':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else if c.is_ascii_digit() {
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
        } else if ident_char(c) {
            let start = if c == 'r' && next == Some('#') {
                i + 2
            } else {
                i
            };
            i = start;
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
            out.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// At the start of a raw (byte) string: how many `#` it has and how many
/// characters its opening takes.
fn raw_string_start(at: &[char]) -> Option<(usize, usize)> {
    let prefix = if at.starts_with(&['b', 'r']) || at.starts_with(&['c', 'r']) {
        2
    } else if at.first() == Some(&'r') {
        1
    } else {
        return None;
    };
    let hashes = at[prefix..].iter().take_while(|c| **c == '#').count();
    (at.get(prefix + hashes) == Some(&'"')).then_some((hashes, prefix + hashes + 1))
}

fn ident(tokens: &[(Token, usize)], at: usize) -> Option<&str> {
    match tokens.get(at) {
        Some((Token::Ident(word), _)) => Some(word),
        _ => None,
    }
}

fn is(tokens: &[(Token, usize)], at: usize, token: &Token) -> bool {
    tokens.get(at).is_some_and(|(t, _)| t == token)
}

/// Where the item starting after the attribute at `at` ends: its `;`, or
/// the `}` closing its first block.
fn item_end(tokens: &[(Token, usize)], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < tokens.len() {
        match &tokens[at].0 {
            Token::Punct('(' | '[') => depth += 1,
            Token::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Token::Punct(';') if depth == 0 => return at,
            Token::Punct('{') if depth == 0 => {
                let mut braces = 0usize;
                while at < tokens.len() {
                    match tokens[at].0 {
                        Token::Punct('{') => braces += 1,
                        Token::Punct('}') => {
                            braces -= 1;
                            if braces == 0 {
                                return at;
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    at
}

/// The paths a use tree starting at `at` names, each behind `prefix`,
/// and where the tree ends.
fn use_tree(
    tokens: &[(Token, usize)],
    mut at: usize,
    prefix: &[String],
) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix.to_vec();
    loop {
        if let Some(word) = ident(tokens, at) {
            path.push(word.to_owned());
            at += 1;
            if ident(tokens, at) == Some("as") {
                at += 2;
            }
        }
        if !is(tokens, at, &Token::PathSep) {
            return (vec![path], at);
        }
        at += 1;
        if is(tokens, at, &Token::Punct('*')) {
            return (vec![path], at + 1);
        }
        if is(tokens, at, &Token::Punct('{')) {
            at += 1;
            let mut all = Vec::new();
            while at < tokens.len() && !is(tokens, at, &Token::Punct('}')) {
                let (paths, end) = use_tree(tokens, at, &path);
                all.extend(paths);
                at = end;
                // Past the `,` (or whatever the tree stopped at) to the next
                // item, unless the group ends here.
                if !is(tokens, at, &Token::Punct('}')) {
                    at += 1;
                }
            }
            return (all, at + 1);
        }
    }
}

/// Everything `source`, the file of module `module`, names.
pub(super) fn read(source: &str, module: &[String], crate_names: &[&str]) -> Reading {
    let tokens = tokens(source);
    let mut reading = Reading::default();
    let mut test_until: Option<usize> = None;
    // Inline modules open here, each with the brace depth it closes at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    while at < tokens.len() {
        if test_until.is_some_and(|end| at > end) {
            test_until = None;
        }
        let within = || {
            let mut within = module.to_vec();
            within.extend(inline.iter().map(|(name, _)| name.clone()));
            within
        };
        let (token, line) = &tokens[at];
        match token {
            Token::Punct('#')
                if is(&tokens, at + 1, &Token::Punct('['))
                    && ident(&tokens, at + 2) == Some("cfg")
                    && is(&tokens, at + 3, &Token::Punct('('))
                    && ident(&tokens, at + 4) == Some("test")
                    && is(&tokens, at + 5, &Token::Punct(')')) =>
            {
                let end = item_end(&tokens, at + 7);
                test_until = Some(test_until.map_or(end, |until| until.max(end)));
                let name = (at + 7..end).find(|i| ident(&tokens, *i) == Some("mod"));
                if let Some(name) = name.and_then(|i| ident(&tokens, i + 1))
                    && is(&tokens, end, &Token::Punct(';'))
                {
                    reading.test_children.push(name.to_owned());
                }
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline
                    .last()
                    .is_some_and(|(_, at_depth)| *at_depth == depth)
                {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" && is(&tokens, at + 2, &Token::Punct('{')) => {
                if let Some(name) = ident(&tokens, at + 1) {
                    inline.push((name.to_owned(), depth));
                }
            }
            Token::Ident(word) if word == "use" => {
                let (paths, end) = use_tree(&tokens, at + 1, &[]);
                let within = within();
                for path in paths {
                    reading.named.push(Named {
                        within: within.clone(),
                        path,
                        line: *line,
                        test: test_until.is_some(),
                    });
                }
                at = end;
                continue;
            }
            Token::Ident(word)
                if (["crate", "self", "super"].contains(&word.as_str())
                    || crate_names.contains(&word.as_str()))
                    && is(&tokens, at + 1, &Token::PathSep)
                    && !(at > 0 && is(&tokens, at - 1, &Token::PathSep)) =>
            {
                let mut path = vec![word.clone()];
                let mut next = at + 1;
                while is(&tokens, next, &Token::PathSep)
                    && let Some(word) = ident(&tokens, next + 1)
                {
                    path.push(word.to_owned());
                    next += 2;
                }
                reading.named.push(Named {
                    within: within(),
                    path,
                    line: *line,
                    test: test_until.is_some(),
                });
                at = next;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    reading
}
