//! `cep-kafka`: the small Kafka tool of cep's examples and benchmarks
//! (`kafka` feature): create a topic, send a JSON-lines file to it one
//! message per line, read a topic back to its end.
//!
//! ```text
//! cep-kafka create  kafka://HOST:PORT/TOPIC [--partitions N]
//! cep-kafka produce kafka://HOST:PORT/TOPIC FILE [--key FIELD] [--rate N]
//! cep-kafka consume kafka://HOST:PORT/TOPIC [--follow SECONDS] [--stamp]
//! ```
//!
//! `produce` keys each message by the line's `FIELD` member (so that a key's
//! events stay in one partition, in order) and waits until the broker has
//! every message; with `--rate N` it sends line `i` (from 0) at `t0 + i / N`
//! seconds, each at once (no batching), and says `t0` (Unix nanoseconds) on
//! stderr: a latency measurement's clock. `consume` prints every message
//! now in the topic, all partitions, one per line, and stops at the end;
//! with `--follow S` it waits for more until none came for `S` seconds;
//! with `--stamp` each line starts with the Unix nanoseconds it was
//! received at and a tab.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cep_kafka::KafkaUrl;
use cep_kafka::rdkafka::config::ClientConfig;
use cep_kafka::rdkafka::consumer::{BaseConsumer, Consumer};
use cep_kafka::rdkafka::error::{KafkaError, RDKafkaErrorCode};
use cep_kafka::rdkafka::message::Message;
use cep_kafka::rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use cep_kafka::rdkafka::{Offset, TopicPartitionList};

/// Every wait on the broker is bounded by this.
const TIMEOUT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cep-kafka: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: cep-kafka create URL [--partitions N] | produce URL FILE [--key FIELD] [--rate N] | \
                 consume URL [--follow SECONDS] [--stamp]";
    let (command, rest) = args.split_first().ok_or(usage)?;
    let url: KafkaUrl = rest.first().ok_or(usage)?.parse().map_err(|e| format!("{e}"))?;
    let flag = |name: &str| rest.iter().position(|a| a == name).and_then(|i| rest.get(i + 1)).cloned();
    match command.as_str() {
        "create" => {
            let partitions =
                flag("--partitions").map_or(Ok(3), |n| n.parse().map_err(|_| format!("bad --partitions {n}")))?;
            cep_kafka::admin::create_topic(&url.bootstrap(), url.topic(), partitions, TIMEOUT)
                .map_err(|e| e.to_string())
        }
        "produce" => {
            let file = rest.get(1).filter(|f| !f.starts_with("--")).ok_or(usage)?;
            let rate =
                flag("--rate").map(|n| n.parse::<f64>().ok().filter(|r| *r > 0.0).ok_or(format!("bad --rate {n}")));
            produce(&url, file, flag("--key").as_deref(), rate.transpose()?)
        }
        "consume" => {
            let follow = flag("--follow")
                .map(|s| s.parse::<f64>().map(Duration::from_secs_f64).map_err(|_| format!("bad --follow {s}")));
            consume(&url, follow.transpose()?, rest.iter().any(|a| a == "--stamp"))
        }
        _ => Err(usage.into()),
    }
}

/// Sends each line of `file` (`-`: stdin) as a message, keyed by its
/// `key` member when given; prints how many.
fn produce(url: &KafkaUrl, file: &str, key: Option<&str>, rate: Option<f64>) -> Result<(), String> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", url.bootstrap())
        .set("linger.ms", if rate.is_some() { "1" } else { "5" })
        .set("compression.type", "lz4")
        .create()
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    if rate.is_some() {
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        eprintln!("cep-kafka: t0 {}", unix.as_nanos());
    }
    let mut behind = Duration::ZERO;
    let input: Box<dyn BufRead> = if file == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        Box::new(BufReader::new(std::fs::File::open(file).map_err(|e| format!("{file}: {e}"))?))
    };
    let mut sent = 0u64;
    for line in input.lines() {
        let line = line.map_err(|e| format!("{file}: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let k = key.and_then(|f| cep_kafka::sink::member_text(line.as_bytes(), f));
        if let Some(r) = rate {
            let due = t0 + Duration::from_secs_f64(sent as f64 / r);
            match due.checked_duration_since(Instant::now()) {
                Some(wait) => std::thread::sleep(wait),
                None => behind = behind.max(Instant::now() - due),
            }
        }
        loop {
            let mut record = BaseRecord::to(url.topic()).payload(&line);
            if let Some(k) = k.as_deref() {
                record = record.key(k);
            }
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => return Err(format!("{url}: {e}")),
            }
        }
        sent += 1;
        if rate.is_some() {
            producer.poll(Duration::ZERO);
        }
    }
    producer.flush(TIMEOUT).map_err(|e| format!("{url}: not all messages acknowledged: {e}"))?;
    eprintln!("cep-kafka: {sent} messages sent to {url}");
    if rate.is_some() {
        eprintln!("cep-kafka: at most {} µs behind the pace", behind.as_micros());
    }
    Ok(())
}

/// Prints every message of the topic, all partitions, to the end (with
/// `follow`: until none came for that long), each after its receive time
/// with `stamp`.
fn consume(url: &KafkaUrl, follow: Option<Duration>, stamp: bool) -> Result<(), String> {
    let partitions = cep_kafka::admin::partitions(&url.bootstrap(), url.topic(), TIMEOUT).map_err(|e| e.to_string())?;
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", url.bootstrap())
        .set("group.id", "cep-kafka-consume")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .map_err(|e| e.to_string())?;
    let mut tpl = TopicPartitionList::new();
    for &p in &partitions {
        tpl.add_partition_offset(url.topic(), p, Offset::Beginning).map_err(|e| e.to_string())?;
    }
    consumer.assign(&tpl).map_err(|e| e.to_string())?;
    let mut ended = BTreeSet::new();
    let mut out = std::io::stdout().lock();
    let mut last = Instant::now();
    loop {
        match follow {
            None if ended.len() == partitions.len() => break,
            Some(quiet) if last.elapsed() > quiet => break,
            _ => {}
        }
        if follow.is_none() && last.elapsed() > TIMEOUT {
            return Err(format!("{url}: nothing from the broker for {TIMEOUT:?}"));
        }
        match consumer.poll(Duration::from_millis(if follow.is_some() { 1 } else { 100 })) {
            Some(Ok(m)) => {
                last = Instant::now();
                let mut written = Ok(());
                if stamp {
                    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                    written = write!(out, "{}\t", unix.as_nanos());
                }
                let written = written
                    .and_then(|()| out.write_all(m.payload().unwrap_or_default()))
                    .and_then(|()| out.write_all(b"\n"))
                    .and_then(|()| if follow.is_some() { out.flush() } else { Ok(()) });
                match written {
                    Ok(()) => {}
                    // The reader has what it wanted (`| head`).
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(e.to_string()),
                }
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                last = Instant::now();
                ended.insert(p);
            }
            Some(Err(e)) => return Err(format!("{url}: {e}")),
            None => {}
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}
