//! Property tests: any bytes read alike through any buffer, and the one-pass paths (simple CSV lines, simple JSON objects) read as the general ones.

use super::*;

proptest! {
    /// Any bytes after a header: reading never panics, and a reader over
    /// a buffer of 1 to 64 bytes reads exactly what a reader over the
    /// whole input reads (events, rows, lines, errors), whichever of the
    /// CSV record paths each record takes.
    #[test]
    fn any_bytes_read_alike_through_any_buffer(
        body in proptest::collection::vec(
            prop_oneof![any::<u8>(), Just(b','), Just(b'\n'), Just(b'"'), Just(b'\r'), Just(b'7'), Just(b' ')],
            0..300,
        ),
        capacity in 1usize..64,
    ) {
        let text = [&b"ts,a,b\n"[..], &body].concat();
        let whole = Reader::new(&text[..], "g.csv", Format::Csv).map(|mut r| all(&mut r));
        let small =
            Reader::new(io::BufReader::with_capacity(capacity, &text[..]), "g.csv", Format::Csv).map(|mut r| all(&mut r));
        prop_assert_eq!(format!("{whole:?}"), format!("{small:?}"));
    }
}

/// Everything a JSON-lines reader reports, call by call: each event or
/// error with the rows consumed, the line of the last event and the
/// position after it.
fn json_trace<R: BufRead>(mut r: Reader<R>) -> Vec<String> {
    let mut out = Vec::new();
    let mut e = Event::default();
    loop {
        let item = match r.next_event(&mut e) {
            Ok(true) => format!("{e:?}"),
            Ok(false) => "end".to_owned(),
            Err(err) => format!("{err:?}"),
        };
        out.push(format!("{item} rows {} line {} at {:?}", r.rows(), r.last_line(), r.position()));
        if item == "end" || out.len() > 1000 {
            return out;
        }
    }
}

/// Pieces of JSON-lines input: single bytes (any, and mostly JSON's
/// punctuation, digits and blanks), and words, numbers, escapes and
/// whole lines, valid and not.
fn json_piece() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        2 => any::<u8>(),
        6 => proptest::sample::select(&b"{}[]\":,\n\\0123456789-.eE \t\r"[..]),
    ];
    let word = proptest::sample::select(vec![
        "true",
        "false",
        "null",
        "\"ts\"",
        "\"type\"",
        "\"x\"",
        "1e999",
        "-1e999",
        "1.5",
        "-0",
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
        "\\ud800",
        "\"\\ud800\"",
        "\"\\u00e9\"",
        "\\u0000",
        "é",
        "💥",
        "\u{feff}",
        "{\"ts\":1,\"x\":2}\n",
        "{\"ts\":-3,\"type\":\"A\",\"s\":\"é\",\"f\":0.5,\"b\":true,\"n\":null}\n",
        "{\"ts\":2,\"ts\":1.5}\n",
        "{\"ts\":\n",
        "\n\n",
    ]);
    prop_oneof![
        3 => byte.prop_map(|b| vec![b]),
        2 => word.prop_map(|w| w.as_bytes().to_vec()),
    ]
}

proptest! {
    /// Any bytes among valid JSON lines: reading never panics, and a
    /// reader over a buffer of 1 to 64 bytes reads exactly what a reader
    /// over the whole input reads (events, rows, lines, positions,
    /// errors).
    #[test]
    fn any_json_bytes_read_alike_through_any_buffer(
        pieces in proptest::collection::vec(json_piece(), 0..120),
        capacity in 1usize..64,
    ) {
        let body: Vec<u8> = pieces.concat();
        let text = [&b"{\"ts\":0,\"a\":1}\n"[..], &body, &b"\n{\"ts\":9,\"a\":\"z\"}\n"[..]].concat();
        let whole = json_trace(Reader::new(&text[..], "g.jsonl", Format::Jsonl).unwrap());
        let small = io::BufReader::with_capacity(capacity, &text[..]);
        let small = json_trace(Reader::new(small, "g.jsonl", Format::Jsonl).unwrap());
        prop_assert_eq!(&whole, &small);
        // The last line is good, and every row in between was either
        // an event or a bad row: reading went on to the end.
        prop_assert!(whole[whole.len() - 2].contains("ts: 9"), "{:?}", whole);
    }
}

/// `ts` out of the i64 range, a float, negative, and missing, in both
/// formats: a negative `ts` (down to `i64::MIN`) is an event; the others
/// are bad rows with a message naming `ts` and the line, and reading
/// goes on with the next row (LANGUAGE.md §1: "a row with a missing or
/// non-integer `ts`" is bad input; `--on-bad-row skip` skips it).
#[test]
fn ts_out_of_range_float_negative_or_missing() {
    let csv = "ts,x\n9223372036854775808,1\n-9223372036854775809,1\n99999999999999999999,1\n1.5,1\n1e3,1\n\
               -1.0,1\n-5,1\n-9223372036854775808,1\n9223372036854775807,1\n,1\n";
    let jsonl = "{\"ts\":9223372036854775808}\n{\"ts\":-9223372036854775809}\n{\"ts\":99999999999999999999}\n\
                 {\"ts\":1.5}\n{\"ts\":1e3}\n{\"ts\":-1.0}\n{\"ts\":-5}\n{\"ts\":-9223372036854775808}\n\
                 {\"ts\":9223372036854775807}\n{\"x\":1}\n{\"ts\":null}\n{\"ts\":1e999}\n{\"ts\":-0}\n";
    for (text, file, format, first_line) in [(csv, "t.csv", Format::Csv, 2), (jsonl, "t.jsonl", Format::Jsonl, 1)] {
        let mut r = Reader::new(text.as_bytes(), file, format).unwrap();
        let got = all(&mut r);
        let show = |i: usize| match &got[i] {
            Ok(e) => format!("ts {}", e.ts),
            Err(e) => {
                assert_eq!(e.kind, ReadErrorKind::BadRow, "{e}");
                assert_eq!(e.row, Some(i as u64), "{e}");
                assert_eq!(e.line, first_line + i as u64, "{e}");
                e.to_string()
            }
        };
        let line = |i: usize| first_line + i as u64;
        let want = [
            format!("{file}:{}: `ts` `9223372036854775808` does not fit in 64 bits", line(0)),
            format!("{file}:{}: `ts` `-9223372036854775809` does not fit in 64 bits", line(1)),
            format!("{file}:{}: `ts` `99999999999999999999` does not fit in 64 bits", line(2)),
            format!("{file}:{}: `ts` is not an integer: `1.5`", line(3)),
            format!("{file}:{}: `ts` is not an integer: `1e3`", line(4)),
            format!("{file}:{}: `ts` is not an integer: `-1.0`", line(5)),
            "ts -5".to_owned(),
            format!("ts {}", i64::MIN),
            format!("ts {}", i64::MAX),
            format!("{file}:{}: missing `ts`", line(9)),
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(&show(i), w, "{file} row {i}");
        }
        if format == Format::Jsonl {
            assert_eq!(show(10), format!("{file}:{}: missing `ts`", line(10)));
            let e = show(11);
            assert!(e.starts_with(&format!("{file}:{}: invalid JSON: number out of range", line(11))), "{e}");
            assert_eq!(show(12), "ts 0");
        }
        assert_eq!(r.rows(), got.len() as u64);
    }
}

/// Everything `r` yields, item by item, with its position and line
/// after each (checking that the end of the input leaves the event as
/// it was).
fn items<R: BufRead>(r: &mut Reader<R>) -> Vec<String> {
    let mut e = Event::default();
    let mut out = Vec::new();
    loop {
        let before = e.clone();
        let item = match r.next_event(&mut e) {
            Ok(true) => format!("{} {:?} {} {:?}", e.ty.as_str(), e.ts, e.row, e.fields),
            Ok(false) => {
                assert_eq!(e, before, "the end of the input leaves the event as it was");
                break;
            }
            Err(err) => format!("error {err} {:?} {:?}", err.row, err.kind),
        };
        let fatal = item.starts_with("error") && r.failed.is_some();
        out.push(format!("{item} @ {:?} line {} rows {}", r.position(), r.last_line(), r.rows()));
        if fatal {
            break;
        }
    }
    out
}

/// Everything reading `text` in `format` yields ([`items`]) through a
/// buffer of `capacity` bytes, with or without the simple-line or
/// simple-object path, and the fields the schema knows at the end.
fn read_all(text: &[u8], format: Format, capacity: usize, max_line: usize, simple: bool) -> Vec<String> {
    let src = io::BufReader::with_capacity(capacity, text);
    let mut r = match Reader::with_max_line(src, "d", format, max_line) {
        Ok(r) => r,
        Err(e) => return vec![format!("open: {e}")],
    };
    match &mut r.inner {
        Inner::Csv(csv) => csv.simple = simple,
        Inner::Jsonl(json) => json.simple = simple,
    }
    let mut out = items(&mut r);
    let names: Vec<&str> = r.schema().field_names().collect();
    out.push(format!("fields {names:?}"));
    out
}

/// CSV text over an alphabet that hits every way out of the simple-line
/// path: signs, digits past 18, dots and exponents, blanks, tabs, CR,
/// quotes, non-ASCII, empty cells and lines, wrong cell counts.
fn rough_csv() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        6 => "[0-9]{1,3}".prop_map(String::into_bytes),
        2 => Just(b"-".to_vec()),
        1 => Just(b"+".to_vec()),
        1 => "[0-9]{17,20}".prop_map(String::into_bytes),
        2 => prop::sample::select(vec![
            "-9223372036854775808",
            "999999999999999999",
            "1000000000000000000",
            "9223372036854775807",
            "9223372036854775808",
            "99999999999999999999",
        ])
        .prop_map(|n| n.as_bytes().to_vec()),
        1 => Just(b".".to_vec()),
        1 => Just(b"e".to_vec()),
        2 => "[a-zA-Z]{1,5}".prop_map(String::into_bytes),
        1 => Just(b"true".to_vec()),
        1 => prop::sample::select(vec![&b" "[..], b"\t", b"\r", b"\"", "é".as_bytes(), b"\xff"]).prop_map(<[u8]>::to_vec),
        4 => Just(b",".to_vec()),
        3 => Just(b"\n".to_vec()),
    ];
    let header = prop::sample::select(vec!["ts,a,b", "type,ts,key,price", "ts", "a,ts,type", "ts,a,b,c,d"]);
    (header, prop::collection::vec(piece, 0..80)).prop_map(|(h, body)| {
        let mut text = format!("{h}\n").into_bytes();
        text.extend(body.concat());
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The simple-line path reads exactly what the paths that split
    /// every record read: events, bad rows, fatal errors, positions and
    /// lines, through buffers of any size and with short line limits.
    #[test]
    fn simple_lines_read_as_split_ones(text in rough_csv(), capacity in 1usize..80, max_line in prop_oneof![Just(1usize << 20), 4usize..30]) {
        let slow = read_all(&text, Format::Csv, capacity, max_line, false);
        let fast = read_all(&text, Format::Csv, capacity, max_line, true);
        prop_assert_eq!(fast, slow, "{:?}", String::from_utf8_lossy(&text));
    }
}

/// JSON lines over pieces that hit every way out of the simple-object
/// path: floats, exponents, leading zeros, long and edge integers,
/// escapes, non-ASCII, tabs, nesting, trailing commas and garbage,
/// `ts` and `type` of every kind, repeated and new keys.
fn rough_json() -> impl Strategy<Value = Vec<u8>> {
    let key = prop::sample::select(vec![
        "\"ts\"",
        "\"type\"",
        "\"a\"",
        "\"b\"",
        "\"\"",
        "\"t\\u0073\"",
        "\"é\"",
        "\"k1\"",
        "\"k2\"",
        "\"a_long_key_name\"",
        "\"a_longer_key_name_yet\"",
    ]);
    let value = prop::sample::select(vec![
        "0",
        "-0",
        "7",
        "-12",
        "007",
        "1.5",
        "1e3",
        "-",
        "999999999999999999",
        "-999999999999999999",
        "1000000000000000000",
        "9223372036854775808",
        "-9223372036854775809",
        "\"x\"",
        "\"\"",
        "\"a\\\"b\"",
        "\"é\"",
        "\"\t\"",
        // Longer than a word, a stop past the first eight bytes.
        "\"abcdefghijkl\"",
        "\"abcdefghij\\\"k\"",
        "\"abcdefghijé\"",
        "\"abcdefghij\u{7f}\"",
        "true",
        "false",
        "null",
        "nul",
        "[1]",
        "{}",
        "tru",
    ]);
    let pair = (key, prop::sample::select(vec!["", " "]), value).prop_map(|(k, sp, v)| format!("{k}:{sp}{v}"));
    let line = (prop::collection::vec(pair, 0..5), prop::sample::select(vec!["", ",", "}", " x", "\t"]), any::<bool>())
        .prop_map(|(pairs, tail, braces)| {
            let body = pairs.join(if braces { "," } else { " , " });
            format!("{{{body}}}{tail}")
        });
    prop::collection::vec(prop_oneof![8 => line, 1 => Just(String::new()), 1 => Just("[]".to_owned())], 0..8)
        .prop_map(|lines| lines.join("\n").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The simple-object path reads exactly what `serde_json` reads:
    /// events, bad rows, positions, and the fields registered, through
    /// buffers of any size (a line whole in the buffer is read where it
    /// lies, another is copied out first) and with short line limits.
    #[test]
    fn simple_objects_read_as_serde_does(
        text in rough_json(),
        capacity in prop_oneof![Just(1usize << 16), 1usize..80],
        max_line in prop_oneof![Just(1usize << 20), 4usize..40],
    ) {
        let slow = read_all(&text, Format::Jsonl, capacity, max_line, false);
        let fast = read_all(&text, Format::Jsonl, capacity, max_line, true);
        prop_assert_eq!(fast, slow, "{}", String::from_utf8_lossy(&text));
    }
}

proptest! {
    /// `string_stops` finds the first byte that ends a simple string,
    /// as a scan byte by byte does (mostly plain bytes, so that words
    /// without a stop and stops at every place both come up).
    #[test]
    fn string_stops_find_the_first_stop(
        bytes in proptest::array::uniform8(prop_oneof![
            6 => 0x20u8..0x7f,
            1 => any::<u8>(),
            // Each side of every edge.
            2 => prop::sample::select(vec![0x00u8, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xff]),
        ])
    ) {
        let want = bytes.iter().position(|&b| b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b));
        let stops = string_stops(u64::from_le_bytes(bytes));
        let got = (stops != 0).then(|| stops.trailing_zeros() as usize / 8);
        prop_assert_eq!(got, want, "{:?}", bytes);
    }
}

/// Every byte value, at every place of a word of plain bytes, is a stop
/// exactly when a byte-by-byte scan says so.
#[test]
fn string_stops_know_every_byte() {
    for b in 0..=255u8 {
        let stop = b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b);
        for place in 0..8 {
            let mut bytes = *b"abcdefgh";
            bytes[place] = b;
            let stops = string_stops(u64::from_le_bytes(bytes));
            let got = (stops != 0).then(|| stops.trailing_zeros() as usize / 8);
            assert_eq!(got, stop.then_some(place), "byte {b:#04x} at {place}");
        }
    }
}

/// A key remembered at its place in the line before is looked up again
/// when another key takes that place, and forgotten when the fields
/// kept change (the last line has its keys where the one before had).
#[test]
fn keys_remembered_by_place_follow_keys_and_kept_fields() {
    let text = b"{\"ts\":1,\"a\":1,\"b\":2}\n{\"ts\":2,\"b\":3,\"a\":4}\n{\"ts\":3,\"b\":6,\"a\":5}\n";
    let mut r = Reader::new(&text[..], "k.jsonl", Format::Jsonl).unwrap();
    let mut e = Event::default();
    let mut next = |r: &mut Reader<&[u8]>| {
        assert!(r.next_event(&mut e).unwrap());
        let field = |name: &str| e.get(r.schema().lookup(name).unwrap());
        (field("a"), field("b"))
    };
    assert_eq!(next(&mut r), (Value::Int(1), Value::Int(2)));
    assert_eq!(next(&mut r), (Value::Int(4), Value::Int(3)));
    let b = r.schema().lookup("b").unwrap();
    r.keep_fields(&[b]);
    assert_eq!(next(&mut r), (Value::Null, Value::Int(6)));
}

/// A line that lies whole in the buffer is read where it lies: no line
/// is copied out.
#[test]
fn simple_objects_are_read_in_place() {
    let text = b"{\"ts\":1,\"a\":1}\n{\"ts\":2,\"a\":2}\n{\"ts\":3,\"a\":3}\n";
    let mut r = Reader::new(&text[..], "p.jsonl", Format::Jsonl).unwrap();
    let mut e = Event::default();
    for ts in 1..=3 {
        assert!(r.next_event(&mut e).unwrap());
        assert_eq!((e.ts, e.row), (ts, ts as u64 - 1));
    }
    assert_eq!(r.position().byte, text.len() as u64);
    let Inner::Jsonl(json) = &r.inner else { unreachable!() };
    assert!(json.buf.is_empty());
}

/// A read error met by an in-place path (a simple line, a simple
/// object) is reported, even by a source that reports it only once (and
/// then ends).
#[test]
fn a_read_error_before_a_line_in_place_is_reported() {
    struct FailsOnce(Vec<io::Result<&'static [u8]>>);
    impl Read for FailsOnce {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.pop() {
                Some(Ok(b)) => {
                    buf[..b.len()].copy_from_slice(b);
                    Ok(b.len())
                }
                Some(Err(e)) => Err(e),
                None => Ok(0),
            }
        }
    }
    let parts = vec![Err(io::Error::other("cable out")), Ok(&b"{\"ts\":1}\n{\"ts\":2}\n"[..])];
    let mut r = Reader::new(io::BufReader::new(FailsOnce(parts)), "o.jsonl", Format::Jsonl).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v[0].is_ok() && v[1].is_ok());
    assert_eq!(v[2].as_ref().unwrap_err().to_string(), "o.jsonl:3: read error: cable out");

    let parts = vec![Err(io::Error::other("cable out")), Ok(&b"ts,a\n1,2\n3,4\n"[..])];
    let mut r = Reader::new(io::BufReader::new(FailsOnce(parts)), "o.csv", Format::Csv).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v[0].is_ok() && v[1].is_ok());
    assert_eq!(v[2].as_ref().unwrap_err().to_string(), "o.csv:4: read error: cable out");
}

/// The simple-object path takes the lines it is for.
#[test]
fn simple_objects_take_the_simple_path() {
    let mut r = Reader::new(&b""[..], "s.jsonl", Format::Jsonl).unwrap();
    let Inner::Jsonl(json) = &mut r.inner else { unreachable!() };
    let mut fields = Vec::new();
    let mut ctx = RowCtx::new(&mut r.schema, &mut fields, &mut json.keys, true, &mut r.strings, b"", r.default_ty);
    let line = br#"{"type": "Tick", "ts":5,"k":-7 , "s":"x","b":true,"n":null}"#;
    assert_eq!(simple_object(line, &mut ctx), Some(()));
    assert_eq!((ctx.ts, ctx.ty.map(|t| t.as_str())), (Some(5), Some("Tick")));
    assert_eq!(ctx.fields[..], [Value::Int(-7), Value::str("x"), Value::Bool(true)]);
    for other in
        [&br#"{"ts":1.5}"#[..], br#"{"ts":1,"a":01}"#, br#"{"ts":1,"a":"\n"}"#, br#"{"ts":1,}"#, br#"{"ts":"1"}"#]
    {
        assert_eq!(simple_object(other, &mut ctx), None, "{}", String::from_utf8_lossy(other));
    }
}

/// Integers at and past the edges of what is read without checks, in
/// `ts` and in fields, read alike on both paths.
#[test]
fn simple_lines_at_the_integer_edges() {
    let mut text = String::from("ts,a\n");
    for n in ["999999999999999999", "1000000000000000000", "9223372036854775807", "9223372036854775808"] {
        for sign in ["", "-"] {
            text.push_str(&format!("{sign}{n},{sign}{n}\n1,{sign}{n}\n"));
        }
    }
    let fast = read_all(text.as_bytes(), Format::Csv, 64, 1 << 20, true);
    assert_eq!(fast, read_all(text.as_bytes(), Format::Csv, 64, 1 << 20, false));
    // Sixteen rows, then the fields line.
    assert_eq!(fast.len(), 17);
    assert_eq!(fast[16], r#"fields ["a"]"#);
    // 18 digits are an int in `ts` and in a field; 19 that fit are an
    // int too (read with checks); past `i64`, `ts` is a bad row and a
    // field a float.
    let field = |i: usize| fast[i].split(" @ ").next().unwrap().to_owned();
    assert_eq!(field(1), "Event 1 1 [Int(999999999999999999)]");
    assert_eq!(field(3), "Event 1 3 [Int(-999999999999999999)]");
    assert_eq!(field(9), "Event 1 9 [Int(9223372036854775807)]");
    assert_eq!(field(13), "Event 1 13 [Float(9.223372036854776e18)]");
    assert!(field(12).starts_with("error") && field(12).contains("64 bits"), "{}", field(12));
}

/// The simple-line path does take the lines it is for (the property
/// above would also hold if it never did).
#[test]
fn simple_lines_take_the_simple_path() {
    let text = b"type,ts,key,price\nTick,1,k,-5\nTick,2,7,1.5\n,3,,x\n";
    let mut r = Reader::new(&text[..], "s.csv", Format::Csv).unwrap();
    let Inner::Csv(csv) = &mut r.inner else { unreachable!() };
    let (cols, names) = (csv.cols.clone(), csv.names.clone());
    let mut e = Event::default();
    let line = |n: usize| text.split_inclusive(|&b| b == b'\n').nth(n).unwrap();
    let ty = r.default_ty;
    for (n, want) in
        [(1, r#"Tick 1 [Str("k"), Int(-5)]"#), (2, "Tick 2 [Int(7), Float(1.5)]"), (3, r#"Event 3 [Null, Str("x")]"#)]
    {
        let end = simple_record(line(n), 1 << 20, &cols, &names, &mut e, &r.schema, &mut r.strings, ty);
        assert_eq!(end, Some(line(n).len() - 1), "line {n}");
        assert_eq!(format!("{} {} {:?}", e.ty.as_str(), e.ts, e.fields), want, "line {n}");
    }
    for other in
        [&b"Tick, 1,k,5\n"[..], b"Tick,1,k\n", b"Tick,1,k,5,6\n", b"Tick,1.0,k,5\n", b"Tick,1,\"k\",5\n", b"Tick,1,k,5"]
    {
        let end = simple_record(other, 1 << 20, &cols, &names, &mut e, &r.schema, &mut r.strings, ty);
        assert_eq!(end, None, "{}", String::from_utf8_lossy(other));
    }
}

#[derive(Clone, Debug)]
enum Cell {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Null,
}

fn cell_strategy() -> impl Strategy<Value = Cell> {
    prop_oneof![
        any::<i64>().prop_map(Cell::Int),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Cell::Float),
        (-1e6f64..1e6).prop_map(Cell::Float),
        "s[a-z ,\"\n'é]{0,12}x".prop_map(Cell::Str),
        any::<bool>().prop_map(Cell::Bool),
        Just(Cell::Null),
    ]
}

fn table_strategy() -> impl Strategy<Value = (usize, bool, Vec<(i64, Vec<Cell>)>)> {
    (1usize..5, any::<bool>()).prop_flat_map(|(cols, typed)| {
        let row = (any::<i64>(), prop::collection::vec(cell_strategy(), cols));
        (Just(cols), Just(typed), prop::collection::vec(row, 0..20))
    })
}

proptest! {
    #[test]
    fn csv_tables_round_trip((cols, typed, rows) in table_strategy()) {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let mut header: Vec<String> = (0..cols).map(|c| format!("c{c}")).collect();
        header.insert(0, "ts".to_owned());
        if typed {
            header.push("type".to_owned());
        }
        w.write_record(&header).unwrap();
        for (i, (ts, cells)) in rows.iter().enumerate() {
            let mut rec = vec![ts.to_string()];
            for c in cells {
                rec.push(match c {
                    Cell::Int(i) => i.to_string(),
                    Cell::Float(f) => format!("{f:?}"),
                    Cell::Str(s) => s.clone(),
                    Cell::Bool(b) => b.to_string(),
                    Cell::Null => String::new(),
                });
            }
            if typed {
                rec.push(format!("T{}", i % 2));
            }
            w.write_record(&rec).unwrap();
        }
        let bytes = w.into_inner().unwrap();
        let mut r = Reader::new(bytes.as_slice(), "p.csv", Format::Csv).unwrap();
        prop_assert_eq!(r.schema().is_complete(), !typed);
        let mut e = Event::default();
        for (i, (ts, cells)) in rows.iter().enumerate() {
            prop_assert_eq!(r.next_event(&mut e), Ok(true));
            prop_assert_eq!(e.row, i as u64);
            prop_assert_eq!(e.ts, *ts);
            let ty = if typed { format!("T{}", i % 2) } else { "Event".to_owned() };
            prop_assert_eq!(e.ty.as_str(), ty.as_str());
            prop_assert_eq!(e.fields.len(), cols);
            for (c, cell) in cells.iter().enumerate() {
                let want = match cell {
                    Cell::Int(i) => Value::Int(*i),
                    Cell::Float(f) => Value::Float(*f),
                    Cell::Str(s) => Value::str(s),
                    Cell::Bool(b) => Value::Bool(*b),
                    Cell::Null => Value::Null,
                };
                prop_assert_eq!(e.fields[c], want);
            }
        }
        prop_assert_eq!(r.next_event(&mut e), Ok(false));
        prop_assert_eq!(r.rows(), rows.len() as u64);
    }
}
