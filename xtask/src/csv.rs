//! Streams and queries as files, so that the same input can be fed to
//! `cep run` and to other engines.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use cep_bench::suite::thousands;
use cep_bench::w2::{self, Kind};
use cep_bench::{levels, w1, w3, w4};

/// What `cargo xtask csv` and `--csv` say first: writing the files needs
/// no `cep` binary, and none is built.
const BUILD_NOTE: &str = "note: writing files only; no `cep` binary is built \
     (`cargo build --release --bin cep` builds it, sharing the workspace's crates with this program)";

/// Creates `path` and fills it through a buffered writer.
pub(crate) fn write_file(path: &Path, fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<(), String> {
    let mut out = BufWriter::new(File::create(path).map_err(|e| format!("{}: {e}", path.display()))?);
    fill(&mut out).and_then(|()| out.flush()).map_err(|e| format!("{}: {e}", path.display()))
}

pub(crate) fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// `cargo xtask csv DIR --ticks N [--jsonl]`: the W1 ticks (and as JSON
/// lines) and the rise_spike query.
pub fn w1(dir: &Path, ticks: usize, jsonl: bool) -> Result<(), String> {
    eprintln!("{BUILD_NOTE}");
    create_dir(dir)?;
    let path = dir.join("w1.csv");
    write_file(&path, |out| w1::write_csv(out, ticks))?;
    if jsonl {
        let path = dir.join("w1.jsonl");
        write_file(&path, |out| w1::write_jsonl(out, ticks))?;
        println!("wrote {ticks} ticks as JSON lines to {}", path.display());
    }
    let q = dir.join("rise_spike.cep");
    std::fs::write(&q, w1::RISE_SPIKE).map_err(|e| format!("{}: {e}", q.display()))?;
    println!("wrote {ticks} ticks to {} and the query to {}", path.display(), q.display());
    Ok(())
}

/// `cargo xtask bench --csv DIR`: every workload's stream at DESIGN.md's
/// size, and its queries.
pub fn all(dir: &Path) -> Result<(), String> {
    eprintln!("{BUILD_NOTE}");
    create_dir(dir)?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut data = |name: &str, what: String, fill: &dyn Fn(&mut BufWriter<File>) -> io::Result<()>| {
        write_file(&dir.join(name), fill)?;
        files.push((name.to_owned(), what));
        Ok::<(), String>(())
    };
    data("w1.csv", format!("W1 ticks ({})", thousands(w1::TICKS)), &|out| w1::write_csv(out, w1::TICKS))?;
    data("levels.csv", format!("W1b alerts ({} keys × {})", thousands(levels::KEYS), levels::PER_KEY), &|out| {
        levels::write_csv(out, levels::KEYS, levels::PER_KEY)
    })?;
    for kind in Kind::ALL {
        data(
            &format!("w2-{}.csv", kind.name()),
            format!("W2 {} stream ({})", kind.name(), thousands(w2::EVENTS)),
            &|out| w2::write_csv_of(out, kind, w2::EVENTS),
        )?;
    }
    data("w3.csv", format!("W3 events ({})", thousands(w3::EVENTS)), &|out| w3::write_csv(out, w3::EVENTS))?;
    data("w4.csv", format!("W4 trades ({})", thousands(w4::EVENTS)), &|out| w4::write_csv(out, w4::EVENTS))?;

    let mut queries: Vec<(String, String)> =
        vec![("rise_spike.cep".into(), w1::RISE_SPIKE.into()), ("w3.cep".into(), w3::QUERY.into())];
    queries.push(("w4.cep".into(), w4::QUERY.into()));
    for window in w2::WINDOWS {
        queries.push((format!("w2-abd-w{window}.cep"), w2::seq_abd(window)));
        queries.push((format!("w2-abdc-w{window}.cep"), w2::seq_abdc(window)));
    }
    for (name, text) in &queries {
        let path = dir.join(name);
        std::fs::write(&path, format!("{text}\n")).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for (name, what) in &files {
        println!("{:<40} {what}", dir.join(name).display());
    }
    println!("and {} query files (*.cep) in {}", queries.len(), dir.display());
    Ok(())
}
