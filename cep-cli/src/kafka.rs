//! `--events kafka://…` and `--out kafka://…` (LANGUAGE.md §9): opening a
//! topic as the job's source or sink, and stopping on SIGINT / SIGTERM.
//!
//! The client is built only with the `kafka` feature; without it a Kafka
//! URL is refused with how to get it (exit 2), so that the default build
//! compiles no C.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cep_kafka::KafkaUrl;

use crate::Failure;

/// The scheme that makes `--events` or `--out` a Kafka topic.
pub const SCHEME: &str = "kafka://";

/// Whether `--events` names a Kafka topic.
pub fn is_kafka(events: &str) -> bool {
    events.starts_with(SCHEME)
}

/// Whether `--out` names a Kafka topic.
pub fn is_kafka_out(out: Option<&Path>) -> bool {
    out.and_then(Path::to_str).is_some_and(is_kafka)
}

/// Parses a Kafka URL given to `flag`; in a build without the client, the
/// error that says how to get it.
pub fn url(text: &str, flag: &str) -> Result<KafkaUrl, Failure> {
    let url = KafkaUrl::parse(text).map_err(|e| Failure::bad_input(format!("error: {flag} {text}: {e}")))?;
    cep_kafka::support::require().map_err(|e| Failure::bad_input(format!("error: {flag} {text}: {e}")))?;
    Ok(url)
}

/// A stop flag raised by SIGINT and SIGTERM: a run on a topic with no end
/// stops between two events, writes what it found, and exits 0.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| Failure::other(format!("cannot watch for signal {signal}: {e}")))?;
    }
    Ok(stop)
}

/// The names a job writing a topic exactly once keeps its state under in
/// the broker: the consumer group its input offsets are committed under
/// and its producer's transactional id, both `cep-` and a hash of the
/// checkpoint directory's absolute path and the two topics. The same job
/// resumed finds them again (and fences the producer of the run it
/// resumes); another job, with another directory, has its own.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "kafka"), allow(dead_code))]
pub struct Transactions {
    pub group: String,
    pub transactional_id: String,
    /// The input topic.
    pub input: String,
}

impl Transactions {
    pub fn new(dir: &Path, input: &KafkaUrl, output: &KafkaUrl) -> Transactions {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
        // FNV-1a: stable across builds and platforms, unlike std's hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in dir
            .to_string_lossy()
            .bytes()
            .chain([0])
            .chain(input.to_string().bytes())
            .chain([0])
            .chain(output.to_string().bytes())
        {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let name = format!("cep-{h:016x}");
        Transactions { group: name.clone(), transactional_id: name, input: input.topic().to_owned() }
    }
}

#[cfg(feature = "kafka")]
mod client {
    use cep_core::Schema;
    use cep_kafka::{KafkaSink, KafkaSource, KafkaUrl, SourceConfig};
    use cep_runtime::job::JobInput;

    use crate::Failure;

    /// How long the broker may take to answer when a topic is opened, and
    /// to acknowledge the output.
    const BROKER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

    /// The topic as the job's input: every partition from the start.
    pub fn source(
        url: &KafkaUrl,
        until_end: bool,
        idle: Option<std::time::Duration>,
        transactions: Option<&super::Transactions>,
    ) -> Result<JobInput<'static>, Failure> {
        let mut config = SourceConfig::new(url, until_end);
        config.idle_timeout = idle;
        if let Some(t) = transactions {
            config.group.clone_from(&t.group);
        }
        config.timeout = BROKER_TIMEOUT;
        let source = KafkaSource::open(url, config, &[])
            .map_err(|e| Failure::bad_input(format!("error: --events {url}: {e}")))?;
        Ok(JobInput::events(source, Schema::new()))
    }

    /// The topic as the job's output: in transactions with `transactions`.
    pub fn sink(url: &KafkaUrl, transactions: Option<&super::Transactions>) -> Result<KafkaSink, Failure> {
        let sink = match transactions {
            None => KafkaSink::open(url, BROKER_TIMEOUT),
            Some(t) => KafkaSink::transactional(url, &t.transactional_id, &t.input, &t.group, BROKER_TIMEOUT),
        };
        sink.map_err(|e| Failure::bad_input(format!("error: --out {url}: {e}")))
    }
}

#[cfg(feature = "kafka")]
pub use client::{sink, source};

/// Without the client: unreachable past [`url`], which refuses first.
#[cfg(not(feature = "kafka"))]
pub fn source(
    url: &KafkaUrl,
    _until_end: bool,
    _idle: Option<std::time::Duration>,
    _transactions: Option<&Transactions>,
) -> Result<cep_runtime::job::JobInput<'static>, Failure> {
    Err(Failure::bad_input(format!("error: --events {url}: {}", cep_kafka::KafkaDisabled)))
}

/// A sink type for builds without the client (never made).
#[cfg(not(feature = "kafka"))]
pub type KafkaSink = Vec<u8>;

/// Without the client: unreachable past [`url`], which refuses first.
#[cfg(not(feature = "kafka"))]
pub fn sink(url: &KafkaUrl, _transactions: Option<&Transactions>) -> Result<KafkaSink, Failure> {
    Err(Failure::bad_input(format!("error: --out {url}: {}", cep_kafka::KafkaDisabled)))
}
