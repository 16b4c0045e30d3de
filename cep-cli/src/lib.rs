#![doc = include_str!("../README.md")]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod demo;
mod input;
mod kafka;
mod progress;
pub mod run;

/// Complex event processing: match patterns over event streams.
#[derive(Debug, Parser)]
#[command(name = "cep", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run queries over an event stream and print every match as a JSON line.
    Run(Box<run::RunArgs>),
    /// Parse and compile a query file; print the plan, or the errors.
    Check(check::CheckArgs),
    /// Generate the W1 ticks in memory, run built-in queries, print a summary.
    Demo(demo::DemoArgs),
}

/// A failure with its exit code: 2 for bad queries and bad input, 1 for
/// anything else (LANGUAGE.md §6).
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: u8,
    /// Printed to stderr (already formatted; may span lines).
    pub message: String,
    /// The input row that stopped the run (a bad row, a late event under
    /// `--late fail`), if one did: the summary counts the rows up to it,
    /// not those read ahead of it.
    pub row: Option<u64>,
}

impl Failure {
    /// Bad query or bad input.
    pub fn bad_input(message: impl Into<String>) -> Failure {
        Failure { code: 2, message: message.into(), row: None }
    }

    /// Anything else.
    pub fn other(message: impl Into<String>) -> Failure {
        Failure { code: 1, message: message.into(), row: None }
    }

    /// This failure, caused by input row `row`.
    pub fn at_row(self, row: Option<u64>) -> Failure {
        Failure { row, ..self }
    }
}

/// Runs the command line `args` (the first being the program name) and
/// returns the process exit code; errors go to stderr. The arguments are
/// `OsString`s (or anything that converts), as `std::env::args_os` gives
/// them: an argument that is not UTF-8 (a legal file name on Linux) is a
/// usage error or a path, never a panic.
pub fn main_with<T: Into<std::ffi::OsString> + Clone>(args: impl IntoIterator<Item = T>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Check(args) => check::check(args),
        Command::Demo(args) => demo::demo(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let msg = f.message.trim_end();
            if !msg.is_empty() {
                if msg.starts_with("error") {
                    eprintln!("{msg}");
                } else {
                    eprintln!("error: {msg}");
                }
            }
            ExitCode::from(f.code)
        }
    }
}
