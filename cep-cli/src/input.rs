//! Opening inputs and compiling queries, shared by `run` and `check`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use cep_core::{Event, Schema, TimeUnit};
use cep_io::{Format, InputPosition, ReadError, Reader};
use cep_nfa::compile::{Compiled, Options, compile};

use crate::Failure;
use crate::stream::StreamInput;

/// How many events are read before the queries are compiled, to learn the
/// input's types and fields. A name the input has not shown is a warning
/// (an error only where the input's form fixes the names: a field outside a
/// CSV header, a type other than `Event` in a CSV without a `type` column),
/// so whether a query runs does not depend on how much of the input fits.
pub const SCHEMA_PREFIX: usize = 4096;

/// An event reader over a file or a stream.
pub type Input = Reader<Source>;

/// The bytes `cep run` reads events from: a file, or a stream (stdin, a
/// pipe) read on a thread of its own, which can tell when the next record
/// would wait (see the `stream` module).
pub enum Source {
    /// A regular file, read as the parser asks.
    File(BufReader<Box<dyn io::Read + Send>>),
    /// A stream, read ahead on a thread of its own.
    Stream(StreamInput),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(_) => f.write_str("Source::File"),
            Source::Stream(s) => f.debug_tuple("Source::Stream").field(s).finish(),
        }
    }
}

impl Source {
    /// The stream, if this is one.
    pub fn stream(&self) -> Option<&StreamInput> {
        match self {
            Source::Stream(s) => Some(s),
            Source::File(_) => None,
        }
    }

    /// The stream, if this is one, mutably.
    pub fn stream_mut(&mut self) -> Option<&mut StreamInput> {
        match self {
            Source::Stream(s) => Some(s),
            Source::File(_) => None,
        }
    }
}

impl io::Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Stream(s) => s.read(buf),
        }
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Source::File(f) => f.fill_buf(),
            Source::Stream(s) => s.fill_buf(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Source::File(f) => f.consume(n),
            Source::Stream(s) => s.consume(n),
        }
    }
}

/// Whether `--events path` is a stream: stdin (`-`), or anything but a
/// regular file (a named pipe, `/dev/stdin`, a terminal). A stream is not
/// read ahead, nor on several threads, and its matches go out as soon as
/// its input pauses.
pub fn is_stream(path: &str) -> bool {
    path == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// Opens `--events` (`-` is stdin) with `--format` or the file's extension;
/// stdin without `--format` is JSON lines if its first non-blank byte is `{`.
pub fn open_events(path: &str, format: Option<&str>) -> Result<Input, Failure> {
    open_events_counted(path, format, None)
}

/// Bytes read from an input file so far, for a progress display.
pub type BytesRead = std::sync::Arc<std::sync::atomic::AtomicU64>;

/// A file that counts the bytes read from it.
struct Counted {
    file: File,
    read: BytesRead,
}

impl io::Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// [`open_events`], counting the bytes read from a file into `counter`.
pub fn open_events_counted(path: &str, format: Option<&str>, counter: Option<BytesRead>) -> Result<Input, Failure> {
    let format = match format {
        Some(f) => Some(
            Format::parse(f)
                .ok_or_else(|| Failure::bad_input(format!("unknown format `{f}`: expected `csv` or `jsonl`")))?,
        ),
        None => None,
    };
    let stream = |src: Box<dyn io::Read + Send>| {
        StreamInput::spawn(src).map(Source::Stream).map_err(|e| Failure::other(format!("cannot read {path}: {e}")))
    };
    let (name, mut src) = if path == "-" {
        ("<stdin>".to_owned(), stream(Box::new(io::stdin()))?)
    } else {
        let f = File::open(path).map_err(|e| Failure::other(format!("cannot open {path}: {e}")))?;
        let file = |read: Box<dyn io::Read + Send>| Source::File(BufReader::with_capacity(1 << 16, read));
        match counter {
            _ if is_stream(path) => (path.to_owned(), stream(Box::new(f))?),
            Some(read) => (path.to_owned(), file(Box::new(Counted { file: f, read }))),
            None => (path.to_owned(), file(Box::new(f))),
        }
    };
    let format = match format.or_else(|| Format::from_path(path)) {
        Some(f) => f,
        None if path == "-" => sniff(&mut src).map_err(|e| Failure::other(format!("reading stdin: {e}")))?,
        None => {
            return Err(Failure::bad_input(format!(
                "cannot tell the format of {path} from its extension: use --format csv|jsonl"
            )));
        }
    };
    Reader::new(src, &name, format).map_err(read_failure)
}

/// `input` (a file opened by [`open_events_counted`]) reopened at `at`,
/// one of its [positions](cep_io::Reader::position): the file is seeked
/// there, so the rows before it are not read again.
pub fn reopen_events(
    input: &Input,
    path: &str,
    at: InputPosition,
    counter: Option<BytesRead>,
) -> Result<Input, Failure> {
    let cannot = |e: io::Error| Failure::other(format!("cannot reopen {path} at byte {}: {e}", at.byte));
    let mut f = File::open(path).map_err(cannot)?;
    let len = f.metadata().map_err(cannot)?.len();
    if len < at.byte {
        return Err(Failure::bad_input(format!(
            "error: cannot resume: {path} has {len} bytes, fewer than the {} the checkpoint read",
            at.byte
        )));
    }
    f.seek(SeekFrom::Start(at.byte)).map_err(cannot)?;
    let read: Box<dyn io::Read + Send> = match counter {
        Some(read) => {
            read.fetch_add(at.byte, std::sync::atomic::Ordering::Relaxed);
            Box::new(Counted { file: f, read })
        }
        None => Box::new(f),
    };
    let src = Source::File(BufReader::with_capacity(1 << 16, read));
    Ok(input.reopen(src, at))
}

fn sniff(src: &mut Source) -> io::Result<Format> {
    Ok(Format::sniff(src.fill_buf()?))
}

/// A reader error as a failure (exit code 2 for bad input, 1 for I/O).
pub fn read_failure(e: ReadError) -> Failure {
    Failure::bad_input(format!("error: {e}")).at_row(e.row)
}

/// Events read ahead to learn the schema, and what stopped the reading.
#[derive(Debug)]
pub struct Prefix {
    /// Good events, in order, with their physical lines.
    pub events: Vec<(Event, u64)>,
    /// A bad row met while reading ahead (handled by the caller in order).
    pub error: Option<(usize, ReadError)>,
    /// Whether the input ended.
    pub ended: bool,
}

/// Reads up to `limit` good events. A bad row stops the read-ahead unless
/// `skip_bad`; its position among the events is kept so that it is reported
/// after the events before it were processed.
pub fn read_prefix(input: &mut Input, limit: usize, skip_bad: bool, skipped: &mut u64) -> Prefix {
    let mut events = Vec::new();
    let mut e = Event::default();
    loop {
        if events.len() >= limit {
            return Prefix { events, error: None, ended: false };
        }
        match input.next_event(&mut e) {
            Ok(true) => events.push((e.clone(), input.last_line())),
            Ok(false) => {
                input.schema_mut().set_complete(true);
                return Prefix { events, error: None, ended: true };
            }
            Err(err) if skip_bad && err.is_bad_row() => {
                eprintln!("warning: skipped: {err}");
                *skipped += 1;
            }
            Err(err) => {
                let n = events.len();
                return Prefix { events, error: Some((n, err)), ended: false };
            }
        }
    }
}

/// Reads and compiles a query file, printing warnings; errors are rendered
/// with `FILE:LINE:COL`, the source line and a caret.
pub fn compile_query(path: &Path, schema: &mut Schema, unit: TimeUnit) -> Result<(String, Compiled), Failure> {
    let name = path.display().to_string();
    let bytes = read_query_file(path, &name)?;
    let src = String::from_utf8(bytes).map_err(|e| not_utf8(&name, e.as_bytes(), e.utf8_error().valid_up_to()))?;
    match compile(&src, schema, &Options { time_unit: unit }) {
        Ok(c) => {
            for w in &c.warnings {
                eprint!("{}", w.render(&src, &name));
            }
            Ok((src, c))
        }
        Err(d) => Err(Failure::bad_input(d.render(&src, &name))),
    }
}

/// The largest query file read, in bytes: a file of queries larger than
/// this (hundreds of thousands of statements, each with engines of its own)
/// is a mistake, such as `/dev/zero`, which must not be read without end.
pub const MAX_QUERY_FILE: u64 = 16 << 20;

/// The bytes of query file `path` (named `name`), at most [`MAX_QUERY_FILE`].
fn read_query_file(path: &Path, name: &str) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let cannot = |e: std::io::Error| Failure::other(format!("cannot read {name}: {e}"));
    let mut bytes = Vec::new();
    File::open(path).and_then(|f| f.take(MAX_QUERY_FILE + 1).read_to_end(&mut bytes)).map_err(cannot)?;
    if bytes.len() as u64 > MAX_QUERY_FILE {
        return Err(Failure::bad_input(format!(
            "error: {name}: the query file is larger than {} MiB",
            MAX_QUERY_FILE >> 20
        )));
    }
    Ok(bytes)
}

/// A query file that is not UTF-8 is a bad query (exit 2), reported at the
/// line and column of its first byte that is not: `bytes[..valid]` is UTF-8.
fn not_utf8(name: &str, bytes: &[u8], valid: usize) -> Failure {
    let before = std::str::from_utf8(&bytes[..valid]).expect("valid up to here");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Failure::bad_input(format!(
        "error: {name}:{line}:{column}: the query is not valid UTF-8 (byte 0x{:02x})",
        bytes[valid]
    ))
}

/// Parses `--time-unit`.
pub fn time_unit(s: &str) -> Result<TimeUnit, Failure> {
    TimeUnit::parse(s).ok_or_else(|| Failure::bad_input(format!("unknown time unit `{s}`: expected ms, us, ns or s")))
}
