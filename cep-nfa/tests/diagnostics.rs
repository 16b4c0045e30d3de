//! Every semantic check of the compiler: the message says what is wrong and
//! the span points at the offending text.

use cep_core::{Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile};

/// A complete schema: types A and B with int field x and string field s.
fn schema() -> Schema {
    let mut s = Schema::new();
    s.field("x");
    s.field("s");
    s.field("only_b");
    s.observe(Sym::new("A"), &[Value::Int(1), Value::str("a"), Value::Null]);
    s.observe(Sym::new("B"), &[Value::Int(2), Value::str("b"), Value::Int(3)]);
    s.close_fields();
    s.set_complete(true);
    s
}

/// Compiles `src`, expects an error containing `msg` whose span covers `at`.
fn error(src: &str, msg: &str, at: &str) {
    error_with(src, msg, at, &Options::default())
}

fn error_with(src: &str, msg: &str, at: &str, opts: &Options) {
    let mut s = schema();
    let err = match compile(src, &mut s, opts) {
        Ok(_) => panic!("expected an error `{msg}` for:\n{src}"),
        Err(e) => e,
    };
    let d = err.0.iter().find(|d| d.message.contains(msg)).unwrap_or_else(|| {
        panic!("no error `{msg}` for:\n{src}\ngot:\n{}", err.render(src, "q.cep"));
    });
    let text = &src[d.span.start as usize..d.span.end as usize];
    assert!(text.contains(at), "error `{}` points at `{text}`, expected `{at}`", d.message);
    let rendered = d.render(src, "q.cep");
    assert!(rendered.starts_with("error: q.cep:"), "{rendered}");
    assert!(rendered.contains('^'), "{rendered}");
}

/// Compiles `src` against `s`, expects it to compile with a warning
/// containing `msg` whose span covers `at`; returns the rendered warning.
fn warning_in(s: &mut Schema, src: &str, msg: &str, at: &str) -> String {
    let out = match compile(src, s, &Options::default()) {
        Ok(out) => out,
        Err(e) => panic!("expected a warning `{msg}`, got errors for:\n{src}\n{}", e.render(src, "q.cep")),
    };
    let w = out.warnings.iter().find(|w| w.message.contains(msg)).unwrap_or_else(|| {
        panic!("no warning `{msg}` for:\n{src}\ngot: {:?}", out.warnings);
    });
    let text = &src[w.span.start as usize..w.span.end as usize];
    assert!(text.contains(at), "warning `{}` points at `{text}`, expected `{at}`", w.message);
    let rendered = w.render(src, "q.cep");
    assert!(rendered.starts_with("warning: q.cep:"), "{rendered}");
    rendered
}

/// [`warning_in`] against the complete schema.
fn warning(src: &str, msg: &str, at: &str) -> String {
    warning_in(&mut schema(), src, msg, at)
}

#[test]
fn unknown_variable() {
    error("PATTERN SEQ(A a, B b) WHERE c.x > 1", "unknown variable `c`", "c");
}

#[test]
fn duplicate_variable() {
    error("PATTERN SEQ(A a, B a)", "declared twice", "a");
}

#[test]
fn unknown_field_in_closed_schema() {
    error("PATTERN SEQ(A a, B b) WHERE a.prce > 1", "unknown field `prce`", "prce");
}

#[test]
fn unknown_field_note_without_field_columns() {
    // A header with only `ts` (and perhaps `type`): the note lists `ts` alone.
    let mut s = Schema::new();
    s.observe(Sym::new("A"), &[]);
    s.close_fields();
    s.set_complete(true);
    let src = "PATTERN A a WHERE a.x > 1";
    let err = compile(src, &mut s, &Options::default()).unwrap_err();
    let r = err.render(src, "q.cep");
    assert!(r.contains("unknown field `x`"), "{r}");
    assert!(r.contains("= the input's fields are: ts\n"), "{r}");
    // With field columns they follow `ts`.
    let src = "PATTERN SEQ(A a, B b) WHERE a.prce > 1";
    let r = compile(src, &mut schema(), &Options::default()).unwrap_err().render(src, "q.cep");
    assert!(r.contains("= the input's fields are: ts, x, s, only_b\n"), "{r}");
    // A wide header: the first 20 names, and how many more.
    let mut s = Schema::new();
    for i in 0..1000 {
        s.field(&format!("c{i}"));
    }
    s.observe(Sym::new("A"), &[]);
    s.close_fields();
    let src = "PATTERN A a WHERE a.x > 1";
    let r = compile(src, &mut s, &Options::default()).unwrap_err().render(src, "q.cep");
    assert!(r.contains("= the input's fields are: ts, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18 and 981 more\n"), "{r}");
}

/// A known field that never appears in events of a type is a warning even
/// when the whole input was read: it depends on the data, and a missing
/// field is NULL.
#[test]
fn field_never_seen_for_type() {
    let r = warning("PATTERN SEQ(A a, B b) WHERE a.only_b > 1", "never appears in events of type A", "only_b");
    assert!(r.starts_with("warning: q.cep:1:31: field `only_b` never appears in events of type A"), "{r}");
    // Only some rows read (a read-ahead): the field may come later.
    let mut s = schema();
    s.set_complete(false);
    let r = warning_in(&mut s, "PATTERN SEQ(A a, B b) WHERE a.only_b > 1", "has not appeared in the first", "only_b");
    assert!(!r.contains("never appears"), "{r}");
    assert!(r.contains("events of type A (read ahead)") && r.contains("it may appear later"), "{r}");
}

/// A type the whole input does not show is a warning, not an error: a type
/// that does not occur is valid (a trailing `NOT` of it never blocks).
#[test]
fn unknown_type() {
    let r = warning("PATTERN SEQ(A a, Tck b)", "type `Tck` does not appear in the input", "Tck");
    assert!(r.contains("= types in the input: A, B"), "{r}");
    let out = compile("PATTERN SEQ(A a, NOT Tck n WITHIN 10)", &mut schema(), &Options::default()).unwrap();
    assert_eq!(out.programs.len(), 1);
    assert!(out.warnings.iter().any(|w| w.message.contains("`Tck` does not appear")), "{:?}", out.warnings);
}

/// When the input's form fixes its types (a CSV file without a `type`
/// column holds only `Event`), another type can never occur: an error.
#[test]
fn unknown_type_when_types_are_closed() {
    let mut s = Schema::new();
    s.field("x");
    s.declare_type(Sym::new("Event"));
    s.close_fields();
    s.set_complete(true);
    s.close_types();
    let src = "PATTERN SEQ(Event e, Tck b)";
    let err = compile(src, &mut s, &Options::default()).unwrap_err();
    let d = err.0.iter().find(|d| d.message == "unknown type `Tck`").unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!(&src[d.span.start as usize..d.span.end as usize], "Tck");
    let r = d.render(src, "q.cep");
    assert!(r.starts_with("error: q.cep:1:22: unknown type `Tck`"), "{r}");
    assert!(r.contains("= the input can only hold events of type Event"), "{r}");
    // Even before any event was read, and the declared type itself is fine.
    let mut s2 = s.clone();
    s2.set_complete(false);
    assert!(compile(src, &mut s2, &Options::default()).is_err());
    assert!(compile("PATTERN Event e WHERE e.x > 1", &mut s, &Options::default()).is_ok());
}

#[test]
fn leading_not() {
    error("PATTERN SEQ(NOT A n, B b)", "cannot start with NOT", "NOT A n");
}

#[test]
fn trailing_not_without_within() {
    error("PATTERN SEQ(A a, NOT B n)", "needs a WITHIN of its own", "NOT B n");
}

#[test]
fn middle_not_with_within() {
    error("PATTERN SEQ(A a, NOT B n WITHIN 5, A c)", "takes no WITHIN", "5");
}

#[test]
fn two_trailing_nots() {
    error("PATTERN SEQ(A a, NOT B n WITHIN 5, NOT A m WITHIN 5)", "at most one trailing NOT", "NOT");
}

#[test]
fn quantified_not() {
    error("PATTERN SEQ(A a, NOT B+ n, A c)", "cannot be quantified (`+`)", "n");
    error("PATTERN SEQ(A a, NOT B c[], A d)", "cannot be quantified (`[]`)", "c");
    error("PATTERN SEQ(A a, NOT B* c[], A d)", "cannot be quantified (`*`, `[]`)", "c");
}

#[test]
fn previous_index_on_single_variable() {
    error("PATTERN SEQ(A a, B b) WHERE b[i-1].x > 1", "cannot be indexed", "b[i-1].x");
}

#[test]
fn aggregate_on_single_variable() {
    error("PATTERN SEQ(A a, B b) WHERE sum(a.x) > 1", "needs a Kleene variable", "sum(a.x)");
}

#[test]
fn candidate_index_outside_own_conditions() {
    error("PATTERN SEQ(A+ a[], B b) WHERE b.x > a[i].x", "can only be used in conditions on `a`", "a[i].x");
}

#[test]
fn skip_to_unknown_variable() {
    error("PATTERN SEQ(A a, B b) AFTER MATCH SKIP TO LAST z", "unknown variable `z`", "z");
}

#[test]
fn select_with_skip() {
    error("PATTERN SEQ(A a, B b) SELECT EARLIEST AFTER MATCH SKIP PAST LAST EVENT", "cannot be combined", "AFTER");
}

#[test]
fn nesting_too_deep() {
    let src = format!("PATTERN A a WHERE {}a.x{} > 1", "(".repeat(100), ")".repeat(100));
    error(&src, "nested deeper than 64", "(");
}

#[test]
fn string_compared_with_number() {
    error("PATTERN SEQ(A a, B b) WHERE b.ts > 'x'", "comparing an int with a string is always false", "b.ts > 'x'");
    error("PATTERN SEQ(A a, B b) WHERE b.type = count(a)", "comparing a string with an int", "b.type = count(a)");
}

#[test]
fn arithmetic_on_strings() {
    error("PATTERN SEQ(A a, B b) WHERE b.type + 1 > 3", "needs numbers", "b.type");
}

#[test]
fn condition_that_is_not_a_condition() {
    error("PATTERN SEQ(A a, B b) WHERE b.ts + 1", "must be true or false", "b.ts + 1");
}

/// The kinds a schema has seen are those of the input read so far, not a
/// rule of its form (a CSV cell or a JSON value of any kind may come later),
/// so a type error that only they make is a warning, and the query runs.
#[test]
fn kinds_seen_so_far_give_warnings_not_errors() {
    let cases = [
        ("PATTERN SEQ(A a, B b) WHERE b.s > 3", "comparing a string with an int is always false", "b.s > 3"),
        ("PATTERN SEQ(A a, B b) WHERE b.s > a.x", "comparing a string with an int", "b.s > a.x"),
        ("PATTERN SEQ(A a, B b) WHERE b.s + 1 > 3", "needs numbers", "b.s"),
        ("PATTERN SEQ(A a, B b) WHERE -b.s < 3", "cannot negate", "-b.s"),
        ("PATTERN SEQ(A a, B b) WHERE b.x + 1", "must be true or false", "b.x + 1"),
        ("PATTERN SEQ(A+ a[], B b) WHERE sum(a.s) > 1", "needs numbers", "sum(a.s)"),
    ];
    for (src, msg, at) in cases {
        let rendered = warning(src, msg, at);
        assert!(rendered.contains("seen in the input so far"), "{rendered}");
    }
    // A certain error beside a guessed one: the certain one stands, and the
    // guessed one is still reported, as a warning.
    let src = "PATTERN SEQ(A a, B b) WHERE b.s > 3 AND b.ts > 'x'";
    let err = compile(src, &mut schema(), &Options::default()).unwrap_err();
    let errors: Vec<&str> = err.0.iter().filter(|d| d.is_error()).map(|d| d.message.as_str()).collect();
    assert_eq!(errors, ["comparing an int with a string is always false"], "{}", err.render(src, "q.cep"));
    assert!(err.0.iter().any(|d| !d.is_error() && d.message.contains("comparing a string with an int")));
}

#[test]
fn condition_without_variable() {
    error("PATTERN SEQ(A a, B b) WHERE 1 = 1", "names no variable", "1 = 1");
}

#[test]
fn brackets_on_single_variable() {
    error("PATTERN SEQ(A a[], B b)", "marks a Kleene variable", "a");
}

#[test]
fn integer_literal_beyond_i64() {
    error("PATTERN A a WHERE a.x > 9223372036854775808", "does not fit in 64 bits", "9223372036854775808");
}

#[test]
fn duration_not_whole_in_time_unit() {
    let opts = Options { time_unit: TimeUnit::Seconds };
    error_with("PATTERN SEQ(A a, B b) WITHIN 500 ms", "not a whole number of timestamp units", "500 ms", &opts);
}

#[test]
fn conflicting_partitions() {
    error("PATTERN SEQ(A a, B b) WHERE [x] PARTITION BY s", "conflicts", "[x]");
}

#[test]
fn syntax_error_at_end_of_file() {
    let src = "PATTERN SEQ(A a, B b) WHERE a.x >";
    let mut s = schema();
    let err = compile(src, &mut s, &Options::default()).unwrap_err();
    let r = err.render(src, "q.cep");
    assert!(r.starts_with("error: q.cep:1:34: expected an expression, found the end of the query"), "{r}");
}

#[test]
fn partial_schema_gives_warnings_not_errors() {
    let mut s = schema();
    s.set_complete(false);
    let out = compile("PATTERN SEQ(A a, Tck b)", &mut s, &Options::default()).unwrap();
    assert!(out.warnings.iter().any(|w| w.message.contains("has not been seen")));
}

#[test]
fn two_queries_with_one_name() {
    error("QUERY q PATTERN A a; QUERY q PATTERN B b", "already defined", "q");
}

#[test]
fn too_many_elements() {
    let elems: Vec<String> = (0..65).map(|i| format!("A a{i}")).collect();
    let src = format!("PATTERN SEQ({})", elems.join(", "));
    error(&src, "at most 64 positive", "A a64");
}

// ---------------------------------------------------------------------------
// EMIT (LANGUAGE.md §5): each error points at the item's offending text.

#[test]
fn emit_unknown_variable() {
    error("PATTERN SEQ(A a, B b) EMIT a.x, c.x AS cx", "unknown variable `c`", "c");
    error("PATTERN SEQ(A a, B b) EMIT max(z.x)", "unknown variable `z`", "z");
}

#[test]
fn emit_not_variable() {
    error("PATTERN SEQ(A a, NOT B n, A c) EMIT n.x", "EMIT cannot read `n`: it is a NOT variable", "n");
    error("PATTERN SEQ(A a, B b, NOT A t WITHIN 5) EMIT count(t)", "EMIT cannot read `t`: it is a NOT variable", "t");
}

#[test]
fn emit_star_of_unknown_or_not_variable() {
    error("PATTERN SEQ(A a, B b) EMIT q.*", "unknown variable `q`", "q");
    error("PATTERN SEQ(A a, NOT B n, A c) EMIT a.*, n.*", "`.*` cannot read `n`: it is a NOT variable", "n");
}

#[test]
fn emit_duplicate_names() {
    // Two AS names, a derived name twice, and a `.*` item against an AS.
    error("PATTERN SEQ(A a, B b) EMIT a.x AS v, b.x AS v", "two EMIT items are named `v`", "v");
    error("PATTERN SEQ(A a, B b) EMIT a.x, b.x, a.x", "two EMIT items are named `a.x`", "a.x");
    error("PATTERN SEQ(A a, B b) EMIT a.*, b.x AS a", "two EMIT items are named `a`", "a");
}

#[test]
fn emit_type_errors() {
    // Types checked as in conditions: certain types (`ts`, `type`) make
    // errors, the kinds a field was seen with warnings.
    error("PATTERN SEQ(A a, B b) EMIT a.type + 1 AS bad", "`+` needs numbers, but this is a string", "a.type");
    error("PATTERN SEQ(A a, B b) EMIT a.ts = 'x'", "comparing an int with a string is always false", "a.ts = 'x'");
    error("PATTERN SEQ(A a, B b) EMIT sum(a.x)", "sum needs a Kleene variable", "sum(a.x)");
    error("PATTERN SEQ(A a, B+ b[]) EMIT b[i].x", "can only be used in conditions on `b` itself", "b[i].x");
    warning("PATTERN SEQ(A a, B b) EMIT a.s + 1 AS guess", "needs numbers", "a.s");
    // An item need not be true or false.
    let mut s = schema();
    assert!(compile("PATTERN SEQ(A a, B b) EMIT a.x + 1, a.s, a.x > 1", &mut s, &Options::default()).is_ok());
}

#[test]
fn emit_star_takes_no_alias() {
    let src = "PATTERN SEQ(A a, B b) EMIT a.* AS z";
    let e = cep_nfa::syntax::parse(src).unwrap_err();
    assert!(e.message.contains("`a.*` takes no `AS`"), "{}", e.message);
    assert_eq!(&src[e.span.start as usize..e.span.end as usize], "AS");
}

#[test]
fn emit_items_compile_and_are_named() {
    let mut s = schema();
    let src = "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > a.x AFTER MATCH SKIP PAST LAST EVENT \
               EMIT ( a.x + 1 ) * 2, max( b.x ) AS top, b.*, count(b)";
    let p = compile(src, &mut s, &Options::default()).unwrap().programs.remove(0);
    let names: Vec<&str> = p.emit.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["( a.x + 1 ) * 2", "top", "b", "count(b)"]);
}
