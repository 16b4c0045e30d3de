//! The cutter: reads the file on the reader's thread and cuts it into
//! blocks of whole records, so that each block can be parsed without the
//! ones before it. For CSV that needs the quote scan ([`scan_csv`]): a
//! newline inside a quoted field does not end a record.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use crossbeam_channel::Sender;

use crate::read::{Format, MAX_LINE_LEN, ReadError, ReadErrorKind};

use super::block::{Block, Parsed};
use super::job::{BlockParser, ParseJob};

/// What reads the file and cuts it into blocks of whole records, one at a
/// time, on the reader's own thread.
pub(super) struct Cutter {
    pub(super) file: File,
    pub(super) name: String,
    pub(super) format: Format,
    /// Where the next block starts, and its number (once the input has
    /// ended: the number of blocks, counting a read error's as one).
    pub(super) at: u64,
    pub(super) seq: u64,
    /// Bytes read after the last block's last record: the next one's start.
    pub(super) carry: Vec<u8>,
    /// Whether the input (or a read error) has ended the blocks.
    pub(super) ended: bool,
    /// Bytes read at a time.
    pub(super) block: usize,
    pub(super) parser: Arc<dyn BlockParser>,
    pub(super) work: Sender<ParseJob>,
    pub(super) results: Sender<Parsed>,
    pub(super) bufs: mpsc::Receiver<Vec<u8>>,
    pub(super) counter: Option<Arc<AtomicU64>>,
}

impl Cutter {
    /// Reads the next block and queues it for a parser, unless the input
    /// has ended.
    pub(super) fn cut(&mut self) {
        if self.ended {
            return;
        }
        let mut buf = self.bufs.try_recv().unwrap_or_default();
        buf.clear();
        buf.append(&mut self.carry);
        let mut long = false;
        loop {
            let Some(n) = self.read_counted(&mut buf) else { return };
            if n == 0 {
                self.ended = true;
                break;
            }
            if let Some(cut) = last_record_end(&buf[..], self.format) {
                self.carry.extend_from_slice(&buf[cut..]);
                buf.truncate(cut);
                break;
            }
            // A record longer than any line may be: the parser says so
            // (a bad row), and the rest of its line is skipped.
            if buf.len() > MAX_LINE_LEN + self.block {
                long = true;
                break;
            }
        }
        if !buf.is_empty() {
            let len = buf.len() as u64;
            let block = Block { seq: self.seq, start: self.at, bytes: buf, cut_long: long };
            let _ = self.work.send(ParseJob { block, parser: Arc::clone(&self.parser) });
            self.seq += 1;
            self.at += len;
        }
        if long {
            self.skip_long_line();
        }
    }

    /// Skips the rest of a line too long for any block, up to and including
    /// its newline, without keeping it (the block before ends inside it, and
    /// its parser reports the line as a bad row); the next block starts
    /// after it.
    fn skip_long_line(&mut self) {
        let mut chunk = Vec::new();
        loop {
            chunk.clear();
            let Some(n) = self.read_counted(&mut chunk) else { return };
            if n == 0 {
                self.ended = true;
                return;
            }
            if let Some(nl) = memchr::memchr(b'\n', &chunk) {
                self.at += nl as u64 + 1;
                self.carry.extend_from_slice(&chunk[nl + 1..]);
                return;
            }
            self.at += n as u64;
        }
    }

    /// A read error: it ends the blocks.
    /// Reads up to a block more into `buf`, counting the bytes for a
    /// progress display; `None` after a read error (reported by
    /// [`fail`](Self::fail)).
    fn read_counted(&mut self, buf: &mut Vec<u8>) -> Option<usize> {
        match read_more(&mut self.file, buf, self.block) {
            Ok(n) => {
                if let Some(c) = &self.counter {
                    c.fetch_add(n as u64, Ordering::Relaxed);
                }
                Some(n)
            }
            Err(e) => {
                self.fail(&e);
                None
            }
        }
    }

    fn fail(&mut self, e: &io::Error) {
        let mut p = Parsed::default();
        p.reset(self.seq);
        p.fatal = Some(ReadError {
            file: self.name.clone(),
            line: 1,
            row: None,
            message: format!("read error: {e}"),
            kind: ReadErrorKind::Fatal,
        });
        let _ = self.results.send(p);
        (self.seq, self.ended) = (self.seq + 1, true);
    }
}

/// Appends up to `n` bytes of `f` to `buf` (fewer only at the end of the
/// input); the bytes read. (Through `read_to_end`, which reads into the
/// vector's spare capacity without zeroing it first.)
pub(super) fn read_more(f: &mut File, buf: &mut Vec<u8>, n: usize) -> io::Result<usize> {
    buf.reserve(n);
    f.take(n as u64).read_to_end(buf)
}

/// Where the last record that ends in `buf` ends (after its newline), if
/// one does; `buf` starts at a record's start. JSON lines end at every
/// newline; CSV records at newlines outside quoted fields.
pub(super) fn last_record_end(buf: &[u8], format: Format) -> Option<usize> {
    match format {
        Format::Jsonl => Some(memchr::memrchr(b'\n', buf)? + 1),
        // Without a quote, every newline ends a record.
        Format::Csv if memchr::memchr(b'"', buf).is_none() => csv_cut(buf, memchr::memrchr(b'\n', buf)?),
        Format::Csv => csv_cut(buf, last_csv_record_end(buf)?),
    }
}

/// Where to cut CSV text whose last record ends at the newline at `nl`:
/// after it, but before the blank lines that end the text, so that they
/// begin the next block. (The `csv` parser skips blank lines and reports
/// the record after them on the first of them; a block beginning after
/// them would report it on its own line.)
pub(super) fn csv_cut(buf: &[u8], nl: usize) -> Option<usize> {
    let mut cut = nl + 1;
    while cut >= 2 && buf[cut - 2] == b'\n' {
        cut -= 1;
    }
    (cut > 1).then_some(cut)
}

/// The last newline of `buf` outside a quoted field, following the CSV
/// rules the reader's parser follows: a quote opens a quoted field only at
/// a field's start, and within one a doubled quote stands for a quote.
pub(super) fn last_csv_record_end(buf: &[u8]) -> Option<usize> {
    scan_csv(buf).0
}

/// The last newline of `buf` outside a quoted field (see
/// [`last_csv_record_end`]), and whether `buf` ends inside a quoted field.
pub(crate) fn scan_csv(buf: &[u8]) -> (Option<usize>, bool) {
    let mut last = None;
    let mut quoted = false;
    let mut field_start = true;
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        if quoted {
            if b == b'"' {
                if buf.get(i + 1) == Some(&b'"') {
                    i += 1;
                } else {
                    quoted = false;
                }
            }
        } else {
            match b {
                b'"' if field_start => quoted = true,
                b'\n' => last = Some(i),
                _ => {}
            }
            // Not after a `\r`: the parser ends records at `\n` only, so a
            // lone `\r` is a character of its field, and a quote after it
            // is one too.
            field_start = matches!(b, b',' | b'\n');
        }
        i += 1;
    }
    (last, quoted)
}
