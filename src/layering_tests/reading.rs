//! Reads one source file as the compiler would see its paths: comments and
//! literals left out, every form of `use` (grouped, nested, `self`,
//! `super`, renamed, globs) and every path written in code
//! (`crate::x::y()`, `super::Z`), each with the module it is written in.

use super::tokens::{Token, tokens};

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
    let mut reader = Reader {
        tokens: tokens(source),
        module,
        crate_names,
        reading: Reading::default(),
        test_until: None,
        inline: Vec::new(),
        depth: 0,
    };
    let mut at = 0;
    while at < reader.tokens.len() {
        if reader.test_until.is_some_and(|end| at > end) {
            reader.test_until = None;
        }
        at = reader.token(at);
    }
    reader.reading
}

/// Reads one file's tokens in order, knowing where it is.
struct Reader<'a> {
    tokens: Vec<(Token, usize)>,
    module: &'a [String],
    crate_names: &'a [&'a str],
    reading: Reading,
    /// The last token of the `#[cfg(test)]` item being read, if any.
    test_until: Option<usize>,
    /// Inline modules open here, each with the brace depth it closes at.
    inline: Vec<(String, usize)>,
    depth: usize,
}

impl Reader<'_> {
    /// Reads the token at `at`; where to read on.
    fn token(&mut self, at: usize) -> usize {
        let tokens = &self.tokens;
        match &tokens[at].0 {
            Token::Punct('#') if self.is_cfg_test(at) => self.cfg_test_item(at),
            Token::Punct('{') => self.depth += 1,
            Token::Punct('}') => self.close_brace(),
            Token::Ident(word) if word == "mod" && is(tokens, at + 2, &Token::Punct('{')) => {
                if let Some(name) = ident(tokens, at + 1) {
                    self.inline.push((name.to_owned(), self.depth));
                }
            }
            Token::Ident(word) if word == "use" => return self.use_item(at),
            Token::Ident(word) if self.starts_path(at, word) => return self.code_path(at),
            _ => {}
        }
        at + 1
    }

    /// At `#[cfg(test)]`.
    fn is_cfg_test(&self, at: usize) -> bool {
        let tokens = &self.tokens;
        is(tokens, at + 1, &Token::Punct('['))
            && ident(tokens, at + 2) == Some("cfg")
            && is(tokens, at + 3, &Token::Punct('('))
            && ident(tokens, at + 4) == Some("test")
            && is(tokens, at + 5, &Token::Punct(')'))
    }

    /// The item under the `#[cfg(test)]` at `at` is test code; a module it
    /// declares (`mod tests;`) is a file of test code.
    fn cfg_test_item(&mut self, at: usize) {
        let tokens = &self.tokens;
        let end = item_end(tokens, at + 7);
        self.test_until = Some(self.test_until.map_or(end, |until| until.max(end)));
        let name = (at + 7..end).find(|i| ident(tokens, *i) == Some("mod"));
        if let Some(name) = name.and_then(|i| ident(tokens, i + 1))
            && is(tokens, end, &Token::Punct(';'))
        {
            self.reading.test_children.push(name.to_owned());
        }
    }

    fn close_brace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self
            .inline
            .last()
            .is_some_and(|(_, at_depth)| *at_depth == self.depth)
        {
            self.inline.pop();
        }
    }

    /// The `use` at `at`: each path its tree names. Returns where it ends.
    fn use_item(&mut self, at: usize) -> usize {
        let (paths, end) = use_tree(&self.tokens, at + 1, &[]);
        let line = self.tokens[at].1;
        for path in paths {
            self.name(path, line);
        }
        end
    }

    /// `word` at `at` starts a path from the crate (`crate::`, `self::`,
    /// `super::`, the crate's name), not one in the middle of another.
    fn starts_path(&self, at: usize, word: &str) -> bool {
        (["crate", "self", "super"].contains(&word) || self.crate_names.contains(&word))
            && is(&self.tokens, at + 1, &Token::PathSep)
            && !(at > 0 && is(&self.tokens, at - 1, &Token::PathSep))
    }

    /// The path written in code at `at`. Returns where it ends.
    fn code_path(&mut self, at: usize) -> usize {
        let tokens = &self.tokens;
        let mut path = Vec::new();
        path.extend(ident(tokens, at).map(str::to_owned));
        let mut next = at + 1;
        while is(tokens, next, &Token::PathSep)
            && let Some(word) = ident(tokens, next + 1)
        {
            path.push(word.to_owned());
            next += 2;
        }
        let line = tokens[at].1;
        self.name(path, line);
        next
    }

    /// Records `path`, written on `line` in the module being read.
    fn name(&mut self, path: Vec<String>, line: usize) {
        let mut within = self.module.to_vec();
        within.extend(self.inline.iter().map(|(name, _)| name.clone()));
        self.reading.named.push(Named {
            within,
            path,
            line,
            test: self.test_until.is_some(),
        });
    }
}
