//! `cep-kafka`: the small Kafka tool of cep's examples and benchmarks
//! (`kafka` feature): create a topic, send a JSON-lines file to it one
//! message per line, read a topic back to its end.
//!
//! ```text
//! cep-kafka create  kafka://HOST:PORT/TOPIC [--partitions N]
//! cep-kafka produce kafka://HOST:PORT/TOPIC FILE [--key FIELD]
//! cep-kafka consume kafka://HOST:PORT/TOPIC
//! ```
//!
//! `produce` keys each message by the line's `FIELD` member (so that a key's
//! events stay in one partition, in order) and waits until the broker has
//! every message; `consume` prints every message now in the topic, all
//! partitions, one per line, and stops at the end.

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
    let usage = "usage: cep-kafka create URL [--partitions N] | produce URL FILE [--key FIELD] | consume URL";
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
            produce(&url, file, flag("--key").as_deref())
        }
        "consume" => consume(&url),
        _ => Err(usage.into()),
    }
}

/// Sends each line of `file` (`-`: stdin) as a message, keyed by its
/// `key` member when given; prints how many.
fn produce(url: &KafkaUrl, file: &str, key: Option<&str>) -> Result<(), String> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", url.bootstrap())
        .set("linger.ms", "5")
        .set("compression.type", "lz4")
        .create()
        .map_err(|e| e.to_string())?;
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
    }
    producer.flush(TIMEOUT).map_err(|e| format!("{url}: not all messages acknowledged: {e}"))?;
    eprintln!("cep-kafka: {sent} messages sent to {url}");
    Ok(())
}

/// Prints every message of the topic, all partitions, to the end.
fn consume(url: &KafkaUrl) -> Result<(), String> {
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
    while ended.len() < partitions.len() {
        if last.elapsed() > TIMEOUT {
            return Err(format!("{url}: nothing from the broker for {TIMEOUT:?}"));
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                last = Instant::now();
                let written = out.write_all(m.payload().unwrap_or_default()).and_then(|()| out.write_all(b"\n"));
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
