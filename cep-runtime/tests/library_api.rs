//! The library's event, summary and program APIs on `Runtime`.

use std::sync::{Arc, Mutex};

use cep_core::{Event, Sym, Value};
use cep_runtime::runtime::{Output, Runtime};
use cep_runtime::{EventError, PushError};

fn collecting() -> (Arc<Mutex<Vec<String>>>, Output) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    (got, Output::Lines(Box::new(move |l| sink.lock().unwrap().push(l.to_owned()))))
}

#[test]
fn unknown_field_is_named_with_the_known_ones() {
    let (_, out) = collecting();
    let rt = Runtime::builder().query("PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x").build(out).unwrap();
    let err = rt.event("A", 1).set("k", 1).unwrap().set("y", 2).unwrap_err();
    assert_eq!(err, EventError::UnknownField { field: "y".into(), known: vec!["k".into(), "x".into()] });
    assert_eq!(err.to_string(), "unknown field `y`; the schema's fields are: k, x");
    let err = rt.event_from("A", 1, [("z", Value::Null)]).unwrap_err();
    assert!(matches!(err, EventError::UnknownField { ref field, .. } if field == "z"));
}

#[test]
fn extra_fields_are_refused_on_push() {
    for threads in [1, 2] {
        let (got, out) = collecting();
        let mut rt =
            Runtime::builder().query("QUERY q PATTERN SEQ(A a, B b) WHERE [k]").threads(threads).build(out).unwrap();
        let wide = Event::new(Sym::new("A"), 1, 0, vec![Value::Int(1), Value::Int(2)]);
        match rt.push(&wide) {
            Err(PushError::Event(EventError::TooManyFields { given: 2, known: 1 })) => {}
            other => panic!("{other:?}"),
        }
        // The runtime goes on: the refused event was not processed.
        let a = rt.event("A", 1).set("k", 1).unwrap().build();
        assert_eq!(a.row, 0, "a refused event takes no row");
        rt.push(&a).unwrap();
        rt.push(&rt.event("B", 2).set("k", 1).unwrap().build()).unwrap();
        let summary = rt.finish().unwrap();
        assert_eq!((summary.events, summary.matches.as_slice()), (2, &[1][..]));
        assert_eq!(got.lock().unwrap().len(), 1);
    }
}

#[test]
fn rows_are_numbered_by_push_unless_given() {
    let (got, out) = collecting();
    let mut rt = Runtime::builder().query("QUERY q PATTERN SEQ(A a, B b)").build(out).unwrap();
    let e = rt.event("X", 0).build();
    assert_eq!(e.row, 0);
    rt.push(&e).unwrap();
    let a = rt.event("A", 1).build();
    assert_eq!(a.row, 1);
    rt.push(&a).unwrap();
    let b = rt.event("B", 2).row(40).build();
    assert_eq!(b.row, 40);
    rt.push(&b).unwrap();
    assert_eq!(rt.event("C", 3).build().row, 3);
    rt.finish().unwrap();
    let lines = got.lock().unwrap();
    assert!(lines[0].contains(r#""vars":{"a":[1],"b":[40]}"#), "{}", lines[0]);
}

#[test]
fn removed_query_keeps_its_count_by_name() {
    for threads in [1, 2] {
        let (got, out) = collecting();
        let mut rt =
            Runtime::builder().query("QUERY kept PATTERN SEQ(A a, B b) WHERE [k]").threads(threads).build(out).unwrap();
        let mut ts = 0;
        let mut push = |rt: &mut Runtime, ty: &str, k: i64| {
            ts += 1;
            rt.push(&rt.event(ty, ts).set("k", k).unwrap().build()).unwrap();
        };
        push(&mut rt, "A", 1);
        rt.add_query("QUERY gone PATTERN SEQ(A a, C c) WHERE [k]").unwrap();
        for k in 0..10 {
            push(&mut rt, "A", k);
            push(&mut rt, "C", k);
        }
        assert!(rt.remove_query("gone").unwrap());
        for k in 0..10 {
            push(&mut rt, "A", k);
            push(&mut rt, "C", k);
            push(&mut rt, "B", k);
        }
        let summary = rt.finish().unwrap();
        let lines = got.lock().unwrap();
        let gone = lines.iter().filter(|l| l.contains(r#""query":"gone""#)).count() as u64;
        let kept = lines.iter().filter(|l| l.contains(r#""query":"kept""#)).count() as u64;
        assert_eq!((gone, kept), (10, 21), "threads {threads}");
        assert_eq!(summary.by_query(), [("kept", kept), ("gone", gone)], "threads {threads}");
        assert_eq!(summary.matches_of("gone"), 10);
        assert_eq!(summary.matches_of("none"), 0);
        assert_eq!(summary.matches, [21]);
    }
}

/// `SEQ(A a, B b) WHERE [k]` built with the typed builder, keyed by field
/// or by a closure.
fn ab_program(
    k: u32,
    by_field: bool,
) -> impl Fn() -> Result<cep_nfa::program::Program<Event>, cep_nfa::builder::BuildError> {
    move || {
        let mut p = cep_nfa::builder::PatternBuilder::<Event>::new("built");
        if by_field {
            p.partition_by_field("k", k);
        } else {
            p.partition_by(move |e: &Event| e.get(k));
        }
        p.element("a", |e: &Event| e.ty == Sym::new("A"));
        p.element("b", |e: &Event| e.ty == Sym::new("B"));
        p.build()
    }
}

#[test]
fn built_programs_run_like_their_query_on_every_thread_count() {
    let run = |threads: usize, program: Option<bool>| {
        let (got, out) = collecting();
        let mut schema = cep_core::Schema::new();
        let k = schema.field("k");
        let mut b = Runtime::builder().schema(schema).threads(threads);
        b = match program {
            Some(by_field) => b.program(ab_program(k, by_field)),
            None => b.query("QUERY built PATTERN SEQ(A a, B b) WHERE [k]"),
        };
        let mut rt = b.build(out).unwrap();
        for i in 0..300i64 {
            let ty = if i % 3 == 0 { "B" } else { "A" };
            rt.push(&rt.event(ty, i).set("k", i % 7).unwrap().build()).unwrap();
        }
        let summary = rt.finish().unwrap();
        let mut lines = got.lock().unwrap().clone();
        lines.sort();
        (summary.by_query().iter().map(|(q, n)| (q.to_string(), *n)).collect::<Vec<_>>(), lines)
    };
    let want = run(1, None);
    assert!(want.0[0].1 > 0);
    for threads in [1, 2, 3] {
        for by_field in [true, false] {
            let got = run(threads, Some(by_field));
            assert_eq!(got.0, want.0, "threads {threads}, by field {by_field}");
            // The same lines, as a multiset.
            assert_eq!(got.1, want.1, "threads {threads}, by field {by_field}");
        }
    }
}

#[test]
fn added_program_starts_at_the_watermark_and_a_bad_one_is_refused() {
    for threads in [1, 2] {
        let (got, out) = collecting();
        let mut schema = cep_core::Schema::new();
        let k = schema.field("k");
        let mut rt = Runtime::builder().schema(schema).threads(threads).build(out).unwrap();
        rt.push(&rt.event("A", 0).set("k", 1).unwrap().build()).unwrap();
        rt.add_program(ab_program(k, true)).unwrap();
        rt.push(&rt.event("B", 1).set("k", 1).unwrap().build()).unwrap();
        rt.push(&rt.event("A", 2).set("k", 1).unwrap().build()).unwrap();
        rt.push(&rt.event("B", 3).set("k", 1).unwrap().build()).unwrap();
        let err = rt.add_program(|| cep_nfa::builder::PatternBuilder::<Event>::new("empty").build()).unwrap_err();
        assert!(matches!(err.kind(), cep_runtime::job::JobErrorKind::Pattern(_)), "{err}");
        assert_eq!(err.to_string(), "invalid pattern: a pattern needs at least one element");
        assert_eq!(rt.finish().unwrap().by_query(), [("built", 1)]);
        let lines = got.lock().unwrap();
        assert!(lines[0].contains(r#""vars":{"a":[2],"b":[3]}"#), "{}", lines[0]);
    }
}
