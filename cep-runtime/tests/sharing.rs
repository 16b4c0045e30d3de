//! Queries that share one program (`Runner::with_shared_engines`,
//! `cep_nfa::share`) give the output of one engine per query, line for
//! line and in the same order: for random families of strict-contiguity
//! queries that differ in one-variable conditions (with shared
//! two-variable conditions, windows, partitions, `EMIT` values), with
//! other queries between them, on random keyed streams; across a
//! checkpoint and restore; when queries are added and removed while
//! events flow; and on two shard threads, in one thread's order.

use cep_core::{Event, Schema};
use cep_nfa::compile::{Options, compile};
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_runtime::{JsonLines, Output, Runner, Runtime};
use cep_testkit::arb::{arb_events, config};
use proptest::prelude::*;

/// One family: a shape, and each member's own conditions.
#[derive(Clone, Debug)]
struct Family {
    types: Vec<&'static str>,
    partitioned: bool,
    shared: Option<String>,
    window: Option<u8>,
    emit: bool,
    /// Per member, per element: its own conditions there (as text).
    own: Vec<Vec<Vec<String>>>,
}

impl Family {
    fn render(&self) -> Vec<String> {
        let vars = ["a", "b", "c"];
        let elems: Vec<String> = self.types.iter().zip(vars).map(|(t, v)| format!("{t} {v}")).collect();
        self.own
            .iter()
            .map(|own| {
                let mut wh = vec!["strict-contiguity".to_owned()];
                if self.partitioned {
                    wh.push("[k]".to_owned());
                }
                wh.extend(self.shared.clone());
                for (conds, v) in own.iter().zip(vars) {
                    wh.extend(conds.iter().map(|c| c.replace('@', v)));
                }
                let mut q = format!("PATTERN SEQ({}) WHERE {}", elems.join(", "), wh.join(" AND "));
                if let Some(w) = self.window {
                    q.push_str(&format!(" WITHIN {w}"));
                }
                if self.emit {
                    q.push_str(" EMIT b.x - a.x AS d, count(a) AS n");
                }
                q
            })
            .collect()
    }
}

fn arb_family() -> impl Strategy<Value = Family> {
    let ty = prop_oneof![Just("A"), Just("B"), Just("(A|C)")];
    // Per element, the field its members test (none: no own condition):
    // members read the same fields, or they would not share a frame.
    let field = prop::option::weighted(0.8, prop_oneof![Just("x"), Just("y")]);
    let fields = prop::collection::vec(field, 3);
    (2usize..=3, prop::collection::vec(ty, 3), fields, any::<bool>(), 0u8..3, prop::option::of(1u8..=6), any::<bool>())
        .prop_flat_map(move |(n, types, fields, partitioned, shared, window, emit)| {
            let fields = fields[..n].to_vec();
            // One or two conditions on the element's field (`@` stands for
            // the variable): compared with an int or a float constant, on
            // either side, or with an operator no index takes.
            let conds: Vec<BoxedStrategy<Vec<String>>> = fields
                .iter()
                .map(|f| match *f {
                    Some(f) => {
                        let c = prop_oneof![
                            (0i64..=4).prop_map(|c| c.to_string()),
                            Just("1.5".to_owned()),
                            Just("2.0".to_owned())
                        ];
                        let op = prop_oneof![Just(">"), Just(">="), Just("<"), Just("<="), Just("!=")];
                        let one = (op, c, any::<bool>()).prop_map(move |(op, c, flip)| match flip {
                            false => format!("@.{f} {op} {c}"),
                            true => {
                                let back = match op {
                                    ">" => "<",
                                    ">=" => "<=",
                                    "<" => ">",
                                    "<=" => ">=",
                                    other => other,
                                };
                                format!("{c} {back} @.{f}")
                            }
                        });
                        prop::collection::vec(one, 1..=2).boxed()
                    }
                    None => Just(Vec::new()).boxed(),
                })
                .collect();
            (2usize..=5).prop_flat_map(move |m| prop::collection::vec(conds.clone(), m)).prop_map(move |own| {
                let shared = match shared {
                    0 => None,
                    1 => Some("b.x >= a.x".to_owned()),
                    _ => Some("a.y < 3".to_owned()),
                };
                Family { types: types[..n].to_vec(), partitioned, shared, window, emit, own }
            })
        })
}

/// A query file: the families' members in order, with a query that shares
/// nothing between some of them.
fn arb_file() -> impl Strategy<Value = String> {
    (prop::collection::vec((arb_family(), any::<bool>()), 1..=3)).prop_map(|fams| {
        let mut text = String::new();
        for (i, (f, other)) in fams.iter().enumerate() {
            for (j, q) in f.render().into_iter().enumerate() {
                text.push_str(&format!("QUERY f{i}m{j} {q};\n"));
            }
            if *other {
                text.push_str(&format!("QUERY other{i} PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 5;\n"));
            }
        }
        text
    })
}

fn runner(text: &str, schema: &Schema, shared: bool) -> Runner {
    let mut schema = schema.clone();
    let programs = compile(text, &mut schema, &Options::default()).expect("the generated queries compile").programs;
    if shared {
        Runner::with_shared_engines(programs, EngineChoice::Auto, Construction::Direct).unwrap()
    } else {
        Runner::new(programs)
    }
}

fn output(runner: &mut Runner, events: &[Event]) -> Vec<String> {
    let mut sink = JsonLines::new(Vec::new());
    for e in events {
        runner.push(e, &mut sink).unwrap();
    }
    runner.finish(&mut sink).unwrap();
    String::from_utf8(sink.into_inner().unwrap()).unwrap().lines().map(str::to_owned).collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn shared_engines_give_every_querys_own_output((text, (events, schema)) in (arb_file(), arb_events())) {
        let mut one_each = runner(&text, &schema, false);
        let mut shared = runner(&text, &schema, true);
        prop_assert!(shared.engine_count() < one_each.engine_count(), "a family shares one engine:\n{text}");
        let want = output(&mut one_each, &events);
        let got = output(&mut shared, &events);
        prop_assert_eq!(got, want, "{}", text);
        prop_assert_eq!(shared.summary().matches.clone(), one_each.summary().matches.clone());
    }

    #[test]
    fn a_shared_runner_resumes_from_its_checkpoint(
        (text, (events, schema)) in (arb_file(), arb_events()),
        cut in 0usize..=14,
    ) {
        let cut = cut.min(events.len());
        let want = output(&mut runner(&text, &schema, false), &events);
        let mut first = runner(&text, &schema, true);
        let mut sink = JsonLines::new(Vec::new());
        for e in &events[..cut] {
            first.push(e, &mut sink).unwrap();
        }
        let snap = first.snapshot().unwrap();
        let mut second = runner(&text, &schema, true);
        second.restore(snap).unwrap();
        for e in &events[cut..] {
            second.push(e, &mut sink).unwrap();
        }
        second.finish(&mut sink).unwrap();
        let got: Vec<String> = String::from_utf8(sink.into_inner().unwrap()).unwrap().lines().map(str::to_owned).collect();
        prop_assert_eq!(got, want, "{}", text);
    }

    #[test]
    fn members_can_be_removed_and_queries_added_while_events_flow(
        (text, (events, schema)) in (arb_file(), arb_events()),
        cut in 0usize..=14,
        victim in 0usize..8,
    ) {
        // Remove one query at `cut` and add one: the shared runner and the
        // one with an engine per query still agree.
        let cut = cut.min(events.len());
        let mut outs = Vec::new();
        for shared in [false, true] {
            let mut r = runner(&text, &schema, shared);
            let name = r.queries()[victim % r.queries().len()].name.clone();
            let mut sink = JsonLines::new(Vec::new());
            for e in &events[..cut] {
                r.push(e, &mut sink).unwrap();
            }
            prop_assert!(r.remove_query(&name));
            let mut s = schema.clone();
            let added = "QUERY late PATTERN SEQ(A a, A b) WHERE strict-contiguity AND [k] AND a.x > 1 AND b.x > 1";
            let program = compile(added, &mut s, &Options::default()).unwrap().programs.remove(0);
            prop_assert_eq!(r.add_query(program).unwrap(), r.queries().len() - 1);
            for e in &events[cut..] {
                r.push(e, &mut sink).unwrap();
            }
            r.finish(&mut sink).unwrap();
            outs.push((String::from_utf8(sink.into_inner().unwrap()).unwrap(), r.summary().matches.clone()));
        }
        prop_assert_eq!(&outs[1], &outs[0], "{}", text);
    }
}

/// The lines of a `Runtime` (which shares engines as `cep run` does) on
/// `threads`, in one thread's order.
fn runtime_lines(text: &str, schema: &Schema, events: &[Event], threads: usize) -> Vec<String> {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = lines.clone();
    let output = Output::Lines(Box::new(move |l: &str| seen.lock().unwrap().push(l.to_owned())));
    let mut rt = Runtime::builder()
        .query(text)
        .schema(schema.clone())
        .threads(threads)
        .ordered_output(true)
        .build(output)
        .unwrap();
    for e in events {
        rt.push(e).unwrap();
    }
    rt.finish().unwrap();
    std::mem::take(&mut *lines.lock().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases / 10, ..config() })]

    #[test]
    fn shard_threads_give_one_threads_output((text, (events, schema)) in (arb_file(), arb_events())) {
        let want = output(&mut runner(&text, &schema, false), &events);
        prop_assert_eq!(&runtime_lines(&text, &schema, &events, 1), &want, "{}", text);
        prop_assert_eq!(&runtime_lines(&text, &schema, &events, 2), &want, "{}", text);
    }
}
