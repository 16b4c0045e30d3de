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
    // A forced engine that cannot run a query is an error, as in `cep run`.
    for p in &compiled.programs {
        cep_nfa::select::explain(p, choice).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    }
    Ok(())
}
