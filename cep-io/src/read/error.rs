//! Reading errors: the public [`ReadError`] and its kind, the raw error a
//! format reader returns before the file name is added, and the helpers
//! that word messages (so every format words them alike).

use super::*;

/// Cell text longer than this is cut short in error messages.
pub(crate) const SHOW_MAX: usize = 64;

/// Whether reading can go on after a [`ReadError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// One data row is bad; the next call reads the following row (the
    /// `--on-bad-row skip` case).
    BadRow,
    /// The input cannot be read further: a bad header, an I/O error, an
    /// empty CSV input.
    Fatal,
}

/// A reading error, displayed as `FILE:LINE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The file name given to [`Reader::new`].
    pub file: String,
    /// 1-based physical line number.
    pub line: u64,
    /// The data row number of a bad row.
    pub row: Option<u64>,
    /// What is wrong.
    pub message: String,
    /// Whether reading can go on.
    pub kind: ReadErrorKind,
}

impl ReadError {
    /// Whether this is a bad row that may be skipped.
    pub fn is_bad_row(&self) -> bool {
        self.kind == ReadErrorKind::BadRow
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for ReadError {}

/// A row error before the reader adds its file name: `row` is `Some` for a
/// bad row, `None` for a fatal error.
pub(crate) struct RawError {
    pub(crate) line: u64,
    pub(crate) row: Option<u64>,
    pub(crate) message: String,
}

/// The message for a line longer than `max` bytes.
pub(crate) fn too_long_message(max: usize) -> String {
    if max % (1 << 20) == 0 {
        format!("line longer than {} MiB", max >> 20)
    } else {
        format!("line longer than {max} bytes")
    }
}

/// Shows input text in a message, cut short when long.
pub(crate) fn show(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.chars().count() <= SHOW_MAX {
        s.into_owned()
    } else {
        let mut cut: String = s.chars().take(SHOW_MAX).collect();
        cut.push('…');
        cut
    }
}
