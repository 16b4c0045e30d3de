//! `cep-geo serve`: the proximity service of the maritime workload
//! (DESIGN.md §2.4, §3 W7). See the crate's README.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use cep_geo::{Answers, Config, ProximityIndex, Service, load_csv_file, parse_duration, serve};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cep-geo", about = "The proximity service: near(mmsi, lat, lon, ts) over HTTP.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Loads the positions and answers near() calls over HTTP/1.1 until SIGINT or SIGTERM.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on (port 0: any free port; the real one is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// The positions: CSV with columns ts, mmsi, lat, lon (others ignored).
    #[arg(long, required_unless_present = "true_ratio")]
    positions: Option<PathBuf>,
    /// Distance threshold, metres.
    #[arg(long, default_value_t = 500.0)]
    distance: f64,
    /// Time window, seconds: positions in (ts - window, ts] count.
    #[arg(long, default_value_t = 60)]
    window: u32,
    /// Evaluation time of each call (e.g. 0, 200us, 1ms); slept, not spent.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    eval_delay: Duration,
    /// Answer true for this stable pseudo-random fraction of the calls instead of by distance.
    #[arg(long, value_parser = parse_ratio)]
    true_ratio: Option<f64>,
    /// Also stop when standard input reaches its end (for a parent process that may die).
    #[arg(long)]
    exit_on_stdin_eof: bool,
}

fn parse_ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("{text:?} is not a fraction in [0, 1]")),
    }
}

fn main() -> ExitCode {
    let Command::Serve(args) = Cli::parse().command;
    let answers = match answers(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let service = Arc::new(Service::new(answers, args.eval_delay));
    let code = runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {}: {e}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        let stop = match stop_signal(args.exit_on_stdin_eof) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot install the signal handlers: {e}");
                return ExitCode::FAILURE;
            }
        };
        match listener.local_addr() {
            Ok(addr) => eprintln!("listening on {addr}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
        serve(listener, service, stop).await;
        ExitCode::SUCCESS
    });
    // Not a plain drop: that would wait for the blocking thread still
    // reading standard input, which may never end.
    runtime.shutdown_background();
    code
}

/// The index (loaded and built up front), or the true ratio.
fn answers(args: &ServeArgs) -> Result<Answers, String> {
    if let Some(p) = args.true_ratio {
        return Ok(Answers::Ratio(p));
    }
    let Some(path) = &args.positions else { return Err("--positions FILE is required".into()) };
    let positions = load_csv_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let n = positions.len();
    let config = Config { distance_m: args.distance, window_ms: i64::from(args.window) * 1000 };
    let index = ProximityIndex::new(positions, config).map_err(|e| e.to_string())?;
    eprintln!("loaded {n} positions from {} ({} m, {} s window)", path.display(), args.distance, args.window);
    Ok(Answers::Distance(Box::new(index)))
}

/// Completes on SIGINT, SIGTERM, or (if asked) the end of standard input.
///
/// The signal handlers are installed here, before the caller prints
/// `listening on`, so that a signal sent as soon as that line is read
/// stops the server cleanly rather than killing it.
fn stop_signal(on_stdin_eof: bool) -> std::io::Result<impl std::future::Future<Output = ()>> {
    let signals = Signals::install()?;
    Ok(async move {
        let stdin_eof = async {
            if !on_stdin_eof {
                return std::future::pending().await;
            }
            let mut buf = [0u8; 256];
            let mut stdin = tokio::io::stdin();
            // Read until the end or an error: either means the parent is gone.
            while let Ok(1..) = tokio::io::AsyncReadExt::read(&mut stdin, &mut buf).await {}
        };
        tokio::select! {
            () = signals.recv() => {}
            () = stdin_eof => {}
        }
        eprintln!("stopping");
    })
}

/// SIGINT and SIGTERM, installed.
#[cfg(unix)]
#[derive(Debug)]
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals { int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
    }

    async fn recv(mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// Ctrl-C only, elsewhere.
#[cfg(not(unix))]
#[derive(Debug)]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals)
    }

    async fn recv(self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
