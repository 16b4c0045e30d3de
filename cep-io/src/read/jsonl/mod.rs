//! JSON lines: reading lines within the length limit and the per-line
//! state ([`JsonState`]) that picks the fast path (`fast`) or the serde
//! visitor (`serde`) for each.

pub(crate) mod fast;
pub(crate) mod serde;

use self::serde::*;
use super::*;
use crate::read::csv::records::peek;
use fast::*;

pub(crate) struct JsonState<R> {
    pub(crate) src: R,
    pub(crate) buf: Vec<u8>,
    /// Physical lines read so far.
    pub(crate) line: u64,
    /// Bytes of the input consumed so far.
    pub(crate) bytes: u64,
    /// Field ids by key, so known keys skip the global interner.
    pub(crate) keys: Keys,
    /// Whether a key not in `keys` is registered as a new field (else its
    /// value is dropped: [`Reader::fix_fields`]).
    pub(crate) new_keys: bool,
    pub(crate) max_line: usize,
    /// Inside a line reported as too long: its rest is skipped first.
    pub(crate) skipping: bool,
    /// A read error met by the in-place path ([`JsonState::simple_in_place`]),
    /// reported by the next read: some sources report one only once.
    pub(crate) pending: Option<io::Error>,
    /// Whether a line that is a simple object is read without `serde_json`
    /// ([`simple_object`]); off only in tests, to compare.
    pub(crate) simple: bool,
}

/// The field ids of JSON keys, and the targets of the keys of the last
/// simple object by their place in it ([`RowCtx::target_at`]).
#[derive(Clone, Default)]
pub(crate) struct Keys {
    pub(crate) ids: AHashMap<Box<[u8]>, FieldId>,
    /// By place in the last simple object (at most [`PLACES`]): its key
    /// packed ([`pack`](crate::read::strings::pack); a key of 1 to [`SHORT`](crate::read::strings::SHORT) bytes) and its target.
    /// Cleared whenever `ids` or what a new key becomes changes (a key
    /// registered keeps its id, so registering one changes no target).
    pub(crate) by_place: Vec<(u128, Target)>,
}

/// Keys remembered by their place in a simple object: wider objects look
/// up the rest.
pub(crate) const PLACES: usize = 64;

/// How reading one line ended.
pub(crate) enum LineEnd {
    Eof,
    Line,
    TooLong,
}

/// Reads one line (without its `\n`) into `buf`. A line longer than `max`
/// is `TooLong` as soon as it passes `max` (an input without a newline, such
/// as `/dev/zero`, is reported at once instead of read without end), and
/// its rest is skipped at the next call (`skipping`), without being kept.
pub(crate) fn read_line_limited<R: BufRead>(
    src: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
    consumed: &mut u64,
    skipping: &mut bool,
) -> io::Result<LineEnd> {
    buf.clear();
    let mut any = false;
    loop {
        let avail = match src.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            *skipping = false;
            return Ok(if any { LineEnd::Line } else { LineEnd::Eof });
        }
        let (take, done) = match memchr::memchr(b'\n', avail) {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        let n = if done { take + 1 } else { take };
        if *skipping {
            // The rest of a line already reported as too long.
            src.consume(n);
            *consumed += n as u64;
            *skipping = !done;
            continue;
        }
        any = true;
        if buf.len() + take > max {
            buf.clear();
            src.consume(n);
            *consumed += n as u64;
            *skipping = !done;
            return Ok(LineEnd::TooLong);
        }
        buf.extend_from_slice(&avail[..take]);
        src.consume(n);
        *consumed += n as u64;
        if done {
            return Ok(LineEnd::Line);
        }
    }
}

impl<R: BufRead> JsonState<R> {
    // Out of line: inlined into `Reader::next_event`, it made the code of
    // the CSV path there slower; out of line, a JSON line pays for a call
    // (see docs/perf-log.md, 2026-12-03, JSON lines).
    #[inline(never)]
    pub(crate) fn next(
        &mut self,
        event: &mut Event,
        schema: &mut Schema,
        strings: &mut StrCache,
        rows: &mut u64,
        default_ty: Sym,
    ) -> Result<bool, RawError> {
        loop {
            // A line the in-place path read as far as `simple_object` and
            // declined goes straight to `serde_json` (W1 as JSON lines with
            // a float price: every line declined, and tried twice).
            let try_simple = match self.simple_in_place(event, schema, strings, rows, default_ty) {
                InPlace::Read => return Ok(true),
                InPlace::NotSimple => false,
                InPlace::NotThere => self.simple,
            };
            let first = self.bytes == 0;
            let read_error =
                |e: io::Error| RawError { line: self.line + 1, row: None, message: format!("read error: {e}") };
            if let Some(e) = self.pending.take() {
                return Err(read_error(e));
            }
            let end =
                read_line_limited(&mut self.src, &mut self.buf, self.max_line, &mut self.bytes, &mut self.skipping)
                    .map_err(read_error)?;
            let line = match end {
                LineEnd::Eof => return Ok(false),
                LineEnd::Line | LineEnd::TooLong => {
                    self.line += 1;
                    self.line
                }
            };
            if let LineEnd::TooLong = end {
                let row = *rows;
                *rows += 1;
                return Err(RawError { line, row: Some(row), message: too_long_message(self.max_line) });
            }
            // A byte order mark is no part of the first line's object (a
            // reader reopened at byte 0, a parallel reader's first block,
            // skips it too).
            let text = if first { self.buf.strip_prefix(BOM).unwrap_or(&self.buf) } else { &self.buf[..] };
            let text = text.trim_ascii();
            if text.is_empty() {
                continue;
            }
            let row = *rows;
            *rows += 1;
            // Only up to the last field present (`Event::get` reads a field
            // past the end as NULL): widened to the schema, each event cost
            // time and memory in proportion to every key ever seen, and
            // rows that each bring a new key were quadratic.
            event.fields.clear();
            let mut ctx =
                RowCtx::new(schema, &mut event.fields, &mut self.keys, self.new_keys, strings, text, default_ty);
            let bad = |message: String| RawError { line, row: Some(row), message };
            if !(try_simple && simple_object(text, &mut ctx).is_some()) {
                // Read again from the start (the keys the simple path met,
                // which this meets first, are registered already).
                (ctx.ts, ctx.ty) = (None, None);
                ctx.fields.clear();
                let mut de = serde_json::Deserializer::from_slice(text);
                let parsed = (&mut ctx).deserialize(&mut de).and_then(|()| de.end());
                if let Some(message) = ctx.error.take() {
                    return Err(bad(message));
                }
                if let Err(e) = parsed {
                    return Err(bad(json_message(&e)));
                }
            }
            let Some(ts) = ctx.ts else {
                return Err(bad("missing `ts`".to_owned()));
            };
            event.ty = ctx.ty.unwrap_or(default_ty);
            event.ts = ts;
            event.row = row;
            return Ok(true);
        }
    }

    /// Reads the next line where it lies in the source's buffer — without
    /// copying it out first — if it lies there whole and is a simple object
    /// with a `ts` ([`simple_object`]; a line that begins with a byte order
    /// mark is none). Otherwise it consumes nothing, and the line is read
    /// as any other (the event's fields, cleared, are all it may have
    /// touched).
    pub(crate) fn simple_in_place(
        &mut self,
        event: &mut Event,
        schema: &mut Schema,
        strings: &mut StrCache,
        rows: &mut u64,
        default_ty: Sym,
    ) -> InPlace {
        if !self.simple || self.skipping {
            return InPlace::NotThere;
        }
        let Some(avail) = peek(&mut self.src, &mut self.pending) else { return InPlace::NotThere };
        let Some(end) = memchr::memchr(b'\n', avail) else { return InPlace::NotThere };
        let text = avail[..end].trim_ascii();
        if end > self.max_line || text.is_empty() {
            return InPlace::NotThere;
        }
        event.fields.clear();
        let mut ctx = RowCtx::new(schema, &mut event.fields, &mut self.keys, self.new_keys, strings, text, default_ty);
        if simple_object(text, &mut ctx).is_none() {
            return InPlace::NotSimple;
        }
        // Without `ts`: a bad row, which the general path reports.
        let Some(ts) = ctx.ts else { return InPlace::NotThere };
        event.ty = ctx.ty.unwrap_or(default_ty);
        event.ts = ts;
        event.row = *rows;
        *rows += 1;
        self.src.consume(end + 1);
        self.bytes += end as u64 + 1;
        self.line += 1;
        InPlace::Read
    }
}

/// What [`JsonState::simple_in_place`] did with the next line.
pub(crate) enum InPlace {
    /// Read it.
    Read,
    /// Found it no simple object: read it with `serde_json` only.
    NotSimple,
    /// Left it (not whole in the buffer, blank, too long, without `ts`, or
    /// an error waits): read it as any other.
    NotThere,
}

/// serde_json's message, with the position given as a column of the line.
pub(crate) fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let what = match s.rfind(" at line ") {
        Some(i) => &s[..i],
        None => &s,
    };
    if e.column() > 0 {
        format!("invalid JSON: {what} at column {}", e.column())
    } else {
        format!("invalid JSON: {what}")
    }
}
