//! When and where a job saves checkpoints, and which one it resumes: the
//! newest valid one in the directory with the job's fingerprint.

use std::path::{Path, PathBuf};

use cep_io::InputPosition;
use cep_io::parallel::BlockInfo;

use super::drive::Sink;
use super::driver::Driver;
use super::error::{JobError, JobErrorKind};
use crate::checkpoint::{self, Checkpoint};
use cep_io::LineSink as JobOutput;

/// When and where checkpoints are saved, and where a resumed run starts.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    pub dir: Option<PathBuf>,
    pub every: u64,
    /// The next checkpoint is due after this many input rows.
    pub next_at: u64,
    pub fingerprint: u64,
    /// Rows before this were processed before the resumed checkpoint.
    pub skip_below: u64,
}

impl Checkpoints {
    /// No checkpoints.
    pub(crate) fn off() -> Checkpoints {
        Checkpoints { dir: None, every: u64::MAX, next_at: u64::MAX, fingerprint: 0, skip_below: 0 }
    }

    /// Whether a block of whole events can go to the driver at once: no
    /// checkpoint falls due inside it, and no row of it was processed
    /// before the checkpoint resumed.
    pub(crate) fn admits(&self, b: &BlockInfo) -> bool {
        b.first_row >= self.skip_below && b.first_row + b.rows < self.next_at
    }

    /// Saves the driver's state after `position` input rows, once every
    /// match so far is written and synced.
    pub(crate) fn save<W: JobOutput>(
        &mut self,
        driver: &mut Driver,
        sink: &mut Sink<W>,
        position: u64,
        input: Option<InputPosition>,
        skipped: u64,
    ) -> Result<(), JobError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let failed = |error: std::io::Error| {
            JobError::new(JobErrorKind::Checkpoint { dir: dir.clone(), doing: "save a checkpoint in", error })
        };
        let state = driver.snapshot(sink).map_err(failed)?;
        sink.flush().map_err(failed)?;
        let out = sink.get_mut().get_mut();
        out.sync().map_err(failed)?;
        let input = input.filter(|at| at.row == position);
        let output_bytes = out.written();
        let c = Checkpoint { fingerprint: self.fingerprint, position, output_bytes, input, skipped, state };
        checkpoint::save(dir, &c).map_err(failed)?;
        self.next_at = position.saturating_add(self.every);
        Ok(())
    }
}

/// The newest valid checkpoint in `dir` (`None`: start from the beginning;
/// unreadable newer ones are reported as warnings to `report`), if its fingerprint is
/// `fingerprint`, that of this job on `shards` shards; otherwise an error,
/// which names the shards the checkpoint needs when `taken_with` finds a
/// number that gives its fingerprint.
pub(crate) fn resume_from(
    dir: &Path,
    (fingerprint, shards): (u64, usize),
    taken_with: impl Fn(u64) -> Option<usize>,
    report: &mut dyn FnMut(&str),
) -> Result<Option<Checkpoint>, JobError> {
    let (found, warnings) = checkpoint::load_newest(dir).map_err(|error| {
        JobError::new(JobErrorKind::Checkpoint { dir: dir.to_owned(), doing: "read the checkpoints in", error })
    })?;
    for w in warnings {
        report(&format!("warning: {w}\n"));
    }
    match found {
        None => {
            report(&format!("note: no checkpoint in {}: starting from the beginning\n", dir.display()));
            Ok(None)
        }
        Some(c) if c.fingerprint != fingerprint => Err(JobError::new(JobErrorKind::Mismatch {
            dir: dir.to_owned(),
            taken_with: taken_with(c.fingerprint),
            shards,
        })),
        Some(c) => {
            report(&format!("note: resuming after row {} from {}\n", c.position, dir.display()));
            Ok(Some(c))
        }
    }
}
