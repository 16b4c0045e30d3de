//! `cep run --threads N`: the same matches and level alerts, as a multiset,
//! as `--threads 1`, on W1 ticks (in order and displaced within the delay).

use std::path::{Path, PathBuf};
use std::process::Command;

use cep_bench::levels;
use cep_bench::w1::{RISE_SPIKE, Ticks};

const CEP: &str = env!("CARGO_BIN_EXE_cep");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cep-threads-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sorted_output(args: &[&str]) -> (Vec<String>, String) {
    let o = Command::new(CEP).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let mut lines: Vec<String> = String::from_utf8(o.stdout).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    (lines, stderr)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn threads_give_the_matches_of_one_thread() {
    let dir = scratch("w1");
    let (events, query, alerts) = (dir.join("w1.csv"), dir.join("q.cep"), dir.join("levels.csv"));
    let mut csv = String::from("type,ts,key,price,vol\n");
    let ticks: Vec<_> = Ticks::new(300_000).collect();
    // Displace pairs by 2 ms, within --max-delay 2 below.
    let mut shuffled = ticks.clone();
    for pair in shuffled.chunks_mut(2) {
        pair.reverse();
    }
    for t in &shuffled {
        csv.push_str(&format!("Tick,{},{},{},{}\n", t.ts, t.key, t.price, t.vol));
    }
    std::fs::write(&events, csv).unwrap();
    std::fs::write(&query, format!("{RISE_SPIKE}\nQUERY any PATTERN SEQ(Tick a, Tick b) WHERE [key] AND b.vol >= 2000 AND a.vol >= 2000 WITHIN 1 s;\n")).unwrap();
    let mut f = Vec::new();
    levels::write_csv(&mut f, levels::KEYS, 5).unwrap();
    std::fs::write(&alerts, f).unwrap();
    let base = ["run", "--query", p(&query), "--levels", p(&alerts), "--events", p(&events), "--max-delay", "2"];
    let (one, stderr_one) = sorted_output(&[&base[..], &["--threads", "1"]].concat());
    assert!(one.len() > 1000, "{}", one.len());
    assert!(one.iter().any(|l| l.starts_with("{\"query\":\"rise_spike\"")));
    for n in ["2", "3"] {
        let (many, stderr) = sorted_output(&[&base[..], &["--threads", n]].concat());
        assert_eq!(many.len(), one.len(), "--threads {n}");
        assert!(many == one, "--threads {n}: outputs differ");
        // The same summary line, counts included.
        let summary = |s: &str| s.lines().find(|l| l.starts_with("summary:")).unwrap().to_owned();
        assert_eq!(summary(&stderr), summary(&stderr_one));
    }
}
