//! The input formats, by name, by file extension and by sniffing the first
//! bytes: one place that decides which reader a file gets.

use super::*;

/// An input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// CSV with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl Format {
    /// The format named by a file name's extension (case-insensitive):
    /// `.csv` is CSV; `.jsonl`, `.json` and `.ndjson` are JSON lines.
    ///
    /// # Examples
    /// ```
    /// use cep_io::Format;
    /// assert_eq!(Format::from_path("data/ticks.csv"), Some(Format::Csv));
    /// assert_eq!(Format::from_path("ticks.NDJSON"), Some(Format::Jsonl));
    /// assert_eq!(Format::from_path("-"), None);
    /// ```
    pub fn from_path(path: &str) -> Option<Format> {
        let ext = std::path::Path::new(path).extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("csv") {
            Some(Format::Csv)
        } else if ["jsonl", "json", "ndjson"].iter().any(|e| ext.eq_ignore_ascii_case(e)) {
            Some(Format::Jsonl)
        } else {
            None
        }
    }

    /// The format of an input whose name says nothing (stdin), from its
    /// first bytes: JSON lines if the first character other than ASCII
    /// whitespace, after a byte order mark, is `{`; else CSV. (The mark
    /// must be looked past: it is `\xEF\xBB\xBF`, and a JSON-lines stream
    /// that starts with it was read as CSV, and failed on a header without
    /// `ts`.)
    ///
    /// # Examples
    /// ```
    /// use cep_io::Format;
    /// assert_eq!(Format::sniff(b"  {\"ts\":0}\n"), Format::Jsonl);
    /// assert_eq!(Format::sniff(b"\xEF\xBB\xBF{\"ts\":0}\n"), Format::Jsonl);
    /// assert_eq!(Format::sniff(b"ts,price\n0,1\n"), Format::Csv);
    /// assert_eq!(Format::sniff(b"\xEF\xBB\xBFts,price\n"), Format::Csv);
    /// assert_eq!(Format::sniff(b""), Format::Csv);
    /// ```
    pub fn sniff(head: &[u8]) -> Format {
        let head = head.strip_prefix(BOM).unwrap_or(head);
        match head.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => Format::Jsonl,
            _ => Format::Csv,
        }
    }

    /// Parses a `--format` value: `csv` or `jsonl`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "csv" => Some(Format::Csv),
            "jsonl" => Some(Format::Jsonl),
            _ => None,
        }
    }

    /// The name accepted by [`Format::parse`].
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
