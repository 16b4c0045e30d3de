//! Topics: create one, list its partitions, read a group's committed
//! offsets (`kafka` feature).
//!
//! A job assigns itself every partition of its input topic (DESIGN.md §2.8),
//! so it needs the partition list from the broker's metadata; tests need
//! topics with a given number of partitions.

use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use crate::Error;
use crate::wait::wait_for;

/// Creates `topic` with `partitions` partitions (replication 1) on the
/// broker at `bootstrap` (`HOST:PORT`). An existing topic is an error
/// ([`Error::CreateTopic`] with `TopicAlreadyExists`).
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32, timeout: Duration) -> Result<(), Error> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new().set("bootstrap.servers", bootstrap).create()?;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let opts = AdminOptions::new().request_timeout(Some(timeout)).operation_timeout(Some(timeout));
    // The request is bounded by its own timeout; the wait gets a little more
    // so that the broker's answer, not our deadline, decides.
    let answer = wait_for(admin.create_topics([&new], &opts), timeout + Duration::from_secs(1))
        .ok_or(Error::TimedOut { what: "creating a topic", after: timeout })??;
    match answer.into_iter().next() {
        Some(Ok(_)) => Ok(()),
        Some(Err((topic, code))) => Err(Error::CreateTopic { topic, code }),
        // One topic asked, none answered: take it as the broker's failure.
        None => Err(Error::CreateTopic { topic: topic.to_owned(), code: RDKafkaErrorCode::Fail }),
    }
}

/// The partition ids of `topic`, ascending, from the broker's metadata.
pub fn partitions(bootstrap: &str, topic: &str, timeout: Duration) -> Result<Vec<i32>, Error> {
    let client: BaseConsumer = ClientConfig::new().set("bootstrap.servers", bootstrap).create()?;
    let metadata = client.fetch_metadata(Some(topic), timeout)?;
    let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
        return Err(Error::NoSuchTopic { topic: topic.to_owned() });
    };
    match found.error().map(RDKafkaErrorCode::from) {
        None => {}
        Some(RDKafkaErrorCode::UnknownTopicOrPartition) => {
            return Err(Error::NoSuchTopic { topic: topic.to_owned() });
        }
        Some(code) => return Err(Error::Client(KafkaError::MetadataFetch(code))),
    }
    let mut ids: Vec<i32> = found.partitions().iter().map(|p| p.id()).collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The offsets `consumer`'s group has committed for `partitions` of
/// `topic`, by partition (a partition without one is left out).
pub fn committed(
    consumer: &BaseConsumer,
    topic: &str,
    partitions: impl IntoIterator<Item = i32>,
    timeout: Duration,
) -> Result<Vec<(i32, i64)>, KafkaError> {
    let mut query = rdkafka::TopicPartitionList::new();
    for p in partitions {
        query.add_partition(topic, p);
    }
    let answer = consumer.committed_offsets(query, timeout)?;
    let mut got: Vec<(i32, i64)> = answer
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            rdkafka::Offset::Offset(o) => Some((e.partition(), o)),
            _ => None,
        })
        .collect();
    got.sort_unstable();
    Ok(got)
}
