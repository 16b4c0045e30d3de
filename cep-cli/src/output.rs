//! Where `cep run` writes: stdout or a file, counting bytes so that a
//! checkpoint can record how much output it covers, and, after a resume,
//! dropping the lines the crashed run had already written.
//!
//! Resuming with `--out FILE`, the file keeps everything up to its last
//! complete line; the lines after the checkpoint's position were written
//! by the crashed run after the checkpoint, and the resumed run produces
//! them again (the engines are deterministic): [`Output`] drops each such
//! line once, by its exact text, so that the file ends up with every line
//! once. On stdout nothing can be taken back: a resumed run writes again
//! what followed the checkpoint (matches carry stable ids for a consumer to
//! drop duplicates, LANGUAGE.md §5).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use cep_runtime::runtime::LineSplitter;

/// The output stream of a run (see the [module](self) docs).
#[derive(Debug)]
pub struct Output {
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

impl Output {
    /// Standard output.
    pub fn stdout() -> Output {
        Output {
            target: Target::Stdout(io::stdout()),
            written: 0,
            seen: HashMap::new(),
            lines: LineSplitter::default(),
        }
    }

    /// A new (truncated) file.
    pub fn create(path: &Path) -> io::Result<Output> {
        Ok(Output {
            target: Target::File(File::create(path)?),
            written: 0,
            seen: HashMap::new(),
            lines: LineSplitter::default(),
        })
    }

    /// A file a crashed run wrote, continued from a checkpoint that covered
    /// its first `at` bytes: a partial last line is cut off, and the
    /// complete lines after `at` will be dropped when written again.
    ///
    /// # Examples
    /// ```
    /// use std::io::Write;
    /// use cep_cli::output::Output;
    /// let path = std::env::temp_dir().join(format!("cep-output-doc-{}", std::process::id()));
    /// std::fs::write(&path, "a\nb\nc\npartial").unwrap(); // the checkpoint covered "a\n"
    /// let mut out = Output::resume(&path, 2).unwrap();
    /// out.write_all(b"b\nc\nd\n").unwrap(); // the resumed run writes b and c again
    /// out.flush().unwrap();
    /// assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\nc\nd\n");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn resume(path: &Path, at: u64) -> io::Result<Output> {
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
        for line in text[at as usize..whole].split_inclusive(|&b| b == b'\n') {
            *seen.entry(line.to_vec()).or_insert(0) += 1;
        }
        file.set_len(whole as u64)?;
        file.seek(SeekFrom::End(0))?;
        Ok(Output { target: Target::File(file), written: whole as u64, seen, lines: LineSplitter::default() })
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

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.seen.is_empty() && self.lines.is_empty() {
            self.put(buf)?;
            return Ok(buf.len());
        }
        let Output { target, written, seen, lines } = self;
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
