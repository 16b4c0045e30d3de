//! [`KafkaSink`]: a job's output lines as messages of a topic (LANGUAGE.md
//! §9), one message per line, keyed by the line's partition key (`kafka`
//! feature).
//!
//! The job writes JSON lines as bytes ([`LineSink`]); the sink cuts them
//! into lines and sends each as it is complete, keyed by its `key` (a
//! match's partition value, a level alert's key: the text of a string, the
//! JSON of any other value, no key for `null`), so that a consumer of one
//! key reads its matches in order. The client batches and compresses
//! (`linger.ms`, `compression.type`); [`LineSink::sync`] waits until every
//! message sent is acknowledged, and a message the broker refused is an
//! error there, never a warning. Without checkpoints the output is
//! at-least-once: a rerun writes the same lines again, each with the same
//! stable `id`, by which a consumer can drop duplicates.

use std::io::{self, Write};
use std::sync::Mutex;
use std::time::Duration;

use cep_io::LineSink;
use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};

use crate::{Error, KafkaUrl, admin};

/// Records the first delivery that failed and counts the good ones.
#[derive(Debug, Default)]
pub struct Deliveries {
    failed: Mutex<Option<String>>,
    delivered: std::sync::atomic::AtomicU64,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.delivered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err((e, _)) => {
                let mut failed = self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                failed.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// Output lines to a Kafka topic; see the module doc.
pub struct KafkaSink {
    name: String,
    topic: String,
    producer: BaseProducer<Deliveries>,
    /// A line begun by one write and not yet ended.
    partial: Vec<u8>,
    written: u64,
    timeout: Duration,
    /// Writing in transactions ([`KafkaSink::transactional`]).
    transactions: Option<Transactions>,
}

/// What a transactional sink commits its input's offsets under.
struct Transactions {
    /// The input topic.
    input: String,
    /// A consumer of the input's group, for the group's metadata and its
    /// committed offsets.
    group: BaseConsumer,
    /// The broker was found not to apply a transaction's offsets (warned
    /// once).
    warned: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for KafkaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSink").field("name", &self.name).field("written", &self.written).finish_non_exhaustive()
    }
}

impl KafkaSink {
    /// A producer to `url`'s topic, which must exist (its partitions are
    /// read from the broker within `timeout`, which also bounds each wait
    /// for acknowledgements).
    pub fn open(url: &KafkaUrl, timeout: Duration) -> Result<KafkaSink, Error> {
        let bootstrap = url.bootstrap();
        admin::partitions(&bootstrap, url.topic(), timeout)?;
        let producer = producer_config(&bootstrap, timeout).create_with_context(Deliveries::default())?;
        Ok(KafkaSink::with(url, producer, timeout, None))
    }

    /// A producer to `url`'s topic that writes in transactions
    /// (LANGUAGE.md §9, exactly once): each
    /// [`commit`](LineSink::commit) commits the lines written since the
    /// last one together with the offsets of `input` (the job's input
    /// topic) under consumer group `group`, and opens the next
    /// transaction. Opening it under `transactional_id` fences a producer
    /// of an earlier run with the same id and aborts what it left open.
    pub fn transactional(
        url: &KafkaUrl,
        transactional_id: &str,
        input: &str,
        group: &str,
        timeout: Duration,
    ) -> Result<KafkaSink, Error> {
        let bootstrap = url.bootstrap();
        admin::partitions(&bootstrap, url.topic(), timeout)?;
        let producer: BaseProducer<Deliveries> = producer_config(&bootstrap, timeout)
            .set("transactional.id", transactional_id)
            .create_with_context(Deliveries::default())?;
        producer.init_transactions(timeout)?;
        producer.begin_transaction()?;
        let group: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()?;
        let transactions = Transactions { input: input.to_owned(), group, warned: Default::default() };
        Ok(KafkaSink::with(url, producer, timeout, Some(transactions)))
    }

    fn with(
        url: &KafkaUrl,
        producer: BaseProducer<Deliveries>,
        timeout: Duration,
        transactions: Option<Transactions>,
    ) -> KafkaSink {
        let (name, topic) = (url.to_string(), url.topic().to_owned());
        KafkaSink { name, topic, producer, partial: Vec::new(), written: 0, timeout, transactions }
    }

    /// Messages acknowledged so far.
    pub fn delivered(&self) -> u64 {
        self.producer.context().delivered.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sends one line (without its newline).
    fn send(&self, line: &[u8]) -> io::Result<()> {
        let key = key_of(line);
        loop {
            let mut record = BaseRecord::to(&self.topic).payload(line);
            if let Some(k) = key.as_deref() {
                record = record.key(k);
            }
            match self.producer.send(record) {
                Ok(()) => break,
                // The client's queue is full: serve its callbacks (which
                // frees it) and try again.
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    self.producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => return Err(self.error(format!("cannot send a message: {e}"))),
            }
        }
        self.producer.poll(Duration::ZERO);
        self.check()
    }

    /// Reads back the group's committed offsets after a transaction that
    /// committed `offsets` with its lines, and commits them directly when
    /// the broker did not apply them. Kafka always does; the test broker
    /// (Tansu 0.6) drops some of the offsets of transactions committed in
    /// quick succession (docs/semantics.md, "Kafka"), and a resumed run
    /// would then take an older checkpoint and write its epochs again.
    fn check_committed(&self, tx: &Transactions, offsets: &cep_io::Offsets) -> io::Result<()> {
        let read = || {
            admin::committed(&tx.group, &tx.input, offsets.iter().map(|o| o.0), self.timeout)
                .map_err(|e| self.error(format!("cannot read the committed offsets back: {e}")))
        };
        let mut want = offsets.clone();
        want.sort_unstable();
        if read()? == want {
            return Ok(());
        }
        let mut tpl = TopicPartitionList::new();
        for &(p, o) in offsets {
            tpl.add_partition_offset(&tx.input, p, Offset::Offset(o))
                .map_err(|e| self.error(format!("cannot commit the input's offsets: {e}")))?;
        }
        tx.group
            .commit(&tpl, CommitMode::Sync)
            .map_err(|e| self.error(format!("cannot commit the input's offsets: {e}")))?;
        if read()? != want {
            return Err(self.error("the broker does not keep the input's committed offsets".into()));
        }
        if !tx.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            eprintln!(
                "warning: {}: the broker did not apply the input offsets committed in a transaction; they were \
                 committed again directly (exactly once then holds unless the run dies between the two)",
                self.name
            );
        }
        Ok(())
    }

    /// The first delivery failure, as an error.
    fn check(&self) -> io::Result<()> {
        let failed = self.producer.context().failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match failed.as_ref() {
            Some(why) => Err(self.error(format!("a message was not delivered: {why}"))),
            None => Ok(()),
        }
    }

    fn error(&self, message: String) -> io::Error {
        io::Error::other(format!("{}: {message}", self.name))
    }
}

/// The producer's settings: batches of 5 ms, lz4, idempotent, each message
/// acknowledged within `timeout`.
fn producer_config(bootstrap: &str, timeout: Duration) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("compression.type", "lz4")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", timeout.as_millis().max(1).to_string());
    config
}

/// The key of an output line: its `key` member ([`member_text`]).
fn key_of(line: &[u8]) -> Option<Vec<u8>> {
    member_text(line, "key").map(String::into_bytes)
}

/// Member `field` of a JSON line as a message key: a string's own text, a
/// number, boolean or object as JSON; none for `null`, a line without it,
/// or one that is not JSON.
pub fn member_text(line: &[u8], field: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    match v.get(field)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

impl Write for KafkaSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            if self.partial.is_empty() {
                self.send(&rest[..i])?;
            } else {
                self.partial.extend_from_slice(&rest[..i]);
                let line = std::mem::take(&mut self.partial);
                self.send(&line)?;
            }
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.producer.poll(Duration::ZERO);
        self.check()
    }
}

impl LineSink for KafkaSink {
    fn written(&self) -> u64 {
        self.written
    }

    /// Waits until every message sent is acknowledged (bounded by the
    /// timeout): an error if one was refused or the broker did not answer.
    fn sync(&mut self) -> io::Result<()> {
        self.producer.flush(self.timeout).map_err(|e| self.error(format!("messages not acknowledged: {e}")))?;
        self.check()
    }

    fn transactional(&self) -> bool {
        self.transactions.is_some()
    }

    /// Commits the open transaction with `offsets` of the input topic and
    /// opens the next (a sink without transactions: [`sync`](Self::sync)).
    fn commit(&mut self, offsets: Option<&cep_io::Offsets>) -> io::Result<()> {
        self.sync()?;
        let Some(tx) = &self.transactions else { return Ok(()) };
        let failed = |doing: &str, e: KafkaError| self.error(format!("cannot {doing} the transaction: {e}"));
        if let Some(offsets) = offsets {
            let mut tpl = TopicPartitionList::new();
            for &(p, o) in offsets {
                tpl.add_partition_offset(&tx.input, p, Offset::Offset(o)).map_err(|e| failed("add offsets to", e))?;
            }
            let group = tx.group.group_metadata().ok_or_else(|| self.error("no consumer group metadata".into()))?;
            self.producer
                .send_offsets_to_transaction(&tpl, &group, self.timeout)
                .map_err(|e| failed("send the input's offsets with", e))?;
        }
        self.producer.commit_transaction(self.timeout).map_err(|e| failed("commit", e))?;
        if let Some(offsets) = offsets {
            self.check_committed(tx, offsets)?;
        }
        self.producer.begin_transaction().map_err(|e| failed("begin", e))
    }
}

impl Drop for KafkaSink {
    fn drop(&mut self) {
        // What a failed run wrote still goes out, as a file's lines stay;
        // in a transaction it stays uncommitted (a resumed run writes it
        // again), so it is aborted.
        match self.transactions {
            None => {
                let _ = self.producer.flush(self.timeout);
            }
            Some(_) => {
                let _ = self.producer.abort_transaction(self.timeout);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_lines_partition_values() {
        assert_eq!(key_of(br#"{"query":"q","key":7,"start":1}"#), Some(b"7".to_vec()));
        assert_eq!(key_of(br#"{"query":"q","key":"IBM"}"#), Some(b"IBM".to_vec()));
        assert_eq!(key_of(br#"{"query":"q","key":null}"#), None);
        assert_eq!(key_of(br#"{"level":"a","key":[1,2]}"#), Some(b"[1,2]".to_vec()));
        assert_eq!(key_of(b"not json"), None);
    }
}
