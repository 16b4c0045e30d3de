//! The corpus on the reference matcher ([`reference::run`]), statement by
//! statement, its matches then put in the order `cep run` emits them and
//! compared with the case's lines in order.
//!
//! The reference finds each statement's matches in emission order; across
//! statements the corpus interleaves them by the moment each is emitted,
//! statements in order at the same moment. A match is emitted when its
//! last bound event runs; with a trailing `NOT … WITHIN d`, when its
//! deadline (`end`) passes: before the first event with a larger `ts`, or
//! at the end of the input. Sorting stably by (moment, statement) gives the
//! corpus's order without changing any statement's own.

use std::collections::HashMap;

use cep_nfa::reference;
use cep_nfa::syntax::parse;
use cep_testkit::corpus::{Case, Labels, Run, run_corpus};
use cep_testkit::drive::from_ref;

/// Cases the reference matcher is known to get wrong: `(case, reason)`.
const KNOWN_BAD: &[(&str, &str)] = &[];

fn run_case(case: &Case) -> Result<Run, String> {
    let unit = case.time_unit()?;
    let (events, mut schema) = case.read_events()?;
    // The compiler names the statements (`q<n>` when unnamed) and checks them.
    let labels = Labels::of(&case.compile(&mut schema)?);
    let file = parse(&case.query).map_err(|d| d.render(&case.query, "query"))?;
    let index: HashMap<u64, usize> = events.iter().enumerate().map(|(i, e)| (e.row, i)).collect();
    // (position of the event the match is emitted at or before, phase: 0
    // before that event runs, 1 when it runs; statement), match.
    let mut all = Vec::new();
    for (s, stmt) in file.statements.iter().enumerate() {
        let trailing = stmt.elements.last().is_some_and(|e| e.negated);
        for m in reference::run(stmt, &events, &schema, unit) {
            let moment = if trailing {
                (events.iter().position(|e| e.ts > m.end).unwrap_or(events.len()), 0)
            } else {
                let last = m.vars.iter().flatten().max().ok_or("a match without rows")?;
                (index[last], 1)
            };
            all.push((moment, s, from_ref(&m)));
        }
    }
    all.sort_by_key(|(moment, s, _)| (*moment, *s));
    Ok(Run::Ordered(all.iter().map(|(_, s, m)| labels.line(*s, m)).collect()))
}

#[test]
fn corpus_on_the_reference_matcher() {
    let tally = run_corpus("reference", KNOWN_BAD, run_case);
    // The reference matcher reads every statement: it skips only its
    // known-bad cases.
    assert_eq!(tally.skipped.len(), KNOWN_BAD.len(), "the reference skipped {:?}", tally.skipped);
}
