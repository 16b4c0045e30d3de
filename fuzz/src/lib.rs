//! Fuzz harnesses for the cep workspace (driven the way `cep` drives them).

use std::io::{BufReader, Write};

use cep_core::{Event, FieldId, Schema, Sym, Value};
use cep_index::LevelIndex;
use cep_io::parallel::{BLOCK, EVENT_BLOCK, ParallelReader, Route};
use cep_io::read::EventSource;
use cep_io::{Format, ReadError, ReadErrorKind, Reader};
use cep_nfa::compile::{Options, compile};
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_runtime::checkpoint::{self, Checkpoint, PipelineSnapshot, ShardedSnapshot};
use cep_runtime::shard::{KeyRoute, ShardedRunner};
use cep_runtime::{JsonLines, Runner};

// ---------------------------------------------------------------- queries

/// Events `cep run` would have read ahead: they give the schema and are then run.
pub const QUERY_EVENTS: &str = "ts,type,key,price,vol,sym,x\n\
0,Tick,1,10000,10,IBM,1.5\n\
1000,Tick,1,10250,10,IBM,2\n\
1500,A,2,5,7,X,-1\n\
2000,B,2,6,8,X,0.5\n\
2500,B,2,7,9,X,\n\
3000,D,2,8,1,Y,3\n\
21000,Tick,1,10260,5000,IBM,-2.5\n\
25000,A,1,1,1,,0\n\
26000,C,1,9223372036854775807,-9223372036854775808,Z,1e308\n\
40000,Tick,1,10270,10,IBM,0\n\
40001,B,1,0,0,IBM,0\n\
40002,D,3,-1,2,IBM,NaN\n";

fn query_events() -> (Schema, Vec<Event>) {
    let mut r = Reader::new(QUERY_EVENTS.as_bytes(), "events.csv", Format::Csv).expect("header");
    let mut out = Vec::new();
    let mut e = Event::default();
    while r.next_event(&mut e).expect("good rows") {
        out.push(e.clone());
    }
    r.schema_mut().set_complete(true);
    (r.schema().clone(), out)
}

/// `cep check --query` (no events), then `cep run` over [`QUERY_EVENTS`].
pub fn query(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let opts = Options::default();
    // `cep check` without --events.
    let mut empty = Schema::new();
    match compile(src, &mut empty, &opts) {
        Err(d) => {
            let _ = d.render(src, "q.cep");
            return;
        }
        Ok(c) => {
            for w in &c.warnings {
                let _ = w.render(src, "q.cep");
            }
            for p in &c.programs {
                for choice in [EngineChoice::Auto, EngineChoice::Run, EngineChoice::Stack] {
                    let _ = cep_nfa::compile::plan::render_with(p, choice);
                    let _ = cep_nfa::select::explain(p, choice);
                }
            }
        }
    }
    // `cep run` over the read-ahead events.
    let (mut schema, events) = query_events();
    let c = match compile(src, &mut schema, &opts) {
        Ok(c) => c,
        Err(d) => {
            let _ = d.render(src, "q.cep");
            return;
        }
    };
    for w in &c.warnings {
        let _ = w.render(src, "q.cep");
    }
    let construction = match data.len() % 3 {
        0 => Construction::Direct,
        1 => Construction::PerEvent,
        _ => Construction::Batch,
    };
    let queries = c.programs.len();
    let Ok(mut runner) = Runner::with_engines(c.programs, EngineChoice::Auto, construction) else { return };
    runner.set_field_names(schema.field_names().map(str::to_owned).collect());
    let mut sink = JsonLines::new(Vec::new());
    let width = schema.field_count();
    let events: Vec<Event> = events
        .into_iter()
        .map(|mut e| {
            e.fields.resize(width, Value::Null);
            e
        })
        .collect();
    for e in &events {
        if runner.push(e, &mut sink).is_err() {
            return;
        }
    }
    if runner.finish(&mut sink).is_err() {
        return;
    }
    // `cep run --threads 2`: ordered shards write the very same bytes
    // (batch construction emits in an order of its own).
    if construction == Construction::Batch || queries > cep_runtime::MASK_QUERIES {
        return;
    }
    let one = sink.into_inner().expect("a Vec");
    let shard = || {
        let c = compile(src, &mut schema.clone(), &opts).expect("compiled once");
        Runner::with_engines(c.programs, EngineChoice::Auto, construction).expect("built once")
    };
    let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), vec![shard(), shard()]);
    sharded.set_ordered_output().expect("not balanced");
    let mut two = Vec::new();
    for e in &events {
        sharded.push(e, &mut two).expect("a shard runs what one runner ran");
        // Now and then, as `cep run` on a stream that pauses: what it
        // writes is one runner's output so far, a prefix of the whole.
        if e.row % 5 == 3 {
            sharded.sync(&mut two).expect("a sync runs what one runner ran");
            assert!(
                one.starts_with(&two),
                "after a sync at row {}, not a prefix:\n{}",
                e.row,
                String::from_utf8_lossy(&two)
            );
        }
    }
    sharded.finish(&mut two).expect("a shard finishes what one runner finished");
    assert!(
        one == two,
        "two shards wrote\n{}\none runner\n{}",
        String::from_utf8_lossy(&two),
        String::from_utf8_lossy(&one)
    );
}

// ---------------------------------------------------------------- readers

/// What a reader gave, for comparing two readers.
#[derive(Debug, PartialEq)]
enum Item {
    Ev { row: u64, ts: i64, ty: String, fields: Vec<Value> },
    Err { line: u64, row: Option<u64>, fatal: bool, message: String },
}

fn item_ok(e: &Event, width: usize) -> Item {
    let fields = (0..width).map(|i| e.fields.get(i).cloned().unwrap_or(Value::Null)).collect();
    Item::Ev { row: e.row, ts: e.ts, ty: e.ty.as_str().to_owned(), fields }
}

fn item_err(e: &ReadError) -> Item {
    Item::Err { line: e.line, row: e.row, fatal: e.kind == ReadErrorKind::Fatal, message: e.message.clone() }
}

/// Physical lines of `body` (for bounds on reported line numbers).
fn lines(body: &[u8]) -> u64 {
    body.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64 + 1
}

fn check_error(e: &ReadError, nlines: u64) {
    assert!(e.line >= 1, "error without a line number: {e:?}");
    assert!(e.line <= nlines + 1, "error line {} past the end ({} lines): {e:?}", e.line, nlines);
    if e.kind == ReadErrorKind::BadRow {
        assert!(e.row.is_some(), "bad row without a row: {e:?}");
    }
}

fn format_of(flag: u8) -> Format {
    if flag & 1 == 0 { Format::Csv } else { Format::Jsonl }
}

/// The sequential reader, as `cep run`/`cep check` drive it: read until the
/// end or a (fatal) error; bad rows skipped (`--on-bad-row skip`) or not.
/// After `k` events the reader is also reopened at its position (a resumed
/// run) and both go on: they must agree.
pub fn reader(data: &[u8]) {
    let Some((&flags, body)) = data.split_first() else { return };
    let format = format_of(flags);
    let skip_bad = flags & 2 != 0;
    let keep = flags & 4 != 0;
    let k = (flags >> 3) as usize;
    let mut r = match Reader::new(body, "in", format) {
        Ok(r) => r,
        Err(e) => {
            assert_eq!(e.kind, ReadErrorKind::Fatal);
            check_error(&e, lines(body));
            return;
        }
    };
    let mut e = Event::default();
    let guard = body.len() + 8;
    let nlines = lines(body);
    let mut n = 0usize;
    let mut good = 0usize;
    let mut second: Option<Reader<&[u8]>> = None;
    let mut width = 0;
    loop {
        n += 1;
        assert!(n <= guard, "reader makes no progress: {n} calls on {} bytes", body.len());
        if second.is_none() && width != usize::MAX && good == k {
            r.set_observe(false);
            if keep {
                let f: Vec<_> = (0..r.schema().field_count() as u32).step_by(2).collect();
                r.keep_fields(&f);
            }
            let at = r.position();
            assert!(at.byte as usize <= body.len(), "position past the end: {at:?}");
            width = r.schema().field_count();
            // A byte order mark inside a bad row shows in the first
            // reader's message and not in the reopened one's (the message
            // text only): inputs holding one are not compared.
            if !body.windows(3).any(|w| w == b"\xEF\xBB\xBF") {
                second = Some(r.reopen(&body[at.byte as usize..], at));
            } else {
                width = usize::MAX;
            }
        }
        let got = r.next_event(&mut e);
        if let Some(s) = &mut second {
            let mut e2 = Event::default();
            let got2 = s.next_event(&mut e2);
            let a = got.as_ref().map(|&b| b.then(|| item_ok(&e, width))).map_err(item_err);
            let b = got2.as_ref().map(|&b| b.then(|| item_ok(&e2, width))).map_err(item_err);
            assert_eq!(a, b, "reopened reader differs after {k} events");
            if let (Ok(true), Ok(true)) = (&got, &got2) {
                assert_eq!(r.position(), s.position(), "positions differ");
                assert_eq!(r.last_line(), s.last_line(), "last lines differ");
            }
        }
        match got {
            Ok(true) => {
                good += 1;
                let _ = r.position();
            }
            Ok(false) => break,
            Err(err) => {
                check_error(&err, nlines);
                if err.is_bad_row() && skip_bad {
                    continue;
                }
                if err.is_bad_row() {
                    // `cep run` stops here; go on anyway to reach more rows.
                    continue;
                }
                break;
            }
        }
    }
}

fn shm_path(tag: &str) -> std::path::PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    std::path::PathBuf::from(format!("{dir}/cep-fuzz-{tag}-{}", std::process::id()))
}

/// Records one `next_event` result (`e` the event it read) in `out`;
/// whether reading goes on (after an event or a bad row, not after the end
/// or a fatal error).
fn record(got: Result<bool, ReadError>, e: &Event, width: usize, nlines: u64, out: &mut Vec<Item>) -> bool {
    match got {
        Ok(true) => {
            out.push(item_ok(e, width));
            true
        }
        Ok(false) => false,
        Err(err) => {
            check_error(&err, nlines);
            out.push(item_err(&err));
            err.is_bad_row()
        }
    }
}

/// Items of the rest of an input read sequentially, the way `cep run` would
/// (good and bad rows; stops at a fatal error or after `max` reads).
fn read_all(r: &mut dyn EventSource, nlines: u64, width: usize, max: usize, out: &mut Vec<Item>) {
    let mut e = Event::default();
    for _ in 0..max {
        let got = r.next_event(&mut e);
        if !record(got, &e, width, nlines, out) {
            return;
        }
    }
    panic!("reader makes no progress");
}

/// The parallel reader (plain or partitioned), opened after `k` events read
/// by a sequential reader, as `cep run` opens it after its read-ahead;
/// its items must equal a sequential reader's.
/// A route of its own for the partitioned reader (beside the runtime's
/// [`KeyRoute`]): by the parity of the first field's integer or string
/// length.
struct Parity;

impl Route for Parity {
    fn parts(&self) -> usize {
        2
    }

    fn field(&self) -> FieldId {
        0
    }

    fn part_of(&self, key: &Value) -> usize {
        match key {
            Value::Int(i) => (*i as usize) & 1,
            Value::Str(s) => s.as_str().len() & 1,
            _ => 0,
        }
    }
}

pub fn parallel(data: &[u8]) {
    let Some((&flags, body)) = data.split_first() else { return };
    let format = format_of(flags);
    let partitioned = flags & 2 != 0;
    let repeat = flags & 4 != 0;
    let keep = flags & 8 != 0;
    let k = ((flags >> 4) & 7) as usize;
    let threads = (flags >> 7) as usize;
    // Cut inside the body: a long first row puts the parallel reader's
    // first block boundary in the middle of the body (the body is then read
    // as data rows only, after a fixed header).
    let k = if repeat { 0 } else { k };
    let content: Vec<u8> = if repeat {
        let mut v: Vec<u8> = Vec::new();
        let (open, close): (&[u8], &[u8]) = match format {
            Format::Csv => {
                v.extend_from_slice(b"ts,type,a,b\n");
                (b"0,T,1,", b"\n")
            }
            Format::Jsonl => (b"{\"ts\":0,\"a\":\"", b"\"}\n"),
        };
        let block = if partitioned { BLOCK } else { EVENT_BLOCK };
        let pad = block.saturating_sub(v.len() + open.len() + close.len() + body.len() / 2);
        v.extend_from_slice(open);
        v.resize(v.len() + pad, b'y');
        v.extend_from_slice(close);
        v.extend_from_slice(body);
        v
    } else {
        body.to_vec()
    };
    let body = &content[..];
    let path = shm_path("par");
    std::fs::File::create(&path).and_then(|mut f| f.write_all(body)).expect("write input");

    let open = || Reader::new(BufReader::new(std::fs::File::open(&path).expect("open")), "in", format);
    // Sequential reference.
    let Ok(mut seq) = open() else { return };
    let mut head = open().expect("opens twice");
    let mut e = Event::default();
    let max = body.len() + 8;
    let nlines = lines(body);
    for _ in 0..k {
        match (seq.next_event(&mut e), head.next_event(&mut Event::default())) {
            (Ok(true), Ok(true)) => {}
            // `cep run` opens no parallel reader after an error or the end.
            _ => return,
        }
    }
    for r in [&mut seq, &mut head] {
        r.set_observe(false);
        if keep {
            let f: Vec<_> = (0..r.schema().field_count() as u32).step_by(2).collect();
            r.keep_fields(&f);
        }
    }
    let width = head.schema().field_count();
    let mut want = Vec::new();
    read_all(&mut seq, nlines, width, max, &mut want);

    let at = head.position();
    let rest = if partitioned {
        // By a rule of its own, or as a sharded runtime splits (by the key
        // hash of the first field).
        if data.len() % 3 == 0 {
            ParallelReader::open_partitioned(&path, &head, at, threads, None, KeyRoute::new(2, 0))
        } else {
            ParallelReader::open_partitioned(&path, &head, at, threads, None, Parity)
        }
    } else {
        ParallelReader::open(&path, &head, at, threads, None)
    };
    let mut rest = rest.expect("open parallel");
    // As `cep run --threads N` does (its shards parse): here nobody else
    // parses with 0 threads, so the reader parses each block after waiting.
    if data.len() % 2 == 1 {
        rest.set_patience(std::time::Duration::from_micros(20));
    }
    let mut got = Vec::new();
    let mut n = 0;
    loop {
        n += 1;
        assert!(n <= max, "parallel reader makes no progress");
        // Unsplit, whole blocks of events as `cep run --parallel pipeline`
        // takes them (for some inputs).
        if !partitioned
            && data.len() % 4 >= 2
            && let Some(block) = rest.take_events(|_| true)
        {
            got.extend(block.events().iter().map(|e| item_ok(e, width)));
            continue;
        }
        if partitioned && let Some(block) = rest.take_block(|_| true) {
            let _ = block
                .try_for_each_in_order(|e| {
                    got.push(item_ok(e, width));
                    Ok::<_, ()>(())
                })
                .map(|_| ());
            continue;
        }
        let read = rest.next_event(&mut e);
        if !record(read, &e, width, nlines, &mut got) {
            break;
        }
    }
    drop(rest);
    let _ = std::fs::remove_file(&path);
    if want != got && !body.windows(3).skip(1).any(|w| w == b"\xEF\xBB\xBF") {
        let i = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
        panic!(
            "parallel reader differs from the sequential one at item {i} (k={k}, partitioned={partitioned}, \
             repeat={repeat}, keep={keep}): want {:?} got {:?} (lens {} vs {})",
            want.get(i),
            got.get(i),
            want.len(),
            got.len()
        );
    }
}

// ---------------------------------------------------------------- levels

/// `cep run --levels FILE.csv`: read the alerts, build the index, run a few
/// ticks through a runner with the index.
pub fn levels(data: &[u8]) {
    let Ok(alerts) = cep_index::file::read_alerts(data, "levels.csv") else { return };
    let mut index = LevelIndex::new();
    for a in &alerts {
        index.watch(&a.field);
    }
    if index.add_all(alerts.iter().cloned()).is_err() {
        return;
    }
    let _ = index.snapshot();
    let mut schema = Schema::new();
    let key = schema.field("key") as usize;
    let price = schema.field("price") as usize;
    let mut runner = Runner::new(Vec::new());
    runner.set_levels(index, &mut schema);
    let width = schema.field_count();
    let keys = [Value::Int(7), Value::Int(1), Value::Str(Sym::new("AAPL")), Value::Float(1.0), Value::Null];
    let prices = [0.0, 100.0, 10100.0, 105.0, -1.0, 1e300, f64::NAN, 110.0, 99.5, f64::INFINITY, -0.0, 5.0];
    let mut sink = JsonLines::new(std::io::sink());
    let mut row = 0u64;
    for p in prices {
        for k in &keys {
            let mut fields = vec![Value::Null; width];
            fields[key] = k.clone();
            // Every watched field gets the price (alert fields may be anything).
            for f in fields.iter_mut().skip(1) {
                *f = Value::Float(p);
            }
            fields[price] = if p.fract() == 0.0 && p.abs() < 1e15 { Value::Int(p as i64) } else { Value::Float(p) };
            let e = Event::new(Sym::new("Tick"), row as i64, row, fields);
            row += 1;
            if runner.push(&e, &mut sink).is_err() {
                return;
            }
        }
    }
    let _ = runner.finish(&mut sink);
}

// ---------------------------------------------------------------- checkpoints

/// The queries of the runner whose state the checkpoint seeds hold.
pub const CKPT_QUERY: &str = "QUERY rise PATTERN SEQ(Tick r, Tick s WITHIN 60 s, NOT Tick v WITHIN 10 s) \
WHERE [key] AND r.price * 100 >= PREV(r.price) * 102 AND s.vol >= 1000 SELECT EARLIEST;\n\
QUERY any PATTERN SEQ(A a, B+ b[], D d) WHERE skip-till-any-match AND [key] WITHIN 500;\n\
QUERY strict PATTERN SEQ(A a, B? b, D d) WHERE strict-contiguity AND [key] AND d.price > a.price WITHIN 5 EVENTS;\n\
QUERY kl PATTERN SEQ(Tick+ a[], Tick b) WHERE [key] AND a[i].price > a[i-1].price AND b.price < a[a.LEN].price \
WITHIN 10000 AFTER MATCH SKIP PAST LAST EVENT";

pub fn ckpt_schema() -> Schema {
    let mut s = Schema::new();
    for f in ["key", "price", "vol"] {
        s.field(f);
    }
    s
}

/// A runner built as the seed's was (same queries, delay, alerts).
pub fn ckpt_runner(construction: Construction, schema: &mut Schema, queries: bool, levels: bool) -> Runner {
    let progs =
        if queries { compile(CKPT_QUERY, schema, &Options::default()).expect("compiles").programs } else { Vec::new() };
    let mut r = Runner::with_engines(progs, EngineChoice::Auto, construction).expect("auto");
    r.set_max_delay(100);
    if levels {
        let mut index = LevelIndex::new();
        index.add(cep_index::Alert::above("a", Value::Int(1), "price", 10100.0, 5.0)).unwrap();
        index.add(cep_index::Alert::enter("b", Value::Int(2), "price", 5.0, 7.0, 0.5)).unwrap();
        r.set_levels(index, schema);
    }
    r
}

/// Deterministic events over the checkpoint schema.
pub fn ckpt_events(schema: &Schema, from: u64, n: u64) -> Vec<Event> {
    let w = schema.field_count();
    let tys = ["Tick", "A", "B", "D", "Tick", "B"];
    // `from` comes from a fuzzed checkpoint: any u64.
    (from..from.saturating_add(n))
        .map(|i| {
            let mut f = vec![Value::Null; w];
            f[0] = Value::Int((i % 3) as i64);
            f[1] = Value::Int(10000 + (i.wrapping_mul(7919) % 400) as i64);
            f[2] = Value::Int((i.wrapping_mul(31) % 2000) as i64);
            // Slightly out of order (delay 100).
            let ts = (i.wrapping_mul(50) as i64).saturating_sub(if i % 4 == 1 { 60 } else { 0 });
            Event::new(Sym::new(tys[(i % 6) as usize]), ts, i, f)
        })
        .collect()
}

/// Payload bytes as `cep run` would find them in a file with a valid header
/// and checksum (so the mutations reach the decoder and `restore`), and the
/// raw bytes as a whole file.
pub fn checkpoint(data: &[u8]) {
    let _ = checkpoint::decode(data);
    let mut file = Vec::with_capacity(data.len() + 28);
    file.extend_from_slice(checkpoint::MAGIC);
    file.extend_from_slice(&checkpoint::FORMAT_VERSION.to_le_bytes());
    file.extend_from_slice(&checkpoint::HASH_VERSION.to_le_bytes());
    file.extend_from_slice(&(data.len() as u64).to_le_bytes());
    file.extend_from_slice(data);
    file.extend_from_slice(&crc32fast_hash(data).to_le_bytes());
    let Ok(c) = checkpoint::decode(&file) else { return };
    restore_and_run(c);
}

fn restore_and_run(c: Checkpoint) {
    let mut sink = JsonLines::new(std::io::sink());
    match c.state {
        PipelineSnapshot::One(snap) => {
            let mut schema = ckpt_schema();
            let mut r = ckpt_runner(Construction::Direct, &mut schema, true, true);
            r.set_field_names(schema.field_names().map(str::to_owned).collect());
            if r.restore(snap).is_err() {
                return;
            }
            for e in ckpt_events(&schema, c.position, 40) {
                if r.push(&e, &mut sink).is_err() {
                    return;
                }
            }
            let _ = r.snapshot();
            let _ = r.finish(&mut sink);
        }
        PipelineSnapshot::Sharded(ShardedSnapshot { front, shards, released: _ }) => {
            if shards.len() != 2 {
                return;
            }
            let mut schema = ckpt_schema();
            let mut f = ckpt_runner(Construction::Direct, &mut schema, false, false);
            if f.restore(front).is_err() {
                return;
            }
            let mut rs = Vec::new();
            for s in shards {
                let mut schema = ckpt_schema();
                let mut r = ckpt_runner(Construction::Direct, &mut schema, true, true);
                if r.restore(s).is_err() {
                    return;
                }
                rs.push(r);
            }
            let schema = {
                let mut s = ckpt_schema();
                let _ = ckpt_runner(Construction::Direct, &mut s, true, true);
                s
            };
            for e in ckpt_events(&schema, c.position, 40) {
                let i = match &e.fields[0] {
                    Value::Int(k) => (*k as usize) & 1,
                    _ => 0,
                };
                if f.push(&e, &mut sink).is_err() || rs[i].push(&e, &mut sink).is_err() {
                    return;
                }
            }
            for mut r in rs {
                let _ = r.snapshot();
                let _ = r.finish(&mut sink);
            }
            let _ = f.finish(&mut sink);
        }
    }
}

/// CRC-32 (IEEE), as the checkpoint file uses (crc32fast's).
fn crc32fast_hash(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Seed checkpoint payloads (one runner; a sharded state of two runners).
pub fn checkpoint_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut sink = JsonLines::new(std::io::sink());
    for (cut, construction) in [(30u64, Construction::Direct), (7, Construction::Direct), (61, Construction::Direct)] {
        let mut schema = ckpt_schema();
        let mut r = ckpt_runner(construction, &mut schema, true, true);
        for e in ckpt_events(&schema, 0, cut) {
            r.push(&e, &mut sink).unwrap();
        }
        let c = Checkpoint {
            fingerprint: 1,
            position: cut,
            output_bytes: 0,
            input: Some(cep_io::InputPosition { byte: 100, row: cut, line: cut + 2 }),
            skipped: 0,
            identity: cep_runtime::checkpoint::InputIdentity::Unidentified,
            output_pending: Vec::new(),
            offsets: None,
            state: PipelineSnapshot::One(r.snapshot().unwrap()),
        };
        let file = checkpoint::encode(&c);
        out.push(file[24..file.len() - 4].to_vec());
    }
    // Sharded: a front (no queries) and two shards.
    let mut schema = ckpt_schema();
    let mut front = ckpt_runner(Construction::Direct, &mut schema, false, false);
    let mut shards: Vec<Runner> = (0..2)
        .map(|_| {
            let mut s = ckpt_schema();
            ckpt_runner(Construction::Direct, &mut s, true, true)
        })
        .collect();
    let schema = {
        let mut s = ckpt_schema();
        let _ = ckpt_runner(Construction::Direct, &mut s, true, true);
        s
    };
    for e in ckpt_events(&schema, 0, 25) {
        front.push(&e, &mut sink).unwrap();
        let i = match &e.fields[0] {
            Value::Int(k) => (*k as usize) & 1,
            _ => 0,
        };
        shards[i].push(&e, &mut sink).unwrap();
    }
    let c = Checkpoint {
        fingerprint: 2,
        position: 25,
        output_bytes: 10,
        input: None,
        skipped: 1,
        identity: cep_runtime::checkpoint::InputIdentity::Unidentified,
        output_pending: Vec::new(),
        offsets: None,
        state: PipelineSnapshot::Sharded(ShardedSnapshot {
            front: front.snapshot().unwrap(),
            shards: shards.iter_mut().map(|r| r.snapshot().unwrap()).collect(),
            released: 1000,
        }),
    };
    let file = checkpoint::encode(&c);
    out.push(file[24..file.len() - 4].to_vec());
    out
}
