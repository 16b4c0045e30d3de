//! CSV records from a byte stream, with the line each starts on and the byte
//! offset after it.
//!
//! The dialect is the one `cep` reads (LANGUAGE.md §1): cells separated by
//! commas, `"` quotes with `""` for a quote inside them, records ended by a
//! `\n` outside quotes (a `\r` before it is part of the last cell), empty
//! lines skipped.
//!
//! Nearly every record of an event file is one line without a quote. Such a
//! line, when it lies whole in the input's buffer, is split at its commas
//! where it lies, in one pass that compares eight bytes at a time with the
//! newline, the quote and the comma ([`split_line`]), and no byte is copied.
//! Any other record (quoted cells, which
//! may hold commas and newlines; a line the buffer cuts; the last line
//! without a newline) goes through `csv_core`'s state machine, which is
//! configured with the same dialect. The two paths give the same cells: the
//! fast one only takes lines in which the dialect has nothing to interpret.
//! (Reading every record through the `csv` crate took about a quarter of
//! `cep run`'s time per W1 row.)
//!
//! A physical line longer than the limit is skipped to its end without
//! being buffered, and reported ([`RecordError::TooLong`]); reading goes on
//! with the next line as the start of a record (the reader makes it a bad
//! row). Inside a quoted field that spans lines this resynchronises at a
//! newline that may be inside the field: the lines after it up to the
//! field's end are then read as records of their own (most of them bad
//! rows), not silently lost.
//!
//! A quoted cell still open at the end of the input (a quote never closed)
//! ends the last record there, as in the `csv` crate, but that record is
//! handed out marked `open`, for the reader to report: otherwise its cell
//! would silently swallow every line after the quote.

use std::io::{self, BufRead};

/// Reads CSV records from `R` (see the [module](self) docs).
pub(crate) struct CsvRecords<R> {
    src: R,
    /// The general path's parser, built when first needed (a reader
    /// reopened for each block of a file read on threads would otherwise
    /// build its tables for every block, quoted or not). Between records it
    /// is at the start of a record.
    core: Option<csv_core::Reader>,
    /// The general path's record: its unquoted bytes, and the end of each
    /// cell in them (allocated with the parser).
    data: Vec<u8>,
    ends: Vec<usize>,
    /// The cells of the record being handed out, as ranges of its bytes.
    cells: Vec<(usize, usize)>,
    /// The offset in the whole input of the next byte to read.
    byte: u64,
    /// Newlines consumed: the next record starts on line `lines + 1` (or
    /// later, after blank lines).
    lines: u64,
    /// The line the last record read started on.
    record_line: u64,
    /// Bytes of the physical line being read consumed so far (only the
    /// general path stops inside a line).
    line_len: usize,
    max_line: usize,
    /// An error of the source met by [`simple_line`](Self::simple_line),
    /// for the next read to report: some sources report an error once.
    pending: Option<io::Error>,
}

/// A fatal error: the line it is on, and its message.
pub(crate) type Fatal = (u64, String);

/// Why [`CsvRecords::next`] read no record.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// Reading cannot go on: the line, and the message.
    Fatal(u64, String),
    /// A physical line, on this line, longer than the limit: it was skipped
    /// to its end; reading goes on with the next line, as the start of a
    /// record.
    TooLong(u64),
}

impl From<Fatal> for RecordError {
    fn from((line, message): Fatal) -> RecordError {
        RecordError::Fatal(line, message)
    }
}

impl<R: BufRead> CsvRecords<R> {
    /// Reads `src`, whose first byte is byte `byte` of the input and which
    /// starts on line `lines + 1`.
    pub(crate) fn new(src: R, byte: u64, lines: u64, max_line: usize) -> CsvRecords<R> {
        CsvRecords {
            src,
            core: None,
            data: Vec::new(),
            ends: Vec::new(),
            cells: Vec::new(),
            byte,
            lines,
            record_line: 0,
            line_len: 0,
            max_line,
            pending: None,
        }
    }

    /// The offset in the input after the last record read.
    pub(crate) fn byte(&self) -> u64 {
        self.byte
    }

    /// The line the next record starts on, at the earliest.
    pub(crate) fn next_line(&self) -> u64 {
        self.lines + 1
    }

    /// The line the last record read started on.
    pub(crate) fn record_line(&self) -> u64 {
        self.record_line
    }

    /// The source.
    pub(crate) fn get_ref(&self) -> &R {
        &self.src
    }

    /// The source, mutably.
    pub(crate) fn get_mut(&mut self) -> &mut R {
        &mut self.src
    }

    /// The longest physical line allowed.
    pub(crate) fn max_line(&self) -> usize {
        self.max_line
    }

    /// Offers the buffered input, from the start of the next record, to
    /// `read`, which reads a record that is one whole line there and says
    /// where its newline is, or declines with `None` (anything it would
    /// have to interpret: the usual paths then read the record). Reads
    /// from the source first if nothing is buffered. Whether `read` took a
    /// record.
    #[inline]
    pub(crate) fn simple_line(&mut self, read: impl FnOnce(&[u8]) -> Option<usize>) -> bool {
        let Some(buf) = peek(&mut self.src, &mut self.pending) else { return false };
        let Some(end) = read(buf) else { return false };
        self.src.consume(end + 1);
        self.byte += end as u64 + 1;
        self.lines += 1;
        self.record_line = self.lines;
        true
    }

    /// Reads the next record and hands `visit` its bytes, its cells (ranges
    /// of those bytes), the line it starts on and whether its last cell is
    /// a quoted field still open at the end of the input; `Ok(None)` at the
    /// end of the input.
    #[inline]
    pub(crate) fn next<T>(
        &mut self,
        visit: impl FnOnce(&[u8], &[(usize, usize)], u64, bool) -> T,
    ) -> Result<Option<T>, RecordError> {
        loop {
            if let Some(e) = self.pending.take() {
                read_error(e, self.lines + 1)?;
            }
            let Some(buf) = filled(&mut self.src, self.lines + 1)? else { continue };
            if buf.is_empty() {
                return Ok(None);
            }
            match split_line(buf, self.max_line, &mut self.cells) {
                Some(0) => {
                    // A blank line.
                    self.src.consume(1);
                    self.byte += 1;
                    self.lines += 1;
                }
                Some(end) => {
                    let line = &buf[..end];
                    self.lines += 1;
                    self.record_line = self.lines;
                    let out = visit(line, &self.cells, self.record_line, false);
                    self.src.consume(end + 1);
                    self.byte += end as u64 + 1;
                    return Ok(Some(out));
                }
                _ => return self.next_general(visit),
            }
        }
    }

    /// [`next`](Self::next) through `csv_core`, from the start of a record
    /// that is not a blank line.
    #[inline(never)]
    fn next_general<T>(
        &mut self,
        visit: impl FnOnce(&[u8], &[(usize, usize)], u64, bool) -> T,
    ) -> Result<Option<T>, RecordError> {
        let line = self.lines + 1;
        let (mut out, mut ends) = (0, 0);
        // At the end of the input: whether the parser was handed the
        // newline that tells an open quote (see below), and its answer.
        let (mut probed, mut open) = (false, false);
        if self.core.is_none() {
            self.core = Some(csv_core::ReaderBuilder::new().terminator(csv_core::Terminator::Any(b'\n')).build());
            (self.data, self.ends) = (vec![0; 256], vec![0; 16]);
        }
        loop {
            let Some(buf) = filled(&mut self.src, self.lines + 1)? else { continue };
            let (allowed, too_long) = within_limit(buf, self.line_len, self.lines + 1, self.max_line);
            if allowed == 0
                && let Some(at) = too_long
            {
                return self.skip_long_line(at);
            }
            // At the end of the input `csv_core` ends the record whatever
            // its state, and does not say whether a quoted field was open
            // (nor can a copy of it be asked: its `Clone` leaves the tables
            // behind). So it is first handed a newline that is not in the
            // input: inside a quoted field the newline is a byte of the
            // field, written out; anywhere else it ends the record as the
            // end of the input would (or, between records, is skipped), and
            // nothing is written.
            let at_end = buf.is_empty();
            let input = if at_end && !probed { &b"\n"[..] } else { &buf[..allowed] };
            let (result, taken, written, ended) = self.core.as_mut().expect("built above").read_record(
                input,
                &mut self.data[out..],
                &mut self.ends[ends..],
            );
            if at_end {
                if taken == 1 {
                    (probed, open) = (true, written == 1);
                }
            } else {
                let newlines = memchr::memchr_iter(b'\n', &buf[..taken]).count();
                self.line_len = match memchr::memrchr(b'\n', &buf[..taken]) {
                    Some(last) => taken - last - 1,
                    None => self.line_len + taken,
                };
                self.lines += newlines as u64;
                self.src.consume(taken);
                self.byte += taken as u64;
            }
            out += written;
            ends += ended;
            match result {
                csv_core::ReadRecordResult::InputEmpty => {
                    if let Some(at) = too_long {
                        return self.skip_long_line(at);
                    }
                }
                csv_core::ReadRecordResult::OutputFull => {
                    let len = self.data.len();
                    self.data.resize(2 * len, 0);
                }
                csv_core::ReadRecordResult::OutputEndsFull => {
                    let len = self.ends.len();
                    self.ends.resize(2 * len, 0);
                }
                csv_core::ReadRecordResult::Record => {
                    if open {
                        // The newline handed in is the open field's last
                        // byte, not the input's.
                        out = out.saturating_sub(1);
                        if let Some(last) = self.ends[..ends].last_mut() {
                            *last = out;
                        }
                    }
                    self.cells.clear();
                    let mut start = 0;
                    for &end in &self.ends[..ends] {
                        self.cells.push((start, end));
                        start = end;
                    }
                    self.record_line = line;
                    return Ok(Some(visit(&self.data[..out], &self.cells, line, open)));
                }
                csv_core::ReadRecordResult::End => return Ok(None),
            }
        }
    }
}

impl<R: BufRead> CsvRecords<R> {
    /// Skips the rest of the physical line `at`, found longer than the
    /// limit, up to and including its newline (without buffering it), and
    /// leaves the parser at the start of a record.
    #[cold]
    fn skip_long_line<T>(&mut self, at: u64) -> Result<Option<T>, RecordError> {
        loop {
            let Some(buf) = filled(&mut self.src, at)? else { continue };
            if buf.is_empty() {
                break;
            }
            match memchr::memchr(b'\n', buf) {
                Some(end) => {
                    self.src.consume(end + 1);
                    self.byte += end as u64 + 1;
                    self.lines += 1;
                    break;
                }
                None => {
                    let n = buf.len();
                    self.src.consume(n);
                    self.byte += n as u64;
                }
            }
        }
        self.line_len = 0;
        if let Some(core) = &mut self.core {
            core.reset();
        }
        Err(RecordError::TooLong(at))
    }
}

/// `0x01` in every byte.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that equals `byte` (exactly: no
/// carry crosses from one byte into the next).
#[inline(always)]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    !(((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// If `buf` starts with a line of at most `max` bytes, ended by a `\n`
/// within `buf` and holding no quote: fills `cells` with the ranges between
/// its commas and returns where the `\n` is. Otherwise `None` (the general
/// path reads the record). Eight bytes at a time, comparing whole words:
/// cells are a few bytes long, shorter than a vectorised search needs to pay
/// for its call and set-up, and a byte loop spent 11 instructions a byte.
#[inline]
fn split_line(buf: &[u8], max: usize, cells: &mut Vec<(usize, usize)>) -> Option<usize> {
    cells.clear();
    let limit = buf.len().min(max.saturating_add(1));
    let mut start = 0;
    let mut at = 0;
    while let Some(chunk) = buf[..limit].get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let newline = bytes_equal(word, b'\n');
        let quote = bytes_equal(word, b'"');
        let mut commas = bytes_equal(word, b',');
        if newline | quote != 0 {
            if quote.trailing_zeros() < newline.trailing_zeros() {
                return None;
            }
            // Only the commas before the (first) newline.
            commas &= (newline & newline.wrapping_neg()) - 1;
        }
        while commas != 0 {
            let comma = at + (commas.trailing_zeros() / 8) as usize;
            cells.push((start, comma));
            start = comma + 1;
            commas &= commas - 1;
        }
        if newline != 0 {
            let end = at + (newline.trailing_zeros() / 8) as usize;
            cells.push((start, end));
            return Some(end);
        }
        at += 8;
    }
    for (i, &b) in buf[..limit].iter().enumerate().skip(at) {
        match b {
            b'\n' => {
                cells.push((start, i));
                return Some(i);
            }
            b'"' => return None,
            b',' => {
                cells.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// The buffer of `src` for a path that only looks at it (a simple line,
/// read in place): `None` while an error waits in `pending`, or after a
/// read that failed — its error kept in `pending` for the next read to
/// report, as some sources report an error only once (an interrupted read
/// is left for the next read to retry).
#[inline]
pub(crate) fn peek<'a, R: BufRead>(src: &'a mut R, pending: &mut Option<io::Error>) -> Option<&'a [u8]> {
    if pending.is_some() {
        return None;
    }
    match src.fill_buf() {
        Ok(buf) => Some(buf),
        Err(e) => {
            if e.kind() != io::ErrorKind::Interrupted {
                *pending = Some(e);
            }
            None
        }
    }
}

/// The buffer of `src`, or `None` after an interrupted read (the caller
/// tries again); another error is fatal, on `line`. (No retry loop here: a
/// function returning the buffer from one does not pass today's borrow
/// checker.)
#[inline]
fn filled<R: BufRead>(src: &mut R, line: u64) -> Result<Option<&[u8]>, Fatal> {
    match src.fill_buf() {
        Ok(buf) => Ok(Some(buf)),
        Err(e) => read_error(e, line).map(|()| None),
    }
}

/// An error of the input on `line`: fatal, except an interrupted read (the
/// caller tries again).
#[cold]
fn read_error(e: io::Error, line: u64) -> Result<(), Fatal> {
    if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err((line, format!("read error: {e}"))) }
}

/// How much of `buf` may be parsed next when the physical line being read,
/// on line `line`, already has `len` bytes: up to and including its first
/// newline (or all of it, without one), or, when that line would grow longer
/// than `max`, the bytes before the one that makes it so, with the line's
/// number. One line at a time: `csv_core` takes a record at a time, so
/// looking further would scan the rest of the buffer for every record (a
/// file of quoted cells, each record read through `csv_core`, took 20 times
/// as long as without quotes).
fn within_limit(buf: &[u8], len: usize, line: u64, max: usize) -> (usize, Option<u64>) {
    let segment = memchr::memchr(b'\n', buf).unwrap_or(buf.len());
    if len + segment > max {
        return (max - len, Some(line));
    }
    (if segment == buf.len() { segment } else { segment + 1 }, None)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Every record of `text`: its line and cells, read through a buffer of
    /// `capacity` bytes; or the fatal error.
    /// A record's line, cells and the offset after it.
    type Record = (u64, Vec<Vec<u8>>, u64);

    fn records(text: &[u8], capacity: usize, max_line: usize) -> Vec<Result<Record, RecordError>> {
        let src = io::BufReader::with_capacity(capacity, text);
        let mut r = CsvRecords::new(src, 0, 0, max_line);
        let mut out = Vec::new();
        loop {
            match r.next(|bytes, cells, line, _| (line, cells.iter().map(|&(a, b)| bytes[a..b].to_vec()).collect())) {
                Ok(Some((line, cells))) => out.push(Ok((line, cells, r.byte()))),
                Ok(None) => return out,
                // Reading goes on after a line too long.
                Err(e @ RecordError::TooLong(_)) => out.push(Err(e)),
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            }
        }
    }

    /// The same through the `csv` crate with the same dialect: its records'
    /// lines, cells and end offsets. (The crate gives a record that follows
    /// blank lines the line and offset of the first blank one; the line here
    /// is the record's own, so the blank lines are counted.)
    fn reference(text: &[u8]) -> Vec<Record> {
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_reader(text);
        let mut record = csv::ByteRecord::new();
        let mut out = Vec::new();
        while rdr.read_byte_record(&mut record).unwrap() {
            let start = record.position().unwrap();
            let blank = text[start.byte() as usize..].iter().take_while(|&&b| b == b'\n').count();
            let line = start.line() + blank as u64;
            out.push((line, record.iter().map(<[u8]>::to_vec).collect(), rdr.position().byte()));
        }
        out
    }

    fn csv_text() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => "[a-c0-9 ]{0,4}".prop_map(String::into_bytes),
            1 => "[a-c0-9 ]{5,20}".prop_map(String::into_bytes),
            2 => Just(b",".to_vec()),
            2 => Just(b"\n".to_vec()),
            1 => Just(b"\r\n".to_vec()),
            1 => Just(b"\"".to_vec()),
            1 => "\"[a,\n\r]{0,3}\"".prop_map(String::into_bytes),
            1 => Just(b"\"\"".to_vec()),
            1 => Just(b"\r".to_vec()),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Any text, read through buffers of 1 to 64 bytes: the records, lines
        /// and offsets of the `csv` crate.
        #[test]
        fn the_records_of_the_csv_crate(text in csv_text(), capacity in 1usize..64) {
            let got = records(&text, capacity, 1 << 20);
            let want: Vec<_> = reference(&text).into_iter().map(Ok).collect();
            prop_assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&text));
        }
    }

    /// Each record's `open` flag, read through a buffer of `capacity`
    /// bytes.
    fn open_flags(text: &[u8], capacity: usize) -> Vec<bool> {
        let mut r = CsvRecords::new(io::BufReader::with_capacity(capacity, text), 0, 0, 1 << 20);
        let mut out = Vec::new();
        while let Ok(Some(open)) = r.next(|_, _, _, open| open) {
            out.push(open);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Only the last record can be open, and it is exactly when the
        /// text ends inside a quoted field, through any buffer: `csv_core`'s
        /// answer against the parallel reader's block cutter
        /// (`parallel::scan_csv`), which follows the same rules on its own
        /// (a quote opens a field only at its start, after a comma or a
        /// `\n`; a doubled quote inside is a quote).
        #[test]
        fn the_last_record_is_open_when_the_text_ends_in_quotes(text in csv_text(), capacity in 1usize..64) {
            let flags = open_flags(&text, capacity);
            let (last, before) = match flags.split_last() {
                Some((&last, before)) => (last, before),
                None => (false, &[][..]),
            };
            prop_assert!(before.iter().all(|&open| !open), "{:?}", String::from_utf8_lossy(&text));
            prop_assert_eq!(last, crate::parallel::scan_csv(&text).1, "{:?}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn a_quote_open_at_the_end_marks_the_last_record() {
        for (text, want) in [
            (&b"a\n\"x\ny"[..], &[false, true][..]),
            (b"a\n\"x\ny\n", &[false, true]),
            (b"\"", &[true]),
            (b"a,\"", &[true]),
            (b"\"x\"\"", &[true]),
            (b"\"x\"\"\"", &[false]),
            (b"\"x\"", &[false]),
            (b"\"x\"y", &[false]),
            (b"a\"b", &[false]),
            (b"a\r\"b", &[false]),
            (b"a\n\n", &[false]),
            (b"", &[]),
        ] {
            for capacity in [1, 2, 64] {
                assert_eq!(open_flags(text, capacity), want, "{:?}", String::from_utf8_lossy(text));
            }
        }
        // The open cell holds the rest of the input, as in the `csv` crate.
        assert_eq!(records(b"1,\"a\nb\n", 4, 100), [Ok((1, vec![b"1".to_vec(), b"a\nb\n".to_vec()], 7))]);
    }

    #[test]
    fn blank_lines_quotes_and_a_last_line_without_newline() {
        let text = b"a,b\n\n\n\"x\ny\",\"q\"\"\"\r\n1,2";
        let got = records(text, 8, 100);
        let cells = |c: &[&str]| c.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            got,
            [Ok((1, cells(&["a", "b"]), 4)), Ok((4, cells(&["x\ny", "q\"\r"]), 19)), Ok((6, cells(&["1", "2"]), 22))]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_and_reading_goes_on() {
        let text = b"a,b\n12345678,9\nc,d\n";
        let cells = |c: &[&str]| c.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        for capacity in [1, 4, 64] {
            let got = records(text, capacity, 8);
            let want = [Ok((1, cells(&["a", "b"]), 4)), Err(RecordError::TooLong(2)), Ok((3, cells(&["c", "d"]), 19))];
            assert_eq!(got, want, "capacity {capacity}");
        }
        // Exactly at the limit is allowed, on either path.
        assert_eq!(records(b"1234,678\n\"1\",45678\n", 64, 8).len(), 2);
        // A quoted record whose second line is too long: skipped to that
        // line's end, then the next line is a record.
        let got = records(b"\"a\n123456789\"\nx,y\n", 64, 8);
        assert_eq!(got, [Err(RecordError::TooLong(2)), Ok((3, cells(&["x", "y"]), 18))]);
        // A last line too long, without a newline.
        assert_eq!(records(b"a\n123456789", 4, 8), [Ok((1, cells(&["a"]), 2)), Err(RecordError::TooLong(2))]);
    }

    #[test]
    fn split_line_finds_cells_newline_and_quotes_in_words() {
        let mut cells = Vec::new();
        assert_eq!(split_line(b"ab,cdefgh,ij\nk,l\n", 100, &mut cells), Some(12));
        assert_eq!(cells, [(0, 2), (3, 9), (10, 12)]);
        // Two newlines and commas after the first in one word.
        assert_eq!(split_line(b"a\nb,c\nd,", 100, &mut cells), Some(1));
        assert_eq!(cells, [(0, 1)]);
        // A quote after the newline does not matter; before it, it does.
        assert_eq!(split_line(b"1234567,\n\"", 100, &mut cells), Some(8));
        assert_eq!(split_line(b"1234567,9\"\n", 100, &mut cells), None);
        // No newline within the buffer, or not within the limit.
        assert_eq!(split_line(b"123456789,123", 100, &mut cells), None);
        assert_eq!(split_line(b"123456789\n", 8, &mut cells), None);
        assert_eq!(split_line(b"12345678\n", 8, &mut cells), Some(8));
        assert_eq!(split_line(b"\n", 8, &mut cells), Some(0));
    }

    /// A read interrupted by a signal is tried again, on either path.
    #[test]
    fn an_interrupted_read_is_tried_again() {
        struct Interrupting {
            chunks: Vec<&'static [u8]>,
        }
        impl io::Read for Interrupting {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match self.chunks.pop() {
                    Some(b"!") => Err(io::Error::from(io::ErrorKind::Interrupted)),
                    Some(chunk) => {
                        buf[..chunk.len()].copy_from_slice(chunk);
                        Ok(chunk.len())
                    }
                    None => Ok(0),
                }
            }
        }
        // Read from the back: an interrupt before the first line, one inside
        // a quoted cell (`2,"b` then `"`), one before the last line.
        let chunks = vec![&b"3,c\n"[..], b"!", b"\"\n", b"!", b"2,\"b", b"1,a\n", b"!"];
        let mut r = CsvRecords::new(io::BufReader::new(Interrupting { chunks }), 0, 0, 100);
        let mut got = Vec::new();
        while let Some(cells) = r
            .next(|bytes, cells, line, _| (line, cells.iter().map(|&(a, b)| bytes[a..b].to_vec()).collect::<Vec<_>>()))
            .unwrap()
        {
            got.push(cells);
        }
        let want: Vec<(u64, Vec<Vec<u8>>)> = vec![
            (1, vec![b"1".to_vec(), b"a".to_vec()]),
            (2, vec![b"2".to_vec(), b"b".to_vec()]),
            (3, vec![b"3".to_vec(), b"c".to_vec()]),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn within_limit_gives_one_line_and_cuts_a_long_one() {
        assert_eq!(within_limit(b"ab\ncdef\ng", 0, 1, 3), (3, None));
        assert_eq!(within_limit(b"cdef\ng", 0, 2, 3), (3, Some(2)));
        assert_eq!(within_limit(b"ab\nc", 1, 1, 3), (3, None));
        assert_eq!(within_limit(b"abc\nc", 1, 1, 3), (2, Some(1)));
        assert_eq!(within_limit(b"ab", 2, 5, 3), (1, Some(5)));
        assert_eq!(within_limit(b"ab", 1, 5, 3), (2, None));
    }
}
