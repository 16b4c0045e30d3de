//! Diagnostics: errors and warnings with byte spans, rendered for humans.
//!
//! Every stage of the front end (lexer, parser, semantic checks, compiler)
//! reports a [`Diagnostic`]; the `cep` binary renders it with
//! [`Diagnostic::render`]: `FILE:LINE:COL`, the message, the source line and
//! a caret under the span.

use std::fmt;

/// A half-open byte range `[start, end)` in the query source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// Error or warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The query cannot run.
    Error,
    /// The query runs, but probably not as meant.
    Warning,
}

/// A message about a place in the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, in one sentence.
    pub message: String,
    /// Where.
    pub span: Span,
    /// Further explanation (what was expected, a hint).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, message: message.into(), span, notes: Vec::new() }
    }

    /// A warning at `span`.
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, message: message.into(), span, notes: Vec::new() }
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// 1-based line and column (in characters) of the span start.
    pub fn line_col(&self, source: &str) -> (usize, usize) {
        line_col(source, self.span.start as usize)
    }

    /// Renders as
    ///
    /// ```text
    /// error: q.cep:2:18: expected `,` or `)`, found `WITHIN`
    ///   2 | PATTERN SEQ(A a WITHIN 5
    ///     |                 ^^^^^^
    /// ```
    ///
    /// # Examples
    /// ```
    /// use cep_nfa::diag::{Diagnostic, Span};
    /// let d = Diagnostic::error(Span::new(8, 11), "unknown type `Tck`");
    /// let text = d.render("PATTERN Tck t", "q.cep");
    /// assert!(text.starts_with("error: q.cep:1:9: unknown type `Tck`\n"));
    /// assert!(text.contains("        ^^^"));
    /// ```
    pub fn render(&self, source: &str, file: &str) -> String {
        let (line, col) = self.line_col(source);
        let word = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!("{word}: {file}:{line}:{col}: {}\n", self.message);
        let start = (self.span.start as usize).min(source.len());
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..].find('\n').map_or(source.len(), |i| start + i);
        let text = source[line_start..line_end].trim_end_matches('\r');
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        let caret_start = source[line_start..start].chars().count();
        let end = (self.span.end as usize).clamp(start, line_end);
        let width = source[start..end].chars().count().max(1);
        // A long line is shown around the span, its cut ends marked.
        let chars: Vec<char> = text.chars().collect();
        let (mut from, mut to) = (0, chars.len());
        if chars.len() > SHOWN {
            from = caret_start.saturating_sub(SHOWN / 3).min(chars.len() - SHOWN);
            to = from + SHOWN;
        }
        let (open, close) = (if from > 0 { "…" } else { "" }, if to < chars.len() { "…" } else { "" });
        let shown: String = chars[from..to].iter().collect();
        out.push_str(&format!(" {gutter} | {open}{shown}{close}\n"));
        let caret_at = caret_start - from + open.chars().count();
        let width = width.min(to.saturating_sub(caret_start)).max(1);
        out.push_str(&format!(" {pad} | {}{}\n", " ".repeat(caret_at), "^".repeat(width)));
        for note in &self.notes {
            out.push_str(&format!(" {pad} = {note}\n"));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (bytes {}..{})", self.message, self.span.start, self.span.end)
    }
}

impl std::error::Error for Diagnostic {}

/// The most characters of a source line a rendered diagnostic shows.
const SHOWN: usize = 100;

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// All diagnostics of a compilation, errors first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Whether any is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    /// Renders all, in order.
    pub fn render(&self, source: &str, file: &str) -> String {
        self.0.iter().map(|d| d.render(source, file)).collect()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_shown_around_the_span() {
        let src = format!("PATTERN A a WHERE {} AND b.x > 0{}", "a.x + ".repeat(300), " AND a.y = 1".repeat(50));
        let at = src.find("b.x").unwrap();
        let d = Diagnostic::error(Span::new(at, at + 3), "unknown variable `b`");
        let text = d.render(&src, "q.cep");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with(" 1 | …") && lines[1].ends_with('…'), "{}", lines[1]);
        assert!(lines[1].chars().count() < 120, "{}", lines[1]);
        // The caret sits under `b.x`.
        let (shown, caret) = (lines[1].split_once(" | ").unwrap().1, lines[2].split_once(" | ").unwrap().1);
        let col = caret.find('^').unwrap();
        assert_eq!(caret.trim(), "^^^");
        assert_eq!(shown.chars().skip(caret[..col].chars().count()).take(3).collect::<String>(), "b.x");
        // Near the start: no leading mark; a short line: as it is.
        let d = Diagnostic::error(Span::new(0, 7), "here");
        assert!(d.render(&src, "q.cep").lines().nth(1).unwrap().starts_with(" 1 | PATTERN A a"));
        let d = Diagnostic::error(Span::new(8, 9), "here");
        assert_eq!(d.render("PATTERN A a", "q.cep").lines().nth(2).unwrap(), "   |         ^");
    }
}
