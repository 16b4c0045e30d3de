//! `REMOTE` declarations and remote conditions in the front end
//! (LANGUAGE.md §8): what compiles and how the plan shows it, the located
//! errors, and the reference matcher answering calls with a function.

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile};
use cep_nfa::syntax::parse;

const DECL: &str = "REMOTE near(mmsi int, lat float, lon float, ts int);\n";

fn errors(src: &str) -> Vec<(String, String)> {
    let err = compile(src, &mut Schema::new(), &Options::default()).unwrap_err();
    err.0
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.message.clone(), src[d.span.start as usize..d.span.end as usize].to_owned()))
        .collect()
}

#[test]
fn a_call_becomes_a_remote_condition_of_the_last_variable_it_names() {
    let src = format!(
        "{DECL}QUERY encounter PATTERN SEQ(AIS x, AIS y, AIS z) WHERE strict-contiguity AND [mmsi] \
         AND x.speed > 5 AND NOT near(y.mmsi, y.lat, y.lon, y.ts) AND near(x.mmsi, z.lat, z.lon, 7)"
    );
    let out = compile(&src, &mut Schema::new(), &Options::default()).unwrap();
    assert_eq!(out.remotes.len(), 1);
    assert_eq!(out.remotes[0].name, "near");
    let p = &out.programs[0];
    let on = |k: usize| p.elements[k].remote.iter().map(|c| (c.func, c.negated, c.text.clone())).collect::<Vec<_>>();
    assert_eq!(on(0), []);
    assert_eq!(on(1), [(0, true, "NOT near(y.mmsi, y.lat, y.lon, y.ts)".to_owned())]);
    assert_eq!(on(2), [(0, false, "near(x.mmsi, z.lat, z.lon, 7)".to_owned())]);
    let plan = cep_nfa::compile::plan::render(p);
    assert!(plan.contains("asking `near` (remote): NOT near(y.mmsi, y.lat, y.lon, y.ts)"), "{plan}");
    assert!(plan.contains("remote calls: as --remote-mode says (auto: lazy while"), "{plan}");
    let next = compile(
        &format!("{DECL}PATTERN SEQ(A a, B b) WHERE near(b.m, 1.0, 2.0, 3)"),
        &mut Schema::new(),
        &Options::default(),
    )
    .unwrap();
    let plan = cep_nfa::compile::plan::render(&next.programs[0]);
    assert!(plan.contains("remote calls: blocking in every mode (under skip-till-next-match"), "{plan}");
    // The arguments, converted to the declared types (an int for a float).
    let mut schema = Schema::new();
    let out =
        compile(&format!("{DECL}PATTERN AIS y WHERE near(y.m, 48, y.lon, y.ts)"), &mut schema, &Options::default())
            .unwrap();
    let c = &out.programs[0].elements[0].remote[0];
    let args: Vec<Value> = c.args.iter().map(|f| f(&[Value::Int(1), Value::Float(-4.5), Value::Int(9)], &[])).collect();
    // Frame slots are the compiler's; the constant is converted at least.
    assert_eq!(args[1], Value::Float(48.0));
}

#[test]
fn declarations_parse_with_every_type_and_none() {
    let f =
        parse("REMOTE f(a int, b float, c bool, d string); remote g(); PATTERN A a WHERE f(1, 2.5, true, 'x') AND g()")
            .unwrap();
    assert_eq!(f.remotes.len(), 2);
    assert_eq!(f.remotes[1].params.len(), 0);
    assert_eq!(f.statements.len(), 1);
    let e = parse("REMOTE f(a integer); PATTERN A a").unwrap_err();
    assert_eq!(e.message, "unknown type `integer`");
}

#[test]
fn errors_are_located() {
    let cases: [(String, &str, &str); 9] = [
        (format!("{DECL}PATTERN A a WHERE far(a.x)"), "unknown function `far`", "far"),
        (
            format!("{DECL}PATTERN A a WHERE near(a.x, a.y, a.z)"),
            "`near` takes 4 arguments, but this call has 3",
            "near(a.x, a.y, a.z)",
        ),
        (
            format!("{DECL}PATTERN A a WHERE near(a.m, 'north', a.lon, a.ts)"),
            "argument 2 of `near` (lat) is declared float, but this is a string",
            "'north'",
        ),
        (
            format!("{DECL}PATTERN A a WHERE a.x > 1 OR near(a.m, a.lat, a.lon, a.ts)"),
            "a call of remote function `near` must be a conjunct of its own",
            "near(a.m, a.lat, a.lon, a.ts)",
        ),
        (
            format!("{DECL}PATTERN SEQ(A+ a[], B b) WHERE near(a[i].m, 1.0, 2.0, 3)"),
            "a remote call on Kleene variable `a` is not supported",
            "a",
        ),
        (
            format!("{DECL}PATTERN SEQ(A a, NOT C c, B b) WHERE near(c.m, 1.0, 2.0, 3)"),
            "a remote call cannot name NOT variable `c`",
            "c",
        ),
        (
            format!("{DECL}PATTERN A a WHERE near(1, 1.0, 2.0, 3)"),
            "this call names no variable",
            "near(1, 1.0, 2.0, 3)",
        ),
        (format!("{DECL}{DECL}PATTERN A a"), "remote function `near` is declared twice", "near"),
        ("REMOTE abs(x int); PATTERN A a".to_owned(), "`abs` is a built-in function", "abs"),
    ];
    for (src, message, at) in cases {
        let got = errors(&src);
        assert!(got.iter().any(|(m, s)| m == message && s == at), "{src}\nwanted `{message}` at `{at}`, got {got:?}");
    }
}

#[test]
fn the_reference_answers_calls_with_the_function() {
    let src = format!(
        "{DECL}PATTERN SEQ(AIS x, AIS y) WHERE strict-contiguity AND [mmsi] AND near(y.mmsi, y.lat, y.lon, y.ts)"
    );
    let file = parse(&src).unwrap();
    let mut schema = Schema::new();
    let fns = compile(&src, &mut schema, &Options::default()).unwrap().remotes;
    let (m, lat, lon) = (schema.lookup("mmsi").unwrap(), schema.lookup("lat").unwrap(), schema.lookup("lon").unwrap());
    let width = schema.field_count();
    let event = |row: u64, ts: i64, vessel: i64| {
        let mut fields = vec![Value::Null; width];
        fields[m as usize] = Value::Int(vessel);
        fields[lat as usize] = Value::Int(48); // an int, converted to the declared float
        fields[lon as usize] = Value::Float(-4.5);
        Event::new(Sym::new("AIS"), ts, row, fields)
    };
    let events: Vec<Event> = (0..6).map(|i| event(i, i as i64 * 10, 7)).collect();
    // Near at even timestamps of 20s: rows 2 and 4 as y.
    let asked = std::cell::RefCell::new(Vec::new());
    let answer = |func: u16, args: &[Value]| {
        asked.borrow_mut().push((func, args.to_vec()));
        matches!(args[3], Value::Int(t) if t % 20 == 0)
    };
    let got =
        cep_nfa::reference::run_with_remote(&file.statements[0], &events, &schema, TimeUnit::Millis, &fns, &answer);
    let pairs: Vec<Vec<u64>> = got.iter().map(|m| m.vars.concat()).collect();
    assert_eq!(pairs, [vec![1, 2], vec![3, 4]]);
    assert!(asked.borrow().iter().all(|(f, a)| *f == 0 && a[1] == Value::Float(48.0) && a[0] == Value::Int(7)));
    // Without answers, a call is NULL: no match.
    assert!(cep_nfa::reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis).is_empty());
}
