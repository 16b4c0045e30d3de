//! [`Tally`]: counts the lines that reach a job's output, by what they
//! are (a query's match, a level alert), from the bytes its writer
//! accepts. After a write error the engines' counts say what was found,
//! not what was written (lines wait in buffers, in the shards' messages):
//! the tally says what was written.

use std::io::{self, Write};

use cep_io::LineSink;

use crate::QueryInfo;

/// The lines written to an output that failed, by what they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFailed {
    /// The first error writing the output ([`io::ErrorKind::BrokenPipe`]:
    /// its reader went away).
    pub error: io::ErrorKind,
    /// Matches per query (in the job's order) whose lines were written
    /// whole before it.
    pub matches: Vec<u64>,
    /// Level alerts whose lines were written whole before it.
    pub fires: u64,
}

/// A writer that counts the whole lines its inner writer accepts, and
/// remembers its first error.
#[derive(Debug)]
pub(crate) struct Tally<W> {
    inner: W,
    /// Each query's lines begin with this (`{"query":"NAME","key":`).
    prefixes: Vec<Vec<u8>>,
    /// The longest prefix.
    longest: usize,
    /// The beginning of the line being written, up to `longest` bytes.
    head: Vec<u8>,
    matches: Vec<u64>,
    fires: u64,
    error: Option<io::ErrorKind>,
}

/// How a level alert's line begins.
const LEVEL: &[u8] = b"{\"level\":";

impl<W> Tally<W> {
    /// Counts the lines of `queries` (and level alerts) written to `inner`.
    pub(crate) fn new(inner: W, queries: &[QueryInfo]) -> Tally<W> {
        let prefixes: Vec<Vec<u8>> = queries
            .iter()
            .map(|q| {
                let mut p = b"{\"query\":".to_vec();
                cep_core::json::write_str(&mut p, &q.name);
                p.extend_from_slice(b",\"key\":");
                p
            })
            .collect();
        let longest = prefixes.iter().map(Vec::len).max().unwrap_or(0).max(LEVEL.len());
        let matches = vec![0; prefixes.len()];
        Tally { inner, prefixes, longest, head: Vec::with_capacity(longest), matches, fires: 0, error: None }
    }

    /// What was written, when writing failed.
    pub(crate) fn failed(&self) -> Option<OutputFailed> {
        let error = self.error?;
        Some(OutputFailed { error, matches: self.matches.clone(), fires: self.fires })
    }

    fn note(&mut self, e: &io::Error) {
        if e.kind() != io::ErrorKind::Interrupted {
            self.error.get_or_insert(e.kind());
        }
    }

    /// Counts the lines `bytes` (accepted by the inner writer) complete.
    fn count(&mut self, mut bytes: &[u8]) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            self.keep_head(&bytes[..end]);
            self.line_done();
            bytes = &bytes[end + 1..];
        }
        self.keep_head(bytes);
    }

    fn keep_head(&mut self, piece: &[u8]) {
        let room = self.longest - self.head.len();
        self.head.extend_from_slice(&piece[..piece.len().min(room)]);
    }

    fn line_done(&mut self) {
        if self.head.starts_with(LEVEL) {
            self.fires += 1;
        } else if let Some(i) = self.prefixes.iter().position(|p| self.head.starts_with(p)) {
            self.matches[i] += 1;
        }
        self.head.clear();
    }
}

impl<W: Write> Write for Tally<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.inner.write(buf) {
            Ok(n) => {
                self.count(&buf[..n.min(buf.len())]);
                Ok(n)
            }
            Err(e) => {
                self.note(&e);
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|e| self.note(e))
    }
}

impl<W: LineSink> LineSink for Tally<W> {
    fn written(&self) -> u64 {
        self.inner.written()
    }

    fn pending(&self) -> Vec<Vec<u8>> {
        self.inner.pending()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync().inspect_err(|e| self.note(e))
    }

    fn transactional(&self) -> bool {
        self.inner.transactional()
    }

    fn commit(&mut self, offsets: Option<&cep_io::Offsets>) -> io::Result<()> {
        self.inner.commit(offsets).inspect_err(|e| self.note(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes `room` bytes, then fails.
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn info(name: &str) -> QueryInfo {
        QueryInfo { name: name.into(), vars: Vec::new(), at_deadline: false, emit: Vec::new() }
    }

    #[test]
    fn counts_the_whole_lines_written_by_query() {
        let lines = "{\"query\":\"a\",\"key\":1}\n{\"query\":\"ab\",\"key\":2}\n{\"level\":\"x\",\"key\":1}\n\
                     {\"query\":\"a\",\"key\":3}\n";
        let cut = lines.len() - 5; // the last line only partly written
        let mut t = Tally::new(Full { room: cut }, &[info("a"), info("ab")]);
        assert!(t.write_all(lines.as_bytes()).is_err());
        let f = t.failed().unwrap();
        assert_eq!((f.error, f.matches, f.fires), (io::ErrorKind::StorageFull, vec![1, 1], 1));
        let mut ok = Tally::new(Vec::new(), &[info("a")]);
        ok.write_all(lines.as_bytes()).unwrap();
        assert_eq!(ok.failed(), None);
    }
}
