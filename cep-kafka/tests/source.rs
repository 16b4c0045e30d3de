//! `KafkaSource` against the test broker: the partitions merged in event
//! time, every message read once, with queues small enough that fetching
//! pauses and resumes again and again (`kafka` feature).

#![cfg(feature = "kafka")]

mod kit;

use cep_core::{Event, Schema};
use cep_io::EventSource;
use cep_kafka::testing::Broker;
use cep_kafka::{KafkaSource, SourceConfig};
use kit::{TIMEOUT, produce, producer};

/// Events of 3 keys on a topic of 3 partitions, each key's events in
/// time order, the keys' times interleaved: the source gives them all,
/// once, in time order (ties: lower partition first), numbered in that
/// order; with queues of 256 events it pauses and resumes partitions all
/// along and loses or repeats none.
#[test]
fn partitions_merge_in_event_time_through_pauses() {
    let broker = Broker::start();
    let bootstrap = broker.bootstrap();
    cep_kafka::admin::create_topic(&bootstrap, "merge", 3, TIMEOUT).unwrap();
    // Key k's events at ts = 3 i + k: all times distinct, keys interleaved,
    // sent in time order (so each partition is, whichever keys share one).
    let n = 3000i64;
    let mut messages = Vec::new();
    for i in 0..n {
        for k in 0..3i64 {
            messages.push((format!("k{k}"), format!(r#"{{"type":"T","ts":{},"k":{k},"i":{i}}}"#, 3 * i + k)));
        }
    }
    produce(&producer(&bootstrap, &[]), "merge", &messages);
    for max_queued in [256, cep_kafka::source::MAX_QUEUED] {
        let url = broker.url("merge");
        let mut config = SourceConfig::new(&url, true);
        config.max_queued = max_queued;
        let mut source = KafkaSource::open(&url, config, &[]).unwrap();
        let mut schema = Schema::new();
        let k = schema.field("k");
        source.use_schema(&schema, None);
        let mut e = Event::default();
        let mut got = Vec::new();
        while source.next_event(&mut e).unwrap() {
            got.push((e.ts, e.row, e.get(k)));
        }
        assert_eq!(got.len(), 3 * n as usize, "max_queued {max_queued}");
        for (j, (ts, row, key)) in got.iter().enumerate() {
            assert_eq!((*ts, *row), (j as i64, j as u64), "max_queued {max_queued}: in time order, numbered");
            assert_eq!(*key, cep_core::Value::Int(*ts % 3));
        }
        assert_eq!(source.rows(), 3 * n as u64);
        if max_queued == 256 {
            assert!(source.pauses() > 0, "the small queues paused fetching");
        }
        let mut offsets = source.offsets();
        offsets.sort_unstable();
        let ends: i64 = offsets.iter().map(|o| o.1).sum();
        assert_eq!(ends, 3 * n, "each partition read to its end: {offsets:?}");
    }
}
