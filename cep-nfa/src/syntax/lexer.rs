//! Text → tokens. Hand-written, one pass, byte spans on every token.

use crate::diag::{Diagnostic, Span};

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name or keyword (keywords are recognised by the parser, in context).
    Ident(String),
    /// An integer literal (digits only; the parser checks the range).
    Int(String),
    /// A decimal literal with a fraction or an exponent.
    Float(String),
    /// A quoted string, unescaped.
    Str(String),
    /// One of the four strategy words (`skip-till-next-match`, …), lower-cased.
    Strategy(String),
    /// Punctuation or an operator.
    Punct(&'static str),
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token is named in "found …" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(s) | Tok::Float(s) => format!("number `{s}`"),
            Tok::Str(s) => format!("string '{}'", printable(s)),
            Tok::Strategy(s) => format!("`{s}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Eof => "the end of the query".to_owned(),
        }
    }
}

/// `s` with its control characters, blanks other than the space, and
/// invisible format characters (a BOM, zero-width and direction marks)
/// escaped (`\u{0}`, `\n`, `\u{a0}`), so that a message quoting query
/// text stays one line and shows what is there.
fn printable(s: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || (c.is_whitespace() && c != ' ')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
    };
    s.chars().map(|c| if hidden(c) { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// A token with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What.
    pub tok: Tok,
    /// Where.
    pub span: Span,
}

const STRATEGIES: [&str; 4] =
    ["skip-till-next-match", "skip-till-any-match", "strict-contiguity", "partition-contiguity"];

const PUNCT: [&str; 22] =
    ["<=", ">=", "!=", "<>", "(", ")", "[", "]", ",", ";", ".", "|", "+", "-", "*", "/", "%", "?", "=", "<", ">", "!"];

/// Splits `src` into tokens, ending with [`Tok::Eof`].
///
/// # Examples
/// ```
/// use cep_nfa::syntax::lexer::{tokenize, Tok};
/// let toks = tokenize("WHERE skip-till-any-match -- comment\n AND a.x >= 1.5").unwrap();
/// assert_eq!(toks[1].tok, Tok::Strategy("skip-till-any-match".into()));
/// assert_eq!(toks[7].tok, Tok::Float("1.5".into()));
/// ```
pub fn tokenize(src: &str) -> Result<Vec<Token>, Diagnostic> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            if let Some(s) = STRATEGIES.iter().find(|s| {
                let n = s.len();
                src.len() >= i + n
                    && src.as_bytes()[i..i + n].eq_ignore_ascii_case(s.as_bytes())
                    && !bytes.get(i + n).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            }) {
                i += s.len();
                out.push(Token { tok: Tok::Strategy((*s).to_owned()), span: Span::new(start, i) });
                continue;
            }
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[start..i].to_owned()), span: Span::new(start, i) });
            continue;
        }
        if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let mut float = false;
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    float = true;
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text = src[start..i].to_owned();
            let tok = if float { Tok::Float(text) } else { Tok::Int(text) };
            out.push(Token { tok, span: Span::new(start, i) });
            continue;
        }
        if c == b'\'' || c == b'"' {
            let quote = c;
            i += 1;
            let mut s = String::new();
            loop {
                match bytes.get(i) {
                    None => {
                        return Err(Diagnostic::error(Span::new(start, src.len()), "unterminated string")
                            .with_note(format!("expected a closing {}", quote as char)));
                    }
                    Some(&b) if b == quote => {
                        if bytes.get(i + 1) == Some(&quote) {
                            s.push(quote as char);
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    }
                    Some(_) => {
                        let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Token { tok: Tok::Str(s), span: Span::new(start, i) });
            continue;
        }
        if let Some(p) = PUNCT.iter().find(|p| src[i..].starts_with(**p)) {
            i += p.len();
            out.push(Token { tok: Tok::Punct(p), span: Span::new(start, i) });
            continue;
        }
        let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
        let shown = printable(ch.encode_utf8(&mut [0; 4]));
        return Err(Diagnostic::error(Span::new(i, i + ch.len_utf8()), format!("unexpected character `{shown}`")));
    }
    // The end sits right after the last token, so that "found the end of the
    // query" points at the line where the query stops, not at trailing space.
    let end = out.last().map_or(src.len(), |t: &Token| t.span.end as usize);
    out.push(Token { tok: Tok::Eof, span: Span::new(end, end) });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        tokenize(src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn kleene_index_is_split() {
        assert_eq!(
            kinds("b[i-1]"),
            vec![
                Tok::Ident("b".into()),
                Tok::Punct("["),
                Tok::Ident("i".into()),
                Tok::Punct("-"),
                Tok::Int("1".into()),
                Tok::Punct("]"),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_and_quotes() {
        assert_eq!(kinds("'it''s' \"x\""), vec![Tok::Str("it's".into()), Tok::Str("x".into()), Tok::Eof]);
        assert!(tokenize("'open").is_err());
    }

    #[test]
    fn strategy_case_insensitive_and_spans() {
        let t = tokenize("  Skip-Till-Next-Match").unwrap();
        assert_eq!(t[0].tok, Tok::Strategy("skip-till-next-match".into()));
        assert_eq!(t[0].span, Span::new(2, 22));
    }

    #[test]
    fn unexpected_character() {
        let e = tokenize("a # b").unwrap_err();
        assert_eq!(e.span, Span::new(2, 3));
    }

    #[test]
    fn control_characters_are_escaped_in_messages() {
        // A NUL in a query was quoted as is: an invisible character in the
        // message. Found by tests/robustness.rs.
        let e = tokenize("PATTERN \0").unwrap_err();
        assert_eq!(e.message, "unexpected character `\\u{0}`");
        assert_eq!(e.span, Span::new(8, 9));
        assert_eq!(Tok::Str("a\nb".into()).describe(), "string 'a\\nb'");
        assert_eq!(Tok::Str("é".into()).describe(), "string 'é'");
        // A no-break space pasted into a query, and a BOM.
        assert_eq!(tokenize("PATTERN\u{a0}A a").unwrap_err().message, "unexpected character `\\u{a0}`");
        assert_eq!(tokenize("\u{feff}PATTERN A a").unwrap_err().message, "unexpected character `\\u{feff}`");
    }

    #[test]
    fn number_forms() {
        assert_eq!(
            kinds("1e3 2.5 7."),
            vec![Tok::Float("1e3".into()), Tok::Float("2.5".into()), Tok::Int("7".into()), Tok::Punct("."), Tok::Eof]
        );
    }
}
