//! [`FileInput`]: events from a file or a stream (stdin, a pipe), opened
//! by name as `cep run --events` names them: the format from the
//! extension or sniffed, a file read ahead, timed, reopened where a
//! checkpoint left it or parsed on threads; a stream read on a thread of
//! its own so that the job can tell when it would wait.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cep_core::{Event, Schema};

use crate::parallel::{ParallelReader, Route};
use crate::read::{EventSource, Format, InputPosition, ReadError, Reader};
use crate::stream::StreamInput;

/// Bytes read from an input file so far, for a progress display.
pub type BytesRead = Arc<AtomicU64>;

/// The bytes a [`FileInput`] reads: a file, or a stream read ahead on a
/// thread of its own.
pub enum Bytes {
    /// A regular file, read as the parser asks.
    File(BufReader<Box<dyn Read + Send>>),
    /// A stream, read ahead on a thread of its own.
    Stream(StreamInput),
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bytes::File(_) => f.write_str("Bytes::File"),
            Bytes::Stream(s) => f.debug_tuple("Bytes::Stream").field(s).finish(),
        }
    }
}

impl Read for Bytes {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Bytes::File(f) => f.read(buf),
            Bytes::Stream(s) => s.read(buf),
        }
    }
}

impl BufRead for Bytes {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Bytes::File(f) => f.fill_buf(),
            Bytes::Stream(s) => s.fill_buf(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Bytes::File(f) => f.consume(n),
            Bytes::Stream(s) => s.consume(n),
        }
    }
}

/// Why an input cannot be opened.
#[derive(Debug)]
pub struct OpenError {
    kind: OpenErrorKind,
}

/// The kinds of [`OpenError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenErrorKind {
    /// The file cannot be opened, read or seeked.
    Io {
        /// What was being done, to what (`open ticks.csv`).
        what: String,
        /// The path.
        path: String,
        /// Why not.
        error: io::Error,
    },
    /// The format cannot be told from the name.
    UnknownFormat {
        /// The path.
        path: String,
    },
    /// The header (or first record) is bad.
    Read(ReadError),
    /// The file is shorter than a checkpoint says it read.
    Shorter {
        /// The path.
        path: String,
        /// Its bytes.
        len: u64,
        /// The bytes the checkpoint read.
        needed: u64,
    },
}

impl OpenError {
    fn new(kind: OpenErrorKind) -> OpenError {
        OpenError { kind }
    }

    /// What went wrong.
    pub fn kind(&self) -> &OpenErrorKind {
        &self.kind
    }

    /// Whether the input is at fault (its format, its header, its length),
    /// rather than the system.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self.kind, OpenErrorKind::Io { .. })
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            OpenErrorKind::Io { what, error, .. } => write!(f, "cannot {what}: {error}"),
            OpenErrorKind::UnknownFormat { path } => {
                write!(f, "cannot tell the format of {path} from its extension: use --format csv|jsonl")
            }
            OpenErrorKind::Read(e) => write!(f, "{e}"),
            OpenErrorKind::Shorter { path, len, needed } => {
                write!(f, "cannot resume: {path} has {len} bytes, fewer than the {needed} the checkpoint read")
            }
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            OpenErrorKind::Io { error, .. } => Some(error),
            OpenErrorKind::Read(e) => Some(e),
            _ => None,
        }
    }
}

/// Whether `path` names a stream: stdin (`-`), or anything but a regular
/// file (a named pipe, `/dev/stdin`, a terminal). A stream is not read
/// ahead, nor on several threads, and its matches go out as soon as its
/// input pauses.
pub fn is_stream(path: &str) -> bool {
    path == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// A file that counts the bytes read from it.
struct Counted {
    file: File,
    read: BytesRead,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Events read from a file or a stream named by a path (`-`: stdin).
///
/// # Examples
/// ```
/// use cep_core::Event;
/// use cep_io::EventSource;
/// use cep_io::input::FileInput;
///
/// let path = std::env::temp_dir().join(format!("cep-input-doc-{}.csv", std::process::id()));
/// std::fs::write(&path, "ts,x\n0,1\n1,2\n").unwrap();
/// let mut input = FileInput::open(path.to_str().unwrap(), None, None).unwrap();
/// let ahead = input.read_ahead(1, false);
/// assert_eq!(ahead.events.len(), 1);
/// let mut e = Event::default();
/// assert!(input.next_event(&mut e).unwrap());
/// assert_eq!(e.ts, 1);
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug)]
pub struct FileInput {
    reader: Reader<Bytes>,
    path: String,
    stream: bool,
    counter: Option<BytesRead>,
}

impl FileInput {
    /// Opens `path` (`-` is stdin) with `format`, or the format of the
    /// file's extension; stdin without a format is JSON lines if its first
    /// non-blank byte is `{`. With `counter`, the bytes read from a file
    /// are counted into it.
    pub fn open(path: &str, format: Option<Format>, counter: Option<BytesRead>) -> Result<FileInput, OpenError> {
        let io_error = |doing: &str, error: io::Error| {
            OpenError::new(OpenErrorKind::Io { what: format!("{doing} {path}"), path: path.into(), error })
        };
        let stream = |src: Box<dyn Read + Send>| StreamInput::spawn(src).map(Bytes::Stream);
        let streaming = is_stream(path);
        let (name, mut src) = if path == "-" {
            ("<stdin>".to_owned(), stream(Box::new(io::stdin())).map_err(|e| io_error("read", e))?)
        } else {
            let f = File::open(path).map_err(|e| io_error("open", e))?;
            let file = |read: Box<dyn Read + Send>| Bytes::File(BufReader::with_capacity(1 << 16, read));
            let src = match &counter {
                _ if streaming => stream(Box::new(f)).map_err(|e| io_error("read", e))?,
                Some(read) => file(Box::new(Counted { file: f, read: read.clone() })),
                None => file(Box::new(f)),
            };
            (path.to_owned(), src)
        };
        let format = match format.or_else(|| Format::from_path(path)) {
            Some(f) => f,
            None if path == "-" => Format::sniff(src.fill_buf().map_err(|e| io_error("read", e))?),
            None => return Err(OpenError::new(OpenErrorKind::UnknownFormat { path: path.into() })),
        };
        let reader = Reader::new(src, &name, format).map_err(|e| OpenError::new(OpenErrorKind::Read(e)))?;
        Ok(FileInput { reader, path: path.to_owned(), stream: streaming, counter })
    }

    /// Whether this is a stream, not a regular file.
    pub fn is_stream(&self) -> bool {
        self.stream
    }

    /// The path it was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The reader.
    pub fn reader(&self) -> &Reader<Bytes> {
        &self.reader
    }

    /// The reader, mutably (to keep only some fields, say).
    pub fn reader_mut(&mut self) -> &mut Reader<Bytes> {
        &mut self.reader
    }

    /// The schema the reader fills.
    pub fn schema(&self) -> &Schema {
        self.reader.schema()
    }

    /// The schema, mutably.
    pub fn schema_mut(&mut self) -> &mut Schema {
        self.reader.schema_mut()
    }

    /// Reads up to `limit` good events ahead (see [`ReadAhead`]). A bad row
    /// stops the read-ahead unless `skip_bad` (then it is skipped with a
    /// warning on stderr and counted); its place among the events is kept
    /// so that it is reported after the events before it were processed.
    pub fn read_ahead(&mut self, limit: usize, skip_bad: bool) -> ReadAhead {
        let start = self.reader.position();
        let mut ahead = ReadAhead { events: Vec::new(), error: None, ended: false, start, skipped: 0 };
        let mut e = Event::default();
        loop {
            if ahead.events.len() >= limit {
                return ahead;
            }
            match self.reader.next_event(&mut e) {
                Ok(true) => ahead.events.push((e.clone(), self.reader.last_line())),
                Ok(false) => {
                    self.reader.schema_mut().set_complete(true);
                    ahead.ended = true;
                    return ahead;
                }
                Err(err) if skip_bad && err.is_bad_row() => {
                    eprintln!("warning: skipped: {err}");
                    ahead.skipped += 1;
                }
                Err(err) => {
                    ahead.error = Some((ahead.events.len(), err));
                    return ahead;
                }
            }
        }
    }

    /// Reopens the file at `at`, one of its reader's
    /// [positions](Reader::position): the file is seeked there, so the rows
    /// before it are not read again.
    pub fn reopen_at(&mut self, at: InputPosition) -> Result<(), OpenError> {
        let path = self.path.clone();
        let cannot = |error: io::Error| {
            let what = format!("reopen {path} at byte {}", at.byte);
            OpenError::new(OpenErrorKind::Io { what, path: path.clone(), error })
        };
        let mut f = File::open(&self.path).map_err(cannot)?;
        let len = f.metadata().map_err(cannot)?.len();
        if len < at.byte {
            return Err(OpenError::new(OpenErrorKind::Shorter { path: self.path.clone(), len, needed: at.byte }));
        }
        f.seek(SeekFrom::Start(at.byte)).map_err(cannot)?;
        let read: Box<dyn Read + Send> = match &self.counter {
            Some(read) => {
                read.fetch_add(at.byte, Ordering::Relaxed);
                Box::new(Counted { file: f, read: read.clone() })
            }
            None => Box::new(f),
        };
        let src = Bytes::File(BufReader::with_capacity(1 << 16, read));
        self.reader = self.reader.reopen(src, at);
        Ok(())
    }

    /// How long parsing the bytes from `start` to where the reader stands
    /// now takes a reader reopened there, by a second read of the file
    /// (`None` for a stream, or when the file cannot be read again).
    pub fn parse_time(&self, start: InputPosition) -> Option<Duration> {
        if self.stream {
            return None;
        }
        let end = self.reader.position().byte;
        let mut bytes = vec![0; usize::try_from(end.checked_sub(start.byte)?).ok()?];
        let mut f = File::open(&self.path).ok()?;
        f.seek(SeekFrom::Start(start.byte)).ok()?;
        f.read_exact(&mut bytes).ok()?;
        let mut again = self.reader.reopen(&bytes[..], start);
        let mut e = Event::default();
        let t = Instant::now();
        loop {
            match again.next_event(&mut e) {
                Ok(true) => {}
                Ok(false) => break,
                Err(err) if err.is_bad_row() => {}
                Err(_) => return None,
            }
        }
        Some(t.elapsed())
    }

    /// The rest of the file, from where the reader stands, parsed on
    /// `threads` threads (see [`ParallelReader::open`]), or split by
    /// `route` as it is parsed ([`ParallelReader::open_partitioned`]).
    pub fn parallel<P: Route>(&self, threads: usize, route: Option<P>) -> io::Result<ParallelReader> {
        let at = self.reader.position();
        if let Some(c) = &self.counter {
            c.store(at.byte, Ordering::Relaxed);
        }
        let path = Path::new(&self.path);
        match route {
            Some(p) => ParallelReader::open_partitioned(path, &self.reader, at, threads, self.counter.clone(), p),
            None => ParallelReader::open(path, &self.reader, at, threads, self.counter.clone()),
        }
    }
}

impl EventSource for FileInput {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        self.reader.next_event(event)
    }

    fn last_line(&self) -> u64 {
        self.reader.last_line()
    }

    fn position(&self) -> InputPosition {
        self.reader.position()
    }

    fn rows(&self) -> u64 {
        self.reader.rows()
    }

    fn file(&self) -> &str {
        self.reader.file()
    }

    fn may_wait(&self) -> bool {
        self.stream
    }

    fn would_wait(&self) -> bool {
        match self.reader.get_ref() {
            Bytes::Stream(s) => s.would_wait(),
            Bytes::File(_) => false,
        }
    }

    fn wait(&mut self, timeout: Duration) -> bool {
        match self.reader.get_mut() {
            Bytes::Stream(s) => s.wait(timeout),
            Bytes::File(_) => true,
        }
    }
}

/// Events read ahead of a run (to learn the input's types and fields
/// before the queries are compiled), and what stopped the reading.
#[derive(Debug, Default)]
pub struct ReadAhead {
    /// Good events, in order, with their physical lines.
    pub events: Vec<(Event, u64)>,
    /// A bad row met while reading ahead, and how many good events came
    /// before it (the job reports it after processing them).
    pub error: Option<(usize, ReadError)>,
    /// Whether the input ended.
    pub ended: bool,
    /// Where the reader stood before the first of them.
    pub start: InputPosition,
    /// Bad rows skipped among them.
    pub skipped: u64,
}

/// What identifies the first bytes of an input file, up to where a
/// checkpoint stood: their number and a hash of all of them (see
/// [`PrefixHasher`]). A resumed run compares the file it is given with it,
/// so that it does not carry on from another file's position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputDigest {
    /// Bytes of the input the digest covers (from its start).
    pub bytes: u64,
    /// The hash (xxh3, 64 bits) of those bytes.
    pub hash: u64,
}

/// Hashes a file's first bytes as a reader moves on through it: each call
/// of [`digest_to`](Self::digest_to) reads only the bytes after those it
/// hashed before, so that a run taking a checkpoint every N rows hashes each
/// byte once (the bytes were just read, so they come from the page cache;
/// xxh3 runs at several GB/s, far above the parsers).
///
/// # Examples
/// ```
/// use cep_io::input::{digest_file, PrefixHasher};
/// let path = std::env::temp_dir().join(format!("cep-digest-doc-{}.csv", std::process::id()));
/// std::fs::write(&path, "ts,x\n0,1\n1,2\n").unwrap();
/// let mut hasher = PrefixHasher::new(&path);
/// let first = hasher.digest_to(9).unwrap();
/// let both = hasher.digest_to(13).unwrap();
/// assert_eq!((first, both), (digest_file(&path, 9).unwrap(), digest_file(&path, 13).unwrap()));
/// std::fs::write(&path, "ts,x\n0,1\n1,2\n2,3\n").unwrap(); // appended
/// assert_eq!(digest_file(&path, 13).unwrap(), both);
/// std::fs::write(&path, "ts,x\n0,2\n1,2\n").unwrap(); // another row 0
/// assert_ne!(digest_file(&path, 13).unwrap(), both);
/// std::fs::write(&path, "ts,x\n").unwrap(); // shorter
/// assert!(digest_file(&path, 9).is_err());
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Clone)]
pub struct PrefixHasher {
    path: std::path::PathBuf,
    /// Bytes hashed so far.
    bytes: u64,
    state: xxhash_rust::xxh3::Xxh3,
}

impl std::fmt::Debug for PrefixHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixHasher").field("path", &self.path).field("bytes", &self.bytes).finish()
    }
}

impl PrefixHasher {
    /// A hasher of the file at `path`, at its start.
    pub fn new(path: &Path) -> PrefixHasher {
        PrefixHasher { path: path.to_owned(), bytes: 0, state: xxhash_rust::xxh3::Xxh3::new() }
    }

    /// The [`InputDigest`] of the file's first `bytes` bytes, hashing on
    /// from where the last call stopped (from the start again if `bytes`
    /// is fewer). A file shorter than `bytes` is an error of kind
    /// [`io::ErrorKind::UnexpectedEof`]; bytes after `bytes` (a file
    /// appended to) do not count.
    pub fn digest_to(&mut self, bytes: u64) -> io::Result<InputDigest> {
        if bytes < self.bytes {
            *self = PrefixHasher::new(&self.path);
        }
        if bytes > self.bytes {
            let mut f = File::open(&self.path)?;
            let len = f.metadata()?.len();
            if len < bytes {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{} has {len} bytes, fewer than {bytes}", self.path.display()),
                ));
            }
            f.seek(SeekFrom::Start(self.bytes))?;
            let mut buf = vec![0; (bytes - self.bytes).min(1 << 20) as usize];
            while self.bytes < bytes {
                let piece = &mut buf[..(bytes - self.bytes).min(1 << 20) as usize];
                f.read_exact(piece)?;
                self.state.update(piece);
                self.bytes += piece.len() as u64;
            }
        }
        Ok(InputDigest { bytes, hash: self.state.digest() })
    }

    /// Bytes hashed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The [`InputDigest`] of the first `bytes` bytes of the file at `path`
/// (all of them read once; see [`PrefixHasher`]).
pub fn digest_file(path: &Path, bytes: u64) -> io::Result<InputDigest> {
    PrefixHasher::new(path).digest_to(bytes)
}

impl FileInput {
    /// A [`PrefixHasher`] of this input, `None` for a stream, which cannot
    /// be read again.
    pub fn hasher(&self) -> Option<PrefixHasher> {
        (!self.stream).then(|| PrefixHasher::new(Path::new(&self.path)))
    }
}
