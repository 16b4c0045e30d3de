//! The parallel reader against one plain reader over the same bytes:
//! events, errors, rows, lines and positions alike, partitioned or not.

use super::block::Block;
use super::cut::last_csv_record_end;
use super::*;
use crate::read::Format;
use cep_core::{FieldId, FlatEvents, Value};
use proptest::prelude::*;

/// What a reader yields, with rows, lines and positions: `limit`
/// items at most; whether it ended.
fn take(src: &mut impl EventSource, limit: usize, got: &mut Vec<String>) -> bool {
    take_fields(src, limit, usize::MAX, got)
}

/// [`take`], showing only the first `width` fields of each event.
fn take_fields(src: &mut impl EventSource, limit: usize, width: usize, got: &mut Vec<String>) -> bool {
    let mut e = Event::default();
    for _ in 0..limit {
        match src.next_event(&mut e) {
            Ok(true) => {
                if e.fields.len() > width {
                    e.fields.truncate(width);
                    while e.fields.pop_if(|v| v.is_null()).is_some() {}
                }
                got.push(format!("{} {}", show(&e), at(src)))
            }
            Ok(false) => return true,
            Err(err) => {
                got.push(format!("error {err} row {:?} {:?}", err.row, err.kind));
                if !err.is_bad_row() {
                    return true;
                }
            }
        }
    }
    false
}

/// `text` read by one reader, and by a parallel reader (in blocks of
/// `block` bytes on `threads` threads) after `skip` items of a plain
/// one. The parallel reader keeps only the fields the plain one knew
/// when it opened it (`Reader::fix_fields`), so only those of the one
/// reader's events are shown.
fn both(text: &str, format: Format, skip: usize, block: usize, threads: usize) -> (Vec<String>, Vec<String>) {
    let name = format!("cep-parallel-{}-{:?}.txt", std::process::id(), std::thread::current().id());
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, text).unwrap();
    // What was read, and the fields known when the parallel reader
    // opened.
    let read = |skip: Option<usize>, width: usize| -> (Vec<String>, usize) {
        let src = std::io::BufReader::new(File::open(&path).unwrap());
        let mut head = match Reader::new(src, "t", format) {
            Ok(r) => r,
            Err(e) => return (vec![format!("open {e}")], usize::MAX),
        };
        let mut got = Vec::new();
        let ended = take_fields(&mut head, skip.unwrap_or(usize::MAX), width, &mut got);
        let known = head.schema().field_count();
        if !ended {
            let at = head.position();
            let mut rest =
                ParallelReader::open_in_blocks(&path, &head, at, threads, None, block, None::<NoRoute>).unwrap();
            take_fields(&mut rest, usize::MAX, width, &mut got);
            got.push(format!("rows {}", rest.rows()));
            (got, known)
        } else {
            got.push(format!("rows {}", head.rows()));
            (got, usize::MAX)
        }
    };
    let (par, known) = read(Some(skip), usize::MAX);
    let (one, _) = read(None, known);
    std::fs::remove_file(&path).unwrap();
    (one, par)
}

/// An event as [`take`] shows it, without where the input stands.
fn show(e: &Event) -> String {
    format!("row {} ts {} {:?} {:?}", e.row, e.ts, e.ty, e.fields)
}

/// Where `src` stands, as [`take`] shows it.
fn at(src: &impl EventSource) -> String {
    format!("line {} at {:?}", src.last_line(), src.position())
}

/// Blocks parsed one after another share one string cache, which ends
/// up with the keys of both (each block's reader alone starts with an
/// empty one); and blocks of 64 bytes read through it read as one
/// reader reads.
#[test]
fn parsers_keep_their_strings_across_blocks() {
    let rows: String = (0..200).map(|i| format!("{i},key{}\n", i % 40)).collect();
    let (one, par) = both(&format!("ts,key\n{rows}"), Format::Csv, 0, 64, 0);
    assert_eq!(one, par);
    assert!(par.len() > 200, "{par:?}");

    let head = Reader::new(&b"ts,key\n"[..], "t", Format::Csv).unwrap();
    let free = Pool::default();
    let (results, parsed) = unbounded();
    let (bufs, _bufs_rx) = mpsc::channel();
    let template = head.reopen(io::empty(), head.position());
    let parser = Parser::<NoRoute> { template, free, results, bufs, route: None, strings: Default::default() };
    for seq in 0..2 {
        let rows: String = (0..20).map(|i| format!("{i},key{}\n", i + 20 * seq)).collect();
        parser.run(Block { seq, start: 7, bytes: rows.into_bytes(), cut_long: false });
        assert_eq!(parsed.recv().unwrap().len, 20);
    }
    let caches = parser.strings.lock();
    assert_eq!(caches.len(), 1);
    assert_eq!(caches[0].len(), 40);
}

/// The parser routes an event by the value of the route's field, NULL
/// when the event is too short for it; a part past the last counts as the
/// last.
#[test]
fn parts_follow_the_route_of_the_field() {
    /// Part 9 (past the last of 3) for the string `far`, else by kind.
    struct Kinds(FieldId);
    impl Route for Kinds {
        fn parts(&self) -> usize {
            3
        }
        fn field(&self) -> FieldId {
            self.0
        }
        fn part_of(&self, key: &Value) -> usize {
            match key {
                Value::Null => 0,
                Value::Int(_) => 1,
                _ => 9,
            }
        }
    }
    let mut head = Reader::new(&b"{\"ts\":0,\"a\":1,\"b\":2}\n"[..], "t", Format::Jsonl).unwrap();
    assert!(head.next_event(&mut Event::default()).unwrap());
    let b = head.schema().lookup("b").unwrap();
    let (results, parsed) = unbounded();
    let (bufs, _bufs_rx) = mpsc::channel();
    let template = head.reopen(io::empty(), head.position());
    let free = Pool::default();
    let parser = Parser { template, free, results, bufs, route: Some(Kinds(b)), strings: Default::default() };
    let rows = "{\"ts\":1,\"a\":5}\n{\"ts\":2,\"a\":5,\"b\":7}\n{\"ts\":3,\"a\":5,\"b\":\"far\"}\n{\"ts\":4,\"b\":1}\n";
    parser.run(Block { seq: 0, start: 0, bytes: rows.as_bytes().to_vec(), cut_long: false });
    let p = parsed.recv().unwrap();
    assert_eq!(p.order, [0, 1, 2, 1]);
    assert_eq!(p.parts.iter().map(FlatEvents::len).collect::<Vec<_>>(), [1, 2, 1]);
}

/// A route for tests: by the debug text of the first field.
struct TestRoute(usize);

impl Route for TestRoute {
    fn parts(&self) -> usize {
        self.0
    }
    fn field(&self) -> FieldId {
        0
    }
    fn part_of(&self, key: &Value) -> usize {
        format!("{key:?}").len() * 7 % self.0
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Read partitioned (or not), taking whole the blocks `admit`
    /// picks (at random) with `take_block` (or `take_events`) and the
    /// rest event by event: the same events, rows and errors as one
    /// reader, the input standing where one reader's does after each
    /// block; each part holds its own events in input order.
    #[test]
    fn whole_blocks_read_as_one_reader(
        text in prop_oneof![csv_text_sorted(true), csv_text()],
        skip in 0usize..5,
        block in 1usize..200,
        threads in 0usize..4,
        helper: bool,
        parts in 1usize..4,
        picks in prop::collection::vec(any::<bool>(), 64),
        split: bool,
    ) {
        let path = std::env::temp_dir().join(format!("cep-parted-{}-{:?}.csv", std::process::id(), std::thread::current().id()));
        std::fs::write(&path, &text).unwrap();
        let open = || Reader::new(std::io::BufReader::new(File::open(&path).unwrap()), "t", Format::Csv).unwrap();
        // One reader: each event (or error) and where the input stands after it.
        let mut one = Vec::new();
        let mut plain = open();
        let mut e = Event::default();
        loop {
            match plain.next_event(&mut e) {
                Ok(true) => one.push((show(&e), at(&plain))),
                Ok(false) => break,
                Err(err) => one.push((format!("error {err}"), String::new())),
            }
        }
        let mut head = open();
        let mut got = Vec::new();
        for _ in 0..skip {
            match head.next_event(&mut e) {
                Ok(true) => got.push((show(&e), Some(at(&head)))),
                Ok(false) => break,
                Err(err) => got.push((format!("error {err}"), None)),
            }
        }
        let route = TestRoute(parts);
        // Split by the partition and taken with `take_block`, or not
        // split and taken with `take_events`.
        let mut rest = ParallelReader::open_in_blocks(&path, &head, head.position(), threads, None, block, split.then_some(TestRoute(parts))).unwrap();
        // Another thread parsing blocks too, as a sharded runtime's
        // shards do (it stops when the reader is dropped).
        if helper {
            let jobs = rest.parse_jobs();
            std::thread::spawn(move || jobs.iter().for_each(ParseJob::run));
        }
        let mut pick = picks.iter().cycle();
        loop {
            if !split && let Some(b) = rest.take_events(|_| *pick.next().unwrap()) {
                let mut shown: Vec<String> = b.events().iter().map(show).collect();
                prop_assert!(b.events().windows(2).all(|w| w[0].row < w[1].row && w[0].ts <= w[1].ts));
                let last = shown.pop();
                got.extend(shown.into_iter().map(|e| (e, None)));
                got.extend(last.map(|e| (e, Some(at(&rest)))));
                continue;
            }
            if let Some(b) = rest.take_block(|_| *pick.next().unwrap()) {
                let mut events = Vec::new();
                for i in 0..b.parts() {
                    let mut rows = Vec::new();
                    for e in b.part(i).unpack_into(&mut events, b.row_base()) {
                        prop_assert_eq!(route.part_of(e.fields.first().unwrap_or(&Value::Null)), i);
                        rows.push(e.row);
                    }
                    prop_assert!(rows.windows(2).all(|w| w[0] < w[1]));
                }
                let mut shown = Vec::new();
                b.try_for_each_in_order(|e| {
                    shown.push(show(e));
                    Ok::<_, ()>(())
                })
                .unwrap();
                prop_assert_eq!(shown.len(), b.len());
                let last = shown.pop();
                got.extend(shown.into_iter().map(|e| (e, None)));
                got.extend(last.map(|e| (e, Some(at(&rest)))));
                continue;
            }
            match rest.next_event(&mut e) {
                Ok(true) => got.push((show(&e), Some(at(&rest)))),
                Ok(false) => break,
                Err(err) => {
                    got.push((format!("error {err}"), None));
                    if !err.is_bad_row() {
                        break;
                    }
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
        prop_assert_eq!(got.len(), one.len());
        for ((event, stands), (want, want_at)) in got.iter().zip(&one) {
            prop_assert_eq!(event, want);
            if let Some(stands) = stands {
                prop_assert_eq!(stands, want_at);
            }
        }
    }
}

/// A CSV cell: plain, quoted with commas, newlines and doubled quotes,
/// or a bad number in `ts`.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0i64..50).prop_map(|n| n.to_string()),
        1 => "[a-c]{0,3}".prop_map(|s| s),
        1 => "[a-c,\n\"]{0,6}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
        1 => Just("x\"y".to_owned()),
        1 => Just("\r\"y".to_owned()),
    ]
}

fn csv_text() -> impl Strategy<Value = String> {
    csv_text_sorted(false)
}

/// [`csv_text`], with the numeric `ts` in order if `sorted`.
fn csv_text_sorted(sorted: bool) -> impl Strategy<Value = String> {
    let row =
        (prop_oneof![9 => (0i64..1000).prop_map(|t| t.to_string()), 1 => Just("oops".to_owned())], cell(), cell());
    (prop::collection::vec(row, 0..60), any::<bool>(), any::<bool>()).prop_map(move |(mut rows, crlf, blank)| {
        if sorted {
            let mut ts: Vec<i64> = rows.iter().filter_map(|r| r.0.parse().ok()).collect();
            ts.sort_unstable();
            let mut ts = ts.into_iter();
            for r in rows.iter_mut().filter(|r| r.0 != "oops") {
                r.0 = ts.next().expect("as many").to_string();
            }
        }
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut t = format!("ts,a,b{nl}");
        for (i, (ts, a, b)) in rows.iter().enumerate() {
            t.push_str(&format!("{ts},{a},{b}{nl}"));
            if blank && i % 7 == 3 {
                t.push_str(nl);
            }
        }
        t
    })
}

fn jsonl_text() -> impl Strategy<Value = String> {
    let row = prop_oneof![
        8 => ((0i64..1000), "[a-c\n]{0,4}", "[stu]").prop_map(|(t, s, k)| format!("{{\"ts\":{t},\"{k}\":{}}}", serde_json::to_string(&s).unwrap())),
        1 => Just("{\"ts\":\"bad\"}".to_owned()),
        1 => Just("not json".to_owned()),
        1 => Just(String::new()),
    ];
    // With or without a byte order mark before the first line.
    (prop::collection::vec(row, 0..60), any::<bool>()).prop_map(|(rows, bom)| {
        let start = if bom { "\u{feff}" } else { "" };
        rows.iter().fold(start.to_owned(), |text, r| format!("{text}{r}\n"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn parallel_csv_reads_as_one_reader(text in csv_text(), skip in 0usize..5, block in 1usize..200, threads in 0usize..4) {
        let (one, par) = both(&text, Format::Csv, skip, block, threads);
        prop_assert_eq!(one, par);
    }

    #[test]
    fn parallel_jsonl_reads_as_one_reader(text in jsonl_text(), skip in 0usize..5, block in 1usize..200, threads in 0usize..4) {
        let (one, par) = both(&text, Format::Jsonl, skip, block, threads);
        prop_assert_eq!(one, par);
    }
}

#[test]
fn a_line_too_long_in_a_later_block_reads_as_one_reader() {
    // Line 7 is longer than the limit: a bad row, then line 8 is read.
    let text = "ts,a\n1,x\n2,y\n3,z\n4,w\n5,v\n6,0123456789012345678901234567890123456789\n7,u\n";
    let path = std::env::temp_dir().join(format!("cep-parallel-fatal-{}.csv", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let mut one = Vec::new();
    take(&mut Reader::with_max_line(text.as_bytes(), "t", Format::Csv, 30).unwrap(), usize::MAX, &mut one);
    for skip in [0, 1, 3] {
        let mut head = Reader::with_max_line(text.as_bytes(), "t", Format::Csv, 30).unwrap();
        let mut got = Vec::new();
        take(&mut head, skip, &mut got);
        for block in [1, 7, 64] {
            let mut par = got.clone();
            let mut rest =
                ParallelReader::open_in_blocks(&path, &head, head.position(), 2, None, block, None::<NoRoute>).unwrap();
            take(&mut rest, usize::MAX, &mut par);
            assert_eq!(par, one, "skip {skip}, blocks of {block}");
        }
    }
    assert!(one[5].contains("t:7:") && one[5].contains("BadRow"), "{one:?}");
    assert!(one.last().unwrap().contains("ts 7"), "{one:?}");
    std::fs::remove_file(&path).unwrap();
}

/// A reader that leaves its blocks to helpers ([`ParallelReader::set_patience`])
/// reads what one reader reads, whether a helper thread parses them or
/// nobody does (it then parses each itself after the patience).
#[test]
fn a_patient_reader_reads_as_one_reader_with_or_without_helpers() {
    let text: String =
        std::iter::once("ts,a\n".to_owned()).chain((0..400).map(|i| format!("{i},{}\n", i % 7))).collect();
    let path = std::env::temp_dir().join(format!("cep-parallel-patient-{}.csv", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let mut one = Vec::new();
    take(&mut Reader::new(text.as_bytes(), "t", Format::Csv).unwrap(), usize::MAX, &mut one);
    for helped in [false, true] {
        let head = Reader::new(text.as_bytes(), "t", Format::Csv).unwrap();
        let mut rest =
            ParallelReader::open_in_blocks(&path, &head, head.position(), 0, None, 64, None::<NoRoute>).unwrap();
        rest.set_patience(std::time::Duration::from_micros(100));
        let helper = helped.then(|| {
            let jobs = rest.parse_jobs();
            std::thread::spawn(move || {
                while let Ok(job) = jobs.recv() {
                    job.run();
                }
            })
        });
        let mut got = Vec::new();
        take(&mut rest, usize::MAX, &mut got);
        drop(rest);
        if let Some(h) = helper {
            h.join().unwrap();
        }
        assert_eq!(got, one, "helped: {helped}");
    }
    assert_eq!(one.len(), 400);
    std::fs::remove_file(&path).unwrap();
}

/// JSON lines after a byte order mark, read by the parallel reader
/// from the start (its first block begins with the mark) and from
/// later rows: what one reader gives, which ignores the mark.
#[test]
fn parallel_jsonl_after_a_bom_reads_as_one_reader() {
    let mut text = String::from("\u{feff}");
    for i in 0..50 {
        text.push_str(&format!("{{\"ts\":{i},\"type\":\"A\",\"x\":{i}}}\n"));
    }
    for skip in [0, 1, 7] {
        for (block, threads) in [(1, 0), (7, 2), (64, 1), (1 << 20, 2)] {
            let (one, par) = both(&text, Format::Jsonl, skip, block, threads);
            assert_eq!(one, par, "skip {skip}, blocks of {block}, {threads} threads");
            assert_eq!(one.len(), 51);
            assert!(one[0].starts_with("row 0 ts 0"), "{}", one[0]);
        }
    }
}

/// JSON lines that bring a new key per row: the parallel reader keeps
/// the fields its opener knew, and drops the keys that are new (they
/// have no name outside the block that would number them), so its
/// events stay as narrow as those fields; each had been widened to all
/// the keys before it in its block (`cep run` on 20,000 such rows: 2.1
/// GB).
#[test]
fn parallel_jsonl_keeps_only_the_known_fields() {
    let text: String = (0..3000).map(|i| format!("{{\"ts\":{i},\"k{i}\":1,\"k1\":{i}}}\n")).collect();
    let path = std::env::temp_dir().join(format!("cep-parallel-keys-{}.jsonl", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let mut head = Reader::new(text.as_bytes(), "t", Format::Jsonl).unwrap();
    let mut e = Event::default();
    for _ in 0..3 {
        assert!(head.next_event(&mut e).unwrap());
    }
    // A field registered without being read (as a query's is) is kept.
    head.schema_mut().field("k2999");
    let known = head.schema().field_count();
    assert_eq!(known, 4);
    for threads in [0, 2] {
        let mut rest =
            ParallelReader::open_in_blocks(&path, &head, head.position(), threads, None, 4096, None::<NoRoute>)
                .unwrap();
        let mut n = 3;
        while rest.next_event(&mut e).unwrap() {
            assert!(e.fields.len() <= known, "row {}: {} fields", e.row, e.fields.len());
            assert_eq!(e.get(1), Value::Int(n));
            assert_eq!(e.get(3), if n == 2999 { Value::Int(1) } else { Value::Null });
            n += 1;
        }
        assert_eq!(n, 3000);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn csv_record_ends_follow_quotes() {
    assert_eq!(last_csv_record_end(b"1,\"a\nb\"\n2,c"), Some(7));
    assert_eq!(last_csv_record_end(b"1,\"a\nb"), None);
    // A quote inside an unquoted field is a character, not a quote.
    assert_eq!(last_csv_record_end(b"1,x\"y\n2"), Some(5));
    // A doubled quote in a quoted field.
    assert_eq!(last_csv_record_end(b"1,\"a\"\"\nb\"\n"), Some(9));
    // A quote after a lone `\r` is a character: the newline after it
    // ends the record, the one in the quoted field after does not.
    assert_eq!(last_csv_record_end(b"1,\r\"y\n2,\"a\nb"), Some(5));
}
