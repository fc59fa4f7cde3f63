//! A source file as tokens: what the compiler would read of it, less
//! comments, literals and lifetimes, each token with its line.

/// One token that matters for paths and bodies.
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
    let mut scan = Scan {
        chars: source.chars().collect(),
        at: 0,
        line: 1,
    };
    let mut out = Vec::new();
    while let Some(&c) = scan.chars.get(scan.at) {
        let next = scan.chars.get(scan.at + 1).copied();
        if c.is_whitespace() {
            scan.step();
        } else if c == '/' && next == Some('/') {
            scan.skip_while(|c| c != '\n');
        } else if c == '/' && next == Some('*') {
            scan.skip_block_comment();
        } else if c == '"' || ((c == 'b' || c == 'c') && next == Some('"')) {
            scan.skip_string();
        } else if let Some((hashes, opening)) = raw_string_start(&scan.chars[scan.at..]) {
            scan.skip_raw_string(hashes, opening);
        } else if c == '\'' {
            scan.skip_char_or_lifetime();
        } else if c == ':' && next == Some(':') {
            out.push((Token::PathSep, scan.line));
            scan.at += 2;
        } else if c.is_ascii_digit() {
            scan.skip_while(ident_char);
        } else if ident_char(c) {
            // A raw identifier (`r#type`) is read without its `r#`.
            let start = scan.at + if c == 'r' && next == Some('#') { 2 } else { 0 };
            scan.at = start;
            scan.skip_while(ident_char);
            let word = scan.chars[start..scan.at].iter().collect();
            out.push((Token::Ident(word), scan.line));
        } else {
            out.push((Token::Punct(c), scan.line));
            scan.step();
        }
    }
    out
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A file's characters, read from `at`, on line `line`.
struct Scan {
    chars: Vec<char>,
    at: usize,
    line: usize,
}

impl Scan {
    /// Past one character, counting the line it ends.
    fn step(&mut self) {
        self.line += usize::from(self.chars.get(self.at) == Some(&'\n'));
        self.at += 1;
    }

    fn skip_while(&mut self, keep: impl Fn(char) -> bool) {
        while self.chars.get(self.at).is_some_and(|c| keep(*c)) {
            self.step();
        }
    }

    /// Past a `/* .. */` comment, nested ones within it.
    fn skip_block_comment(&mut self) {
        let mut depth = 0;
        while self.at < self.chars.len() {
            let rest = &self.chars[self.at..];
            if rest.starts_with(&['/', '*']) {
                depth += 1;
                self.at += 2;
            } else if rest.starts_with(&['*', '/']) {
                depth -= 1;
                self.at += 2;
                if depth == 0 {
                    return;
                }
            } else {
                self.step();
            }
        }
    }

    /// Past a `".."`, `b".."` or `c".."`, escapes within it.
    fn skip_string(&mut self) {
        self.at += if self.chars[self.at] == '"' { 1 } else { 2 };
        while let Some(&c) = self.chars.get(self.at)
            && c != '"'
        {
            if c == '\\' {
                self.at += 1;
            }
            self.step();
        }
        self.at += 1;
    }

    /// Past `r".."`, `r#".."#`, `br#".."#`: ends at a quote and as many
    /// `#` as it opened with.
    fn skip_raw_string(&mut self, hashes: usize, opening: usize) {
        self.at += opening;
        let end: Vec<char> = std::iter::once('"')
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        while self.at < self.chars.len() && !self.chars[self.at..].starts_with(&end) {
            self.step();
        }
        self.at += end.len();
    }

    /// Past a char literal (`'a'`, `'\n'`, `'\''`), else a lifetime or
    /// label (`'a`).
    fn skip_char_or_lifetime(&mut self) {
        let next = self.chars.get(self.at + 1).copied();
        if next == Some('\\') {
            self.at += 2;
            self.skip_while(|c| c != '\'');
            self.at += 1;
        } else if self.chars.get(self.at + 2) == Some(&'\'') {
            self.at += 3;
        } else {
            self.at += 1;
            self.skip_while(ident_char);
        }
    }
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
