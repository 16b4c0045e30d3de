//! What the calling thread and the shard threads say to each other:
//! where a slice's runner is ([`Slot`]), the messages to a shard and back.

use super::*;

/// The most memory of field values a bundle's part lays out before its
/// events come (see [`Bundle::lay_out`]): W1's share of a batch is 80 KB.
pub(super) const LAYOUT_BYTES: usize = 1 << 20;

/// [`Batcher::worker_of`] for a slice run on the calling thread.
pub(super) const HERE: u32 = u32::MAX;

/// Where a slice's runner is.
pub(super) enum Slot {
    /// On the calling thread, with the slice's events gathered and not yet
    /// run (at most [`HERE_RUN`]; every send runs them first, so nothing
    /// else sees the runner behind the events routed to it).
    Here(Box<Runner>, Batch),
    /// On worker `w`, which gets the slice's events in bundles.
    There(usize),
    /// Asked back from its worker (see the `balance` module): the slice's events wait
    /// in the batch until the runner comes back, after the worker has run
    /// every bundle sent before.
    Coming(Batch),
}

/// What the reader sends a worker.
pub(super) enum ToShard {
    /// Events, then the watermark.
    Bundle(Arc<Bundle>),
    /// A block split by [`ShardedRunner::partition`]: each slice's part,
    /// for the queries of the mask, then the watermark.
    Block(Arc<PartedBlock>, u64, Timestamp),
    /// A checkpoint barrier: reply with the state of each slice.
    Checkpoint,
    /// A change to a slice's runner, in band (queries or alerts added
    /// or removed while events flow).
    Control(usize, Control),
    /// Run slice `j` from now on.
    Adopt(usize, Box<Runner>),
    /// Send slice `j`'s runner back.
    Release(usize),
    /// Blocks to parse whenever the worker has nothing else to do.
    Help(Receiver<ParseJob>),
    /// From now on, send each step's lines with their keys
    /// ([`ShardedRunner::set_ordered_output`]), filling again the lines
    /// that come back on this channel once written.
    Ordered(Receiver<Lines>),
    /// Reply [`FromShard::Synced`] once everything sent before has run
    /// and its output has gone out ([`ShardedRunner::sync`]).
    Sync,
    /// The end of the run: with `input_ended`, the end of the input
    /// (every slice finishes); without, a stop (see
    /// [`ShardedRunner::stop`]). Either way, reply with each slice's counts.
    End { input_ended: bool },
}

/// A change applied to a shard's runner between two batches.
pub type Control = Box<dyn FnOnce(&mut Runner) -> Result<(), RunnerError> + Send>;

/// What a worker sends back.
pub(super) enum FromShard {
    /// Output lines.
    Out(Vec<u8>),
    /// Worker `i`'s lines of its next step, with their keys (ordered
    /// output: one such message per bundle, block, checkpoint and end,
    /// even without a line).
    Lines(usize, Lines),
    /// Slice `j` has finished; its counts and statistics.
    Done(usize, Summary, RunnerStats),
    /// Slice `j`'s state at a checkpoint barrier.
    Snapshot(usize, Box<RunnerSnapshot>),
    /// Slice `j`'s runner, asked back.
    Released(usize, Box<Runner>),
    /// The worker stopped on an error.
    Failed(String),
    /// Worker `i` is done with a block (and has dropped it).
    BlockDone(usize),
    /// A worker has run everything sent before a [`ToShard::Sync`].
    /// With the matches its slices still hold for remote answers.
    Synced(usize),
}
