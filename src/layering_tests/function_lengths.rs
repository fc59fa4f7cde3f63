//! How long each function of a file is, read from its tokens: comments,
//! strings and chars do not count, so a brace in one neither opens nor
//! closes a body.

use super::tokens::{Token, tokens};

/// One function with a body: its name, the line of its `fn` and how many
/// lines it spans, from that line to the line of its closing brace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Function {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) lines: usize,
}

/// Every function with a body in `source`, nested ones too (a function's
/// length includes the functions and closures written inside it); a
/// declaration without a body (in a trait, or `extern`) is none.
pub(super) fn functions(source: &str) -> Vec<Function> {
    let tokens = tokens(source);
    let mut found = Vec::new();
    for (at, (token, line)) in tokens.iter().enumerate() {
        let Token::Ident(word) = token else { continue };
        // `fn(u8) -> u8` is a type, `$name` a macro's: neither has a name.
        let Some((Token::Ident(name), _)) = tokens.get(at + 1) else {
            continue;
        };
        if word != "fn" {
            continue;
        }
        if let Some(end_line) = body_end(&tokens, at + 2) {
            found.push(Function {
                name: name.clone(),
                line: *line,
                lines: end_line + 1 - line,
            });
        }
    }
    found
}

/// The line of the `}` closing the body that opens after the signature
/// starting at `at`, or None when the signature ends at a `;` (no body).
fn body_end(tokens: &[(Token, usize)], mut at: usize) -> Option<usize> {
    // Parentheses and brackets in the signature (arguments, attributes,
    // array types) may hold `;` (`[u8; 4]`) but never open the body.
    let mut nesting = 0usize;
    while let Some((token, _)) = tokens.get(at) {
        match token {
            Token::Punct('(' | '[') => nesting += 1,
            Token::Punct(')' | ']') => nesting = nesting.saturating_sub(1),
            Token::Punct(';') if nesting == 0 => return None,
            Token::Punct('{') if nesting == 0 => return closing_line(tokens, at),
            _ => {}
        }
        at += 1;
    }
    None
}

/// The line of the `}` matching the `{` at `open`.
fn closing_line(tokens: &[(Token, usize)], open: usize) -> Option<usize> {
    let mut braces = 0usize;
    for (token, line) in &tokens[open..] {
        match token {
            Token::Punct('{') => braces += 1,
            Token::Punct('}') => {
                braces -= 1;
                if braces == 0 {
                    return Some(*line);
                }
            }
            _ => {}
        }
    }
    None
}
