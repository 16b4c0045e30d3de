//! `--events kafka://…` and `--out kafka://…` through the binary
//! (LANGUAGE.md §9), against a real Kafka-protocol broker (Tansu, started
//! by each test on loopback: `cep_kafka::testing::Broker`; `bash
//! .ci/install-kafka-broker` installs it). Built with `--features kafka`;
//! without it, a Kafka URL is refused with how to get it.

mod common;
use common::{CEP, Output, Scratch};

use std::process::Command;

fn cep(args: &[&str]) -> Output {
    Output::of(Command::new(CEP).args(args).output().expect("cep runs"), args)
}

#[cfg(not(feature = "kafka"))]
#[test]
fn without_the_feature_a_kafka_url_says_how_to_get_it() {
    let dir = Scratch::new("kafka", "disabled");
    let query = dir.write("q.cep", "PATTERN SEQ(A a, B b)");
    for args in [
        vec!["run", "--query", &query, "--events", "kafka://127.0.0.1:9/ticks"],
        vec!["run", "--query", &query, "--events", &query, "--out", "kafka://127.0.0.1:9/matches"],
    ] {
        let o = cep(&args);
        assert_eq!(o.code, Some(2), "{o:#?}");
        assert!(o.stderr.contains("--features kafka"), "{o:#?}");
    }
}

#[cfg(feature = "kafka")]
mod with_a_broker {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use cep_bench::w1::{RISE_SPIKE, Ticks};
    use cep_kafka::rdkafka::config::ClientConfig;
    use cep_kafka::rdkafka::consumer::{BaseConsumer, Consumer};
    use cep_kafka::rdkafka::error::KafkaError;
    use cep_kafka::rdkafka::message::Message;
    use cep_kafka::rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    use cep_kafka::rdkafka::{Offset, TopicPartitionList};
    use cep_kafka::testing::Broker;

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(20);

    /// Sends `(key, payload)` messages to `topic`, each key to one
    /// partition (the client's hash of the key), and waits for every ack.
    fn produce(broker: &Broker, topic: &str, messages: &[(String, String)]) {
        let producer: BaseProducer =
            ClientConfig::new().set("bootstrap.servers", broker.bootstrap()).create().expect("producer");
        for (key, payload) in messages {
            loop {
                match producer.send(BaseRecord::to(topic).key(key).payload(payload)) {
                    Ok(()) => break,
                    Err((e, _)) => {
                        assert!(matches!(e, KafkaError::MessageProduction(_)), "send: {e}");
                        producer.poll(Duration::from_millis(10));
                    }
                }
            }
        }
        producer.flush(TIMEOUT).expect("every message acknowledged");
    }

    /// Every message of `topic` now (all partitions, to their ends), as
    /// (key, payload).
    fn consume(broker: &Broker, topic: &str) -> Vec<(String, String)> {
        let partitions = cep_kafka::admin::partitions(&broker.bootstrap(), topic, TIMEOUT).expect("partitions");
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", broker.bootstrap())
            .set("group.id", "cep-cli-test-reader")
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "true")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        for &p in &partitions {
            tpl.add_partition_offset(topic, p, Offset::Beginning).unwrap();
        }
        consumer.assign(&tpl).unwrap();
        let (mut ended, mut out) = (BTreeSet::new(), Vec::new());
        let deadline = Instant::now() + TIMEOUT;
        while ended.len() < partitions.len() {
            assert!(Instant::now() < deadline, "the topic's end did not come");
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => out.push((
                    String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned(),
                    String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
                )),
                Some(Err(KafkaError::PartitionEOF(p))) => {
                    ended.insert(p);
                }
                Some(Err(e)) => panic!("consumer: {e}"),
                None => {}
            }
        }
        out
    }

    /// W1's ticks as JSON lines, and as messages keyed by their key.
    fn ticks(n: usize) -> (String, Vec<(String, String)>) {
        let mut bytes = Vec::new();
        cep_bench::w1::write_jsonl(&mut bytes, n).unwrap();
        let lines = String::from_utf8(bytes).unwrap();
        let messages = lines.lines().zip(Ticks::new(n)).map(|(l, t)| (t.key.to_string(), l.to_owned())).collect();
        (lines, messages)
    }

    fn sorted(lines: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut v: Vec<String> = lines.into_iter().collect();
        v.sort();
        v
    }

    /// A broker whose topic `ticks` (3 partitions) holds `n` W1 ticks, the
    /// `outputs` topics (3 partitions each), rise_spike's query file, and
    /// its matches on the same ticks read from a file, sorted.
    struct W1Topic {
        broker: Broker,
        query: String,
        want: Vec<String>,
        events: String,
    }

    fn w1_topic(dir: &Scratch, n: usize, outputs: &[&str]) -> W1Topic {
        let broker = Broker::start();
        let (lines, messages) = ticks(n);
        let file = dir.write("ticks.jsonl", &lines);
        let query = dir.write("q.cep", RISE_SPIKE);
        let want = cep(&["run", "--query", &query, "--events", &file, "--threads", "1"]);
        assert_eq!(want.code, Some(0), "{want:#?}");
        let want = sorted(want.stdout.lines().map(str::to_owned));
        assert!(want.len() > 10, "the ticks make matches");
        let bootstrap = broker.bootstrap();
        for topic in std::iter::once(&"ticks").chain(outputs) {
            cep_kafka::admin::create_topic(&bootstrap, topic, 3, TIMEOUT).unwrap();
        }
        produce(&broker, "ticks", &messages);
        let events = format!("kafka://{bootstrap}/ticks");
        W1Topic { broker, query, want, events }
    }

    /// Runs `cep args`, then `cep args --resume` again and again: each of
    /// the first `kills` runs is killed with SIGKILL at a pseudo-random
    /// moment between 10 % and 70 % of `full` (unless it ended before),
    /// and `seen` gets each run's stderr and whether it ended, and says
    /// whether the job is over (a run that ended is). Returns how many
    /// runs were killed.
    fn kill_and_resume(
        args: &[&str],
        kills: usize,
        full: Duration,
        seed: u64,
        mut seen: impl FnMut(usize, bool, &std::process::Output) -> bool,
    ) -> usize {
        let mut rng = cep_testkit::XorShift64::new(seed);
        let mut killed = 0;
        for attempt in 0.. {
            let mut cmd = Command::new(CEP);
            cmd.args(args);
            if attempt > 0 {
                cmd.arg("--resume");
            }
            let mut child =
                cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
            let ended = attempt >= kills || {
                std::thread::sleep(full.mul_f64(0.1 + (rng.next_u64() % 1000) as f64 / 1000.0 * 0.6));
                match child.try_wait().unwrap() {
                    None => {
                        child.kill().unwrap(); // SIGKILL: no cleanup runs
                        killed += 1;
                        false
                    }
                    Some(_) => true,
                }
            };
            let o = child.wait_with_output().unwrap();
            if seen(attempt, ended, &o) {
                return killed;
            }
        }
        unreachable!()
    }

    /// rise_spike from a topic of 3 partitions to a topic: the matches of
    /// the same ticks read from a file, each keyed by its partition key.
    #[test]
    fn rise_spike_from_kafka_to_kafka_equals_the_file_run() {
        let dir = Scratch::new("kafka", "w1");
        let W1Topic { broker, query, want, events } = w1_topic(&dir, 200_000, &["matches"]);
        let out = format!("kafka://{}/matches", broker.bootstrap());
        for threads in ["1", "2"] {
            let args =
                ["run", "--query", &query, "--events", &events, "--out", &out, "--until-end", "--threads", threads];
            let o = cep(&args);
            assert_eq!(o.code, Some(0), "{o:#?}");
            assert!(o.stderr.contains("summary: 200000 rows read"), "{o:#?}");
        }
        let got = consume(&broker, "matches");
        for (key, line) in &got {
            let m: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(key, &m["key"].to_string(), "keyed by the partition key");
        }
        // Two runs wrote the same matches (at least once, no checkpoints).
        let mut twice: Vec<String> = want.iter().flat_map(|l| [l.clone(), l.clone()]).collect();
        twice.sort();
        assert_eq!(sorted(got.into_iter().map(|(_, l)| l)), twice);
    }

    /// A message that is not an event follows `--on-bad-row`, named by
    /// topic, partition and offset.
    #[test]
    fn bad_messages_follow_on_bad_row() {
        let broker = Broker::start();
        let dir = Scratch::new("kafka", "bad");
        let query = dir.write("q.cep", "PATTERN SEQ(A a, B b) WHERE [k]");
        let bootstrap = broker.bootstrap();
        cep_kafka::admin::create_topic(&bootstrap, "in", 1, TIMEOUT).unwrap();
        let good = |ty: &str, ts: i64| (String::from("1"), format!(r#"{{"type":"{ty}","ts":{ts},"k":1}}"#));
        produce(&broker, "in", &[good("A", 1), ("1".into(), "{not json".into()), good("B", 2)]);
        let events = format!("kafka://{bootstrap}/in");
        let skip = cep(&["run", "--query", &query, "--events", &events, "--until-end", "--on-bad-row", "skip"]);
        assert_eq!(skip.code, Some(0), "{skip:#?}");
        assert_eq!(skip.stdout.lines().count(), 1, "{skip:#?}");
        assert!(skip.stderr.contains(&format!("warning: skipped: {events}")), "{skip:#?}");
        assert!(skip.stderr.contains("partition 0, offset 1"), "{skip:#?}");
        let fail = cep(&["run", "--query", &query, "--events", &events, "--until-end"]);
        assert_eq!(fail.code, Some(2), "{fail:#?}");
        assert!(fail.stderr.contains("partition 0, offset 1"), "{fail:#?}");
    }

    /// A topic the broker does not have, and a broker that is not there:
    /// an error naming it (exit 2), within the broker timeout.
    #[test]
    fn a_missing_topic_or_broker_is_an_error() {
        let broker = Broker::start();
        let dir = Scratch::new("kafka", "missing");
        let query = dir.write("q.cep", "PATTERN SEQ(A a, B b)");
        let events = format!("kafka://{}/nothing-here", broker.bootstrap());
        let o = cep(&["run", "--query", &query, "--events", &events, "--until-end"]);
        assert_eq!(o.code, Some(2), "{o:#?}");
        assert!(o.stderr.contains("no topic \"nothing-here\""), "{o:#?}");
        let port = broker.port();
        drop(broker);
        let start = Instant::now();
        let gone = format!("kafka://127.0.0.1:{port}/ticks");
        let o = cep(&["run", "--query", &query, "--events", &gone, "--until-end"]);
        assert_eq!(o.code, Some(2), "{o:#?}");
        assert!(o.stderr.contains(&gone), "{o:#?}");
        assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
    }

    /// Without `--until-end` the run follows the topic until SIGTERM (or
    /// SIGINT), then writes what it found and exits 0.
    #[test]
    fn sigterm_ends_a_run_that_follows_the_topic() {
        use std::io::{BufRead, BufReader};
        use std::process::Stdio;
        let broker = Broker::start();
        let dir = Scratch::new("kafka", "sigterm");
        let query = dir.write("q.cep", "PATTERN SEQ(A a, B b) WHERE [k]");
        let bootstrap = broker.bootstrap();
        cep_kafka::admin::create_topic(&bootstrap, "in", 2, TIMEOUT).unwrap();
        let ev = |ty: &str, ts: i64, k: i64| (k.to_string(), format!(r#"{{"type":"{ty}","ts":{ts},"k":{k}}}"#));
        produce(&broker, "in", &[ev("A", 1, 1), ev("A", 2, 2), ev("B", 3, 1), ev("B", 4, 2)]);
        let events = format!("kafka://{bootstrap}/in");
        let mut child = Command::new(CEP)
            .args(["run", "--query", &query, "--events", &events, "--idle-timeout", "200ms"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The first match comes while the run goes on (the topic has no end).
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("a match").unwrap();
        assert!(first.contains(r#""key":1"#) || first.contains(r#""key":2"#), "{first}");
        let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(kill.success());
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "cep did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("summary: 4 rows read"), "{stderr}");
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        assert_eq!(rest.len(), 1, "both matches out: {first} {rest:?}");
    }

    /// rise_spike from a topic of 3 partitions to a file with checkpoints,
    /// killed with SIGKILL at 5 pseudo-random moments and resumed each time
    /// (reading on from the checkpoint's offsets): the file ends with the
    /// bytes of an uninterrupted run, no match lost, none twice, on one
    /// thread and on two.
    #[test]
    fn killed_and_resumed_from_a_topic_equals_an_uninterrupted_run() {
        let dir = Scratch::new("kafka", "kill");
        let w1 = w1_topic(&dir, 200_000, &[]);
        for threads in ["1", "2"] {
            let run = |out: &str, ckpt: &str| -> Vec<String> {
                let flags = ["--until-end", "--threads", threads, "--out", out, "--checkpoint", ckpt];
                ["run", "--query", &w1.query, "--events", &w1.events]
                    .into_iter()
                    .chain(flags)
                    .chain(["--checkpoint-every", "5000"])
                    .map(String::from)
                    .collect()
            };
            let whole = dir.0.join(format!("whole{threads}.jsonl"));
            let ckpt = dir.0.join(format!("ck-whole{threads}"));
            let started = Instant::now();
            let o = cep(&run(whole.to_str().unwrap(), ckpt.to_str().unwrap())
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>());
            assert_eq!(o.code, Some(0), "{o:#?}");
            let full = started.elapsed();
            let want = std::fs::read_to_string(&whole).unwrap();
            assert_eq!(sorted(want.lines().map(str::to_owned)), w1.want, "the file run's matches");

            let out = dir.0.join(format!("out{threads}.jsonl"));
            let args = run(out.to_str().unwrap(), dir.0.join(format!("ck{threads}")).to_str().unwrap());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut resumed = 0;
            let killed = kill_and_resume(&args, 5, full, 0x5EED_4B1D, |attempt, ended, o| {
                let stderr = String::from_utf8_lossy(&o.stderr);
                if stderr.contains("resuming after row") {
                    assert!(stderr.contains("read on from offsets 0:"), "the topic is not read again: {stderr}");
                    resumed += 1;
                }
                assert!(!ended || o.status.success(), "attempt {attempt}: {stderr}");
                ended
            });
            eprintln!("{threads} thread(s): killed {killed} times (full run {full:?}), {resumed} resumed runs");
            assert!(killed >= 3, "only {killed} runs were killed before they ended");
            assert!(resumed >= 2, "too few resumes from a checkpoint: {resumed}");
            let got = std::fs::read_to_string(&out).unwrap();
            assert_eq!(got.lines().count(), want.lines().count(), "no match lost, none twice");
            assert!(got == want, "{threads} thread(s): the bytes of the uninterrupted run");
        }
    }

    /// rise_spike from a topic to a topic with checkpoints: the output in
    /// transactions committed with the input's offsets. Uninterrupted, the
    /// topic holds each match once, and a `--resume` after the end says
    /// there is nothing to resume. Stopped with SIGTERM 3 times mid-run
    /// (each stop checkpoints and commits) and resumed each time from the
    /// checkpoint of the committed offsets, the topic again holds each
    /// match once. Runs killed with SIGKILL between the checkpoint and the
    /// commit are checked at our level (`cep-runtime/tests/transactions.rs`):
    /// the test broker shows aborted transactions' records to every
    /// consumer (DESIGN.md §4).
    #[test]
    fn exactly_once_from_a_topic_to_a_topic() {
        use std::process::Stdio;
        let dir = Scratch::new("kafka", "exactly-once");
        let W1Topic { broker, query, want, events } = w1_topic(&dir, 100_000, &["once", "stopped"]);
        let bootstrap = broker.bootstrap();
        let args = |out: &str, ckpt: &str| -> Vec<String> {
            let out = format!("kafka://{bootstrap}/{out}");
            ["run", "--query", &query, "--events", &events, "--until-end", "--out", &out, "--checkpoint", ckpt]
                .map(String::from)
                .into_iter()
                .chain(["--checkpoint-every".to_owned(), "5000".to_owned()])
                .collect()
        };
        let once = args("once", dir.0.join("ck-once").to_str().unwrap());
        let started = Instant::now();
        let o = cep(&once.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.code, Some(0), "{o:#?}");
        let full = started.elapsed();
        let got = sorted(consume(&broker, "once").into_iter().map(|(_, l)| l));
        assert_eq!(got, want, "each match once");
        let again = cep(&[&once.iter().map(String::as_str).collect::<Vec<_>>()[..], &["--resume"]].concat());
        assert_eq!(again.code, Some(2), "{again:#?}");
        assert!(again.stderr.contains("ended, its output committed to the end of its input"), "{again:#?}");

        let stopped = args("stopped", dir.0.join("ck-stopped").to_str().unwrap());
        let (mut stops, mut resumed) = (0, 0);
        for attempt in 0.. {
            let mut cmd = Command::new(CEP);
            cmd.args(&stopped);
            if attempt > 0 {
                cmd.arg("--resume");
            }
            let child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
            if attempt < 3 {
                std::thread::sleep(full.mul_f64(0.3));
                // SIGTERM: the run checkpoints, commits and exits 0.
                let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
                stops += 1;
            }
            let o = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "attempt {attempt}: {stderr}");
            resumed += usize::from(stderr.contains("resuming after row"));
            if attempt >= 3 {
                break;
            }
        }
        assert!(resumed >= 2, "{stops} stops, {resumed} runs resumed from a committed checkpoint");
        let got = sorted(consume(&broker, "stopped").into_iter().map(|(_, l)| l));
        assert_eq!(got, want, "each match once across the stops");
    }

    /// The same with SIGKILL at 5 pseudo-random moments and `--resume` each
    /// time: every resumed run takes the checkpoint of the committed
    /// offsets (or the beginning, when nothing was committed yet) and the
    /// last one ends; the topic holds every match and nothing else. The
    /// test broker also shows the records of the killed runs' aborted
    /// transactions, so a match may appear more than once here; that a
    /// committed output holds each once is checked at our level
    /// (`cep-runtime/tests/transactions.rs`).
    #[test]
    fn killed_from_a_topic_to_a_topic_resumes_from_the_committed_checkpoint() {
        let dir = Scratch::new("kafka", "exactly-once-killed");
        let w1 = w1_topic(&dir, 100_000, &["killed"]);
        let out = format!("kafka://{}/killed", w1.broker.bootstrap());
        let ckpt = dir.0.join("ck");
        let args = [
            "run",
            "--query",
            &w1.query,
            "--events",
            &w1.events,
            "--until-end",
            "--out",
            &out,
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--checkpoint-every",
            "5000",
        ];
        let started = Instant::now();
        let probe = Command::new(CEP).args(args).output().unwrap();
        assert!(probe.status.success(), "{}", String::from_utf8_lossy(&probe.stderr));
        let full = started.elapsed();
        // The first of the runs below is a fresh run (no --resume): the job
        // starts again.
        let mut resumed = 0;
        let killed = kill_and_resume(&args, 5, full, 0x00DD_BA11, |attempt, ended, o| {
            let stderr = String::from_utf8_lossy(&o.stderr);
            // A run killed right after it committed its end leaves nothing
            // to resume: the next one says so.
            let over = stderr.contains("ended, its output committed to the end of its input");
            if attempt > 0 && !stderr.is_empty() {
                assert!(
                    stderr.contains("resuming after row") || stderr.contains("no output committed") || over,
                    "attempt {attempt}: {stderr}"
                );
            }
            resumed += usize::from(stderr.contains("resuming after row"));
            assert!(!ended || over || o.status.success(), "attempt {attempt}: {stderr}");
            ended || over
        });
        eprintln!("killed {killed} times (full run {full:?}), {resumed} runs resumed from a committed checkpoint");
        assert!(killed >= 3, "only {killed} runs were killed before they ended");
        assert!(resumed >= 2, "too few resumes from a committed checkpoint: {resumed}");
        let mut got: Vec<String> = consume(&w1.broker, "killed").into_iter().map(|(_, l)| l).collect();
        got.sort();
        got.dedup();
        assert_eq!(got, w1.want, "every match, and nothing else");
    }

    /// Flags that do not go with a topic are refused.
    #[test]
    fn flags_that_do_not_fit_a_topic_are_refused() {
        let dir = Scratch::new("kafka", "flags");
        let query = dir.write("q.cep", "PATTERN SEQ(A a, B b)");
        let topic = "kafka://127.0.0.1:9/in";
        for (args, says) in [
            (vec!["--events", topic, "--format", "csv"], "JSON lines"),
            (vec!["--events", &query, "--out", topic, "--checkpoint", "cp"], "needs a topic as input"),
            (vec!["--events", &query, "--until-end"], "--until-end applies to a Kafka topic"),
            (vec!["--events", "kafka://nowhere/in"], "kafka://nowhere/in"),
        ] {
            let o = cep(&[&["run", "--query", &query][..], &args].concat());
            assert_eq!(o.code, Some(2), "{o:#?}");
            assert!(o.stderr.contains(says), "{says}: {o:#?}");
        }
    }
}
