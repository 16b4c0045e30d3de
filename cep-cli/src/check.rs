//! `cep check`: compile a query file and print its plan, or the errors.

use std::path::PathBuf;

use cep_core::{Event, Schema};
use clap::Args;

use crate::Failure;
use cep_io::EventSource;

use crate::input::{compile_query, open_events, read_failure, time_unit};

/// Options of `cep check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Query file.
    #[arg(long, value_name = "FILE")]
    query: PathBuf,
    /// Check names and types against this event file (read in full).
    #[arg(long, value_name = "FILE")]
    events: Option<String>,
    /// Input format of --events.
    #[arg(long, value_name = "csv|jsonl")]
    format: Option<String>,
    /// Unit of the `ts` column.
    #[arg(long, value_name = "ms|us|ns|s", default_value = "ms")]
    time_unit: String,
    /// Show the plan for this engine: auto, run or stack.
    #[arg(long, value_name = "auto|run|stack", default_value = "auto")]
    engine: String,
}

/// Runs `cep check`.
pub fn check(args: CheckArgs) -> Result<(), Failure> {
    let unit = time_unit(&args.time_unit)?;
    let (choice, _) = crate::run::engine_options(&args.engine, "per-event")?;
    let mut schema = match &args.events {
        None => Schema::new(),
        Some(path) => {
            let mut input = open_events(path, args.format.as_deref())?;
            let mut e = Event::default();
            while input.next_event(&mut e).map_err(read_failure)? {}
            input.schema_mut().set_complete(true);
            input.schema().clone()
        }
    };
    let (_, compiled) = compile_query(&args.query, &mut schema, unit)?;
    for p in &compiled.programs {
        print!("{}", cep_nfa::compile::plan::render_with(p, choice));
    }
    if choice != cep_nfa::select::EngineChoice::Stack {
        for group in cep_nfa::share::groups(&compiled.programs).iter().filter(|g| g.len() > 1) {
            let name = |i: usize| compiled.programs[i].name.as_str();
            println!(
                "queries {} … {} ({} of them) share one run engine: they differ only in one-variable conditions \
                 (unless --max-partials-per-key or --max-state bounds the state)",
                name(group[0]),
                name(group[group.len() - 1]),
                group.len()
            );
        }
    }
    for p in &compiled.programs {
        if let Some(why) = unbounded(p) {
            eprintln!(
                "warning: query {}: no WITHIN bounds its state ({why}): it may grow with the input until \
                 --max-state stops the run (or, with --on-state-limit drop-oldest, drops partial matches)",
                p.name
            );
        }
    }
    // A forced engine that cannot run a query is an error, as in `cep run`.
    for p in &compiled.programs {
        cep_nfa::select::explain(p, choice).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    }
    Ok(())
}

/// Why nothing bounds a query's state (LANGUAGE.md §6: a Kleene element or
/// skip-till-any-match without a statement `WITHIN`), if so.
fn unbounded<E>(p: &cep_nfa::program::Program<E>) -> Option<String> {
    if p.window.is_some() {
        return None;
    }
    let names = p.var_names();
    let kleene: Vec<&str> =
        p.elements.iter().zip(&names).filter(|(e, _)| e.quant.is_kleene()).map(|(_, n)| *n).collect();
    let any = p.strategy == cep_nfa::program::Strategy::AnyMatch;
    match (kleene.as_slice(), any) {
        ([], false) => None,
        ([], true) => Some("skip-till-any-match".to_owned()),
        (k, any) => Some(format!(
            "Kleene element{} {}{}",
            if k.len() == 1 { "" } else { "s" },
            k.join(", "),
            if any { " under skip-till-any-match" } else { "" }
        )),
    }
}
