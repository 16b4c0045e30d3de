//! A shard thread: runs the bundles and messages it receives on the
//! runners of its slices, and sends back its lines.

use super::*;

/// Why worker `me` cannot run a message for slice `j`.
pub(super) fn not_here(j: usize, me: usize) -> String {
    format!("slice {j} is not on shard {me}")
}

/// A worker thread's state.
pub(super) struct Shard {
    pub(super) me: usize,
    /// Per slice, its runner if this worker runs it.
    pub(super) runners: Vec<Option<Box<Runner>>>,
    pub(super) rx: Receiver<ToShard>,
    pub(super) out: Sender<FromShard>,
    /// A block's events, rebuilt from their flat rows (reused: each keeps
    /// its fields vector).
    pub(super) events: Vec<Event>,
    /// Per worker, the nanoseconds it spent running bundles (this one adds
    /// to its own; the reader reads them to balance the load).
    pub(super) busy: Arc<Vec<AtomicU64>>,
}

impl Shard {
    /// The next message, parsing blocks of `help` while there is none
    /// (until its reader is gone).
    pub(super) fn next(&self, help: &mut Option<Receiver<ParseJob>>) -> Result<ToShard, RecvError> {
        loop {
            let Some(jobs) = help else { return self.rx.recv() };
            match self.rx.try_recv() {
                Ok(msg) => return Ok(msg),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {}
            }
            select! {
                recv(self.rx) -> msg => return msg,
                recv(jobs) -> job => match job {
                    Ok(job) => job.run(),
                    Err(_) => *help = None,
                },
            }
        }
    }

    /// The runners of the slices this worker runs, with their index.
    pub(super) fn mine(&mut self) -> impl Iterator<Item = (usize, &mut Runner)> {
        self.runners.iter_mut().enumerate().filter_map(|(j, r)| Some((j, &mut **r.as_mut()?)))
    }

    /// Slice `j`'s runner; an error if this worker does not run it.
    pub(super) fn runner(&mut self, j: usize) -> Result<&mut Runner, String> {
        let me = self.me;
        self.runners.get_mut(j).and_then(Option::as_deref_mut).ok_or_else(|| not_here(j, me))
    }

    /// Runs the bundles until the end of the input or an error, which it
    /// sends back before stopping.
    pub(super) fn run(mut self) {
        let mut sink = KeyedLines::new();
        let mut help: Option<Receiver<ParseJob>> = None;
        while let Ok(msg) = self.next(&mut help) {
            let finish = matches!(msg, ToShard::End { .. });
            let was_block = matches!(msg, ToShard::Block(..));
            // A checkpoint and the end send their step's lines themselves.
            let step = matches!(msg, ToShard::Bundle(..) | ToShard::Block(..));
            let result = match msg {
                ToShard::Bundle(bundle) => {
                    let start = Instant::now();
                    let ran = self.bundle(&bundle, &mut sink).map_err(|e| e.to_string());
                    self.busy[self.me].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    ran
                }
                ToShard::Block(block, mask, wm) => self.block(&block, mask, wm, &mut sink).map_err(|e| e.to_string()),
                ToShard::Control(j, change) => self.runner(j).and_then(|r| change(r).map_err(|e| e.to_string())),
                ToShard::Checkpoint => self.checkpoint(&mut sink),
                ToShard::End { input_ended } => self.end(input_ended, &mut sink),
                ToShard::Adopt(j, runner) => {
                    self.runners[j] = Some(runner);
                    Ok(())
                }
                ToShard::Release(j) => match self.runners.get_mut(j).and_then(Option::take) {
                    Some(runner) => {
                        self.send_output(&mut sink, false);
                        let _ = self.out.send(FromShard::Released(j, runner));
                        Ok(())
                    }
                    None => Err(not_here(j, self.me)),
                },
                ToShard::Help(jobs) => {
                    help = Some(jobs);
                    Ok(())
                }
                ToShard::Ordered(spare) => {
                    sink.keep_keys(spare);
                    Ok(())
                }
                ToShard::Sync => {
                    // The matches whose remote answers came since the last
                    // step, then the output (ordered: after the lines of
                    // every step before, each sent at its step's end).
                    let mut waiting = 0;
                    let mut settled = Ok(());
                    for (_, runner) in self.mine() {
                        match runner.settle_answers(&mut sink) {
                            Ok(n) => waiting += n,
                            Err(e) => settled = Err(e.to_string()),
                        }
                    }
                    // With ordered output, a step of its own on every shard
                    // (each gets the `Sync`): the merger writes it whole.
                    self.send_output(&mut sink, true);
                    let _ = self.out.send(FromShard::Synced(waiting));
                    settled
                }
            };
            if let Err(err) = result {
                let _ = self.out.send(FromShard::Failed(format!("shard {}: {err}", self.me)));
                return;
            }
            self.send_output(&mut sink, step);
            if was_block {
                let _ = self.out.send(FromShard::BlockDone(self.me));
            }
            if finish {
                return;
            }
        }
    }

    /// Sends the output so far, if any; with ordered output, only at the
    /// end of a step (`step_end`), and then even none.
    pub(super) fn send_output(&self, sink: &mut KeyedLines, step_end: bool) {
        if sink.keeps_keys() {
            if step_end {
                let _ = self.out.send(FromShard::Lines(self.me, sink.take()));
            }
        } else if !sink.is_empty() {
            let _ = self.out.send(FromShard::Out(sink.take().bytes));
        }
    }

    /// Sends the output so far, then the state of each slice.
    pub(super) fn checkpoint(&mut self, sink: &mut KeyedLines) -> Result<(), String> {
        let mut snaps = Vec::new();
        for (j, runner) in self.mine() {
            snaps.push((j, runner.snapshot().map_err(|e| format!("checkpoint: {e}"))?));
        }
        self.send_output(sink, true);
        for (j, snap) in snaps {
            let _ = self.out.send(FromShard::Snapshot(j, Box::new(snap)));
        }
        Ok(())
    }

    /// Ends each slice: its last matches when `input_ended`, then its
    /// counts.
    pub(super) fn end(&mut self, input_ended: bool, sink: &mut KeyedLines) -> Result<(), String> {
        let mut done = Vec::new();
        for (j, runner) in self.mine() {
            if input_ended {
                runner.finish(sink).map_err(|e| e.to_string())?;
            }
            done.push(FromShard::Done(j, runner.summary().clone(), runner.stats()));
        }
        self.send_output(sink, true);
        for msg in done {
            let _ = self.out.send(msg);
        }
        Ok(())
    }

    /// Runs each of this worker's slices' part of a block, then the
    /// watermark `wm`.
    pub(super) fn block(
        &mut self,
        block: &PartedBlock,
        mask: u64,
        wm: Timestamp,
        sink: &mut KeyedLines,
    ) -> Result<(), PushError> {
        let mut events = std::mem::take(&mut self.events);
        for (j, runner) in self.mine() {
            let part = block.part(j);
            let mut from = FlatCursor::default();
            while from.index() < part.len() {
                let (chunk, next) = part.unpack_chunk(from, UNPACK_CHUNK, &mut events, block.row_base());
                runner.push_batch_for(chunk, mask, sink)?;
                from = next;
            }
            runner.advance_watermark(wm, sink)?;
        }
        self.events = events;
        Ok(())
    }

    /// Runs a bundle's events, where they are, each slice's on its runner,
    /// then moves every slice it runs to the bundle's watermark.
    pub(super) fn bundle(&mut self, bundle: &Bundle, sink: &mut KeyedLines) -> Result<(), PushError> {
        for (j, part) in bundle.parts.iter().enumerate() {
            if part.len == 0 {
                continue;
            }
            let runner = self.runner(j).map_err(|why| PushError::Io(io::Error::other(why)))?;
            part.run_on(runner, sink)?;
        }
        if bundle.wm > Timestamp::MIN {
            for (_, runner) in self.mine() {
                runner.advance_watermark(bundle.wm, sink)?;
            }
        }
        Ok(())
    }
}
