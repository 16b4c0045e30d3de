//! When and where a job saves checkpoints, and which one it resumes: the
//! newest valid one in the directory with the job's fingerprint.

use std::path::{Path, PathBuf};

use cep_io::parallel::BlockInfo;
use cep_io::{InputPosition, Offsets};

use super::drive::{Sink, write_failed};
use super::driver::Driver;
use super::error::{JobError, JobErrorKind};
use crate::checkpoint::{self, Checkpoint, InputIdentity};
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
    /// How a checkpoint identifies the input.
    pub identify: Identify,
}

/// How a checkpoint identifies the job's input ([`InputIdentity`]).
#[derive(Clone, Debug)]
pub(crate) enum Identify {
    /// A file, of which at least `floor` bytes had been read when the job
    /// was built (the rows read ahead): a checkpoint hashes its bytes up to
    /// where the reader stands, or up to `floor` when it does not say (a
    /// checkpoint among the rows read ahead), going on from where the
    /// previous one stopped.
    File { hasher: Box<cep_io::input::PrefixHasher>, floor: u64 },
    /// A stream or events from elsewhere.
    Unidentified,
}

impl Checkpoints {
    /// No checkpoints.
    pub(crate) fn off() -> Checkpoints {
        Checkpoints {
            dir: None,
            every: u64::MAX,
            next_at: u64::MAX,
            fingerprint: 0,
            skip_below: 0,
            identify: Identify::Unidentified,
        }
    }

    /// Whether a block of whole events can go to the driver at once: no
    /// checkpoint falls due inside it, and no row of it was processed
    /// before the checkpoint resumed.
    pub(crate) fn admits(&self, b: &BlockInfo) -> bool {
        b.first_row >= self.skip_below && b.first_row + b.rows < self.next_at
    }

    /// Saves the driver's state after `position` input rows, once every
    /// match so far is written and synced; `input` is where the input
    /// stands, with a partitioned input's offsets, when known.
    pub(crate) fn save<W: JobOutput>(
        &mut self,
        driver: &mut Driver,
        sink: &mut Sink<W>,
        position: u64,
        input: Option<(InputPosition, Option<Offsets>)>,
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
        // The offsets hold only where the input stands right after the rows.
        let (input, offsets) = match input {
            Some((at, offsets)) => (Some(at), offsets.filter(|_| at.row == position)),
            None => (None, None),
        };
        let identity = match &mut self.identify {
            Identify::File { hasher, floor } => {
                let upto = input.map_or(*floor, |at| at.byte.max(*floor));
                InputIdentity::File(hasher.digest_to(upto).map_err(failed)?)
            }
            Identify::Unidentified => InputIdentity::Unidentified,
        };
        let input = input.filter(|at| at.row == position);
        let (output_bytes, output_pending) = (out.written(), out.pending());
        let c = Checkpoint {
            fingerprint: self.fingerprint,
            position,
            output_bytes,
            input,
            skipped,
            state,
            identity,
            output_pending,
            offsets,
        };
        let out = sink.get_mut().get_mut();
        if !out.transactional() {
            checkpoint::save(dir, &c).map_err(failed)?;
        } else {
            // Two phases: the checkpoint, then the commit of its epoch's
            // lines with its offsets. A crash between them leaves the lines
            // uncommitted, and the resumed run takes the checkpoint of the
            // committed offsets: it stays until a newer one is committed.
            let path = checkpoint::save_keeping(dir, &c).map_err(failed)?;
            out.commit(c.offsets.as_ref()).map_err(write_failed)?;
            checkpoint::prune_before(dir, &path).map_err(failed)?;
        }
        self.next_at = position.saturating_add(self.every);
        Ok(())
    }
}

/// The newest valid checkpoint in `dir` (`None`: start from the beginning;
/// unreadable newer ones are reported as warnings to `report`), if its fingerprint is
/// `fingerprint`, that of this job on `shards` shards; otherwise an error,
/// which names the shards the checkpoint needs when `taken_with` finds a
/// number that gives its fingerprint.
///
/// With `committed` (a transactional output's committed input offsets), the
/// checkpoint is the newest whose offsets are those: the one whose output
/// was committed. Nothing committed yet: start from the beginning; offsets
/// of no checkpoint: an error.
pub(crate) fn resume_from(
    dir: &Path,
    (fingerprint, shards): (u64, usize),
    taken_with: impl Fn(u64) -> Option<usize>,
    committed: Option<&Offsets>,
    report: &mut dyn FnMut(&str),
) -> Result<Option<Checkpoint>, JobError> {
    if committed.is_some_and(Vec::is_empty) {
        report(&format!(
            "note: no output committed with the checkpoints in {}: starting from the beginning\n",
            dir.display()
        ));
        return Ok(None);
    }
    let sorted = |o: &Offsets| {
        let mut o = o.clone();
        o.sort_unstable();
        o
    };
    let want = committed.map(sorted);
    if let Some(w) = &want {
        let ended = checkpoint::ended(dir).map_err(|error| {
            JobError::new(JobErrorKind::Checkpoint { dir: dir.to_owned(), doing: "read the checkpoints in", error })
        })?;
        if ended.as_deref() == Some(offsets_text(w).as_str()) {
            return Err(JobError::new(JobErrorKind::Ended { dir: dir.to_owned() }));
        }
    }
    let accept = |c: &Checkpoint| want.as_ref().is_none_or(|w| c.offsets.as_ref().map(sorted).as_ref() == Some(w));
    let (found, warnings) = checkpoint::load_newest_where(dir, accept).map_err(|error| {
        JobError::new(JobErrorKind::Checkpoint { dir: dir.to_owned(), doing: "read the checkpoints in", error })
    })?;
    if let (None, Some(offsets)) = (&found, &want) {
        return Err(JobError::new(JobErrorKind::Uncommitted { dir: dir.to_owned(), offsets: offsets_text(offsets) }));
    }
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

/// Refuses to resume from a checkpoint taken on another input than
/// `file` (`None`: a stream or events from elsewhere): a file must have the
/// bytes the checkpoint hashed. What cannot be checked is reported as a
/// warning to `report`. Returns the hasher that checked a file, which the
/// resumed run's checkpoints go on from.
pub(crate) fn check_input(
    identity: &InputIdentity,
    file: Option<&cep_io::FileInput>,
    dir: &Path,
    report: &mut dyn FnMut(&str),
) -> Result<Option<cep_io::input::PrefixHasher>, JobError> {
    let dir_name = dir.display();
    match (identity, file) {
        (InputIdentity::File(was), Some(f)) => {
            let other = |why: String| {
                JobError::new(JobErrorKind::OtherInput { dir: dir.to_owned(), file: f.path().to_owned(), why })
            };
            let Some(mut hasher) = f.hasher() else { return Ok(None) };
            match hasher.digest_to(was.bytes) {
                Ok(now) if now == *was => Ok(Some(hasher)),
                Ok(_) => Err(other(format!("its first {} bytes differ from those the checkpoint read", was.bytes))),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    Err(other(format!("it is shorter than the {} bytes the checkpoint read", was.bytes)))
                }
                Err(error) => Err(JobError::new(JobErrorKind::Reopen { file: f.path().to_owned(), error })),
            }
        }
        (InputIdentity::File(_), None) => {
            report(&format!(
                "warning: the checkpoint in {dir_name} was taken on a file, and this input is a stream: only its \
                 columns can be checked against it\n"
            ));
            Ok(None)
        }
        (InputIdentity::Unidentified, Some(f)) => {
            report(&format!(
                "warning: the checkpoint in {dir_name} was taken on a stream: only the columns of {} can be \
                 checked against it\n",
                f.path()
            ));
            Ok(None)
        }
        (InputIdentity::NotRecorded, _) => {
            report(&format!(
                "warning: the checkpoint in {dir_name} was written by an earlier cep, which did not record its \
                 input: only the input's columns are checked against it\n"
            ));
            Ok(None)
        }
        (InputIdentity::Unidentified, None) => Ok(None),
    }
}

/// Offsets as `partition:offset, …`, by partition.
pub(crate) fn offsets_text(offsets: &[(i32, i64)]) -> String {
    let mut sorted = offsets.to_vec();
    sorted.sort_unstable();
    sorted.iter().map(|(p, o)| format!("{p}:{o}")).collect::<Vec<_>>().join(", ")
}
