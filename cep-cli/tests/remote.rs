//! Remote predicates through the binary (LANGUAGE.md §8), against a real
//! HTTP service on loopback: the proximity service of `cep-geo`, started
//! in this process on 127.0.0.1:0 (bounded in time, stopped after).
//!
//! The matches of `cep run --remote near=URL` are those of the reference
//! matcher with `near` answered by the same index in-process, on one and
//! two threads; a service that is not there fails the run (exit 2, naming
//! the function and the URL) or follows `--remote-failure`; errors in
//! the flags and a `--remote` no query declares are refused.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_geo::{Answers, Config, ProximityIndex, Service, load_csv_file};
use cep_nfa::compile::{Options, compile};
use cep_nfa::syntax::parse;
use cep_runtime::record::Record;

mod common;
use common::{CEP, Output, Scratch};

const QUERY: &str = "REMOTE near(mmsi int, lat float, lon float, ts int);
QUERY encounter PATTERN SEQ(AIS x, AIS y, AIS z) WHERE strict-contiguity AND [mmsi]
  AND x.speed > 5 AND y.speed > 5 AND z.speed > 5 AND near(y.mmsi, y.lat, y.lon, y.ts);
QUERY apart PATTERN SEQ(AIS x, AIS y) WHERE [mmsi] AND y.speed > x.speed AND NOT near(y.mmsi, y.lat, y.lon, y.ts) WITHIN 5 min";

/// The proximity service on a thread of its own, stopped when dropped.
struct Proximity {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proximity {
    fn start(index: ProximityIndex) -> Proximity {
        Proximity::slow(index, Duration::ZERO)
    }

    /// A service that takes `eval` per call.
    fn slow(index: ProximityIndex, eval: Duration) -> Proximity {
        let service = Arc::new(Service::new(Answers::Distance(Box::new(index)), eval));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                addr_tx.send(listener.local_addr().expect("address")).expect("send");
                cep_geo::serve(listener, service, async move {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(30)).expect("the service listens within 30 s");
        Proximity { addr, stop: Some(stop), thread: Some(thread) }
    }

    fn url(&self) -> String {
        format!("near=http://{}/near", self.addr)
    }
}

impl Drop for Proximity {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Synthetic AIS rows: `vessels` vessels, `minutes` reports each, a few
/// pairs close together (seeded, so the test is repeatable).
fn ais_csv(vessels: i64, minutes: i64) -> String {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut rows = Vec::new();
    for m in 0..minutes {
        for v in 0..vessels {
            // Vessels in pairs on nearby tracks: the odd one of a pair
            // drifts away (faster for some pairs, not at all for others).
            let pair = v / 2;
            let drift = if v % 2 == 0 { 0.0 } else { 0.001 * (m as f64) * ((pair % 3) as f64) };
            let lat = 48.0 + 0.01 * pair as f64 + drift;
            let lon = -4.5 + 0.0005 * (m as f64);
            let speed = (rnd() % 140) as f64 / 10.0;
            let ts = m * 60_000 + v * 10;
            rows.push(format!("AIS,{ts},{},{lat:.6},{lon:.6},{speed:.1}", 235_000_000 + v));
        }
    }
    format!("type,ts,mmsi,lat,lon,speed\n{}\n", rows.join("\n"))
}

/// The reference's matches, `near` answered by `index`, as sorted lines
/// `query rows`.
fn reference(csv: &str, index: &ProximityIndex) -> Vec<String> {
    reference_of(QUERY, csv, index)
}

/// [`reference`] for the statements of `query`.
fn reference_of(query: &str, csv: &str, index: &ProximityIndex) -> Vec<String> {
    let file = parse(query).unwrap();
    let mut schema = Schema::new();
    for name in ["mmsi", "lat", "lon", "speed"] {
        schema.field(name);
    }
    let fns = compile(query, &mut schema.clone(), &Options::default()).unwrap().remotes;
    let events: Vec<Event> = csv
        .lines()
        .skip(1)
        .enumerate()
        .map(|(row, line)| {
            let c: Vec<&str> = line.split(',').collect();
            let fields = vec![
                Value::Int(c[2].parse().unwrap()),
                Value::Float(c[3].parse().unwrap()),
                Value::Float(c[4].parse().unwrap()),
                Value::Float(c[5].parse().unwrap()),
            ];
            Event::new(Sym::new(c[0]), c[1].parse().unwrap(), row as u64, fields)
        })
        .collect();
    let answer = |_f: u16, a: &[Value]| match (a[0], a[1], a[2], a[3]) {
        (Value::Int(m), Value::Float(lat), Value::Float(lon), Value::Int(ts)) => index.near(m, lat, lon, ts).unwrap(),
        _ => false,
    };
    let mut out = Vec::new();
    for st in &file.statements {
        let name = &st.name.as_ref().unwrap().name;
        for m in cep_nfa::reference::run_with_remote(st, &events, &schema, TimeUnit::Millis, &fns, &answer) {
            out.push(format!("{name} {:?}", m.vars));
        }
    }
    out.sort();
    out
}

/// `cep run`'s matches as sorted lines `query rows`.
fn matches(stdout: &str) -> Vec<String> {
    let mut out: Vec<String> = stdout
        .lines()
        .map(|l| {
            let Ok(Record::Match(m)) = Record::parse(l) else { panic!("a match line: {l}") };
            let vars: Vec<&Vec<u64>> = m.vars.iter().map(|(_, rows)| rows).collect();
            format!("{} {vars:?}", m.query)
        })
        .collect();
    out.sort();
    out
}

fn cep(args: &[&str]) -> Output {
    Output::of(Command::new(CEP).args(args).output().expect("cep runs"), args)
}

#[test]
fn matches_equal_the_reference_with_the_service_answering() {
    let dir = Scratch::new("remote", "reference");
    let csv = ais_csv(40, 30);
    let events = dir.write("ais.csv", &csv);
    let query = dir.write("q.cep", QUERY);
    let index = ProximityIndex::new(load_csv_file(std::path::Path::new(&events)).unwrap(), Config::default()).unwrap();
    let want = reference(&csv, &index);
    assert!(want.iter().any(|l| l.starts_with("encounter")) && want.iter().any(|l| l.starts_with("apart")), "{want:?}");
    let service = Proximity::start(index);
    let url = service.url();
    for threads in ["1", "2"] {
        for mode in ["blocking", "lazy", "auto"] {
            let args = ["run", "--query", &query, "--events", &events, "--remote", &url, "--threads", threads];
            let o = cep(&[&args[..], &["--remote-mode", mode]].concat());
            assert_eq!(o.code, Some(0), "{o:#?}");
            assert_eq!(matches(&o.stdout), want, "threads {threads}, {mode}");
            let summary = o.stderr.lines().find(|l| l.starts_with("summary: ")).unwrap();
            assert!(summary.contains(", remote: ") && summary.contains(" 0 failures"), "{summary}");
            // Lazy: the matches settled when final (`apart` stays blocking:
            // skip-till-next-match); auto goes lazy too, since answers over
            // HTTP take far more than a few microseconds.
            assert_eq!(summary.contains(", debts settled "), mode != "blocking", "{summary}");
        }
    }
}

#[test]
fn a_service_that_is_not_there_fails_or_follows_the_policy() {
    let dir = Scratch::new("remote", "absent");
    let events = dir.write("ais.csv", ais_csv(6, 5));
    let query = dir.write("q.cep", QUERY);
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("near=http://127.0.0.1:{port}/near");
    let base = ["run", "--query", &query, "--events", &events, "--remote", &url, "--threads", "1"];
    let o = cep(&base);
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(
        o.stderr.contains(&format!("remote function `near` at http://127.0.0.1:{port}/near could not connect")),
        "{}",
        o.stderr
    );
    // drop: the runs that needed an answer are dropped, and counted.
    let o = cep(&[&base[..], &["--remote-failure", "drop"]].concat());
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert!(o.stderr.contains(" runs dropped"), "{}", o.stderr);
    // true: every call counts as true, and its matches say unverified;
    // the same lines whether runs wait for the answers or go on.
    let mut outputs = Vec::new();
    for mode in ["blocking", "lazy"] {
        let o = cep(&[&base[..], &["--remote-failure", "true", "--remote-mode", mode]].concat());
        assert_eq!(o.code, Some(0), "{o:#?}");
        let lines: Vec<&str> = o.stdout.lines().filter(|l| l.contains("\"query\":\"encounter\"")).collect();
        assert!(!lines.is_empty() && lines.iter().all(|l| l.contains(",\"unverified\":true,")), "{}", o.stdout);
        assert!(o.stdout.lines().all(|l| !l.contains("\"query\":\"apart\"")), "NOT near(…) is false: {}", o.stdout);
        assert!(o.stderr.contains(" unverified"), "{}", o.stderr);
        let mut sorted: Vec<String> = o.stdout.lines().map(str::to_owned).collect();
        sorted.sort();
        outputs.push(sorted);
    }
    assert_eq!(outputs[0], outputs[1]);
    // Lazy, fail: the run stops naming the function and the URL too.
    let o = cep(&[&base[..], &["--remote-mode", "lazy"]].concat());
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains("remote function `near` at http://127.0.0.1:"), "{}", o.stderr);
    // false: `apart` (NOT near) matches, unverified; `encounter` does not.
    let o = cep(&[&base[..], &["--remote-failure", "false"]].concat());
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(
        o.stdout.lines().all(|l| l.contains("\"query\":\"apart\"") && l.contains("\"unverified\":true")),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.is_empty());
}

#[test]
fn bad_remote_flags_are_refused() {
    let dir = Scratch::new("remote", "flags");
    let events = dir.write("ais.csv", ais_csv(2, 2));
    let query = dir.write("q.cep", QUERY);
    let plain = dir.write("plain.cep", "PATTERN AIS a");
    for (q, extra, says) in [
        (&query, vec![], "calls remote function `near`, which no --remote says where to ask"),
        (&plain, vec!["--remote", "near=http://127.0.0.1:1/near"], "--remote near: no query declares `REMOTE near(…)`"),
        (&query, vec!["--remote", "near"], "invalid --remote `near`: expected NAME=URL"),
        (&query, vec!["--remote", "near=https://example.invalid/near"], "https"),
        (
            &query,
            vec!["--remote", "near=http://127.0.0.1:1/", "--remote-failure", "maybe"],
            "unknown --remote-failure `maybe`",
        ),
        (
            &query,
            vec!["--remote", "near=http://127.0.0.1:1/", "--remote-mode", "eager"],
            "unknown --remote-mode `eager`",
        ),
        (
            &query,
            vec!["--remote", "near=http://127.0.0.1:1/", "--remote-timeout", "soon"],
            "invalid --remote-timeout `soon`",
        ),
    ] {
        let args = [&["run", "--query", q.as_str(), "--events", events.as_str()][..], &extra[..]].concat();
        let o = cep(&args);
        assert_eq!(o.code, Some(2), "{args:?}: {o:#?}");
        assert!(o.stderr.contains(says), "{args:?}: {}", o.stderr);
    }
}

/// Killed with SIGKILL at pseudo-random moments while its calls go to the
/// service, and resumed each time: the output is that of an uninterrupted
/// run, no line lost and none twice (blocking calls are answered before a
/// checkpoint, and a resumed run asks again for the events after it).
#[test]
fn killed_and_resumed_while_calling_the_service_equals_an_uninterrupted_run() {
    killed_and_resumed("blocking");
}

/// The same, lazy: checkpoints hold the calls in flight, the debts and the
/// parked matches, and a resumed run makes those calls again.
#[test]
fn killed_and_resumed_with_calls_in_flight_equals_an_uninterrupted_run() {
    killed_and_resumed("lazy");
}

fn killed_and_resumed(mode: &str) {
    use std::process::Stdio;
    let dir = Scratch::new("remote", &format!("kill-{mode}"));
    let csv = ais_csv(60, 240);
    let events = dir.write("ais.csv", &csv);
    let query = dir.write("q.cep", QUERY);
    let index = ProximityIndex::new(load_csv_file(std::path::Path::new(&events)).unwrap(), Config::default()).unwrap();
    let service = Proximity::start(index);
    let url = service.url();
    let run = |out: &str, ckpt: &str| -> Vec<String> {
        ["run", "--query", &query, "--events", &events, "--remote", &url, "--threads", "2", "--remote-mode", mode]
            .iter()
            .map(|s| s.to_string())
            .chain(["--out", out, "--checkpoint", ckpt, "--checkpoint-every", "500"].map(String::from))
            .collect()
    };
    let whole = dir.write("whole.jsonl", "");
    let started = std::time::Instant::now();
    let path = |name: &str| dir.0.join(name).to_str().expect("a UTF-8 temp path").to_owned();
    let o = cep(&run(&whole, &path("ckpt-whole")).iter().map(String::as_str).collect::<Vec<_>>());
    let full = started.elapsed();
    assert_eq!(o.code, Some(0), "{o:#?}");
    let want = std::fs::read_to_string(&whole).unwrap();
    assert!(want.lines().count() > 50, "{}", want.lines().count());
    let out = dir.write("out.jsonl", "");
    let args = run(&out, &path("ckpt"));
    let mut rng = cep_testkit::XorShift64::new(0x5EED);
    let (mut killed, mut resumed) = (0, 0);
    for attempt in 0..20 {
        let mut cmd = Command::new(CEP);
        cmd.args(&args);
        if attempt > 0 {
            cmd.arg("--resume");
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        if attempt < 6 {
            std::thread::sleep(full.mul_f64(0.1 + (rng.next_u64() % 1000) as f64 / 1000.0 * 0.5));
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                let o = child.wait_with_output().unwrap();
                resumed += usize::from(String::from_utf8_lossy(&o.stderr).contains("resuming after row"));
                killed += 1;
                continue;
            }
        }
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "attempt {attempt}: {}", String::from_utf8_lossy(&o.stderr));
        break;
    }
    assert!(killed >= 2 && resumed >= 1, "{killed} runs killed, {resumed} of them resumed (full run {full:?})");
    let got = std::fs::read_to_string(&out).unwrap();
    let sorted = |s: &str| {
        let mut v: Vec<&str> = s.lines().collect();
        v.sort_unstable();
        v.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let (got_lines, want_lines) = (sorted(&got), sorted(&want));
    let mut dedup = got_lines.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), got_lines.len(), "a line was written twice");
    assert!(
        got_lines == want_lines,
        "{} lines after {killed} kills ({resumed} resumed), {} uninterrupted",
        got_lines.len(),
        want_lines.len()
    );
    assert!(got == want, "not the very same bytes");
}

/// A service that answers every request the same wrong way, on loopback:
/// with an HTTP error status, by never answering, or by closing the
/// connection; stopped when dropped (bounded: it serves until then).
struct Faulty {
    addr: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    Status500,
    Hang,
    Drop,
}

impl Faulty {
    fn start(fault: Fault) -> Faulty {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 4096];
                match fault {
                    // Each request on the (kept-alive) connection gets a 500.
                    Fault::Status500 => {
                        std::thread::spawn(move || {
                            while matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                                let reply = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n";
                                if conn.write_all(reply).is_err() {
                                    break;
                                }
                            }
                        });
                    }
                    Fault::Hang => held.push(conn),
                    Fault::Drop => {
                        let _ = conn.read(&mut buf);
                        drop(conn);
                    }
                }
            }
        });
        Faulty { addr, stop }
    }
}

impl Drop for Faulty {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn faults_of_the_service_follow_the_failure_policy() {
    let dir = Scratch::new("remote", "faults");
    let events = dir.write("ais.csv", ais_csv(4, 3));
    let query = dir.write("q.cep", QUERY);
    for (fault, says) in
        [(Fault::Status500, "answered HTTP 500"), (Fault::Hang, "timed out"), (Fault::Drop, "could not connect")]
    {
        let service = Faulty::start(fault);
        let url = format!("near=http://{}/near", service.addr);
        for mode in ["blocking", "lazy"] {
            let base = [
                "run",
                "--query",
                &query,
                "--events",
                &events,
                "--remote",
                &url,
                "--remote-timeout",
                "100ms",
                "--threads",
                "1",
                "--remote-mode",
                mode,
            ];
            let o = cep(&base);
            assert_eq!(o.code, Some(2), "{fault:?} {mode}: {o:#?}");
            assert!(
                o.stderr.contains(&format!(
                    "remote function `near` at http://{}/near {says} after 4 attempts",
                    service.addr
                )),
                "{fault:?} {mode}: {}",
                o.stderr
            );
            let o = cep(&[&base[..], &["--remote-failure", "false"]].concat());
            assert_eq!(o.code, Some(0), "{fault:?} {mode}: {o:#?}");
            assert!(!o.stdout.is_empty(), "{fault:?} {mode}: `apart` matches, unverified");
            assert!(o.stdout.lines().all(|l| l.contains("\"unverified\":true")), "{}", o.stdout);
        }
    }
}

/// On a stream, a match that waits for its answers (lazy) goes out when
/// they come, while the input is idle, not with the next event or at the
/// end of the input: every match of the rows written is on stdout while
/// stdin is still open. (The service takes 20 ms a call, so the last
/// matches' answers are still on their way when the input runs dry; the
/// query has no blocking statement, whose waits would let them come.)
#[test]
fn a_match_waiting_for_its_answer_goes_out_while_the_input_is_idle() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = Scratch::new("remote", "idle");
    let csv = ais_csv(6, 12);
    let events = dir.write("ais.csv", &csv);
    let encounter = &QUERY[..QUERY.find("QUERY apart").unwrap()];
    let query = dir.write("q.cep", encounter);
    let index = ProximityIndex::new(load_csv_file(std::path::Path::new(&events)).unwrap(), Config::default()).unwrap();
    let want = reference_of(encounter, &csv, &index);
    assert!(want.iter().any(|l| l.starts_with("encounter")), "{want:?}");
    let service = Proximity::slow(index, Duration::from_millis(20));
    let url = service.url();
    for threads in ["1", "2"] {
        let mut child = Command::new(CEP)
            .args(["run", "--query", &query, "--events", "-", "--format", "csv", "--remote", &url])
            .args(["--remote-mode", "lazy", "--threads", threads])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cep runs");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(csv.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut got = String::new();
        let mut count = 0;
        while count < want.len() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    got.push_str(&line);
                    got.push('\n');
                    count += 1;
                }
                Err(_) => break,
            }
        }
        // Only now does the input end.
        drop(stdin);
        let status = child.wait().unwrap();
        reader.join().unwrap();
        assert!(status.success(), "threads {threads}");
        assert_eq!(matches(&got), want, "threads {threads}: the matches out while stdin was open");
    }
}
