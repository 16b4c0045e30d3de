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
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};

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
        let producer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("linger.ms", "5")
            .set("compression.type", "lz4")
            .set("enable.idempotence", "true")
            .set("message.timeout.ms", timeout.as_millis().max(1).to_string())
            .create_with_context(Deliveries::default())?;
        Ok(KafkaSink {
            name: url.to_string(),
            topic: url.topic().to_owned(),
            producer,
            partial: Vec::new(),
            written: 0,
            timeout,
        })
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
}

impl Drop for KafkaSink {
    fn drop(&mut self) {
        // What a failed run wrote still goes out, as a file's lines stay.
        let _ = self.producer.flush(self.timeout);
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
