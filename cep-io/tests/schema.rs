//! What reading a file tells a [`Schema`]: whether its types and fields
//! are closed.

use cep_core::{Event, Schema};
use cep_io::{Format, Reader};

fn csv_schema(text: &str) -> Schema {
    let mut r = Reader::new(text.as_bytes(), "t.csv", Format::Csv).unwrap();
    let mut e = Event::default();
    while r.next_event(&mut e).unwrap() {}
    r.schema().clone()
}

/// Only a CSV file without a `type` column has its types fixed by its
/// form; reading a whole file with a `type` column, or JSON lines, makes
/// no closed type set (another type is absent, not impossible).
#[test]
fn types_are_closed_only_by_a_typeless_csv_header() {
    let s = Schema::new();
    assert!(!s.types_closed() && !s.fields_closed() && !s.is_complete());

    let typeless = csv_schema("ts,x\n0,1\n");
    assert!(typeless.types_closed() && typeless.fields_closed() && typeless.is_complete());
    assert_eq!(typeless.type_names(), ["Event"]);

    let typed = csv_schema("ts,type,x\n0,A,1\n");
    assert!(!typed.types_closed() && typed.fields_closed());

    let mut r = Reader::new(&b"{\"ts\":0,\"type\":\"A\"}\n"[..], "t.jsonl", Format::Jsonl).unwrap();
    let mut e = Event::default();
    while r.next_event(&mut e).unwrap() {}
    assert!(!r.schema().types_closed() && !r.schema().fields_closed());

    let mut s = Schema::new();
    s.close_types();
    assert!(s.types_closed() && !s.is_complete(), "closing the types says nothing of the observations");
}
