//! Checkpoints and `--resume` through the binary (LANGUAGE.md §6): a run on
//! W1 ticks killed with SIGKILL at random moments many times, and resumed
//! each time, ends with exactly the output of an uninterrupted run — the
//! same bytes (on one thread and on two), none twice, the same late-event
//! file and the same summary counts. Also: a corrupt newest checkpoint falls back to the previous one;
//! a checkpoint of other options is refused; a resumed run reopens the file
//! at the checkpoint's byte offset instead of parsing it again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::Scratch;

use cep_bench::levels;
use cep_bench::w1::{RISE_SPIKE, Ticks};
use cep_testkit::XorShift64;

const CEP: &str = env!("CARGO_BIN_EXE_cep");

fn scratch(name: &str) -> Scratch {
    Scratch::new("resume", name)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Writes the inputs: W1 ticks (pairs displaced within `--max-delay 2`, and
/// a late tick every 25,000 rows), rise_spike and a second query, and
/// level alerts. Returns the common arguments.
fn inputs(dir: &Path, ticks: usize) -> Vec<String> {
    inputs_keyed(dir, ticks, "")
}

/// [`inputs`], with every key written as `{prefix}{key}` (a string key
/// when `prefix` is not empty).
fn inputs_keyed(dir: &Path, ticks: usize, prefix: &str) -> Vec<String> {
    let (events, query, alerts) = (dir.join("w1.csv"), dir.join("q.cep"), dir.join("levels.csv"));
    std::fs::write(&events, ticks_csv(ticks, true, 25_000, prefix)).unwrap();
    let other = "QUERY spikes PATTERN SEQ(Tick a, Tick b) WHERE a.vol >= 2000 AND b.vol >= 2000 WITHIN 20 ms;";
    // One match per tick: a tick lost or doubled at a resume shows.
    let every = "QUERY every PATTERN SEQ(Tick t);";
    std::fs::write(&query, format!("{RISE_SPIKE}\n{other}\n{every}\n")).unwrap();
    let mut f = Vec::new();
    levels::write_csv(&mut f, levels::KEYS, 5).unwrap();
    std::fs::write(&alerts, f).unwrap();
    let late = format!("side:{}", p(&dir.join("late.jsonl")));
    ["run", "--query", p(&query), "--levels", p(&alerts), "--events", p(&events), "--max-delay", "2", "--late", &late]
        .map(str::to_owned)
        .to_vec()
}

/// `ticks` W1 ticks as CSV, with pairs swapped when `swap_pairs`, every
/// `late_every`-th tick 1,000 ms late, and keys written `{prefix}{key}`.
fn ticks_csv(ticks: usize, swap_pairs: bool, late_every: usize, prefix: &str) -> String {
    let mut csv = String::from("type,ts,key,price,vol\n");
    let mut all: Vec<_> = Ticks::new(ticks).collect();
    if swap_pairs {
        for pair in all.chunks_mut(2) {
            pair.reverse();
        }
    }
    for (i, t) in all.iter().enumerate() {
        let ts = if i % late_every == late_every - 1 { t.ts - 1_000 } else { t.ts };
        csv.push_str(&format!("Tick,{ts},{prefix}{},{},{}\n", t.key, t.price, t.vol));
    }
    csv
}

/// A run to the end over [`inputs`] with checkpoints: its arguments, output
/// file and output, summary, and the checkpoint files kept (oldest first).
struct Checkpointed {
    args: Vec<String>,
    out: PathBuf,
    want: String,
    want_summary: String,
    files: Vec<PathBuf>,
}

fn checkpointed(dir: &Path, ticks: usize, every: &str) -> Checkpointed {
    let base = inputs(dir, ticks);
    let (out, ckpt) = (dir.join("out.jsonl"), dir.join("ckpt"));
    let args =
        [&base[..], &["--out", p(&out), "--checkpoint", p(&ckpt), "--checkpoint-every", every].map(String::from)]
            .concat();
    let want_summary = run_to_end(&args);
    let want = std::fs::read_to_string(&out).unwrap();
    let files = checkpoint_files(&ckpt);
    Checkpointed { args, out, want, want_summary, files }
}

/// The lines of the file at `path`, sorted.
fn sorted_lines(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// The checkpoint files in `dir`, oldest first.
fn checkpoint_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Deletes the newest checkpoint in `dir`: a resume starts from the one
/// before.
fn drop_newest_checkpoint(dir: &Path) {
    std::fs::remove_file(checkpoint_files(dir).last().unwrap()).unwrap();
}

/// Runs `args` with `--resume`; asserts that it succeeds and that its
/// stderr says each of `says`. Its summary line.
fn resume(args: &[String], says: &[&str]) -> String {
    let o = Command::new(CEP).args(args).arg("--resume").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    for said in says {
        assert!(stderr.contains(said), "no `{said}` in: {stderr}");
    }
    summary(&o.stderr)
}

fn summary(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr).lines().find(|l| l.starts_with("summary:")).unwrap_or("").to_owned()
}

/// A run to the end; its summary line.
fn run_to_end(args: &[String]) -> String {
    let o = Command::new(CEP).args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    summary(&o.stderr)
}

/// An uninterrupted run of `base` into `dir/whole.jsonl`, timed with
/// checkpoints (`every`) as often as the killed runs take them (each is
/// synced to disk), since the kill points are fractions of its time: its
/// summary, time and output.
fn timed_reference(base: &[String], dir: &Path, every: &[String]) -> (String, Duration, String) {
    let whole = dir.join("whole.jsonl");
    let reference = ["--out", p(&whole), "--checkpoint", p(&dir.join("ckpt-whole"))].map(String::from);
    let started = std::time::Instant::now();
    let summary = run_to_end(&[base, &reference, every].concat());
    (summary, started.elapsed(), std::fs::read_to_string(&whole).unwrap())
}

/// Runs with checkpoints, killing the process (SIGKILL) `kills` times at
/// pseudo-random moments between 3 % and 40 % of `full` (the time of an
/// uninterrupted run) after each start, and resuming; then lets it finish.
/// Returns the final summary and how many runs were killed before they
/// ended.
fn run_killed(args: &[String], kills: usize, seed: u64, full: Duration) -> (String, usize, Vec<u64>) {
    let mut rng = XorShift64::new(seed);
    let mut killed = 0;
    let mut resumed_at = Vec::new();
    let mut note = |stderr: &[u8]| {
        let text = String::from_utf8_lossy(stderr);
        if let Some(rest) = text.split("resuming after row ").nth(1) {
            resumed_at.push(rest.split(' ').next().unwrap().parse::<u64>().unwrap());
        }
    };
    for attempt in 0.. {
        let mut cmd = Command::new(CEP);
        cmd.args(args);
        if attempt > 0 {
            cmd.arg("--resume");
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        if attempt < kills {
            let x = rng.next_u64();
            std::thread::sleep(full.mul_f64(0.03 + (x % 1000) as f64 / 1000.0 * 0.37));
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap(); // SIGKILL: no cleanup runs
                note(&child.wait_with_output().unwrap().stderr);
                killed += 1;
                continue;
            }
        }
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "attempt {attempt}: {}", String::from_utf8_lossy(&o.stderr));
        note(&o.stderr);
        return (summary(&o.stderr), killed, resumed_at);
    }
    unreachable!()
}

fn check_killed_and_resumed(threads: &str, seed: u64) {
    let dir = scratch(&format!("kill{threads}"));
    let mut base = inputs(&dir, 300_000);
    base.extend(["--threads".into(), threads.into()]);
    let every = ["--checkpoint-every".to_owned(), "10000".to_owned()];
    let (want_summary, full, want) = timed_reference(&base, &dir, &every);
    let want_late = std::fs::read_to_string(dir.join("late.jsonl")).unwrap();
    assert!(want.lines().count() > 1000, "{}", want.lines().count());
    assert!(want_late.lines().count() >= 7, "{want_late}");

    let out = dir.join("out.jsonl");
    let ckpt = dir.join("ckpt");
    let args = [&base[..], &["--out", p(&out), "--checkpoint", p(&ckpt)].map(String::from), &every].concat();
    let (got_summary, killed, resumed_at) = run_killed(&args, 12, seed, full);
    eprintln!("{threads} thread(s): killed {killed} times (full run {full:?}), resumed after rows {resumed_at:?}");
    assert!(resumed_at.iter().filter(|&&r| r > 0).count() >= 3, "too few resumes from a checkpoint: {resumed_at:?}");
    assert!(killed >= 3, "only {killed} runs were killed before they ended: the kill points are too late");
    let got = std::fs::read_to_string(&out).unwrap();
    let ids = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_owned).collect();
        v.sort();
        v
    };
    let (got_lines, want_lines) = (ids(&got), ids(&want));
    let mut dedup = got_lines.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), got_lines.len(), "a line was written twice");
    assert!(
        got_lines == want_lines,
        "{} lines after {killed} kills, {} uninterrupted",
        got_lines.len(),
        want_lines.len()
    );
    // On shards too: their output is merged in one thread's order.
    assert!(got == want, "{threads} thread(s): not the very same bytes, in the same order");
    assert_eq!(std::fs::read_to_string(dir.join("late.jsonl")).unwrap(), want_late);
    assert_eq!(got_summary, want_summary);
}

#[test]
fn killed_and_resumed_many_times_equals_an_uninterrupted_run() {
    check_killed_and_resumed("1", 0x9E37_79B9_7F4A_7C15);
}

#[test]
fn killed_and_resumed_on_two_threads_equals_an_uninterrupted_run() {
    check_killed_and_resumed("2", 0x2545_F491_4F6C_DD1D);
}

#[test]
fn resume_with_a_corrupt_newest_checkpoint_uses_the_previous_one() {
    let dir = scratch("corrupt");
    let Checkpointed { args, out, want, want_summary, files } = checkpointed(&dir, 60_000, "10000");
    assert_eq!(files.len(), 2, "the newest two are kept: {files:?}");
    let newest = files.last().unwrap();
    let mut bytes = std::fs::read(newest).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(newest, bytes).unwrap();

    let got_summary = resume(&args, &["checksum mismatch; trying the previous checkpoint", "resuming after row 50000"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want);
    assert_eq!(got_summary, want_summary);
}

/// String keys are routed by their text: a resumed process, which interns
/// strings in another order, puts every key on the shard its state is on.
#[test]
fn resume_on_two_threads_with_string_keys() {
    let dir = scratch("strings");
    let mut base = inputs_keyed(&dir, 60_000, "s");
    // Every tick pairs with its key's next one: partial matches of most
    // keys span the checkpoint, and one routed to the wrong shard shows.
    let pairs = "QUERY pairs PATTERN SEQ(Tick a, Tick b) WHERE skip-till-next-match AND [key];";
    let q = dir.join("pairs.cep");
    std::fs::write(&q, pairs).unwrap();
    base[2] = p(&q).to_owned();
    base.extend(["--threads".into(), "2".into()]);
    let (out, ckpt) = (dir.join("out.jsonl"), dir.join("ckpt"));
    let args =
        [&base[..], &["--out", p(&out), "--checkpoint", p(&ckpt), "--checkpoint-every", "20000"].map(String::from)]
            .concat();
    let want_summary = run_to_end(&args);
    let want = sorted_lines(&out);
    assert!(want.iter().any(|l| l.contains(r#""key":"s"#)), "string keys in the output");
    // Resume from the checkpoint before the last: rows 40,000 on run again.
    drop_newest_checkpoint(&ckpt);
    let got_summary = resume(&args, &["resuming after row 40000"]);
    let got = sorted_lines(&out);
    assert!(got == want, "{} lines, {} uninterrupted", got.len(), want.len());
    assert_eq!(got_summary, want_summary);
}

/// A resumed run reopens the file at the checkpoint's byte offset, and its
/// checkpoints hash on from there: resumed again from a checkpoint the
/// resumed run took (its hash checked against the whole file), it gives
/// the same output. That
/// checkpoint was taken while a line the first run wrote at the end (a tick
/// held for `--max-delay`) was still to come: the checkpoint keeps it as
/// pending, and the last run writes it once.
#[test]
fn resume_reopens_the_file_where_the_checkpoint_left_it() {
    let dir = scratch("seek");
    let Checkpointed { args, out, want, want_summary, files } = checkpointed(&dir, 60_000, "10000");
    let ckpt = files[0].parent().unwrap().to_owned();
    drop_newest_checkpoint(&ckpt);
    // From the checkpoint after row 50,000 to the end, saving one at the end.
    let got_summary = resume(&args, &["resuming after row 50000"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want);
    assert_eq!(got_summary, want_summary);
    // That one (whose hash went on from the offset) checks the whole file.
    let got_summary = resume(&args, &["resuming after row 60000"]);
    let got = std::fs::read_to_string(&out).unwrap();
    assert!(got == want, "the output differs: {} lines, {} wanted", got.lines().count(), want.lines().count());
    assert_eq!(got_summary, want_summary);
}

#[test]
fn resume_refuses_a_checkpoint_of_other_options() {
    let dir = scratch("other");
    let base = inputs(&dir, 30_000);
    let ckpt = dir.join("ckpt");
    let args = [&base[..], &["--out", p(&dir.join("o.jsonl")), "--checkpoint", p(&ckpt)].map(String::from)].concat();
    run_to_end(&[&args[..], &["--checkpoint-every".into(), "5000".into()]].concat());
    let o = Command::new(CEP).args(&args).args(["--engine", "run", "--resume"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("was taken with other queries, alerts, options"), "{stderr}");
}

#[test]
fn a_fresh_run_clears_the_checkpoints_of_an_earlier_one() {
    let dir = scratch("fresh");
    let base = inputs(&dir, 30_000);
    let ckpt = dir.join("ckpt");
    let args = [&base[..], &["--out", p(&dir.join("o.jsonl")), "--checkpoint", p(&ckpt)].map(String::from)].concat();
    run_to_end(&[&args[..], &["--checkpoint-every".into(), "5000".into()]].concat());
    assert_eq!(std::fs::read_dir(&ckpt).unwrap().count(), 2);
    // Afresh, with no checkpoint due before the end: none is left to resume.
    std::fs::write(ckpt.join("notes.txt"), "not ours").unwrap();
    run_to_end(&[&args[..], &["--checkpoint-every".into(), "1000000".into()]].concat());
    let left: Vec<_> = std::fs::read_dir(&ckpt).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["notes.txt"]);
}

#[test]
fn resume_without_a_checkpoint_starts_from_the_beginning() {
    let dir = scratch("none");
    let base = inputs(&dir, 30_000);
    let (out, ckpt) = (dir.join("out.jsonl"), dir.join("ckpt"));
    let args = [&base[..], &["--out", p(&out)].map(String::from)].concat();
    let want_summary = run_to_end(&args);
    let want = std::fs::read_to_string(&out).unwrap();
    // A crash before the first checkpoint left half the output.
    std::fs::write(&out, &want[..want.len() / 2]).unwrap();
    let o = Command::new(CEP).args(&args).args(["--checkpoint", p(&ckpt), "--resume"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("no checkpoint in"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want);
    assert_eq!(summary(&o.stderr), want_summary);
}

/// A CRLF file read on two threads, checkpointed and resumed from a
/// checkpoint in its middle: the same output as an uninterrupted run (the
/// positions a checkpoint keeps are after each row's `\r\n`).
#[test]
fn resume_of_a_crlf_file_on_two_threads() {
    let dir = scratch("crlf");
    let base = inputs(&dir, 40_000);
    let events = dir.join("w1.csv");
    let text = std::fs::read_to_string(&events).unwrap().replace('\n', "\r\n");
    std::fs::write(&events, text).unwrap();
    let (out, ckpt) = (dir.join("out.jsonl"), dir.join("ckpt"));
    let args = [
        &base[..],
        &["--threads", "2", "--out", p(&out), "--checkpoint", p(&ckpt), "--checkpoint-every", "7000"].map(String::from),
    ]
    .concat();
    let want_summary = run_to_end(&args);
    // Two threads: the same lines, their order between keys aside.
    let want = sorted_lines(&out);
    assert!(want.len() > 40_000, "{} lines", want.len());
    drop_newest_checkpoint(&ckpt);
    let got_summary = resume(&args, &["resuming after row 28000"]);
    assert!(sorted_lines(&out) == want, "the resumed output differs");
    assert_eq!(got_summary, want_summary);
}

/// Without `--threads` the queries run on as many shards as there are
/// cores, writing the output of `--threads 1` byte for byte. Its
/// checkpoints resume with `--threads` that many and the other way round;
/// on another number of threads the resume is refused with the number it
/// needs.
#[test]
fn the_default_resumes_as_its_number_of_threads() {
    let dir = scratch("default");
    // Checkpoints of a default run (`checkpointed` passes no --threads).
    let Checkpointed { args, out, want, want_summary, files } = checkpointed(&dir, 60_000, "10000");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let with = |n: usize| [&args[..], &["--threads".to_owned(), n.to_string()]].concat();
    let one = with(1);
    assert_eq!(run_to_end(&one), want_summary);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want, "--threads 1 and the default differ");
    let same = with(cores);
    for (first, then) in [(&args, &same), (&same, &args)] {
        run_to_end(first);
        drop_newest_checkpoint(files[0].parent().unwrap());
        let got_summary = resume(then, &["resuming after row 50000"]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), want);
        assert_eq!(got_summary, want_summary);
    }
    // A default run's checkpoints on another number of threads.
    let other = if cores == 1 { 2 } else { 1 };
    run_to_end(&args);
    let o = Command::new(CEP).args(with(other)).arg("--resume").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let says = format!("was taken with the queries on {cores} thread");
    assert!(stderr.contains(&says) && stderr.contains(&format!("resume with --threads {cores}")), "{stderr}");
}

/// One query, no delay, no failing on late events: the runner takes the
/// events eight at a time (its engine as one batch). Such a run gives the
/// very bytes of a run that feeds them one by one (`--late fail` does); and
/// killed at random moments and resumed many times (checkpoints every 7,001
/// rows, so between batch boundaries), it ends with the very bytes of an
/// uninterrupted one.
#[test]
fn a_batched_run_killed_and_resumed_equals_an_event_by_event_run() {
    let dir = scratch("batched");
    let (in_order, events, query) = (dir.join("in_order.csv"), dir.join("w1.csv"), dir.join("q.cep"));
    // W1 ticks in order; and the same with a late tick every 50,000 rows
    // (dropped: the default policy).
    std::fs::write(&in_order, ticks_csv(300_000, false, usize::MAX, "")).unwrap();
    std::fs::write(&events, ticks_csv(300_000, false, 50_000, "")).unwrap();
    // One match per tick, so that a tick lost or doubled at a resume shows;
    // one query, so that its engine takes the events as a batch.
    std::fs::write(&query, "QUERY every PATTERN SEQ(Tick t) WHERE t.vol >= 0;\n").unwrap();
    let output = |events: &Path, extra: &[&str]| {
        let out = dir.join("o.jsonl");
        let args = [&["run", "--query", p(&query), "--events", p(events), "--out", p(&out)][..], extra].concat();
        let summary = run_to_end(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        (std::fs::read_to_string(&out).unwrap(), summary)
    };
    let batched = output(&in_order, &[]);
    assert_eq!(batched.0.lines().count(), 300_000);
    assert!(output(&in_order, &["--late", "fail"]) == batched, "batched and one by one differ");

    let base = ["run", "--query", p(&query), "--events", p(&events)].map(String::from).to_vec();
    let every = ["--checkpoint-every".to_owned(), "7001".to_owned()];
    let (want_summary, full, want) = timed_reference(&base, &dir, &every);
    assert_eq!(want.lines().count(), 300_000 - 6);
    let (out, ckpt) = (dir.join("out.jsonl"), dir.join("ckpt"));
    let args = [&base[..], &["--out", p(&out), "--checkpoint", p(&ckpt)].map(String::from), &every].concat();
    let (got_summary, killed, resumed_at) = run_killed(&args, 8, 0x5DEE_CE66_D1CE_4E5B, full);
    eprintln!("batched: killed {killed} times (full run {full:?}), resumed after rows {resumed_at:?}");
    assert!(resumed_at.iter().any(|&r| r > 0 && r % 7001 == 0), "no resume from a checkpoint: {resumed_at:?}");
    assert!(std::fs::read_to_string(&out).unwrap() == want, "the resumed output differs");
    assert_eq!(got_summary, want_summary);
}

/// `--resume` on another file with the same header (other rows) is refused
/// with exit 2, naming the checkpoint directory and the file; the same
/// file resumes (the tests above), and so does the file with rows appended
/// after the checkpoint's position (LANGUAGE.md §6).
#[test]
fn resume_refuses_another_input_with_the_same_header() {
    let dir = scratch("otherinput");
    let Checkpointed { args, files, .. } = checkpointed(&dir, 60_000, "10000");
    drop_newest_checkpoint(files[0].parent().unwrap());
    let events = dir.join("w1.csv");
    let kept = std::fs::read(&events).unwrap();
    // The same header and as many rows, in another order.
    std::fs::write(&events, ticks_csv(60_000, false, 25_000, "")).unwrap();
    let o = Command::new(CEP).args(&args).arg("--resume").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(p(&dir.join("ckpt"))) && stderr.contains(p(&events)), "{stderr}");
    assert!(stderr.contains("another input"), "{stderr}");
    // Only the rows near the checkpoint's position differ.
    let mut lines: Vec<String> = String::from_utf8(kept.clone()).unwrap().lines().map(str::to_owned).collect();
    lines[49_990] = lines[49_990].replace("Tick,", "Tock,");
    std::fs::write(&events, lines.join("\n") + "\n").unwrap();
    let o = Command::new(CEP).args(&args).arg("--resume").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    // One byte in the middle of what the checkpoint read, far from both
    // ends, at the same length.
    let mut bytes = kept.clone();
    let middle = bytes.len() * 2 / 5;
    let digit = (middle..).find(|&i| bytes[i].is_ascii_digit()).unwrap();
    bytes[digit] = if bytes[digit] == b'1' { b'2' } else { b'1' };
    std::fs::write(&events, &bytes).unwrap();
    let o = Command::new(CEP).args(&args).arg("--resume").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bytes differ from those the checkpoint read"), "{stderr}");
    // A file shorter than the checkpoint read.
    std::fs::write(&events, &kept[..kept.len() / 2]).unwrap();
    let o = Command::new(CEP).args(&args).arg("--resume").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    // The same file resumes.
    std::fs::write(&events, &kept).unwrap();
    resume(&args, &["resuming after row 50000"]);
}

/// A file that only grew after the checkpoint's position resumes, and the
/// resumed run reads the rows appended: its output is that of a run over the
/// longer file.
#[test]
fn resume_of_a_file_appended_to_after_the_checkpoint() {
    let dir = scratch("appended");
    let Checkpointed { args, out, files, .. } = checkpointed(&dir, 60_000, "10000");
    drop_newest_checkpoint(files[0].parent().unwrap());
    let events = dir.join("w1.csv");
    // The longer file: 60,000 ticks, then the rows of 20,000 more, later.
    let text = std::fs::read_to_string(&events).unwrap();
    let more = ticks_csv(20_000, true, 25_000, "");
    let last_ts: i64 = text.lines().last().unwrap().split(',').nth(1).unwrap().parse().unwrap();
    let mut longer = text.clone();
    for line in more.lines().skip(1) {
        let mut cells: Vec<String> = line.split(',').map(str::to_owned).collect();
        cells[1] = (cells[1].parse::<i64>().unwrap() + last_ts + 10_000).to_string();
        longer.push_str(&cells.join(","));
        longer.push('\n');
    }
    std::fs::write(&events, &longer).unwrap();
    let got_summary = resume(&args, &["resuming after row 50000"]);
    let got = std::fs::read_to_string(&out).unwrap();
    // The reference: the longer file from the start.
    let fresh = dir.join("fresh.jsonl");
    let mut fresh_args = args.clone();
    let at = fresh_args.iter().position(|a| a == "--out").unwrap();
    fresh_args[at + 1] = p(&fresh).to_owned();
    let at = fresh_args.iter().position(|a| a == "--checkpoint").unwrap();
    fresh_args[at + 1] = p(&dir.join("ckpt-fresh")).to_owned();
    let want_summary = run_to_end(&fresh_args);
    assert!(got == std::fs::read_to_string(&fresh).unwrap(), "the resumed output differs");
    assert!(got_summary.starts_with("summary: 80000 rows read"), "{got_summary}");
    assert_eq!(got_summary, want_summary);
}
