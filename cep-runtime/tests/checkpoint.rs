//! A run stopped anywhere, saved as a checkpoint (encoded and decoded) and
//! restored into a fresh runner gives exactly the output of a run that was
//! never stopped: same lines, same order, same counts. Random queries of
//! every strategy (run and stack engines, stack in direct and batch
//! construction), with and without reordering; level alerts on random walks.
//! Also the checkpoint files: atomic saves, two kept, a corrupt newest one
//! skipped with a warning.

use cep_core::{Event, Schema, Sym, Value};
use cep_index::{Alert, LevelIndex};
use cep_nfa::compile::{Options, compile};
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_runtime::checkpoint::{self, Checkpoint, PipelineSnapshot};
use cep_runtime::shard::ShardedRunner;
use cep_runtime::{JsonLines, Runner, RunnerSnapshot};
use cep_testkit::XorShift64;
use cep_testkit::arb::{Case, arb_case, arb_emit_case};
use proptest::prelude::*;

fn runner(case: &Case, delay: i64, construction: Construction) -> Runner {
    let progs = compile(&case.query, &mut case.schema.clone(), &Options::default())
        .expect("generated queries compile")
        .programs;
    let mut r = Runner::with_engines(progs, EngineChoice::Auto, construction).expect("auto runs every query");
    r.set_max_delay(delay);
    r
}

/// Pushes `events` and, if `finish`, ends the input; returns the output.
fn feed(r: &mut Runner, events: &[Event], finish: bool) -> String {
    let mut sink = JsonLines::new(Vec::new());
    for e in events {
        r.push(e, &mut sink).unwrap();
    }
    if finish {
        r.finish(&mut sink).unwrap();
    }
    String::from_utf8(sink.into_inner().unwrap()).unwrap()
}

/// Saves `r` through the checkpoint file format and back.
fn round_trip(r: &mut Runner) -> cep_runtime::RunnerSnapshot {
    let c = Checkpoint {
        fingerprint: 1,
        position: 0,
        output_bytes: 0,
        input: None,
        skipped: 0,
        identity: cep_runtime::checkpoint::InputIdentity::Unidentified,
        output_pending: Vec::new(),
        offsets: None,
        state: PipelineSnapshot::One(r.snapshot().unwrap()),
    };
    match checkpoint::decode(&checkpoint::encode(&c)).unwrap().state {
        PipelineSnapshot::One(s) => s,
        PipelineSnapshot::Sharded(_) => unreachable!("saved one runner"),
    }
}

/// Arrival order: events displaced by up to `delay` (sorted by ts + jitter).
fn displaced(events: &[Event], delay: i64, seed: u64) -> Vec<Event> {
    let mut rng = XorShift64::new(seed | 1);
    let mut keyed: Vec<(i64, usize)> =
        (0..events.len()).map(|i| (events[i].ts + (rng.next_u64() % (delay as u64 + 1)) as i64, i)).collect();
    keyed.sort();
    keyed.into_iter().map(|(_, i)| events[i].clone()).collect()
}

fn check(case: &Case, delay: i64, seed: u64, cut: usize, construction: Construction) -> Result<(), TestCaseError> {
    let events = displaced(&case.events, delay, seed);
    let cut = cut % (events.len() + 1);
    let mut whole = runner(case, delay, construction);
    let want = feed(&mut whole, &events, true);

    let mut first = runner(case, delay, construction);
    let mut got = feed(&mut first, &events[..cut], false);
    let saved = round_trip(&mut first);
    drop(first); // the crash
    let mut resumed = runner(case, delay, construction);
    resumed.restore(saved).unwrap();
    got += &feed(&mut resumed, &events[cut..], true);
    prop_assert_eq!(got, want, "query: {}, cut at {}", &case.query, cut);
    prop_assert_eq!(resumed.summary(), whole.summary());
    Ok(())
}

/// The sharded runtime stopped at `cut`, checkpointed (through the file
/// format) and resumed on new threads gives the lines of one runner. With
/// `balanced`, 6 slices shared by the calling thread and 1 worker, moving
/// at random while events flow, and resumed with another split.
fn check_sharded(case: &Case, delay: i64, seed: u64, cut: usize, balanced: bool) -> Result<(), TestCaseError> {
    let events = displaced(&case.events, delay, seed);
    let cut = cut % (events.len() + 1);
    let mut whole = runner(case, delay, Construction::Direct);
    let mut want: Vec<String> = feed(&mut whole, &events, true).lines().map(str::to_owned).collect();
    want.sort();

    let sharded = |front: Option<RunnerSnapshot>, shards: Option<Vec<RunnerSnapshot>>| {
        let mut f = Runner::new(Vec::new());
        f.set_max_delay(delay);
        if let Some(s) = front {
            f.restore(s).unwrap();
        }
        let resumed = shards.is_some();
        let n = if balanced { 6 } else { 2 };
        let mut rs: Vec<Runner> = (0..n).map(|_| runner(case, 0, Construction::Direct)).collect();
        if let Some(ss) = shards {
            assert_eq!(ss.len(), n, "a state per slice");
            for (r, s) in rs.iter_mut().zip(ss) {
                r.restore(s).unwrap();
            }
        }
        if !balanced {
            return ShardedRunner::new(f, rs);
        }
        let mut r = ShardedRunner::split(f, rs, 1, if resumed { 1 } else { 4 }, false);
        r.set_flush_after(std::time::Duration::ZERO);
        r.shuffle_slices(seed);
        r
    };
    let mut out = Vec::new();
    let mut first = sharded(None, None);
    for e in &events[..cut] {
        first.push(e, &mut out).unwrap();
    }
    let c = Checkpoint {
        fingerprint: 1,
        position: cut as u64,
        output_bytes: 0,
        input: None,
        skipped: 0,
        identity: cep_runtime::checkpoint::InputIdentity::Unidentified,
        output_pending: Vec::new(),
        offsets: None,
        state: PipelineSnapshot::Sharded(first.checkpoint(&mut out).unwrap()),
    };
    drop(first); // the crash: its threads stop
    let PipelineSnapshot::Sharded(snap) = checkpoint::decode(&checkpoint::encode(&c)).unwrap().state else {
        unreachable!("saved a sharded runtime")
    };
    let mut resumed = sharded(Some(snap.front), Some(snap.shards));
    resumed.resume_released(snap.released);
    for e in &events[cut..] {
        resumed.push(e, &mut out).unwrap();
    }
    let summary = resumed.finish(&mut out).unwrap();
    let mut got: Vec<String> = String::from_utf8(out).unwrap().lines().map(str::to_owned).collect();
    got.sort();
    prop_assert_eq!(got, want, "query: {}, cut at {}", &case.query, cut);
    prop_assert_eq!(summary.matches, whole.summary().matches.clone());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn sharded_resumed_anywhere_equals_one_runner(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        delay in prop_oneof![Just(0i64), 1i64..4], seed in any::<u64>(), cut in any::<usize>()) {
        check_sharded(&case, delay, seed, cut, false)?;
        check_sharded(&case, delay, seed, cut, true)?;
    }

    #[test]
    fn resumed_anywhere_equals_uninterrupted(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        delay in prop_oneof![Just(0i64), 1i64..4], seed in any::<u64>(), cut in any::<usize>()) {
        check(&case, delay, seed, cut, Construction::Direct)?;
        check(&case, delay, seed, cut, Construction::Batch)?;
    }

    /// Queries with `EMIT`: the values of every line (registers, and the
    /// objects of `x.*` kept beside buffer nodes) survive a checkpoint, on
    /// one runner and on shards.
    #[test]
    fn emit_resumed_anywhere_equals_uninterrupted(case in prop_oneof![
        arb_emit_case("skip-till-any-match"), arb_emit_case("skip-till-next-match"),
        arb_emit_case("strict-contiguity")],
        delay in prop_oneof![Just(0i64), 1i64..4], seed in any::<u64>(), cut in any::<usize>()) {
        check(&case, delay, seed, cut, Construction::Direct)?;
        check_sharded(&case, delay, seed, cut, false)?;
        check_sharded(&case, delay, seed, cut, true)?;
    }

    #[test]
    fn level_alerts_resume_where_they_stopped(
        alerts in prop::collection::vec((0i64..3, 0u8..4, 90i64..110, 0i64..6), 1..12),
        walk in prop::collection::vec((0i64..4, -6i64..=6), 0..60),
        cut in any::<usize>()) {
        let index = || {
            let mut idx = LevelIndex::new();
            let all = alerts.iter().enumerate().map(|(i, &(key, dir, level, band))| {
                let (id, key, l, b) = (format!("a{i}"), Value::Int(key), level as f64, band as f64);
                match dir {
                    0 => Alert::above(id, key, "price", l, b),
                    1 => Alert::below(id, key, "price", l, b),
                    2 => Alert::enter(id, key, "price", l, l + 5.0, b.min(2.0)),
                    _ => Alert::exit(id, key, "price", l, l + 5.0, b.min(2.0)),
                }
            });
            idx.add_all(all).unwrap();
            idx
        };
        let mut schema = Schema::new();
        let (fk, fp) = (schema.field("key"), schema.field("price"));
        let mut prices = [100i64; 4];
        let events: Vec<Event> = walk.iter().enumerate().map(|(row, &(key, step))| {
            prices[key as usize] += step;
            let mut fields = vec![Value::Null; 2];
            fields[fk as usize] = Value::Int(key);
            fields[fp as usize] = Value::Int(prices[key as usize]);
            Event::new(Sym::new("Tick"), row as i64, row as u64, fields)
        }).collect();
        let fresh = || {
            let mut r = Runner::new(Vec::new());
            r.set_levels(index(), &mut schema.clone());
            r
        };
        let cut = cut % (events.len() + 1);
        let mut whole = fresh();
        let want = feed(&mut whole, &events, true);
        let mut first = fresh();
        let mut got = feed(&mut first, &events[..cut], false);
        let saved = round_trip(&mut first);
        let mut resumed = fresh();
        resumed.restore(saved).unwrap();
        got += &feed(&mut resumed, &events[cut..], true);
        prop_assert_eq!(got, want);
        prop_assert_eq!(resumed.summary().fires, whole.summary().fires);
    }
}

/// A scratch directory, removed at the end.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cep-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn numbered(position: u64) -> Checkpoint {
    let state = PipelineSnapshot::One(Runner::new(Vec::new()).snapshot().unwrap());
    Checkpoint {
        fingerprint: 9,
        position,
        output_bytes: position * 10,
        input: None,
        skipped: 0,
        state,
        identity: cep_runtime::checkpoint::InputIdentity::Unidentified,
        output_pending: Vec::new(),
        offsets: None,
    }
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn saves_keep_the_newest_two_and_load_the_newest() {
    let dir = Scratch::new("keep");
    assert!(checkpoint::load_newest(&dir.0).unwrap().0.is_none(), "no directory: no checkpoint");
    for p in 1..=4 {
        checkpoint::save(&dir.0, &numbered(p * 100)).unwrap();
    }
    assert_eq!(files(&dir.0), ["checkpoint-000000000003.ckpt", "checkpoint-000000000004.ckpt"]);
    let (c, warnings) = checkpoint::load_newest(&dir.0).unwrap();
    assert_eq!(c.unwrap().position, 400);
    assert!(warnings.is_empty());
}

#[test]
fn a_corrupt_or_truncated_newest_checkpoint_falls_back_to_the_previous() {
    let dir = Scratch::new("corrupt");
    checkpoint::save(&dir.0, &numbered(100)).unwrap();
    let newest = checkpoint::save(&dir.0, &numbered(200)).unwrap();
    let bytes = std::fs::read(&newest).unwrap();

    // Truncated (a torn write on a file system without atomic rename).
    std::fs::write(&newest, &bytes[..bytes.len() / 2]).unwrap();
    let (c, warnings) = checkpoint::load_newest(&dir.0).unwrap();
    assert_eq!(c.unwrap().position, 100);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("checkpoint-000000000002.ckpt") && warnings[0].contains("truncated"), "{warnings:?}");

    // One flipped bit in the payload.
    let mut flipped = bytes.clone();
    flipped[30] ^= 0x10;
    std::fs::write(&newest, &flipped).unwrap();
    let (c, warnings) = checkpoint::load_newest(&dir.0).unwrap();
    assert_eq!(c.unwrap().position, 100);
    assert!(warnings[0].contains("checksum"), "{warnings:?}");

    // Both bad: no checkpoint, two warnings.
    std::fs::write(dir.0.join("checkpoint-000000000001.ckpt"), b"CEPCKPT\0").unwrap();
    let (c, warnings) = checkpoint::load_newest(&dir.0).unwrap();
    assert!(c.is_none());
    assert_eq!(warnings.len(), 2);

    // A file of another format version is refused by name.
    let mut other = bytes;
    other[8] = 99;
    assert!(checkpoint::decode(&other).unwrap_err().to_string().contains("format version 99"));
}

/// Checkpoints of format 5 (without a partitioned input's offsets) still
/// read, with none; those of format 3 (before checkpoints recorded their
/// input) and 4 (without the output's pending lines, and a sample of the
/// input) as ones whose input is not recorded and with no pending lines;
/// the same payloads labelled with today's format do not.
#[test]
fn checkpoints_of_formats_3_to_5_still_read() {
    use cep_runtime::checkpoint::{FORMAT_VERSION, InputIdentity, decode, encode};
    let state = PipelineSnapshot::One(Runner::new(Vec::new()).snapshot().unwrap());
    let sampled = InputIdentity::File(cep_io::InputDigest { bytes: 9, hash: 7 });
    let c = Checkpoint {
        fingerprint: 5,
        position: 1000,
        output_bytes: 42,
        input: None,
        skipped: 3,
        state,
        identity: sampled,
        output_pending: Vec::new(),
        offsets: None,
    };
    let new = encode(&c);
    // Header: magic (8), format (4), hash version (4), length (8).
    let payload = &new[24..new.len() - 4];
    assert_eq!(payload.last(), Some(&0), "no offsets: `None`, one byte");
    // Format 5: without the offsets.
    let v5 = &payload[..payload.len() - 1];
    let old = decode(&file_of(&new, 5, v5)).unwrap();
    assert_eq!((old.position, old.output_bytes, old.skipped, old.identity), (1000, 42, 3, sampled));
    assert_eq!(old.offsets, None);
    assert_eq!(v5.last(), Some(&0), "no pending lines: a length of 0, one byte");
    let file = |format: u32, payload: &[u8]| file_of(&new, format, payload);
    let v4 = &v5[..v5.len() - 1];
    let old = decode(&file(4, v4)).unwrap();
    assert_eq!((old.position, old.output_bytes, old.skipped), (1000, 42, 3));
    assert_eq!(old.identity, InputIdentity::NotRecorded, "a sample is not checked against a hash");
    assert!(old.output_pending.is_empty());
    assert!(decode(&file(FORMAT_VERSION, v4)).is_err());
    // Format 3: without the identity (`File`: variant 0, then two varints).
    let v3 = &v4[..v4.len() - 3];
    let old = decode(&file(3, v3)).unwrap();
    assert_eq!((old.position, old.output_bytes, old.skipped), (1000, 42, 3));
    assert_eq!(old.identity, InputIdentity::NotRecorded);
    assert!(decode(&file(FORMAT_VERSION, v3)).is_err());
    assert_eq!(decode(&new).unwrap().identity, sampled);
}

/// A checkpoint file of `format` around `payload`, with `new`'s magic and
/// hash version.
fn file_of(new: &[u8], format: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = new[..8].to_vec();
    f.extend_from_slice(&format.to_le_bytes());
    f.extend_from_slice(&new[12..16]);
    f.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    f.extend_from_slice(payload);
    f.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    f
}
