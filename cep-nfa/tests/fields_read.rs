//! `Compiled::fields`: the fields a query file reads, which a reader may
//! keep alone (`Reader::keep_fields`). A field left out of it would be NULL
//! to the engine, and matches would be lost.

use cep_core::{Schema, TimeUnit};
use cep_nfa::compile::{Options, compile};

/// A closed field set, as a CSV header gives.
fn schema(names: &[&str]) -> Schema {
    let mut s = Schema::new();
    for name in names {
        s.field(name);
    }
    s.close_fields();
    s
}

fn fields_read(src: &str, names: &[&str]) -> Vec<&'static str> {
    let mut s = schema(names);
    let compiled = compile(src, &mut s, &Options { time_unit: TimeUnit::Millis })
        .unwrap_or_else(|e| panic!("{}", e.render(src, "q.cep")));
    compiled.fields.iter().map(|&id| s.field_name(id)).collect()
}

#[test]
fn every_kind_of_reference_counts() {
    let names = ["a", "unread", "key", "b", "c", "d", "e", "also_unread"];
    // A partition field, a condition, PREV, an aggregate, a trailing
    // negation's condition, and a second statement's field.
    let src = "QUERY one
        PATTERN SEQ(A x, B+ y, NOT C z WITHIN 5 s)
        WHERE [key] AND x.a > PREV(x.b) AND sum(y.c) > 3 AND z.d = x.a;
        QUERY two PATTERN SEQ(A p, A q) WHERE q.e > p.e;";
    assert_eq!(fields_read(src, &names), ["a", "key", "b", "c", "d", "e"]);
}

#[test]
fn ts_and_type_are_not_fields_and_nothing_repeats() {
    let names = ["price", "unread"];
    let src = "PATTERN SEQ(A x, B y) WHERE y.ts > x.ts AND y.price > x.price AND x.price > 1";
    assert_eq!(fields_read(src, &names), ["price"]);
}
