//! A runner's saved state for checkpoints: [`RunnerSnapshot`], taking it
//! and restoring it, with the checks that refuse a state no runner writes
//! (restoring one would have on-time events rejected as late).

use std::io::{self, Write};

use cep_core::{Event, Timestamp};
use cep_index::LevelSnapshot;
use cep_nfa::select::{QueryEngine, QuerySnapshot};
use cep_time::reorder::ReorderSnapshot;
use cep_time::{ReorderBuffer, Watermark};

use super::{Runner, Summary};
use crate::RestoreError;
use crate::error::RestoreErrorKind;

/// The saved state of a [`Runner`] (see [`Runner::snapshot`]): plain data,
/// serialisable with serde.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunnerSnapshot {
    engines: Vec<QuerySnapshot>,
    watermark: Watermark,
    reorder: Option<ReorderSnapshot<Event>>,
    summary: Summary,
    levels: Option<LevelSnapshot>,
    /// Bytes written to the late-event side file.
    late_bytes: u64,
}

impl RunnerSnapshot {
    /// Bytes the late-event side file held when the snapshot was taken.
    pub fn late_bytes(&self) -> u64 {
        self.late_bytes
    }

    /// The counts when the snapshot was taken.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
}

impl Runner {
    /// The runner's whole state, for a checkpoint: every query engine's
    /// partial matches, the level alerts' states and last values, the
    /// events held for reordering, the watermark and the counts. Take it
    /// between pushes (every match so far has gone to the sink). The late
    /// side file is flushed and synced to disk, and its length recorded, so
    /// that a resumed run continues it (see
    /// [`set_late_policy_at`](Self::set_late_policy_at)).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Match, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{QueryInfo, Runner};
    ///
    /// let q = "PATTERN SEQ(A a, B b) WITHIN 10";
    /// let runner = || Runner::new(compile(q, &mut Schema::new(), &Options::default()).unwrap().programs);
    /// let mut first = runner();
    /// let mut got = Vec::new();
    /// let mut sink = |_: &QueryInfo, m: &Match| got.push(m.rows.clone());
    /// first.push(&Event::new(Sym::new("A"), 1, 0, vec![]), &mut sink).unwrap();
    /// let saved = first.snapshot().unwrap();
    ///
    /// let mut resumed = runner(); // e.g. after a crash, in a new process
    /// resumed.restore(saved).unwrap();
    /// resumed.push(&Event::new(Sym::new("B"), 4, 1, vec![]), &mut sink).unwrap();
    /// resumed.finish(&mut sink).unwrap();
    /// assert_eq!(got, [vec![0, 1]]);
    /// assert_eq!(resumed.summary().matches, [1]);
    /// ```
    pub fn snapshot(&mut self) -> io::Result<RunnerSnapshot> {
        let late_bytes = match &mut self.late_out {
            Some(out) => {
                // On disk, not only written: the snapshot records the
                // length, and a resume after a power loss refuses a side
                // file shorter than that (`cep run` syncs its `--out` file
                // before saving a checkpoint, too).
                out.flush()?;
                out.get_ref().sync_data()?;
                out.get_ref().metadata()?.len()
            }
            None => 0,
        };
        Ok(RunnerSnapshot {
            engines: self.engines.iter().map(QueryEngine::snapshot).collect(),
            watermark: self.watermark,
            reorder: self.reorder.as_ref().map(ReorderBuffer::snapshot),
            summary: self.summary.clone(),
            levels: self.levels.as_ref().map(|l| l.index.snapshot()),
            late_bytes,
        })
    }

    /// Puts this runner in the state of a [`snapshot`](Self::snapshot) taken
    /// from a runner built alike (same queries, engines, alerts and delay).
    /// An error says what does not fit, or what in the saved state no runner
    /// writes (an engine ahead of the input, a held event filed under another
    /// time): such a state would have on-time events rejected as late.
    pub fn restore(&mut self, snap: RunnerSnapshot) -> Result<(), RestoreError> {
        if snap.engines.len() != self.engines.len() || snap.summary.matches.len() != self.infos.len() {
            return Err(RestoreError::new(RestoreErrorKind::Queries {
                saved: snap.engines.len(),
                here: self.engines.len(),
            }));
        }
        if snap.reorder.is_some() != self.reorder.is_some() || snap.levels.is_some() != self.levels.is_some() {
            return Err(RestoreError::new(RestoreErrorKind::Setup));
        }
        let counts = [snap.summary.events, snap.summary.late, snap.summary.fires];
        if !cep_nfa::select::saved_counts_fit(counts.into_iter().chain(snap.summary.matches.iter().copied())) {
            return Err(RestoreError::new(RestoreErrorKind::Count));
        }
        if let Some(r) = &snap.reorder
            && let Some((ts, _, e)) = r.held.iter().find(|(ts, _, e)| *ts != e.ts)
        {
            return Err(RestoreError::new(RestoreErrorKind::Held { ts: e.ts, held_as: *ts }));
        }
        for (engine, s) in self.engines.iter_mut().zip(snap.engines) {
            engine.restore(s).map_err(|why| {
                let query = engine.program().name.clone();
                RestoreError::new(RestoreErrorKind::Engine { query, why: why.to_string() })
            })?;
        }
        if let (Some(lv), Some(s)) = (&mut self.levels, snap.levels) {
            lv.index.restore(s).map_err(|e| RestoreError::new(RestoreErrorKind::Levels(e)))?;
        }
        self.reorder = snap.reorder.map(ReorderBuffer::from_snapshot);
        self.watermark = snap.watermark;
        let removed = std::mem::take(&mut self.summary.removed);
        self.summary =
            Summary { queries: self.infos.iter().map(|q| q.name.clone()).collect(), removed, ..snap.summary };
        // The engines next see an on-time event (at or after the watermark)
        // or a held one: a saved state the runner wrote never has an engine
        // past either. One that does (made by hand, or by another program)
        // would have that event rejected as late by the engine.
        let held = self.reorder.as_ref().and_then(ReorderBuffer::first_ts).unwrap_or(Timestamp::MAX);
        let next = self.watermark().min(held);
        if let Some(i) = self.engines.iter().position(|e| e.watermark() > next) {
            return Err(RestoreError::new(RestoreErrorKind::Ahead {
                query: self.infos[i].name.clone(),
                engine: self.engines[i].watermark(),
                next,
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use cep_core::{Match, Schema, Sym};
    use cep_nfa::compile::{Options, compile};

    use super::*;
    use crate::QueryInfo;

    fn runner() -> Runner {
        let q = "QUERY quiet PATTERN SEQ(A a, NOT B b WITHIN 10)";
        Runner::new(compile(q, &mut Schema::new(), &Options::default()).unwrap().programs)
    }

    /// A saved state whose engine is ahead of the runner's watermark (not
    /// one a runner writes: one made by hand) is refused by `restore`,
    /// instead of the next on-time event being rejected as late by the
    /// engine, which the runner treats as a broken invariant.
    #[test]
    fn restore_refuses_states_no_runner_writes() {
        let mut ahead = runner();
        let mut sink = |_: &QueryInfo, _: &Match| {};
        ahead.push(&Event::new(Sym::new("A"), 100, 0, vec![]), &mut sink).unwrap();
        let ahead = ahead.snapshot().unwrap();
        let mut crafted = runner().snapshot().unwrap();
        crafted.engines = ahead.engines.clone();
        let err = runner().restore(crafted).unwrap_err();
        assert!(err.is_inconsistent());
        assert_eq!(err.query(), Some("quiet"));
        assert_eq!(
            err.to_string(),
            "the saved state is inconsistent: query `quiet` is at watermark 100, the input at -9223372036854775808"
        );
        let mut fine = runner();
        fine.restore(ahead).unwrap();
        fine.push(&Event::new(Sym::new("A"), 100, 1, vec![]), &mut sink).unwrap();

        // A held event filed under another time than its own would reach
        // the engines out of order.
        let delayed = || {
            let mut r = runner();
            r.set_max_delay(10);
            r
        };
        let mut held = delayed();
        held.push(&Event::new(Sym::new("A"), 100, 0, vec![]), &mut sink).unwrap();
        let mut snap = held.snapshot().unwrap();
        snap.reorder.as_mut().unwrap().held[0].0 = 95;
        let err = delayed().restore(snap).unwrap_err();
        assert_eq!(err.to_string(), "the saved state is inconsistent: an event at 100 is held as at 95");
    }
}
