//! The job's loop: the events read ahead, then the rest of the input, to
//! the driver; checkpoints when due; on a stream, every match out before
//! the input waits, and the idle clock while it does; a stop asked for
//! between two events.

use std::io::BufWriter;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cep_core::budget::StateBudget;
use cep_core::{Event, TimeUnit};
use cep_io::{EventSource, InputPosition, Offsets, ReadAhead};

use super::checkpoints::Checkpoints;
use super::driver::Driver;
use super::error::{JobError, JobErrorKind};
use crate::{JsonLines, PushError};
use cep_io::LineSink as JobOutput;

/// What the loop writes to.
pub(crate) type Sink<W> = JsonLines<BufWriter<W>>;

/// Watches a run's progress: rows read so far, for a progress display.
pub trait Progress {
    /// Rows `from..to` of the input have been read.
    fn rows_read(&mut self, from: u64, to: u64);
    /// The input has been read to its end.
    fn done(&mut self);
}

/// How the loop treats the input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Skip bad rows instead of failing.
    pub skip_bad: bool,
    /// The input is a stream: flush matches as soon as they are found.
    pub streaming: bool,
    /// Events may go to the driver a few at a time ([`BATCH`]): a file, no
    /// failing on a late event (whose line the message names), and on one
    /// runner no delay (its batches skip the reorder buffer).
    pub batch: bool,
    /// The reader splits its blocks by shard: a whole block may go to the
    /// sharded runtime at once (`ShardedRunner::push_block`).
    pub blocks: bool,
    /// The reader parses blocks on threads, not split, for one runner: a
    /// whole block's events may go to it at once, where they were parsed
    /// (`ParallelReader::take_events`).
    pub event_blocks: bool,
    /// On a stream, the watermark follows the wall clock while no input
    /// comes.
    pub idle: Option<IdleClock>,
}

/// Events handed to the driver at once when [`Options::batch`]: with one
/// query and no level alerts its engine takes them as one batch, which
/// overlaps their cache misses (`Runner::push_batch_for`), and the output is
/// the same as event by event.
const BATCH: usize = 8;

/// Wall-clock idleness after which the watermark follows the wall clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdleClock {
    pub idle: Duration,
    pub unit: TimeUnit,
}

/// How the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The input ended.
    Input,
    /// A stop was asked for; the state is not finished.
    Stopped,
}

/// The loop's state.
pub(crate) struct Loop<'a, 'p, W: JobOutput> {
    pub driver: &'a mut Driver,
    pub sink: &'a mut Sink<W>,
    pub opts: Options,
    pub skipped: &'a mut u64,
    pub checkpoints: &'a mut Checkpoints,
    pub progress: Option<&'a mut (dyn Progress + 'p)>,
    pub stop: &'a Arc<AtomicBool>,
    /// The state bound: a part that passed it under `fail` trips it.
    pub budget: Option<&'a Arc<StateBudget>>,
    /// The remote functions: a failed call under `fail` stops the run.
    pub remote: Option<&'a super::RemoteSpec>,
    /// Rows consumed so far (good and bad), for a checkpoint at a stop.
    pub consumed: u64,
}

impl<W: JobOutput> Loop<'_, '_, W> {
    /// Feeds the read-ahead events, then the rest of `input`; finishes the
    /// driver at the end of the input.
    pub(crate) fn run(&mut self, input: &mut dyn EventSource, read_ahead: ReadAhead) -> Result<Ended, JobError> {
        let file = input.file().to_owned();
        let ReadAhead { events, error, ended, .. } = read_ahead;
        for (i, (e, line)) in events.iter().enumerate() {
            if let Some((at, err)) = &error
                && *at == i
            {
                return Err(JobErrorKind::Read(err.clone()).into());
            }
            if self.stopping() {
                return self.stopped(None);
            }
            self.check_bound()?;
            self.push_event(e, &file, *line)?;
        }
        if let Some((_, err)) = error {
            return Err(JobErrorKind::Read(err).into());
        }
        if !ended && self.rest(input, &file)? == Ended::Stopped {
            return Ok(Ended::Stopped);
        }
        if let Some(p) = self.progress.as_deref_mut() {
            p.done();
        }
        self.check_bound()?;
        self.driver.finish(self.sink).map_err(write_failed)?;
        self.check_bound()?;
        // A transactional output commits its last lines with the end of
        // the input, marked as the end first: a resumed run whose committed
        // offsets are those has nothing to do (the state after the end is
        // no checkpoint: its deadlines have all fired).
        if let Some(dir) = &self.checkpoints.dir
            && self.sink.get_ref().get_ref().transactional()
        {
            self.sink.flush().map_err(write_failed)?;
            let offsets = input.offsets();
            let out = self.sink.get_mut().get_mut();
            out.sync().map_err(write_failed)?;
            let mark = super::checkpoints::offsets_text(offsets.as_ref().map_or(&[][..], Vec::as_slice));
            crate::checkpoint::mark_ended(dir, &mark).map_err(|error| {
                JobError::new(JobErrorKind::Checkpoint { dir: dir.clone(), doing: "mark the end in", error })
            })?;
            out.commit(offsets.as_ref()).map_err(write_failed)?;
        }
        Ok(Ended::Input)
    }

    /// An error when a part of the job stopped at the state bound (the
    /// matches written so far stay).
    /// The first partial matches dropped to stay within it are warned
    /// of, once.
    #[inline]
    fn check_bound(&self) -> Result<(), JobError> {
        if let Some(r) = self.remote
            && let Some(why) = r.failure()
        {
            return Err(JobErrorKind::Remote(why).into());
        }
        match self.budget {
            Some(b) if b.has_news() => bound_news(b),
            _ => Ok(()),
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// A stop: a checkpoint of the rows consumed (if checkpoints are on),
    /// with the input's position when it stands right after them.
    fn stopped(&mut self, at: Option<(InputPosition, Option<Offsets>)>) -> Result<Ended, JobError> {
        let position = self.consumed;
        if position > self.checkpoints.skip_below {
            self.checkpoints.save(self.driver, self.sink, position, at, *self.skipped)?;
        }
        Ok(Ended::Stopped)
    }

    /// [`push_one`](Self::push_one), for the read-ahead: an event a resumed
    /// run's checkpoint already covers is skipped; a checkpoint is saved
    /// when due.
    fn push_event(&mut self, e: &Event, file: &str, line: u64) -> Result<(), JobError> {
        if e.row < self.checkpoints.skip_below {
            return Ok(());
        }
        self.push_one(e, file, line)?;
        self.consumed = e.row + 1;
        if e.row + 1 >= self.checkpoints.next_at {
            self.checkpoints.save(self.driver, self.sink, e.row + 1, None, *self.skipped)?;
        }
        Ok(())
    }

    /// Pushes one event (read from `file` at `line`): a late event under
    /// the `fail` policy is an error naming its place; matches are flushed
    /// at once when the input is a stream.
    fn push_one(&mut self, e: &Event, file: &str, line: u64) -> Result<(), JobError> {
        let before = self.driver.emitted();
        self.driver.push(e, self.sink).map_err(|err| match err {
            PushError::Late { .. } => {
                JobError::new(JobErrorKind::Late { file: file.to_owned(), line, row: e.row, message: err.to_string() })
            }
            PushError::Io(io) => write_failed(io),
            PushError::StateLimit { hit, limit } => JobErrorKind::StateLimit { hit, limit }.into(),
            // Only `Runtime::push` checks an event's width; never here.
            other @ PushError::Event(_) => write_failed(std::io::Error::other(other.to_string())),
        })?;
        if self.opts.streaming && self.driver.emitted() != before {
            self.sink.flush().map_err(write_failed)?;
        }
        Ok(())
    }

    /// Hands `events` over: as a batch when [`Options::batch`], else one by
    /// one through [`push_one`](Self::push_one).
    fn hand_over(&mut self, events: &[Event], file: &str, line: u64) -> Result<(), JobError> {
        if !self.opts.batch {
            return events.iter().try_for_each(|e| self.push_one(e, file, line));
        }
        self.driver.push_batch(events, self.sink).map_err(push_failed)
    }

    /// The loop over the rest of the input. Events are held and handed over
    /// [`BATCH`] at a time when [`Options::batch`], else one at a time; the
    /// held events go before a checkpoint, an error, a stop or the end, so
    /// that each sees every event before it processed.
    fn rest(&mut self, input: &mut dyn EventSource, file: &str) -> Result<Ended, JobError> {
        let capacity = if self.opts.batch { BATCH } else { 1 };
        let mut batch: Vec<Event> = (0..capacity).map(|_| Event::default()).collect();
        let mut held = 0;
        loop {
            self.check_bound()?;
            if self.stopping() {
                self.hand_over(&batch[..held], file, input.last_line())?;
                if held > 0 {
                    self.consumed = batch[held - 1].row + 1;
                }
                let at = (input.position(), input.offsets());
                return self.stopped(Some(at));
            }
            // A whole block split by shard, when the reader has one ready
            // that the checkpoints admit: the events held go first.
            if self.opts.blocks
                && let Some(block) = input.take_block(&mut |b| self.checkpoints.admits(b))
            {
                self.hand_over(&batch[..held], file, input.last_line())?;
                held = 0;
                let (first, rows) = (block.row_base(), block.len() as u64);
                self.driver.push_block(block, self.sink).map_err(push_failed)?;
                self.consumed = first + rows;
                if let Some(p) = self.progress.as_deref_mut() {
                    p.rows_read(first, first + rows);
                }
                continue;
            }
            // The same for a whole block of events read on threads without a
            // partition, for one runner: run where the parser thread put them.
            if self.opts.event_blocks
                && let Some(block) = input.take_events(&mut |b| self.checkpoints.admits(b))
            {
                self.hand_over(&batch[..held], file, input.last_line())?;
                held = 0;
                let events = block.events();
                self.hand_over(events, file, input.last_line())?;
                let (first, rows) = (events[0].row, events.len() as u64);
                self.consumed = first + rows;
                if let Some(p) = self.progress.as_deref_mut() {
                    p.rows_read(first, first + rows);
                }
                continue;
            }
            if self.opts.streaming && input.would_wait() {
                self.wait_for_input(input)?;
                // Input came, or a stop was asked for (then the read would
                // wait for input that may never come): look again.
                continue;
            }
            match input.next_event(&mut batch[held]) {
                Ok(true) => {
                    let row = batch[held].row;
                    if row < self.checkpoints.skip_below {
                        continue;
                    }
                    held += 1;
                    let due = row + 1 >= self.checkpoints.next_at;
                    if held == capacity || due {
                        self.hand_over(&batch[..held], file, input.last_line())?;
                        held = 0;
                        self.consumed = row + 1;
                    }
                    if due {
                        let at = (input.position(), input.offsets());
                        self.checkpoints.save(self.driver, self.sink, row + 1, Some(at), *self.skipped)?;
                    }
                    if let Some(p) = self.progress.as_deref_mut() {
                        p.rows_read(row, row + 1);
                    }
                }
                Ok(false) => break,
                Err(err) if self.opts.skip_bad && err.is_bad_row() => {
                    eprintln!("warning: skipped: {err}");
                    *self.skipped += 1;
                }
                Err(err) => {
                    self.hand_over(&batch[..held], file, input.last_line())?;
                    return Err(JobErrorKind::Read(err).into());
                }
            }
        }
        self.hand_over(&batch[..held], file, input.last_line())?;
        if held > 0 {
            self.consumed = batch[held - 1].row + 1;
        }
        Ok(Ended::Input)
    }

    /// Before a stream's next event waits for input: every match found so
    /// far goes out (the sharded runtime runs the events it holds for a
    /// batch and writes their lines) and the output is flushed. With an
    /// idle clock, each `idle` without input then moves the watermark by
    /// the wall time since the input paused (in timestamp units), so that
    /// deadlines fire on a quiet stream, and their matches go out too.
    fn wait_for_input(&mut self, input: &mut dyn EventSource) -> Result<(), JobError> {
        self.driver.sync(self.sink).map_err(push_failed)?;
        self.sink.flush().map_err(write_failed)?;
        self.settle_while_waiting(input)?;
        let Some(clock) = self.opts.idle else {
            // Waits here rather than in the read, so that a stop asked for
            // meanwhile (SIGTERM on a topic with no end) is seen.
            while !input.wait(STOP_POLL) && !self.stopping() {}
            return Ok(());
        };
        let (since, base) = (Instant::now(), self.driver.watermark());
        while !input.wait(clock.idle) {
            if self.stopping() {
                return Ok(());
            }
            if base == i64::MIN {
                continue; // no event yet: no event time to advance from
            }
            let ticks = since.elapsed().as_nanos() / clock.unit.nanos() as u128;
            let wm = base.saturating_add(i64::try_from(ticks).unwrap_or(i64::MAX));
            self.driver.advance_watermark(wm, self.sink).map_err(push_failed)?;
            self.driver.sync(self.sink).map_err(push_failed)?;
            self.sink.flush().map_err(write_failed)?;
        }
        Ok(())
    }
}

impl<W: JobOutput> Loop<'_, '_, W> {
    /// While matches wait for remote answers (lazy evaluation) and the
    /// input has nothing: looks for answers every [`ANSWER_POLL`] and
    /// writes the matches they settle, so that a match goes out when its
    /// answer comes rather than with the next event. Returns when input
    /// comes, nothing waits any more, or a stop is asked for.
    fn settle_while_waiting(&mut self, input: &mut dyn EventSource) -> Result<(), JobError> {
        if self.remote.is_none_or(|r| r.mode() == cep_core::remote::RemoteMode::Blocking) {
            return Ok(());
        }
        loop {
            let before = self.driver.emitted();
            let waiting = self.driver.settle_answers(self.sink).map_err(push_failed)?;
            if self.driver.emitted() != before {
                self.sink.flush().map_err(write_failed)?;
            }
            if waiting == 0 || self.stopping() || input.wait(ANSWER_POLL) {
                return Ok(());
            }
        }
    }
}

/// How often a job whose input is idle and has no idle clock looks whether
/// a stop was asked for.
const STOP_POLL: Duration = Duration::from_millis(100);

/// How often a job whose input is idle looks for the remote answers its
/// waiting matches need: about a loopback round trip, so that such a match
/// is late by at most this much.
const ANSWER_POLL: Duration = Duration::from_millis(1);

/// What the state bound has to say: the job stopped at it (an error), or
/// the first partial matches were dropped to stay within it (a warning).
#[cold]
fn bound_news(b: &StateBudget) -> Result<(), JobError> {
    if b.tripped() {
        return Err(bound_error(b));
    }
    b.clear_news();
    eprintln!(
        "warning: the state reached --max-state {}: dropping the oldest partial matches of the largest keys \
         (--on-state-limit drop-oldest); matches that needed them are lost, and the summary counts them",
        cep_core::budget::show_size(b.limit())
    );
    Ok(())
}

/// The job stopped at the state bound: what held the most.
#[cold]
pub(crate) fn bound_error(b: &StateBudget) -> JobError {
    JobErrorKind::StateLimit { hit: b.hit_or_total(), limit: b.limit() }.into()
}

/// The failure of writing the output.
pub(crate) fn write_failed(e: std::io::Error) -> JobError {
    JobErrorKind::Write(e).into()
}

/// A push that failed other than by a late event under `fail`: the output.
pub(crate) fn push_failed(e: PushError) -> JobError {
    match e {
        PushError::Io(io) => write_failed(io),
        PushError::StateLimit { hit, limit } => JobErrorKind::StateLimit { hit, limit }.into(),
        other @ (PushError::Late { .. } | PushError::Event(_)) => {
            write_failed(std::io::Error::other(other.to_string()))
        }
    }
}
