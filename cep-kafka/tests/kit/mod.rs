//! What the Kafka tests share: clients set up for a test broker, a producer
//! that records every delivery, and a reader of assigned partitions.

#![allow(dead_code)] // each test file uses a part

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cep_kafka::rdkafka::client::ClientContext;
use cep_kafka::rdkafka::config::ClientConfig;
use cep_kafka::rdkafka::consumer::{BaseConsumer, Consumer};
use cep_kafka::rdkafka::error::KafkaError;
use cep_kafka::rdkafka::message::{BorrowedMessage, DeliveryResult, Message};
use cep_kafka::rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use cep_kafka::rdkafka::{Offset, TopicPartitionList};

/// Every wait on the broker is bounded by this.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// One message as read back: partition, offset, key, payload.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Read {
    pub partition: i32,
    pub offset: i64,
    pub key: String,
    pub payload: String,
}

/// Records where each message went (partition, offset) or why it failed.
#[derive(Debug, Default)]
pub struct Deliveries {
    pub delivered: Mutex<Vec<(i32, i64, String)>>,
    pub failed: Mutex<Vec<String>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(m) => {
                let payload = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                self.delivered.lock().unwrap().push((m.partition(), m.offset(), payload));
            }
            Err((e, _)) => self.failed.lock().unwrap().push(e.to_string()),
        }
    }
}

/// A producer that records its deliveries.
pub type Recording = BaseProducer<Deliveries>;

/// A producer for `bootstrap`, with `extra` settings.
pub fn producer(bootstrap: &str, extra: &[(&str, &str)]) -> Recording {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap);
    for (k, v) in extra {
        config.set(*k, *v);
    }
    config.create_with_context(Deliveries::default()).expect("producer")
}

/// Sends `(key, payload)` to `topic` (partition chosen by key) and waits
/// until every message is acknowledged.
pub fn produce(producer: &Recording, topic: &str, messages: &[(String, String)]) {
    for (key, payload) in messages {
        producer.send(BaseRecord::to(topic).key(key).payload(payload)).map_err(|(e, _)| e).expect("send");
    }
    producer.flush(TIMEOUT).expect("flush");
    assert_eq!(producer.context().failed.lock().unwrap().as_slice(), &[] as &[String]);
}

/// A consumer for `bootstrap` (no subscription: partitions are assigned),
/// with `extra` settings. It has a `group.id` even when it is not in a
/// group: librdkafka refuses `assign` without one ("Local: Unknown group");
/// assigning does not join the group, so no rebalancing happens.
pub fn consumer(bootstrap: &str, extra: &[(&str, &str)]) -> BaseConsumer {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap).set("enable.auto.commit", "false").set("group.id", "cep-test-reader");
    for (k, v) in extra {
        config.set(*k, *v);
    }
    config.create().expect("consumer")
}

/// Assigns `partitions` of `topic` from the beginning.
pub fn assign_from_start(consumer: &BaseConsumer, topic: &str, partitions: &[i32]) {
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning).expect("offset");
    }
    consumer.assign(&tpl).expect("assign");
}

/// A message as [`Read`].
pub fn read_of(m: &BorrowedMessage<'_>) -> Read {
    Read {
        partition: m.partition(),
        offset: m.offset(),
        key: String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned(),
        payload: String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
    }
}

/// Reads until every partition in `partitions` has reported "end of
/// partition" (the consumer needs `enable.partition.eof=true`), and returns
/// the messages in the order read.
///
/// # Panics
/// On a consumer error, or when TIMEOUT passes first.
pub fn read_to_eof(consumer: &BaseConsumer, partitions: &[i32]) -> Vec<Read> {
    let deadline = Instant::now() + TIMEOUT;
    let mut at_end = BTreeSet::new();
    let mut read = Vec::new();
    while at_end.len() < partitions.len() {
        assert!(
            Instant::now() < deadline,
            "no end of partitions {partitions:?} after {TIMEOUT:?}: {at_end:?} so far, read {read:?}"
        );
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => read.push(read_of(&m)),
            Some(Err(KafkaError::PartitionEOF(p))) => {
                at_end.insert(p);
            }
            Some(Err(e)) => panic!("consumer: {e}"),
            None => {}
        }
    }
    read
}

/// Reads what is there now: polls until `quiet` passes with no message (for
/// consumers that cannot know the end: `read_committed` ones).
pub fn read_quiet(consumer: &BaseConsumer, quiet: Duration) -> Vec<Read> {
    let deadline = Instant::now() + TIMEOUT;
    let mut read = Vec::new();
    let mut last = Instant::now();
    while last.elapsed() < quiet && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                last = Instant::now();
                read.push(read_of(&m));
            }
            Some(Err(KafkaError::PartitionEOF(_))) => {}
            Some(Err(e)) => panic!("consumer: {e}"),
            None => {}
        }
    }
    read
}

/// Per partition, (low, high) from `fetch_watermarks`.
pub fn watermarks(consumer: &BaseConsumer, topic: &str, partitions: &[i32]) -> BTreeMap<i32, (i64, i64)> {
    partitions.iter().map(|&p| (p, consumer.fetch_watermarks(topic, p, TIMEOUT).expect("watermarks"))).collect()
}

/// `n` keyed messages: keys `k0..k{keys}`, payloads numbered.
pub fn messages(n: usize, keys: usize) -> Vec<(String, String)> {
    (0..n).map(|i| (format!("k{}", i % keys), format!("{{\"seq\":{i}}}"))).collect()
}
