//! The receiving side of the calling thread: the shards' messages taken
//! and their lines written (in one thread's order when the output is
//! ordered), the calling thread's own lines first.

use super::*;

impl ShardedRunner {
    /// Waits until every slice asked back from a worker has come, writing
    /// the output meanwhile.
    pub(super) fn settle(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        Ok(self.take_until(out, |r| r.batches.coming() == 0)?)
    }

    /// Takes the shards' messages, writing their output, until `done`
    /// holds or a shard has failed. A shard thread that has ended while
    /// the runtime still waits on it sent its error (taken first) or
    /// panicked: that is a failure too, so that no wait outlives it.
    pub(super) fn take_until(&mut self, out: &mut impl Write, done: impl Fn(&ShardedRunner) -> bool) -> io::Result<()> {
        while !done(self) && self.failed.is_none() {
            match self.rx.recv_timeout(STOPPED_CHECK) {
                Ok(msg) => self.take(msg, out)?,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if self.handles.iter().flatten().any(JoinHandle::is_finished) {
                        self.failed.get_or_insert_with(|| "a shard thread stopped".into());
                    }
                }
            }
        }
        Ok(())
    }

    /// After the front has run: an error sending to a shard is replaced by
    /// the shard's own error, if it sent one.
    pub(super) fn after(&mut self, result: Result<(), PushError>, out: &mut impl Write) -> Result<(), PushError> {
        match result {
            Err(PushError::Io(e)) if self.batches.stopped => {
                self.write_output(out)?;
                Err(PushError::Io(e))
            }
            other => other,
        }
    }

    /// The periodic look: sends the batches if their oldest event has
    /// waited long enough and the shards have run every batch sent before
    /// (otherwise the batches would wait in the queue anyway: under load
    /// they fill instead), and writes the output so far.
    pub(super) fn look(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        let now = self.clock.look();
        let waited = self.batches.len > 0 && now - self.batches.first_at >= self.clock.flush_after;
        if waited && self.batches.caught_up() {
            let sent = self.batches.send(self.batches.released_ts);
            self.after(sent.map_err(PushError::Io), out)?;
        } else {
            // The slices run here do not wait for a send: their output is
            // as late as a look at most.
            let ran = self.batches.run_gathered();
            self.after(ran.map_err(PushError::Io), out)?;
        }
        self.write_output(out)
    }

    /// Writes the output the shards have sent so far, and the calling
    /// thread's own (without waiting).
    pub(super) fn write_output(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        while let Ok(msg) = self.rx.try_recv() {
            self.take(msg, out)?;
        }
        self.write_here(out)?;
        match &self.failed {
            Some(why) => Err(PushError::Io(io::Error::other(why.clone()))),
            None => Ok(()),
        }
    }

    /// Handles one message from a shard.
    pub(super) fn take(&mut self, msg: FromShard, out: &mut impl Write) -> io::Result<()> {
        match msg {
            FromShard::Out(bytes) => {
                // The calling thread's output first: a slice it gave away
                // has its earlier matches there.
                self.write_here(out)?;
                out.write_all(&bytes)?;
                self.written += bytes.len() as u64;
            }
            FromShard::Lines(i, lines) => {
                let merger = self.merger.as_mut().expect("keyed lines come only when ordered");
                self.written += merger.take(i, lines, out)?;
            }
            FromShard::Released(j, runner) => self.batches.arrive(j, runner).map_err(into_io)?,
            FromShard::Done(i, summary, stats) => {
                self.done.push(summary);
                self.stats.push((i, stats));
            }
            FromShard::Snapshot(j, snap) => self.snapshots.push((j, *snap)),
            FromShard::Failed(why) => {
                self.failed.get_or_insert(why);
            }
            FromShard::BlockDone(i) => self.blocks_held[i] -= 1,
            FromShard::Synced(waiting) => {
                self.synced += 1;
                self.waiting_answers += waiting;
            }
        }
        Ok(())
    }
}

impl ShardedRunner {
    /// Writes the matches of the slices the calling thread runs so far.
    pub(super) fn write_here(&mut self, out: &mut impl Write) -> io::Result<()> {
        let bytes = self.batches.here.get_mut();
        if !bytes.is_empty() {
            out.write_all(bytes)?;
            self.written += bytes.len() as u64;
            bytes.clear();
        }
        Ok(())
    }
}

/// A push error as an I/O error.
pub(super) fn into_io(e: PushError) -> io::Error {
    match e {
        PushError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}
