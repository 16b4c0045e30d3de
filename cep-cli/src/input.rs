//! Opening inputs and compiling queries, shared by `run` and `check`.

use std::fs::File;
use std::path::Path;

use cep_core::{Schema, TimeUnit};
use cep_io::input::{BytesRead, OpenErrorKind};
use cep_io::{FileInput, Format, ReadError};
use cep_nfa::compile::{Compiled, Options, compile};
use cep_runtime::job::QueryText;

use crate::Failure;

/// How many events are read before the queries are compiled, to learn the
/// input's types and fields. A name the input has not shown is a warning
/// (an error only where the input's form fixes the names: a field outside a
/// CSV header, a type other than `Event` in a CSV without a `type` column),
/// so whether a query runs does not depend on how much of the input fits.
pub const SCHEMA_PREFIX: usize = 4096;

/// Opens `--events` (`-` is stdin) with `--format` or the file's extension;
/// stdin without `--format` is JSON lines if its first non-blank byte is `{`.
pub fn open_events(path: &str, format: Option<&str>) -> Result<FileInput, Failure> {
    open_events_counted(path, format, None)
}

/// [`open_events`], counting the bytes read from a file into `counter`.
pub fn open_events_counted(path: &str, format: Option<&str>, counter: Option<BytesRead>) -> Result<FileInput, Failure> {
    let format = match format {
        Some(f) => Some(
            Format::parse(f)
                .ok_or_else(|| Failure::bad_input(format!("unknown format `{f}`: expected `csv` or `jsonl`")))?,
        ),
        None => None,
    };
    FileInput::open(path, format, counter).map_err(|e| match e.kind() {
        OpenErrorKind::Read(r) => read_failure(r.clone()),
        OpenErrorKind::Io { .. } => Failure::other(e.to_string()),
        _ => Failure::bad_input(e.to_string()),
    })
}

/// A reader error as a failure (exit code 2 for bad input, 1 for I/O).
pub fn read_failure(e: ReadError) -> Failure {
    Failure::bad_input(format!("error: {e}")).at_row(e.row)
}

/// Reads and compiles a query file, printing warnings; errors are rendered
/// with `FILE:LINE:COL`, the source line and a caret.
pub fn compile_query(path: &Path, schema: &mut Schema, unit: TimeUnit) -> Result<(String, Compiled), Failure> {
    let QueryText { name, text: src } = read_query(path)?;
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

/// The text of query file `path` (UTF-8, at most [`MAX_QUERY_FILE`]),
/// named by its path.
pub fn read_query(path: &Path) -> Result<QueryText, Failure> {
    let name = path.display().to_string();
    let bytes = read_query_file(path, &name)?;
    let text = String::from_utf8(bytes).map_err(|e| not_utf8(&name, e.as_bytes(), e.utf8_error().valid_up_to()))?;
    Ok(QueryText { name, text })
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
