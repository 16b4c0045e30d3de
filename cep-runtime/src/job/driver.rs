//! [`Driver`]: what a job feeds, one [`Runner`] on the calling thread or a
//! [`ShardedRunner`], behind one set of methods, so that the job's loop is
//! written once for both.

use std::io::{self, Write};
use std::sync::Arc;

use cep_core::{Event, Timestamp};
use cep_io::parallel::PartedBlock;

use crate::checkpoint::PipelineSnapshot;
use crate::shard::ShardedRunner;
use crate::{JsonLines, PushError, QueryInfo, Runner, RunnerStats, Summary};

/// One runner, or the runtime on several threads.
#[derive(Debug)]
pub(crate) enum Driver {
    One(Box<Runner>),
    Sharded(Box<ShardedRunner>),
}

impl Driver {
    pub(crate) fn push<W: Write>(&mut self, e: &Event, sink: &mut JsonLines<W>) -> Result<(), PushError> {
        match self {
            Driver::One(r) => r.push(e, sink),
            Driver::Sharded(r) => r.push(e, sink.get_mut()),
        }
    }

    /// Events at once: one runner takes them as a batch (its engines
    /// overlap their cache misses), the shards one by one.
    pub(crate) fn push_batch<W: Write>(&mut self, events: &[Event], sink: &mut JsonLines<W>) -> Result<(), PushError> {
        match self {
            Driver::One(r) => r.push_batch_for(events, u64::MAX, sink),
            Driver::Sharded(r) => events.iter().try_for_each(|e| r.push(e, sink.get_mut())),
        }
    }

    /// A block of events split by shard: to the shards whole, or (on one
    /// runner) its events one by one.
    pub(crate) fn push_block<W: Write>(
        &mut self,
        block: Arc<PartedBlock>,
        sink: &mut JsonLines<W>,
    ) -> Result<(), PushError> {
        match self {
            Driver::One(r) => block.try_for_each_in_order(|e| r.push(e, sink)),
            Driver::Sharded(r) => r.push_block(block, sink.get_mut()),
        }
    }

    /// Every match of the events pushed so far to the sink (on shards, see
    /// [`ShardedRunner::sync`]; one runner holds none).
    pub(crate) fn sync<W: Write>(&mut self, sink: &mut JsonLines<W>) -> Result<(), PushError> {
        match self {
            Driver::One(_) => Ok(()),
            Driver::Sharded(r) => r.sync(sink.get_mut()),
        }
    }

    /// The matches whose remote answers came since the last event go to
    /// the sink (lazy evaluation; on shards with a [`sync`](Self::sync));
    /// returns how many still wait for answers.
    pub(crate) fn settle_answers<W: Write>(&mut self, sink: &mut JsonLines<W>) -> Result<usize, PushError> {
        match self {
            Driver::One(r) => r.settle_answers(sink),
            Driver::Sharded(r) => {
                r.sync(sink.get_mut())?;
                Ok(r.waiting_answers())
            }
        }
    }

    pub(crate) fn advance_watermark<W: Write>(
        &mut self,
        wm: Timestamp,
        sink: &mut JsonLines<W>,
    ) -> Result<(), PushError> {
        match self {
            Driver::One(r) => r.advance_watermark(wm, sink),
            Driver::Sharded(r) => r.advance_watermark(wm, sink.get_mut()),
        }
    }

    pub(crate) fn finish<W: Write>(&mut self, sink: &mut JsonLines<W>) -> io::Result<()> {
        match self {
            Driver::One(r) => r.finish(sink),
            Driver::Sharded(r) => r.finish(sink.get_mut()).map(|_| ()),
        }
    }

    /// After a failure: on shards, the events before it are run and their
    /// lines written (what one thread has written when it stops there).
    pub(crate) fn stop<W: Write>(&mut self, sink: &mut JsonLines<W>) -> io::Result<()> {
        match self {
            Driver::One(_) => Ok(()),
            Driver::Sharded(r) => r.stop(sink.get_mut()).map(|_| ()),
        }
    }

    /// The whole state, every match so far handed to the sink.
    pub(crate) fn snapshot<W: Write>(&mut self, sink: &mut JsonLines<W>) -> io::Result<PipelineSnapshot> {
        match self {
            Driver::One(r) => Ok(PipelineSnapshot::One(r.snapshot()?)),
            Driver::Sharded(r) => Ok(PipelineSnapshot::Sharded(r.checkpoint(sink.get_mut())?)),
        }
    }

    pub(crate) fn watermark(&self) -> Timestamp {
        match self {
            Driver::One(r) => r.watermark(),
            Driver::Sharded(r) => r.watermark(),
        }
    }

    /// Output so far (matches and fires, or bytes from the shards): when it
    /// changes on a stream, the output is flushed.
    pub(crate) fn emitted(&self) -> u64 {
        match self {
            Driver::One(r) => r.summary().matches.iter().sum::<u64>() + r.summary().fires,
            Driver::Sharded(r) => r.output_bytes(),
        }
    }

    pub(crate) fn summary(&self) -> Summary {
        match self {
            Driver::One(r) => r.summary().clone(),
            Driver::Sharded(r) => r.summary(),
        }
    }

    /// Statistics: the runner's, or the front's then each shard's.
    pub(crate) fn stats(&self) -> Vec<(String, RunnerStats)> {
        match self {
            Driver::One(r) => vec![("runner".into(), r.stats())],
            Driver::Sharded(r) => std::iter::once(("front".to_owned(), r.front_stats()))
                .chain(r.shard_stats().into_iter().enumerate().map(|(i, s)| (format!("shard {i}"), s)))
                .collect(),
        }
    }

    pub(crate) fn queries(&self) -> &[QueryInfo] {
        match self {
            Driver::One(r) => r.queries(),
            Driver::Sharded(r) => r.queries(),
        }
    }

    /// Threads running the queries (the calling thread counted when it
    /// runs some).
    pub(crate) fn threads(&self) -> usize {
        match self {
            Driver::One(_) => 1,
            Driver::Sharded(r) => r.shards() + 1,
        }
    }
}
