//! Where a job's output lines go: a [`LineSink`] is a writer that counts
//! its bytes (a checkpoint records how much output it covers) and can make
//! them durable. [`FileOutput`] is stdout or a file, which after a resume
//! drops the lines the crashed run had already written; [`LineSplitter`]
//! cuts bytes written in arbitrary pieces into whole lines, for a writer
//! that acts per line.
//!
//! Resuming into a file, the file keeps everything up to its last
//! complete line; the lines after the checkpoint's position were written
//! by the crashed run after the checkpoint, and the resumed run produces
//! them again (the engines are deterministic): [`FileOutput`] drops each such
//! line once, by its exact text, so that the file ends up with every line
//! once. On stdout nothing can be taken back: a resumed run writes again
//! what followed the checkpoint (matches carry stable ids for a consumer to
//! drop duplicates, LANGUAGE.md §5).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Stdout or a file (see the [module](self) docs).
#[derive(Debug)]
pub struct FileOutput {
    target: Target,
    /// Bytes in the output so far (the file's length).
    written: u64,
    /// Lines to drop once each (the crashed run wrote them).
    seen: HashMap<Vec<u8>, u32>,
    /// A line begun but not complete, while lines are being dropped.
    lines: LineSplitter,
}

#[derive(Debug)]
enum Target {
    Stdout(io::Stdout),
    File(File),
}

impl FileOutput {
    /// Standard output.
    pub fn stdout() -> FileOutput {
        FileOutput {
            target: Target::Stdout(io::stdout()),
            written: 0,
            seen: HashMap::new(),
            lines: LineSplitter::default(),
        }
    }

    /// A new (truncated) file.
    pub fn create(path: &Path) -> io::Result<FileOutput> {
        Ok(FileOutput {
            target: Target::File(File::create(path)?),
            written: 0,
            seen: HashMap::new(),
            lines: LineSplitter::default(),
        })
    }

    /// A file a crashed run wrote, continued from a checkpoint that covered
    /// its first `at` bytes: a partial last line is cut off, and the
    /// complete lines after `at` will be dropped when written again, as will
    /// `pending`: lines before `at` that the checkpoint's state had not yet
    /// produced (its [`LineSink::pending`] when it was taken).
    ///
    /// # Examples
    /// ```
    /// use std::io::Write;
    /// use cep_io::output::FileOutput;
    /// let path = std::env::temp_dir().join(format!("cep-output-doc-{}", std::process::id()));
    /// std::fs::write(&path, "a\nb\nc\npartial").unwrap(); // the checkpoint covered "a\n"
    /// let mut out = FileOutput::resume(&path, 2, &[]).unwrap();
    /// out.write_all(b"b\nc\nd\n").unwrap(); // the resumed run writes b and c again
    /// out.flush().unwrap();
    /// assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\nc\nd\n");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn resume(path: &Path, at: u64, pending: &[Vec<u8>]) -> io::Result<FileOutput> {
        let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text)?;
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if (whole as u64) < at {
            return Err(io::Error::other(format!(
                "{} holds {whole} bytes of complete lines, but its checkpoint covered {at}",
                path.display()
            )));
        }
        let mut seen = HashMap::new();
        let after = text[at as usize..whole].split_inclusive(|&b| b == b'\n');
        for line in after.chain(pending.iter().map(Vec::as_slice)) {
            *seen.entry(line.to_vec()).or_insert(0) += 1;
        }
        file.set_len(whole as u64)?;
        file.seek(SeekFrom::End(0))?;
        Ok(FileOutput { target: Target::File(file), written: whole as u64, seen, lines: LineSplitter::default() })
    }

    /// Bytes in the output so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Makes what was written durable (a file is synced; stdout flushed).
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        match &mut self.target {
            Target::File(f) => f.sync_data(),
            Target::Stdout(_) => Ok(()),
        }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        put(&mut self.target, &mut self.written, bytes)
    }
}

/// Writes `bytes` to `target`, counting them in `written`.
fn put(target: &mut Target, written: &mut u64, bytes: &[u8]) -> io::Result<()> {
    match target {
        Target::Stdout(s) => s.write_all(bytes)?,
        Target::File(f) => f.write_all(bytes)?,
    }
    *written += bytes.len() as u64;
    Ok(())
}

impl Write for FileOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.seen.is_empty() && self.lines.is_empty() {
            // One write, whose count is exact: a caller that counts the
            // lines written (the job's summary after a write error) knows
            // how far it got.
            let n = match &mut self.target {
                Target::Stdout(s) => s.write(buf)?,
                Target::File(f) => f.write(buf)?,
            };
            self.written += n as u64;
            return Ok(n);
        }
        let FileOutput { target, written, seen, lines } = self;
        lines.split(buf, |line| match seen.get_mut(line) {
            Some(n) => {
                *n -= 1;
                if *n == 0 {
                    seen.remove(line);
                }
                Ok(())
            }
            None => put(target, written, line),
        })?;
        if self.seen.is_empty() && !self.lines.is_empty() {
            let rest = self.lines.take_partial();
            self.put(&rest)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.target {
            Target::Stdout(s) => s.flush(),
            Target::File(f) => f.flush(),
        }
    }
}

/// Where a job writes its lines: bytes, counted, that can be made durable.
pub trait LineSink: Write {
    /// Bytes written so far (a resumed file counts the bytes it kept).
    fn written(&self) -> u64;
    /// Makes what was written durable (flushed; a file synced).
    fn sync(&mut self) -> io::Result<()>;
    /// Lines among the [`written`](Self::written) bytes that the run has
    /// not produced yet: a resumed file's lines after its checkpoint that
    /// the run has not written again. A checkpoint keeps them, so that a
    /// run resumed from it drops them too when it writes them (see
    /// [`FileOutput::resume`]); without them it would write them twice.
    fn pending(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }

    /// Whether the sink writes in transactions that commit the input's
    /// offsets with the output (a Kafka topic written exactly once): a
    /// resumed run then takes the checkpoint whose offsets are the
    /// committed ones, and a run commits its last lines at the end. False
    /// (the default) for a file, whose bytes a checkpoint counts instead.
    fn transactional(&self) -> bool {
        false
    }

    /// Makes the lines written since the last commit part of the output,
    /// with `offsets`, the input's position after them (see
    /// [`transactional`](Self::transactional)); called once a checkpoint
    /// of that position is saved (two phases: the checkpoint file, then
    /// the commit). Does nothing by default.
    fn commit(&mut self, _offsets: Option<&crate::Offsets>) -> io::Result<()> {
        Ok(())
    }
}

impl LineSink for FileOutput {
    fn written(&self) -> u64 {
        FileOutput::written(self)
    }

    fn pending(&self) -> Vec<Vec<u8>> {
        let mut lines: Vec<Vec<u8>> =
            self.seen.iter().flat_map(|(line, &n)| std::iter::repeat_n(line.clone(), n as usize)).collect();
        lines.sort_unstable();
        lines
    }

    fn sync(&mut self) -> io::Result<()> {
        FileOutput::sync(self)
    }
}

/// A `Vec<u8>` collects the lines (tests, examples).
impl LineSink for Vec<u8> {
    fn written(&self) -> u64 {
        self.len() as u64
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<S: LineSink + ?Sized> LineSink for &mut S {
    fn written(&self) -> u64 {
        (**self).written()
    }

    fn pending(&self) -> Vec<Vec<u8>> {
        (**self).pending()
    }

    fn transactional(&self) -> bool {
        (**self).transactional()
    }

    fn commit(&mut self, offsets: Option<&crate::Offsets>) -> io::Result<()> {
        (**self).commit(offsets)
    }

    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

impl<S: LineSink + ?Sized> LineSink for Box<S> {
    fn written(&self) -> u64 {
        (**self).written()
    }

    fn pending(&self) -> Vec<Vec<u8>> {
        (**self).pending()
    }

    fn transactional(&self) -> bool {
        (**self).transactional()
    }

    fn commit(&mut self, offsets: Option<&crate::Offsets>) -> io::Result<()> {
        (**self).commit(offsets)
    }

    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

/// Cuts a byte stream written in arbitrary pieces into whole lines: what a
/// writer that acts per line needs (a line callback, a channel, dropping
/// lines already written after a resume).
///
/// # Examples
/// ```
/// use cep_io::output::LineSplitter;
/// let mut lines = LineSplitter::default();
/// let mut got = Vec::new();
/// for piece in ["{\"a\":1}\n{\"b", "\":2}\n{\"c"] {
///     lines.split(piece.as_bytes(), |l| Ok(got.push(String::from_utf8(l.to_vec()).unwrap()))).unwrap();
/// }
/// assert_eq!(got, ["{\"a\":1}\n", "{\"b\":2}\n"]);
/// assert_eq!(lines.take_partial(), b"{\"c");
/// ```
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    /// Appends `buf` and hands every line it completes, newline included,
    /// to `each`, in order; a line not complete yet waits for more.
    pub fn split(&mut self, buf: &[u8], mut each: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        self.partial.extend_from_slice(buf);
        let mut done = 0;
        let result = loop {
            let Some(end) = self.partial[done..].iter().position(|&b| b == b'\n') else { break Ok(()) };
            let line = &self.partial[done..done + end + 1];
            done += end + 1;
            if let Err(e) = each(line) {
                break Err(e);
            }
        };
        self.partial.drain(..done);
        result
    }

    /// Whether no incomplete line is waiting.
    pub fn is_empty(&self) -> bool {
        self.partial.is_empty()
    }

    /// Takes the incomplete line waiting, if any.
    pub fn take_partial(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.partial)
    }
}
