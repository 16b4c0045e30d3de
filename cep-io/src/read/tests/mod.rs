//! The plain reader's unit tests, by topic: CSV ([`csv`]), JSON lines
//! ([`jsonl`]), and the property tests that hold the fast paths to the
//! general ones ([`paths`]); the helpers they share are here.

use super::csv::fast::simple_record;
use super::jsonl::fast::{simple_object, string_stops};
use super::jsonl::serde::{RowCtx, nth_number};
use super::strings::*;
use super::*;
use cep_core::Kind;
use cep_core::cell::parse_cell;
use proptest::prelude::*;
use std::io::Read;

thread_local! {
    /// Header names compared on this thread (see `ColName`).
    pub(crate) static NAME_COMPARES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

mod csv;
mod jsonl;
mod paths;

fn csv_reader(text: &str) -> Reader<&[u8]> {
    Reader::new(text.as_bytes(), "t.csv", Format::Csv).unwrap()
}

fn json_reader(text: &str) -> Reader<&[u8]> {
    Reader::new(text.as_bytes(), "t.jsonl", Format::Jsonl).unwrap()
}

fn fatal(text: &str) -> ReadError {
    let e = Reader::new(text.as_bytes(), "t.csv", Format::Csv).unwrap_err();
    assert_eq!(e.kind, ReadErrorKind::Fatal);
    assert_eq!(e.row, None);
    e
}

/// Reads everything: each row as an event or the error's display.
fn all<R: BufRead>(r: &mut Reader<R>) -> Vec<Result<Event, ReadError>> {
    let mut out = Vec::new();
    let mut e = Event::default();
    loop {
        match r.next_event(&mut e) {
            Ok(true) => out.push(Ok(e.clone())),
            Ok(false) => return out,
            Err(err) if err.kind == ReadErrorKind::BadRow => out.push(Err(err)),
            Err(err) => {
                out.push(Err(err));
                return out;
            }
        }
    }
}

/// Each row as `Ok(fields)` or `Err(message)`.
fn rows_of<R: BufRead>(r: &mut Reader<R>) -> Vec<Result<Vec<Value>, String>> {
    all(r).into_iter().map(|row| row.map(|e| e.fields).map_err(|e| e.message)).collect()
}

fn one_csv(text: &str) -> Result<Event, ReadError> {
    let mut r = csv_reader(text);
    let mut v = all(&mut r);
    assert_eq!(v.len(), 1, "{v:?}");
    v.pop().unwrap()
}

fn one_json(text: &str) -> Result<Event, ReadError> {
    let mut r = json_reader(text);
    let mut v = all(&mut r);
    assert_eq!(v.len(), 1, "{v:?}");
    v.pop().unwrap()
}

fn csv_err(text: &str) -> String {
    one_csv(text).unwrap_err().to_string()
}

fn json_err(text: &str) -> String {
    one_json(text).unwrap_err().to_string()
}

fn cell(text: &str) -> Value {
    one_csv(&format!("ts,x\n0,{text}\n")).unwrap().fields[0]
}

fn json_field(value: &str) -> Value {
    let e = one_json(&format!("{{\"ts\":0,\"x\":{value}}}")).unwrap();
    e.get(0)
}
