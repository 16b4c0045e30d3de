//! A stream (stdin, a pipe) read on a thread of its own, so that a job
//! can tell when the next record would wait for input.
//!
//! Before it waits, every match found so far must be out: the sharded
//! runtime holds events for a batch and writes its shards' lines when it
//! next looks, which a thread blocked in `read` never does (`cep run` on
//! two threads printed a match only when the next event came). And while
//! it waits, an idle timeout moves the watermark with the wall clock.
//! So a thread of its own reads the bytes, a chunk at a time as they come,
//! and the parser reads the chunks: [`StreamInput::would_wait`] says when
//! no whole line is left and nothing more has come, and
//! [`StreamInput::wait`] waits for more with a timeout.
//!
//! Chunks are recycled, and at most `AHEAD` of them wait for the parser,
//! so memory stays bounded however fast the writer.

use std::io::{self, BufRead, Read};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};

/// Bytes read at a time, at most.
const CHUNK: usize = 1 << 16;

/// Chunks read ahead of the parser, at most.
const AHEAD: usize = 4;

/// A chunk of the input, or the error that ended it.
type Chunk = io::Result<Vec<u8>>;

/// The bytes of a stream read on its own thread, as a [`BufRead`].
///
/// # Examples
/// ```
/// use std::io::BufRead;
/// use std::time::Duration;
/// use cep_io::stream::StreamInput;
///
/// let mut s = StreamInput::spawn(&b"a,1\nb,2\n"[..]).unwrap();
/// let mut lines = Vec::new();
/// loop {
///     // Whatever would wait comes within the second here.
///     assert!(!s.would_wait() || s.wait(Duration::from_secs(1)));
///     let mut line = String::new();
///     if s.read_line(&mut line).unwrap() == 0 {
///         break;
///     }
///     lines.push(line);
/// }
/// assert_eq!(lines, ["a,1\n", "b,2\n"]);
/// assert!(!s.would_wait(), "at the end, nothing waits");
/// ```
#[derive(Debug)]
pub struct StreamInput {
    chunks: Receiver<Chunk>,
    /// Chunks read, back to the reading thread.
    spare: Sender<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
    /// A chunk taken by [`wait`](Self::wait) while `buf` still had bytes.
    pending: Option<Chunk>,
    /// The end of the input (or its error) has been reached.
    ended: bool,
}

impl StreamInput {
    /// Reads `src` on a new thread (`cep-stream`). The thread stops at the
    /// end of `src`, at an error, or once this is dropped and its read
    /// returns.
    pub fn spawn(mut src: impl Read + Send + 'static) -> io::Result<StreamInput> {
        let (tx, chunks) = bounded::<Chunk>(AHEAD);
        let (spare, spares) = unbounded::<Vec<u8>>();
        std::thread::Builder::new().name("cep-stream".into()).spawn(move || {
            loop {
                let mut buf = spares.try_recv().unwrap_or_default();
                buf.resize(CHUNK, 0);
                let chunk = match src.read(&mut buf) {
                    Ok(0) => return, // the end: the channel closes
                    Ok(n) => {
                        buf.truncate(n);
                        Ok(buf)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let last = chunk.is_err();
                if tx.send(chunk).is_err() || last {
                    return;
                }
            }
        })?;
        Ok(StreamInput { chunks, spare, buf: Vec::new(), pos: 0, pending: None, ended: false })
    }

    /// Whether reading the next line would wait for input: no whole line
    /// is left, nothing more has come, and the input has not ended. (A
    /// record whose quoted cell spans lines may still wait.)
    pub fn would_wait(&self) -> bool {
        !self.ended
            && self.pending.is_none()
            && self.chunks.is_empty()
            && memchr::memchr(b'\n', &self.buf[self.pos..]).is_none()
    }

    /// Waits up to `timeout` for more input if [`would_wait`](Self::would_wait);
    /// whether some came (or the end, or an error, which the next read
    /// returns).
    pub fn wait(&mut self, timeout: Duration) -> bool {
        if !self.would_wait() {
            return true;
        }
        match self.chunks.recv_timeout(timeout) {
            Ok(chunk) => {
                self.pending = Some(chunk);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                true
            }
        }
    }
}

impl BufRead for StreamInput {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.buf.len() && !self.ended {
            match self.pending.take().or_else(|| self.chunks.recv().ok()) {
                Some(Ok(chunk)) => {
                    let done = std::mem::replace(&mut self.buf, chunk);
                    let _ = self.spare.send(done);
                    self.pos = 0;
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                None => self.ended = true,
            }
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }
}

impl Read for StreamInput {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A pipe: what is written to the sender is read from the receiver,
    /// each write as one read.
    struct Pipe(std::sync::mpsc::Receiver<Vec<u8>>, Vec<u8>);

    impl Read for Pipe {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.1.is_empty() {
                match self.0.recv() {
                    Ok(bytes) => self.1 = bytes,
                    Err(_) => return Ok(0),
                }
            }
            let n = self.1.len().min(out.len());
            out[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }

    fn pipe() -> (std::sync::mpsc::Sender<Vec<u8>>, StreamInput) {
        let (tx, rx) = std::sync::mpsc::channel();
        (tx, StreamInput::spawn(Pipe(rx, Vec::new())).unwrap())
    }

    /// A stream that delivers a line, then half of one: the first line
    /// reads without waiting, then it would wait (a partial line is not a
    /// record), `wait` times out, and once the rest comes it reads whole.
    #[test]
    fn it_would_wait_exactly_when_no_whole_line_is_left() {
        let (tx, mut s) = pipe();
        assert!(s.would_wait(), "nothing came yet");
        assert!(!s.wait(Duration::from_millis(20)));
        tx.send(b"A,1\nB,".to_vec()).unwrap();
        assert!(s.wait(Duration::from_secs(10)));
        let mut line = String::new();
        s.read_line(&mut line).unwrap();
        assert_eq!(line, "A,1\n");
        assert!(s.would_wait(), "only a partial line is left");
        assert!(!s.wait(Duration::from_millis(20)));
        tx.send(b"2\nC,3\n".to_vec()).unwrap();
        assert!(s.wait(Duration::from_secs(10)));
        assert!(!s.would_wait());
        let mut rest = String::new();
        s.read_line(&mut rest).unwrap();
        assert_eq!(rest, "B,2\n");
        assert!(!s.would_wait(), "a whole line is left");
        rest.clear();
        s.read_line(&mut rest).unwrap();
        assert_eq!(rest, "C,3\n");
        drop(tx);
        assert!(s.wait(Duration::from_secs(10)), "the end comes");
        assert!(!s.would_wait());
        assert_eq!(s.fill_buf().unwrap(), b"");
    }

    /// Many chunks, recycled, arrive whole and in order.
    #[test]
    fn a_long_stream_reads_back_byte_for_byte() {
        let text: Vec<u8> = (0..200_000).flat_map(|i| format!("Tick,{i},{}\n", i % 7).into_bytes()).collect();
        let (tx, mut s) = pipe();
        let writer = {
            let text = text.clone();
            std::thread::spawn(move || {
                for piece in text.chunks(7_777) {
                    tx.send(piece.to_vec()).unwrap();
                }
            })
        };
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        writer.join().unwrap();
        assert_eq!(got.len(), text.len());
        assert!(got == text);
    }

    /// An error while reading is returned once, then the input ends.
    #[test]
    fn a_read_error_reaches_the_reader() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("disk on fire"));
                }
                let mut w = &mut out[..];
                w.write_all(b"A,1\n")?;
                Ok(4)
            }
        }
        let mut s = StreamInput::spawn(Failing(false)).unwrap();
        let mut line = String::new();
        s.read_line(&mut line).unwrap();
        assert_eq!(line, "A,1\n");
        let e = s.fill_buf().unwrap_err();
        assert_eq!(e.to_string(), "disk on fire");
        assert_eq!(s.fill_buf().unwrap(), b"");
    }
}
