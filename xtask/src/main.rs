//! Project automation: `cargo xtask <command>`.
//!
//! - `cargo xtask csv DIR [--ticks N]`: writes the W1 ticks (DESIGN.md §3) to
//!   `DIR/w1.csv` and the rise_spike query to `DIR/rise_spike.cep`, so the
//!   same stream can be fed to `cep run` and to other engines.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("csv") => match csv(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo xtask csv DIR [--ticks N]");
            ExitCode::from(2)
        }
    }
}

fn csv(args: &[String]) -> Result<(), String> {
    let dir = PathBuf::from(args.first().ok_or("csv needs a directory")?);
    let ticks = match args.get(1).map(String::as_str) {
        Some("--ticks") => args.get(2).and_then(|n| n.parse().ok()).ok_or("--ticks needs a number")?,
        Some(other) => return Err(format!("unknown option `{other}`")),
        None => cep_bench::w1::TICKS,
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("w1.csv");
    let mut out = BufWriter::new(File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?);
    cep_bench::w1::write_csv(&mut out, ticks).and_then(|()| out.flush()).map_err(|e| e.to_string())?;
    let q = dir.join("rise_spike.cep");
    std::fs::write(&q, cep_bench::w1::RISE_SPIKE).map_err(|e| format!("{}: {e}", q.display()))?;
    println!("wrote {ticks} ticks to {} and the query to {}", path.display(), q.display());
    Ok(())
}
