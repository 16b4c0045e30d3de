//! Readers for CSV and JSON lines (LANGUAGE.md §1).
//!
//! A [`Reader`] turns a byte stream into [`Event`]s, one at a time, into an
//! `Event` the caller reuses, and fills a [`Schema`] as it goes.
//!
//! How the two formats are read — the header, how a cell is typed, what
//! makes a bad row or a fatal error, byte order marks, line limits and
//! line numbers — is the contract's reading, and is written down in
//! `docs/semantics.md` at the workspace root, under "Input". Errors are
//! [`ReadError`]s: a bad row ([`ReadErrorKind::BadRow`]) lets reading go on
//! with the next row, a fatal error ([`ReadErrorKind::Fatal`]) is returned
//! again by every later call. A line may be at most [`MAX_LINE_LEN`] bytes.
//!
//! Nothing panics on any input. In steady state reading a CSV row allocates
//! nothing: the record and the event's value vector are reused, and a small
//! reader-local cache maps repeated strings to their [`Sym`] without taking
//! the global interner's lock.

mod csv;
mod error;
mod format;
mod jsonl;
mod strings;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead};

use ahash::{AHashMap, AHashSet};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use cep_core::cell::{Lexeme, classify, float_of};
use cep_core::{DEFAULT_TYPE, Event, FieldId, Schema, Sym, Value};

use csv::records::CsvRecords;
use csv::{Col, CsvState, open_csv};
use error::{RawError, show, too_long_message};
pub use error::{ReadError, ReadErrorKind};
pub use format::Format;
use jsonl::{JsonState, Keys};
pub(crate) use strings::StrCache;

/// The UTF-8 byte order mark, ignored at the start of an input (CSV or
/// JSON lines): editors on Windows write it, and it is no part of the first
/// column's name or of the first JSON object.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The longest physical input line accepted, in bytes (64 MiB).
pub const MAX_LINE_LEN: usize = 64 << 20;

/// A place in an input, between two rows (see [`Reader::position`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputPosition {
    /// Bytes of the input before it.
    pub byte: u64,
    /// Data rows before it, good and bad.
    pub row: u64,
    /// The physical line (1-based) after it.
    pub line: u64,
}

/// Reads events from CSV or JSON lines.
///
/// See the [module documentation](self) for the rules.
pub struct Reader<R: BufRead> {
    file: String,
    format: Format,
    schema: Schema,
    observe: bool,
    rows: u64,
    strings: StrCache,
    default_ty: Sym,
    failed: Option<ReadError>,
    last_line: u64,
    inner: Inner<R>,
}

enum Inner<R: BufRead> {
    Csv(Box<CsvState<R>>),
    Jsonl(JsonState<R>),
}

impl<R: BufRead> fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("file", &self.file)
            .field("format", &self.format)
            .field("rows", &self.rows)
            .field("observe", &self.observe)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<R: BufRead> Reader<R> {
    /// Starts reading `src`, named `file` in messages.
    ///
    /// For CSV this reads the header now, registers every column other than
    /// `ts` and `type` as a field (in column order) and closes the field set;
    /// without a `type` column it also declares type `Event` and marks the
    /// schema complete. Errors (all fatal): an empty input, no `ts` column,
    /// an empty or duplicate column name, invalid UTF-8 in the header, an I/O
    /// error.
    pub fn new(src: R, file: &str, format: Format) -> Result<Reader<R>, ReadError> {
        Reader::with_max_line(src, file, format, MAX_LINE_LEN)
    }

    /// [`Reader::new`] with another limit on the length of a line.
    pub(crate) fn with_max_line(src: R, file: &str, format: Format, max_line: usize) -> Result<Reader<R>, ReadError> {
        let mut schema = Schema::new();
        let default_ty = Sym::new(DEFAULT_TYPE);
        let inner = match format {
            Format::Csv => {
                Inner::Csv(Box::new(open_csv(src, &mut schema, default_ty, max_line).map_err(|(line, message)| {
                    ReadError { file: file.to_owned(), line, row: None, message, kind: ReadErrorKind::Fatal }
                })?))
            }
            Format::Jsonl => Inner::Jsonl(JsonState {
                src,
                buf: Vec::new(),
                line: 0,
                bytes: 0,
                keys: Keys::default(),
                new_keys: true,
                max_line,
                skipping: false,
                pending: None,
                simple: true,
            }),
        };
        Ok(Reader {
            file: file.to_owned(),
            format,
            schema,
            observe: true,
            rows: 0,
            strings: StrCache::default(),
            default_ty,
            failed: None,
            last_line: 0,
            inner,
        })
    }

    /// Reads the next event into `event`, reusing its `fields` vector.
    ///
    /// Returns `Ok(true)` for an event and `Ok(false)` at the end of the
    /// input (`event` is then left as it was). A bad row is an error of kind
    /// [`ReadErrorKind::BadRow`]: its row number is used up, and the next
    /// call reads the following row; after an error, what `event` holds is
    /// unspecified.
    pub fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = match &mut self.inner {
            Inner::Csv(csv) => csv.next(event, &mut self.schema, &mut self.strings, &mut self.rows, self.default_ty),
            Inner::Jsonl(json) => {
                json.next(event, &mut self.schema, &mut self.strings, &mut self.rows, self.default_ty)
            }
        };
        match result {
            Ok(true) => {
                if self.observe {
                    self.schema.observe(event.ty, &event.fields);
                }
                self.last_line = match &self.inner {
                    Inner::Csv(csv) => csv.records.record_line(),
                    Inner::Jsonl(json) => json.line,
                };
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                let err = ReadError {
                    file: self.file.clone(),
                    line: e.line,
                    row: e.row,
                    message: e.message,
                    kind: if e.row.is_some() { ReadErrorKind::BadRow } else { ReadErrorKind::Fatal },
                };
                if err.kind == ReadErrorKind::Fatal {
                    self.failed = Some(err.clone());
                }
                Err(err)
            }
        }
    }

    /// The physical line (1-based) of the last event read, for messages
    /// about that event (a late event, say).
    pub fn last_line(&self) -> u64 {
        self.last_line
    }

    /// The schema filled so far.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The schema, mutably (to mark it complete after the whole input).
    pub fn schema_mut(&mut self) -> &mut Schema {
        &mut self.schema
    }

    /// Whether each event read is recorded with [`Schema::observe`] (on by
    /// default; a caller turns it off after a prefix of the input).
    pub fn set_observe(&mut self, on: bool) {
        self.observe = on;
    }

    /// Data rows consumed so far, good and bad.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Where the input stands after the last row read: its byte offset,
    /// the rows consumed and the physical line the next row starts on. A
    /// checkpoint keeps it so that a resumed run can [`reopen`](Self::reopen)
    /// the input there instead of parsing it again from the start.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Event;
    /// use cep_io::{Format, Reader};
    /// let text = "ts,price\n1,10\n2,11\n3,12\n";
    /// let mut r = Reader::new(text.as_bytes(), "t.csv", Format::Csv).unwrap();
    /// let mut e = Event::default();
    /// r.next_event(&mut e).unwrap();
    /// let at = r.position();
    /// assert_eq!((at.byte, at.row, at.line), (14, 1, 3));
    ///
    /// // A new reader over the input from byte 14 goes on with row 1, line 3.
    /// let mut rest = r.reopen(&text.as_bytes()[at.byte as usize..], at);
    /// rest.next_event(&mut e).unwrap();
    /// assert_eq!((e.row, e.ts, rest.last_line()), (1, 2, 3));
    /// ```
    pub fn position(&self) -> InputPosition {
        let (byte, line) = match &self.inner {
            Inner::Csv(csv) => (csv.records.byte(), csv.records.next_line()),
            Inner::Jsonl(json) => (json.bytes, json.line + 1),
        };
        InputPosition { byte, row: self.rows, line }
    }

    /// Swaps this reader's string cache with `cache`. A reader
    /// [reopened](Self::reopen) starts with an empty one; the parallel
    /// reader swaps in a cache kept from earlier blocks for each block it
    /// parses, or every block would look up each of its distinct strings in
    /// the process's interner again, under its lock.
    pub(crate) fn swap_strings(&mut self, cache: &mut StrCache) {
        std::mem::swap(&mut self.strings, cache);
    }

    /// The source it reads from (for a source that can say more than
    /// `BufRead` does, such as whether more input is ready).
    pub fn get_ref(&self) -> &R {
        match &self.inner {
            Inner::Csv(csv) => csv.records.get_ref(),
            Inner::Jsonl(json) => &json.src,
        }
    }

    /// The source it reads from, mutably. Consuming bytes from it skips
    /// them as input.
    pub fn get_mut(&mut self) -> &mut R {
        match &mut self.inner {
            Inner::Csv(csv) => csv.records.get_mut(),
            Inner::Jsonl(json) => &mut json.src,
        }
    }

    /// A reader that goes on from `at` (a [`position`](Self::position) of
    /// this input) over `src`, which must yield the input's bytes from
    /// `at.byte` on: it keeps this reader's columns and schema (a CSV
    /// header is not read again) and numbers rows and lines from `at`.
    pub fn reopen<S: BufRead>(&self, src: S, at: InputPosition) -> Reader<S> {
        let inner = match &self.inner {
            Inner::Csv(csv) => Inner::Csv(Box::new(CsvState {
                records: CsvRecords::new(src, at.byte, at.line.saturating_sub(1), csv.records.max_line()),
                cols: csv.cols.clone(),
                names: csv.names.clone(),
                simple: csv.simple,
            })),
            Inner::Jsonl(json) => Inner::Jsonl(JsonState {
                src,
                buf: Vec::new(),
                line: at.line.saturating_sub(1),
                bytes: at.byte,
                keys: json.keys.clone(),
                new_keys: json.new_keys,
                max_line: json.max_line,
                skipping: false,
                pending: None,
                simple: json.simple,
            }),
        };
        Reader {
            file: self.file.clone(),
            format: self.format,
            schema: self.schema.clone(),
            observe: self.observe,
            rows: at.row,
            strings: StrCache::default(),
            default_ty: self.default_ty,
            failed: None,
            last_line: 0,
            inner,
        }
    }

    /// Fixes the field set at the schema's fields: from now on a JSON key
    /// the schema does not know is still read and checked (a bad value
    /// makes a bad row), but neither registered nor kept. For the parallel
    /// reader's blocks: a block's reader holds a copy of the schema, so the
    /// ids it would give new keys would be its own (the same id for
    /// different keys in different blocks), and the parallel reader has no
    /// schema to name them by; kept, every event of a block that brings a
    /// key per row grew to the width of all the keys before it (`cep run`
    /// on 20,000 such rows: 2.1 GB). CSV fixes its fields with the header.
    /// A field set fixed already (or chosen by [`keep_fields`](Self::keep_fields))
    /// stays as it is.
    pub(crate) fn fix_fields(&mut self) {
        if let Inner::Jsonl(json) = &mut self.inner {
            if !json.new_keys {
                // Fixed already (by `keep_fields`, say): the keys stay.
                return;
            }
            json.new_keys = false;
            // Fields registered without being read (a query's, say) too.
            for (id, name) in self.schema.field_names().enumerate() {
                json.keys.ids.entry(name.as_bytes().into()).or_insert(id as FieldId);
            }
            json.keys.by_place.clear();
        }
    }

    /// Keeps only `fields` of the events read from now on: another field's
    /// cell or value is still read and checked (what makes a bad row still
    /// does, such as invalid UTF-8, or a JSON array), but neither typed nor
    /// kept, so the field is NULL in the event. Values no query reads then
    /// cost neither parsing nor memory: a string is interned for the life of
    /// the process ([`Sym`]), so a column of ever new strings (an order id, a
    /// UUID) grew memory without bound even when nothing read it.
    ///
    /// The schema keeps every field; with JSON lines a key the schema does
    /// not know is no longer registered. A reader [`reopen`](Self::reopen)ed
    /// from this one keeps the same fields.
    ///
    /// # Examples
    /// ```
    /// use cep_io::read::{Format, Reader};
    /// use cep_core::{Event, Value};
    /// let text = "ts,sym,order_id\n1,IBM,8f14e45f\n";
    /// let mut r = Reader::new(text.as_bytes(), "ticks.csv", Format::Csv).unwrap();
    /// let sym = r.schema().lookup("sym").unwrap();
    /// let order = r.schema().lookup("order_id").unwrap();
    /// r.keep_fields(&[sym]);
    /// let mut e = Event::default();
    /// assert!(r.next_event(&mut e).unwrap());
    /// assert_eq!(e.get(sym), Value::Str(cep_core::Sym::new("IBM")));
    /// assert_eq!(e.get(order), Value::Null);
    /// ```
    pub fn keep_fields(&mut self, fields: &[FieldId]) {
        let kept = |id: FieldId| fields.contains(&id);
        match &mut self.inner {
            Inner::Csv(csv) => {
                for col in &mut csv.cols {
                    if let Col::Field(id) = *col
                        && !kept(id)
                    {
                        *col = Col::Skip;
                    }
                }
            }
            Inner::Jsonl(json) => {
                json.new_keys = false;
                json.keys.ids.clear();
                json.keys.by_place.clear();
                for &id in fields {
                    json.keys.ids.insert(self.schema.field_name(id).as_bytes().into(), id);
                }
            }
        }
    }

    /// The input format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The file name used in messages.
    pub fn file(&self) -> &str {
        &self.file
    }
}

/// A partitioned source's position (see [`EventSource::offsets`]): per
/// partition, the offset of its next message.
pub type Offsets = Vec<(i32, i64)>;

/// What a job reads events from: a [`Reader`], a
/// [`ParallelReader`](crate::parallel::ParallelReader) over a file, a
/// stream ([`FileInput`](crate::input::FileInput) over stdin), events in
/// memory ([`IterSource`](crate::memory::IterSource),
/// [`ChannelSource`](crate::memory::ChannelSource)).
pub trait EventSource {
    /// Reads the next event into `event` (see [`Reader::next_event`]).
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError>;
    /// The physical line of the last event read.
    fn last_line(&self) -> u64;
    /// Where the input stands after the last row read.
    fn position(&self) -> InputPosition;
    /// Data rows consumed so far, good and bad.
    fn rows(&self) -> u64;
    /// The file name used in messages.
    fn file(&self) -> &str;
    /// The next block of events whole, for a source that reads in blocks
    /// split by a [`Route`](crate::parallel::Route) (see
    /// [`ParallelReader::take_block`](crate::parallel::ParallelReader::take_block));
    /// `None` (the default) to read event by event.
    fn take_block(
        &mut self,
        _admit: &mut dyn FnMut(&crate::parallel::BlockInfo) -> bool,
    ) -> Option<std::sync::Arc<crate::parallel::PartedBlock>> {
        None
    }

    /// Whether this source can wait for input at all (a stream, a
    /// channel): a job then sends out every match before it waits, instead
    /// of taking events in batches. A file or an iterator never waits (the
    /// default).
    fn may_wait(&self) -> bool {
        false
    }

    /// Whether the next event would wait for input (a stream that has
    /// nothing more yet): the job then sends out every match so far. A file
    /// never waits (the default).
    fn would_wait(&self) -> bool {
        false
    }

    /// Waits up to `timeout` for input; whether some came (or the end).
    fn wait(&mut self, _timeout: std::time::Duration) -> bool {
        true
    }

    /// The schema the job compiled its queries against (the fields they
    /// name, with their ids), before the first event is read: a source
    /// that parses text (a Kafka topic's messages, say) reads with it from
    /// then on, keeping only the fields of `keep` (all with `None`), so
    /// that its events carry the fields the queries read under the ids
    /// they read them by. The default does nothing: a source that builds
    /// its events with the schema it was given needs nothing more.
    fn use_schema(&mut self, _schema: &cep_core::Schema, _keep: Option<&[cep_core::FieldId]>) {}

    /// Where a partitioned source (a Kafka topic) stands: per partition,
    /// the offset of its next message not yet read as an event. A job
    /// keeps it in each checkpoint, taken when every event read is
    /// processed, and a resumed run gives it back to
    /// [`resume_at`](Self::resume_at). `None` (the default): the source is
    /// not partitioned, and a resumed run reads it again from its start,
    /// skipping the rows the checkpoint covers.
    fn offsets(&self) -> Option<Offsets> {
        None
    }

    /// Moves a partitioned source to `offsets` (from
    /// [`offsets`](Self::offsets)), numbering the next event `row`: a
    /// resumed run reads on from where its checkpoint stood, neither
    /// reading nor skipping the events before. False (the default) when
    /// the source cannot.
    fn resume_at(&mut self, _offsets: &Offsets, _row: u64) -> std::io::Result<bool> {
        Ok(false)
    }

    /// The offsets committed for this source with the output of a
    /// transactional sink ([`LineSink::commit`](crate::LineSink::commit)),
    /// which say which checkpoint a resumed run takes: empty when nothing
    /// was committed yet. `None` (the default): the source keeps no such
    /// offsets.
    fn committed_offsets(&self) -> std::io::Result<Option<Offsets>> {
        Ok(None)
    }

    /// The next block of events whole, if this source was read in blocks
    /// without a partition (see
    /// [`ParallelReader::take_events`](crate::parallel::ParallelReader::take_events));
    /// `None` (the default) to read event by event.
    fn take_events(
        &mut self,
        _admit: &mut dyn FnMut(&crate::parallel::BlockInfo) -> bool,
    ) -> Option<crate::parallel::EventBlock> {
        None
    }
}

impl<R: BufRead> EventSource for Reader<R> {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        Reader::next_event(self, event)
    }

    fn last_line(&self) -> u64 {
        Reader::last_line(self)
    }

    fn position(&self) -> InputPosition {
        Reader::position(self)
    }

    fn rows(&self) -> u64 {
        Reader::rows(self)
    }

    fn file(&self) -> &str {
        Reader::file(self)
    }
}
