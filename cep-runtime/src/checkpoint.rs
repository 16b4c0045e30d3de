//! Checkpoint files: the whole state of a run, saved so that a crashed run
//! can resume (LANGUAGE.md §6).
//!
//! A checkpoint is one file, `DIR/checkpoint-NNNNNNNNNNNN.ckpt` (the number
//! grows with every save):
//!
//! ```text
//! magic "CEPCKPT\0" | format version u32 | hash version u32 | payload length u64 | payload | CRC-32 of payload u32
//! ```
//!
//! (integers little-endian). The payload is a [`Checkpoint`] in postcard. The
//! format version changes whenever the payload's shape does; the hash
//! version whenever [`shard_of`](crate::shard::shard_of) would put a key on
//! another shard (a sharded state is only valid with the same hash).
//!
//! [`save`] writes a temporary file, syncs it, renames it into place and
//! syncs the directory, so a crash leaves either the old or the new
//! checkpoint, never half of one; it keeps the previous checkpoint and
//! deletes older ones. [`load_newest`] returns the newest checkpoint that
//! reads back whole (right magic, versions, length and checksum), with a
//! warning for each newer one that does not.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use cep_core::Timestamp;

use crate::RunnerSnapshot;

/// The first bytes of a checkpoint file.
pub const MAGIC: &[u8; 8] = b"CEPCKPT\0";
/// The version of the payload's shape (3: a CSV input position is after a
/// row's `\r\n`, where it was between the `\r` and the `\n`; 4: the input's
/// [identity](InputIdentity), from a sample of its bytes; 5: from a hash of
/// all of them, and the output's [pending](Checkpoint::output_pending)
/// lines; 6: a partitioned input's [offsets](Checkpoint::offsets)).
/// Format 5 is still read, with no offsets; formats 3 and 4 as a checkpoint
/// whose input is [not recorded](InputIdentity::NotRecorded) (a sample
/// cannot be checked against a hash), with no pending lines.
pub const FORMAT_VERSION: u32 = 6;

/// The format before a checkpoint kept a partitioned input's offsets.
const FORMAT_WITHOUT_OFFSETS: u32 = 5;

/// The earlier payload shape [`decode`] still reads.
const FORMAT_WITHOUT_IDENTITY: u32 = 3;
/// The format whose input identity is a sample of the input's bytes.
const FORMAT_SAMPLED: u32 = 4;
/// The version of the key-to-shard hash, kept beside the hash itself
/// (`shard/route.rs`) so that the two change together.
pub use crate::shard::HASH_VERSION;

/// Checkpoints kept in a directory: the newest and the one before it.
const KEEP: usize = 2;

/// Everything a resumed run needs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Identifies the run's queries, alerts and options: a run resumes only
    /// from a checkpoint with its own fingerprint.
    pub fingerprint: u64,
    /// Input rows (good and bad) the state has consumed: a resumed run
    /// skips this many.
    pub position: u64,
    /// Output bytes written (and synced) when the checkpoint was taken.
    pub output_bytes: u64,
    /// Where the input stood after `position` rows, when the reader knew
    /// it (a file read in order): a resumed run reopens the input there
    /// instead of reading the rows before it again.
    pub input: Option<cep_io::InputPosition>,
    /// Bad rows skipped among the first `position` (with `input`: a run
    /// that reopens the input there counts on from it).
    pub skipped: u64,
    /// The engines' state.
    pub state: PipelineSnapshot,
    /// What identifies the input the checkpoint was taken on: a resumed
    /// run refuses another one.
    pub identity: InputIdentity,
    /// Lines among the first `output_bytes` that the state had not produced
    /// yet ([`cep_io::LineSink::pending`]): a run that was itself resumed
    /// keeps the lines its crashed predecessor wrote after its checkpoint,
    /// and writes them only when it produces them again. A run resumed
    /// from this checkpoint drops them when it produces them.
    pub output_pending: Vec<Vec<u8>>,
    /// Where a partitioned input (a Kafka topic) stood after `position`
    /// rows ([`cep_io::EventSource::offsets`]): a resumed run reads on
    /// from there. `None` for other inputs.
    pub offsets: Option<cep_io::Offsets>,
}

/// The payload of format 5: a [`Checkpoint`] without the input's offsets.
#[derive(serde::Deserialize)]
struct CheckpointV5 {
    fingerprint: u64,
    position: u64,
    output_bytes: u64,
    input: Option<cep_io::InputPosition>,
    skipped: u64,
    state: PipelineSnapshot,
    identity: InputIdentity,
    output_pending: Vec<Vec<u8>>,
}

/// What a checkpoint knows of the input it was taken on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum InputIdentity {
    /// A file: the number of its bytes up to where the checkpoint stood and
    /// a hash of them ([`cep_io::input::PrefixHasher`]).
    File(cep_io::InputDigest),
    /// A stream (stdin, a pipe) or events from elsewhere: nothing can be
    /// read again, and only the columns (in the fingerprint) are checked.
    Unidentified,
    /// A checkpoint of format 3, written before checkpoints recorded their
    /// input, or of format 4, which recorded a sample of it.
    NotRecorded,
}

/// The payload of format 4: a [`Checkpoint`] without the output's pending
/// lines, and a sample of the input for its identity.
#[derive(serde::Deserialize)]
struct CheckpointV4 {
    fingerprint: u64,
    position: u64,
    output_bytes: u64,
    input: Option<cep_io::InputPosition>,
    skipped: u64,
    state: PipelineSnapshot,
    identity: InputIdentity,
}

/// The payload of format 3: a [`Checkpoint`] without its input's identity.
#[derive(serde::Deserialize)]
struct CheckpointV3 {
    fingerprint: u64,
    position: u64,
    output_bytes: u64,
    input: Option<cep_io::InputPosition>,
    skipped: u64,
    state: PipelineSnapshot,
}
/// The state of a single-threaded or a sharded run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum PipelineSnapshot {
    /// One runner.
    One(RunnerSnapshot),
    /// The sharded runtime (see [`ShardedRunner::checkpoint`](crate::shard::ShardedRunner::checkpoint)).
    Sharded(ShardedSnapshot),
}

/// The state of a [`ShardedRunner`](crate::shard::ShardedRunner): its front,
/// every shard, and the watermark last sent to the shards.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ShardedSnapshot {
    /// The front runner (watermark, reorder buffer, late events).
    pub front: RunnerSnapshot,
    /// One per shard, in shard order.
    pub shards: Vec<RunnerSnapshot>,
    /// The `ts` of the last event routed to the shards.
    pub released: Timestamp,
}

/// Why a checkpoint file could not be read.
#[derive(Debug)]
pub enum LoadError {
    /// Reading failed.
    Io(io::Error),
    /// The file is not a whole checkpoint of this version.
    Corrupt(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "{e}"),
            LoadError::Corrupt(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for LoadError {}

/// The bytes of a checkpoint file.
///
/// # Examples
/// ```
/// use cep_runtime::checkpoint::{decode, encode};
/// # use cep_runtime::{Runner, checkpoint::{Checkpoint, PipelineSnapshot}};
/// # let state = PipelineSnapshot::One(Runner::new(Vec::new()).snapshot().unwrap());
/// # use cep_runtime::checkpoint::InputIdentity;
/// let identity = InputIdentity::Unidentified;
/// let (output_pending, input) = (Vec::new(), None);
/// let c = Checkpoint { fingerprint: 7, position: 1000, output_bytes: 42, input, skipped: 0, state, identity, output_pending, offsets: None };
/// let mut bytes = encode(&c);
/// assert_eq!(decode(&bytes).unwrap().position, 1000);
/// let last = bytes.len() - 5;
/// bytes[last] ^= 1; // one flipped bit in the payload
/// assert!(decode(&bytes).is_err());
/// ```
pub fn encode(c: &Checkpoint) -> Vec<u8> {
    let payload = postcard::to_stdvec(c).expect("a checkpoint serialises");
    let mut out = Vec::with_capacity(payload.len() + 28);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&HASH_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out
}

/// Reads the bytes of a checkpoint file, checking everything [`encode`]
/// wrote.
pub fn decode(bytes: &[u8]) -> Result<Checkpoint, LoadError> {
    let corrupt = |why: &str| Err(LoadError::Corrupt(why.to_owned()));
    let Some(rest) = bytes.strip_prefix(MAGIC.as_slice()) else { return corrupt("not a checkpoint file") };
    let word = |at: usize| rest.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let (Some(format), Some(hash)) = (word(0), word(4)) else { return corrupt("truncated header") };
    if ![FORMAT_VERSION, FORMAT_WITHOUT_OFFSETS, FORMAT_SAMPLED, FORMAT_WITHOUT_IDENTITY].contains(&format) {
        return Err(LoadError::Corrupt(format!("format version {format}, this cep reads {FORMAT_VERSION}")));
    }
    if hash != HASH_VERSION {
        return Err(LoadError::Corrupt(format!("hash version {hash}, this cep uses {HASH_VERSION}")));
    }
    let Some(len) = rest.get(8..16).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))) else {
        return corrupt("truncated header");
    };
    let body = &rest[16..];
    if (body.len() as u64) != len.saturating_add(4) {
        return corrupt("truncated or overlong file");
    }
    let (payload, sum) = body.split_at(len as usize);
    if crc32fast::hash(payload).to_le_bytes() != sum {
        return corrupt("checksum mismatch");
    }
    let unreadable = |e: postcard::Error| LoadError::Corrupt(format!("unreadable payload: {e}"));
    // The earlier formats: read into format 4's shape, whose identity is
    // not recorded (format 3) or cannot be checked against a hash of the
    // whole prefix (format 4's sample), with no pending lines.
    let old = match format {
        FORMAT_WITHOUT_OFFSETS => {
            let CheckpointV5 { fingerprint, position, output_bytes, input, skipped, state, identity, output_pending } =
                postcard::from_bytes(payload).map_err(unreadable)?;
            let offsets = None;
            return Ok(Checkpoint {
                fingerprint,
                position,
                output_bytes,
                input,
                skipped,
                state,
                identity,
                output_pending,
                offsets,
            });
        }
        FORMAT_WITHOUT_IDENTITY => {
            let CheckpointV3 { fingerprint, position, output_bytes, input, skipped, state } =
                postcard::from_bytes(payload).map_err(unreadable)?;
            let identity = InputIdentity::NotRecorded;
            CheckpointV4 { fingerprint, position, output_bytes, input, skipped, state, identity }
        }
        FORMAT_SAMPLED => {
            let mut v4: CheckpointV4 = postcard::from_bytes(payload).map_err(unreadable)?;
            if matches!(v4.identity, InputIdentity::File(_)) {
                v4.identity = InputIdentity::NotRecorded;
            }
            v4
        }
        _ => return postcard::from_bytes(payload).map_err(unreadable),
    };
    let CheckpointV4 { fingerprint, position, output_bytes, input, skipped, state, identity } = old;
    let (output_pending, offsets) = (Vec::new(), None);
    Ok(Checkpoint { fingerprint, position, output_bytes, input, skipped, state, identity, output_pending, offsets })
}

/// Writes `c` into `dir` atomically (see the [module](self) docs) and
/// returns its path; older checkpoints beyond the previous one are deleted.
pub fn save(dir: &Path, c: &Checkpoint) -> io::Result<PathBuf> {
    let path = save_keeping(dir, c)?;
    let all = list(dir)?;
    for (_, old) in &all[..all.len().saturating_sub(KEEP)] {
        let _ = fs::remove_file(old);
    }
    Ok(path)
}

/// [`save`], deleting no older checkpoint: with a transactional output the
/// one whose output was committed last must stay until a newer one's is
/// ([`prune_before`]), however many are saved and not committed.
pub fn save_keeping(dir: &Path, c: &Checkpoint) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let next = list(dir)?.last().map_or(1, |(n, _)| n + 1);
    let path = dir.join(format!("checkpoint-{next:012}.ckpt"));
    let tmp = dir.join(format!("checkpoint-{next:012}.tmp"));
    {
        let mut file = File::create(&tmp)?;
        file.write_all(&encode(c))?;
        file.sync_all()?;
    }
    fs::rename(&tmp, &path)?;
    sync_dir(dir)?;
    Ok(path)
}

/// Deletes the checkpoints of `dir` saved before the one at `path`.
pub fn prune_before(dir: &Path, path: &Path) -> io::Result<()> {
    for (_, old) in list(dir)?.into_iter().take_while(|(_, p)| p != path) {
        let _ = fs::remove_file(old);
    }
    Ok(())
}

/// The file that says a run with a transactional output ended, and with
/// which input offsets its last output was committed ([`mark_ended`]).
const ENDED: &str = "ended";

/// Records, before a transactional output commits its last lines, that the
/// run ends with the input at `offsets` (as `partition:offset, …`): a
/// resumed run whose committed offsets are these has nothing to do. (A
/// crash before the commit leaves other offsets committed, and the mark
/// does not apply.)
pub fn mark_ended(dir: &Path, offsets: &str) -> io::Result<()> {
    let tmp = dir.join(format!("{ENDED}.tmp"));
    {
        let mut file = File::create(&tmp)?;
        file.write_all(offsets.as_bytes())?;
        file.sync_all()?;
    }
    fs::rename(&tmp, dir.join(ENDED))?;
    sync_dir(dir)
}

/// The offsets [`mark_ended`] recorded in `dir`, if any.
pub fn ended(dir: &Path) -> io::Result<Option<String>> {
    match fs::read_to_string(dir.join(ENDED)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes the checkpoints in `dir` (a run that starts afresh must not be
/// resumed from an earlier run's state), and the mark of an ended run.
/// Other files are left alone.
pub fn clear(dir: &Path) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    match fs::remove_file(dir.join(ENDED)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    for (_, path) in list(dir)? {
        fs::remove_file(path)?;
    }
    Ok(())
}

/// The newest checkpoint in `dir` that reads back whole (`None` if there
/// is none), and one warning per newer file that does not.
pub fn load_newest(dir: &Path) -> io::Result<(Option<Checkpoint>, Vec<String>)> {
    load_newest_where(dir, |_| true)
}

/// The newest checkpoint in `dir` that reads back whole and that `accept`
/// takes (`None` if there is none), and one warning per newer file that
/// does not read back.
pub fn load_newest_where(
    dir: &Path,
    accept: impl Fn(&Checkpoint) -> bool,
) -> io::Result<(Option<Checkpoint>, Vec<String>)> {
    let mut warnings = Vec::new();
    if !dir.exists() {
        return Ok((None, warnings));
    }
    for (_, path) in list(dir)?.into_iter().rev() {
        match fs::read(&path).map_err(LoadError::Io).and_then(|b| decode(&b)) {
            Ok(c) if accept(&c) => return Ok((Some(c), warnings)),
            Ok(_) => {}
            Err(e) => warnings.push(format!("{}: {e}; trying the previous checkpoint", path.display())),
        }
    }
    Ok((None, warnings))
}

/// The checkpoint files of `dir`, oldest first, with their numbers.
fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(n) = name.strip_prefix("checkpoint-").and_then(|r| r.strip_suffix(".ckpt"))
            && let Ok(n) = n.parse::<u64>()
        {
            out.push((n, path));
        }
    }
    out.sort();
    Ok(out)
}

/// Makes a rename in `dir` durable (a no-op where directories cannot be
/// opened, as on Windows).
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}
