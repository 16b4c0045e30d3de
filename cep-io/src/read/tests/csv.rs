//! CSV: the header, cell typing, bad rows, quotes, limits, reopening, the string cache.

use super::*;

#[test]
fn integer_cells_are_typed_and_parsed_in_one_pass() {
    let cells: &[&[u8]] = &[
        b"0",
        b"7",
        b"-7",
        b"+7",
        b"-",
        b"+",
        b"",
        b"12a",
        b"1.5",
        b"999999999999999999",
        b"-999999999999999999",
        b"9223372036854775807",
        b"-9223372036854775808",
        b"9223372036854775808",
        b"-9223372036854775809",
        b"00000000000000000000000001",
        b"00012",
        b" 1",
        b"1e3",
    ];
    for &c in cells {
        let text = std::str::from_utf8(c).unwrap();
        let literal = text.strip_prefix(['+', '-']).unwrap_or(text);
        // Against the standard library's parse, for integer literals.
        if !literal.is_empty() && literal.bytes().all(|b| b.is_ascii_digit()) {
            assert_eq!(classify(c), Lexeme::Int(text.parse::<i64>().ok()), "{text:?}");
        } else {
            assert!(!matches!(classify(c), Lexeme::Int(_)), "{text:?}");
        }
    }
}

#[test]
fn crlf_rows_are_numbered_like_lf_rows() {
    for (text, nl) in [("ts,a\r\n1,x\r\n\r\n2,y\r\n", 2), ("ts,a\n1,x\n\n2,y\n", 1)] {
        let mut r = Reader::new(text.as_bytes(), "t", Format::Csv).unwrap();
        let mut e = Event::default();
        assert!(r.next_event(&mut e).unwrap());
        assert_eq!((e.row, r.last_line()), (0, 2));
        // After the row's newline (the `\n` of a `\r\n` too).
        assert_eq!(r.position(), InputPosition { byte: 7 + 2 * nl, row: 1, line: 3 });
        assert!(r.next_event(&mut e).unwrap());
        assert_eq!((e.row, e.fields[0]), (1, Value::str("y")));
        assert!(!r.next_event(&mut e).unwrap());
    }
}

/// Reads `text` row by row; after each row, a reader reopened at that
/// position over the rest of the bytes yields exactly what the first
/// reader yields from there: the same events, row numbers, lines and
/// errors.
fn reopen_matches(text: &str, file: &str, format: Format) {
    let mut first = Reader::new(text.as_bytes(), file, format).unwrap();
    let mut rest_of: Vec<(InputPosition, Vec<String>)> = Vec::new();
    let mut seen = Vec::new();
    let mut e = Event::default();
    loop {
        let at = first.position();
        rest_of.push((at, Vec::new()));
        let item = match first.next_event(&mut e) {
            Ok(true) => format!("ok row {} ts {} {:?} line {}", e.row, e.ts, e.fields, first.last_line()),
            Ok(false) => break,
            Err(err) => err.to_string(),
        };
        seen.push(item);
    }
    for (k, (at, _)) in rest_of.iter().enumerate() {
        let mut again = first.reopen(&text.as_bytes()[at.byte as usize..], *at);
        let mut got = Vec::new();
        loop {
            match again.next_event(&mut e) {
                Ok(true) => got.push(format!("ok row {} ts {} {:?} line {}", e.row, e.ts, e.fields, again.last_line())),
                Ok(false) => break,
                Err(err) => got.push(err.to_string()),
            }
        }
        assert_eq!(got, seen[k..], "reopened at {at:?}");
    }
}

#[test]
fn reopen_at_every_position_csv() {
    let text = "ts,key,price\n1,a,10\n\n2,b,\"1\n1\"\n3,c\n4,d,12\r\n5,e,13\n";
    reopen_matches(text, "t.csv", Format::Csv);
}

#[test]
fn reopen_at_every_position_jsonl() {
    let text = "{\"ts\":1,\"k\":1}\n\n{\"ts\":2,\"k\":2}\n{\"ts\":\n{\"ts\":4,\"k\":\"x\"}\n";
    reopen_matches(text, "t.jsonl", Format::Jsonl);
}

/// A byte order mark before the first line is ignored in JSON lines as
/// in CSV (it was invalid JSON at column 1); anywhere else it is a
/// character like any other.
#[test]
fn json_lines_may_start_with_a_bom() {
    let text = "\u{feff}{\"ts\":1,\"x\":2}\n{\"ts\":2,\"x\":3}\n";
    let mut r = json_reader(text);
    let mut e = Event::default();
    assert_eq!(r.next_event(&mut e), Ok(true));
    assert_eq!((e.row, e.ts, r.last_line(), r.schema().lookup("x")), (0, 1, 1, Some(0)));
    assert_eq!(e.fields, [Value::Int(2)]);
    assert_eq!(r.position(), InputPosition { byte: 18, row: 1, line: 2 });
    assert_eq!(r.next_event(&mut e), Ok(true));
    assert_eq!(r.next_event(&mut e), Ok(false));
    reopen_matches(text, "t.jsonl", Format::Jsonl);

    // A line holding only the mark is blank.
    let mut r = json_reader("\u{feff}\n{\"ts\":5}\n");
    assert_eq!(r.next_event(&mut e), Ok(true));
    assert_eq!((e.row, e.ts, r.last_line()), (0, 5, 2));

    // Only at the start of the input.
    let mut r = json_reader("{\"ts\":1}\n\u{feff}{\"ts\":2}\n");
    assert_eq!(r.next_event(&mut e), Ok(true));
    let err = r.next_event(&mut e).unwrap_err();
    assert_eq!((err.line, err.row, err.kind), (2, Some(1), ReadErrorKind::BadRow));
    assert!(err.message.starts_with("invalid JSON"), "{err}");
    // A reader reopened after the first line is not at the start.
    let text = "{\"ts\":1}\n\u{feff}{\"ts\":2}\n";
    let at = InputPosition { byte: 9, row: 1, line: 2 };
    let mut rest = json_reader("").reopen(&text.as_bytes()[9..], at);
    assert!(rest.next_event(&mut e).unwrap_err().message.starts_with("invalid JSON"));
}

#[test]
fn the_format_sniffer_looks_past_a_bom() {
    assert_eq!(Format::sniff("\u{feff}{\"ts\":0}\n".as_bytes()), Format::Jsonl);
    assert_eq!(Format::sniff("\u{feff} \n {\"ts\":0}\n".as_bytes()), Format::Jsonl);
    assert_eq!(Format::sniff("\u{feff}ts,x\n".as_bytes()), Format::Csv);
    assert_eq!(Format::sniff(b"\n\t{"), Format::Jsonl);
    // Half a mark is not one.
    assert_eq!(Format::sniff(b"\xEF\xBB{"), Format::Csv);
    assert_eq!(Format::sniff(b""), Format::Csv);
}

/// JSON lines read as CSV (a stream whose format was guessed wrong)
/// fail on the header with a hint, and a wide header's message lists
/// a few names, not all.
#[test]
fn a_header_without_ts_is_shown_short() {
    let e = fatal("\u{feff}{\"ts\":0,\"x\":1}\n");
    assert_eq!(
        e.message,
        "the header has no `ts` column (found `{\"ts\":0`, `x:1}`); the input looks like JSON lines: \
         give it the `.jsonl` extension or `--format jsonl`"
    );
    let wide: Vec<String> = (0..1000).map(|i| format!("c{i}")).collect();
    let e = fatal(&format!("{}\n", wide.join(",")));
    assert_eq!(
        e.message,
        "the header has no `ts` column (found `c0`, `c1`, `c2`, `c3`, `c4`, `c5`, `c6`, `c7`, and 992 more)"
    );
}

#[test]
fn csv_fields_not_kept_are_null_but_still_checked() {
    let text = "ts,a,b,c\n1,x,y,2\n2,x,\u{e9}t\u{e9},3\n3,x,\"q,r\",4\n4,x,5\n";
    let mut bytes = text.as_bytes().to_vec();
    // Row 4: invalid UTF-8 in `b`, which is not kept.
    bytes.extend_from_slice(b"5,x,\xff,6\n6,z,y,7\n");
    let mut r = Reader::new(&bytes[..], "t.csv", Format::Csv).unwrap();
    let (a, c) = (r.schema().lookup("a").unwrap(), r.schema().lookup("c").unwrap());
    r.keep_fields(&[a, c]);
    let x = Value::str("x");
    let rows = rows_of(&mut r);
    assert_eq!(rows[0], Ok(vec![x, Value::Null, Value::Int(2)]));
    assert_eq!(rows[1], Ok(vec![x, Value::Null, Value::Int(3)]));
    assert_eq!(rows[2], Ok(vec![x, Value::Null, Value::Int(4)]));
    assert_eq!(rows[3], Err("expected 4 cells, found 3".to_owned()));
    assert_eq!(rows[4], Err("invalid UTF-8 in column `b`".to_owned()));
    assert_eq!(rows[5], Ok(vec![Value::str("z"), Value::Null, Value::Int(7)]));
    assert_eq!(rows.len(), 6);
}

#[test]
fn json_fields_not_kept_are_dropped_but_still_checked() {
    let text = concat!(
        r#"{"ts":1,"a":"x","b":"y"}"#,
        "\n",
        r#"{"ts":2,"b":[1],"a":"x"}"#,
        "\n",
        r#"{"ts":3,"c":4,"new":"n","b":"y"}"#,
        "\n"
    );
    let mut r = json_reader(text);
    // `c` is a query's field, not seen yet.
    let c = r.schema_mut().field("c");
    let mut e = Event::default();
    assert!(r.next_event(&mut e).unwrap());
    let (a, b) = (r.schema().lookup("a").unwrap(), r.schema().lookup("b").unwrap());
    r.keep_fields(&[a, c]);
    let rows = rows_of(&mut r);
    assert!(rows[0].as_ref().is_err_and(|m| m.contains("nested")), "{rows:?}");
    let third = rows[1].as_ref().unwrap();
    assert_eq!((third.get(a as usize), third.get(b as usize)), (None, None));
    assert_eq!(third.get(c as usize), Some(&Value::Int(4)));
    // A new key is neither kept nor registered.
    assert_eq!(r.schema().lookup("new"), None);
}

#[test]
fn a_reopened_reader_keeps_the_same_fields() {
    for (text, format) in [
        ("ts,a,b\n1,x,y\n2,x,y\n", Format::Csv),
        ("{\"ts\":1,\"a\":\"x\",\"b\":\"y\"}\n{\"ts\":2,\"a\":\"x\",\"b\":\"y\"}\n", Format::Jsonl),
    ] {
        let mut r = Reader::new(text.as_bytes(), "t", format).unwrap();
        let mut e = Event::default();
        assert!(r.next_event(&mut e).unwrap());
        let (a, b) = (r.schema().lookup("a").unwrap(), r.schema().lookup("b").unwrap());
        r.keep_fields(&[b]);
        let at = r.position();
        let mut rest = r.reopen(&text.as_bytes()[at.byte as usize..], at);
        rest.fix_fields();
        assert!(rest.next_event(&mut e).unwrap());
        assert_eq!((e.get(a), e.get(b)), (Value::Null, Value::str("y")), "{format:?}");
    }
}

#[test]
fn formats_by_name_and_extension() {
    assert_eq!(Format::from_path("a/b/ticks.csv"), Some(Format::Csv));
    assert_eq!(Format::from_path("ticks.CSV"), Some(Format::Csv));
    assert_eq!(Format::from_path("x.jsonl"), Some(Format::Jsonl));
    assert_eq!(Format::from_path("x.json"), Some(Format::Jsonl));
    assert_eq!(Format::from_path("x.ndjson"), Some(Format::Jsonl));
    assert_eq!(Format::from_path("x.txt"), None);
    assert_eq!(Format::from_path("csv"), None);
    assert_eq!(Format::from_path("-"), None);
    assert_eq!(Format::parse("csv"), Some(Format::Csv));
    assert_eq!(Format::parse("jsonl"), Some(Format::Jsonl));
    assert_eq!(Format::parse("json"), None);
    assert_eq!(Format::Jsonl.to_string(), "jsonl");
}

#[test]
fn empty_csv_is_fatal() {
    let e = fatal("");
    assert_eq!(e.to_string(), "t.csv:1: empty input: expected a CSV header with a `ts` column");
    fatal("\n\n");
}

#[test]
fn header_only_gives_no_events() {
    let mut r = csv_reader("ts,a,b\n");
    let mut e = Event::default();
    assert_eq!(r.next_event(&mut e), Ok(false));
    assert_eq!(r.next_event(&mut e), Ok(false));
    assert_eq!(r.rows(), 0);
    let mut r = csv_reader("ts,a,b");
    assert_eq!(r.next_event(&mut e), Ok(false));
}

#[test]
fn header_needs_ts_and_distinct_names() {
    let e = fatal("type,a,b\nX,1,2\n");
    assert_eq!(e.to_string(), "t.csv:1: the header has no `ts` column (found `type`, `a`, `b`)");
    let e = fatal("ts,a,a\n");
    assert_eq!(e.to_string(), "t.csv:1: duplicate column `a` in the header");
    let e = fatal("ts, a ,a\n");
    assert_eq!(e.message, "duplicate column `a` in the header");
    let e = fatal("ts,,b\n");
    assert_eq!(e.message, "column 2 of the header has an empty name");
    let e = Reader::new(&b"ts,\xFF\n"[..], "t.csv", Format::Csv).unwrap_err();
    assert_eq!(e.message, "invalid UTF-8 in the name of column 2");
}

/// A wide header costs about one name comparison per column, not one
/// per pair of columns (a scan of the names before each column took a
/// header of 100,000 columns 14 s): counted, so that a regression fails
/// however fast the machine.
#[test]
fn a_wide_header_compares_each_name_about_once() {
    let columns = 10_000;
    let mut text = String::from("ts");
    for i in 0..columns {
        text.push_str(&format!(",c{i}"));
    }
    text.push('\n');
    NAME_COMPARES.with(|n| n.set(0));
    let r = csv_reader(&text);
    let compares = NAME_COMPARES.with(|n| n.get());
    assert_eq!(r.schema().field_count(), columns);
    assert_eq!(r.schema().lookup("c9999"), Some(9999));
    // A scan per column would be 50,000,000.
    assert!(compares <= columns as u64, "{compares} name comparisons for {columns} columns");
    // A duplicate far from its first is still found.
    text.insert_str(text.len() - 1, ",c17");
    assert_eq!(fatal(&text).message, "duplicate column `c17` in the header");
}

#[test]
fn header_registers_fields_in_column_order() {
    let r = csv_reader("b,ts,type,a\n");
    let s = r.schema();
    assert_eq!(s.field_names().collect::<Vec<_>>(), ["b", "a"]);
    assert!(s.fields_closed());
    assert!(!s.is_complete());
    assert!(s.type_names().is_empty());
    // Surrounding whitespace and a BOM are not part of names.
    let r = csv_reader("\u{feff} ts , price \n");
    assert_eq!(r.schema().lookup("price"), Some(0));
}

#[test]
fn csv_without_type_column_is_complete_with_type_event() {
    let mut r = csv_reader("ts,price\n5,1.5\n");
    assert!(r.schema().is_complete());
    assert_eq!(r.schema().type_names(), ["Event"]);
    let mut e = Event { ty: Sym::new("Other"), ..Event::default() };
    assert_eq!(r.next_event(&mut e), Ok(true));
    assert_eq!(e.ty.as_str(), DEFAULT_TYPE);
    assert_eq!(e.ts, 5);
    assert_eq!(e.fields, [Value::Float(1.5)]);
    let info = r.schema().type_info(Sym::new("Event")).unwrap();
    assert_eq!(info.count, 1);
    assert!(info.kinds_of(0).contains(Kind::Float));
}

#[test]
fn type_column_and_empty_type() {
    let mut r = csv_reader("type,ts,x\nA,1,2\n,2,3\n  B ,3,\n");
    let v: Vec<_> = all(&mut r).into_iter().map(Result::unwrap).collect();
    let tys: Vec<_> = v.iter().map(|e| e.ty.as_str()).collect();
    assert_eq!(tys, ["A", "Event", "B"]);
    assert_eq!(v[2].fields, [Value::Null]);
    assert_eq!(r.schema().type_names(), ["A", "B", "Event"]);
    assert!(!r.schema().is_complete());
}

#[test]
fn cells_are_typed() {
    assert_eq!(cell("12"), Value::Int(12));
    assert_eq!(cell("+12"), Value::Int(12));
    assert_eq!(cell("-12"), Value::Int(-12));
    assert_eq!(cell("007"), Value::Int(7));
    assert_eq!(cell(" 12 "), Value::Int(12));
    assert_eq!(cell("9223372036854775807"), Value::Int(i64::MAX));
    assert_eq!(cell("-9223372036854775808"), Value::Int(i64::MIN));
    assert_eq!(cell("1.5"), Value::Float(1.5));
    assert_eq!(cell("-.5"), Value::Float(-0.5));
    assert_eq!(cell("1."), Value::Float(1.0));
    assert_eq!(cell("1e3"), Value::Float(1000.0));
    assert_eq!(cell("+2.5E-3"), Value::Float(0.0025));
    assert_eq!(cell("1e-999"), Value::Float(0.0));
    assert_eq!(cell("1.7976931348623157e308"), Value::Float(f64::MAX));
    assert_eq!(cell("true"), Value::Bool(true));
    assert_eq!(cell("false"), Value::Bool(false));
    assert_eq!(cell("True"), Value::str("True"));
    assert_eq!(cell("IBM"), Value::str("IBM"));
    assert_eq!(cell(" two words "), Value::str("two words"));
    assert_eq!(cell("\" quoted \""), Value::str("quoted"));
    for s in ["1e", "e5", ".", "-", "+", "1.2.3", "0x10", "1_000", "1e5x", "--1", ".e1", "infinite", "nana"] {
        assert_eq!(cell(s), Value::str(s), "{s}");
    }
    // Words Rust's `f64::from_str` takes are not float literals.
    for s in ["nan", "NaN", "NAN", "+nan", "-NaN", "inf", "INF", "-inf", "+Inf", "infinity", "Infinity", "-INFINITY"] {
        assert_eq!(cell(s), Value::str(s), "{s}");
    }
    assert_eq!(cell(""), Value::Null);
    assert_eq!(cell("   "), Value::Null);
    assert_eq!(cell("\"\""), Value::Null);
    assert_eq!(cell("héllo"), Value::str("héllo"));
}

/// An integer literal that does not fit an `i64` is a float literal:
/// the nearest `f64`, never a bad row (LANGUAGE.md §1 makes no bad row
/// of a cell's value).
#[test]
fn integers_beyond_i64_are_the_nearest_float() {
    assert_eq!(cell("9223372036854775808"), Value::Float(9_223_372_036_854_775_808.0));
    assert_eq!(cell("-9223372036854775809"), Value::Float(-9_223_372_036_854_775_808.0));
    assert_eq!(cell("+99999999999999999999"), Value::Float(1e20));
    assert_eq!(cell("123456789012345678901234567890"), Value::Float(1.2345678901234568e29));
    // The edges of `i64` stay ints.
    assert_eq!(cell("9223372036854775807"), Value::Int(i64::MAX));
    assert_eq!(cell("-9223372036854775808"), Value::Int(i64::MIN));
    // Through `parse_cell` too (the level file's cells).
    assert_eq!(parse_cell("18446744073709551616"), Value::Float(18_446_744_073_709_551_616.0));
}

/// A float literal, or an integer literal, beyond the `f64` range is a
/// string of its text (values are finite floats); the words `nan` and
/// `inf` are strings; none of them is a bad row, and the rows after
/// them are read.
#[test]
fn non_finite_numbers_are_strings() {
    let huge_int = format!("1{}", "0".repeat(400));
    let text = format!("ts,price\n0,NaN\n1,inf\n2,-Infinity\n3,+nan\n4,1e999\n5,-1e400\n6,{huge_int}\n7,7\n");
    let mut r = csv_reader(&text);
    let v: Vec<Event> = all(&mut r).into_iter().map(Result::unwrap).collect();
    let got: Vec<Value> = v.iter().map(|e| e.fields[0]).collect();
    let want = ["NaN", "inf", "-Infinity", "+nan", "1e999", "-1e400", &huge_int].map(Value::str);
    assert_eq!(got[..7], want);
    assert_eq!(got[7], Value::Int(7));
    assert_eq!(v.iter().map(|e| e.row).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    assert_eq!(parse_cell(" -1e400 "), Value::str("-1e400"));
    assert_eq!(parse_cell("Infinity"), Value::str("Infinity"));
    // The largest finite values are floats.
    assert_eq!(cell("-1.7976931348623157e308"), Value::Float(f64::MIN));
}

/// Every text of the float literal's form is read by Rust's float
/// parser (`lexeme_into` relies on it), and Rust's parser is never
/// asked about anything else.
#[test]
fn float_literals_are_rust_floats() {
    let parts = ["", "0", "7", "12", "000", "99999999999999999999"];
    let signs = ["", "+", "-"];
    let exps = ["", "e0", "E5", "e+3", "e-3", "e400", "E-400", "e", "e+"];
    for sign in signs {
        for int in parts {
            for dot in ["", "."] {
                for frac in parts {
                    for exp in exps {
                        let text = format!("{sign}{int}{dot}{frac}{exp}");
                        let b = text.as_bytes();
                        let rust = text.parse::<f64>();
                        match classify(b) {
                            Lexeme::Int(_) | Lexeme::Float => assert!(rust.is_ok(), "{text:?}"),
                            Lexeme::Other => {
                                // Digits with a dot or an exponent and
                                // nothing else are never `Other`.
                                assert!(rust.is_err() || text.is_empty(), "{text:?}: {rust:?}");
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `ts` stays an integer: a word, a float literal or an integer beyond
/// `i64` is a bad row there.
#[test]
fn non_integer_ts_words_are_bad_rows() {
    for ts in ["nan", "inf", "-Infinity", "1e400", "1.0"] {
        assert_eq!(csv_err(&format!("ts,x\n{ts},1\n")), format!("t.csv:2: `ts` is not an integer: `{ts}`"));
    }
    assert_eq!(csv_err("ts,x\n9223372036854775808,1\n"), "t.csv:2: `ts` `9223372036854775808` does not fit in 64 bits");
}

/// A quoted cell still open at the end of the input ends the last
/// record there: that record is a bad row on the line it starts on,
/// naming its column, not an event whose cell holds the rows after it.
/// The rows before it are read.
#[test]
fn an_unterminated_quote_at_the_end_is_a_bad_row() {
    let text = "ts,type,s\n0,A,x\n1,A,\"unterminated\n2,B,y\n";
    let v = all(&mut csv_reader(text));
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].as_ref().unwrap().fields, [Value::str("x")]);
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.csv:3: unterminated quoted field in column `s` (no closing quote before the end of the input)"
    );
    assert_eq!((e.row, e.line, e.kind), (Some(1), 3, ReadErrorKind::BadRow));
    let mut r = csv_reader(text);
    let mut ev = Event::default();
    assert_eq!(r.next_event(&mut ev), Ok(true));
    assert!(r.next_event(&mut ev).is_err());
    // Skipped, the input is at its end: the row is counted, nothing more.
    assert_eq!(r.next_event(&mut ev), Ok(false));
    assert_eq!(r.rows(), 2);

    // In the first cell, after a closed quoted cell with a newline and
    // doubled quotes, at the very end, without a newline after it, with
    // an open quote opened by a doubled quote, through small buffers.
    for (text, line, column) in [
        ("ts,s\n\"1\n,0\n", 2, "`ts`"),
        ("ts,s\n\n1,\"a\nb\"\"c\"\n\n2,\"", 6, "`s`"),
        ("ts,s\n1,\"abc", 2, "`s`"),
        ("ts,s\n1,\"a\"\"", 2, "`s`"),
        ("ts,s\r\n1,\"\r", 2, "`s`"),
    ] {
        for capacity in [1, 3, 64] {
            let src = io::BufReader::with_capacity(capacity, text.as_bytes());
            let v = all(&mut Reader::new(src, "t.csv", Format::Csv).unwrap());
            let e = v.last().unwrap().as_ref().unwrap_err();
            assert_eq!(e.line, line, "{text:?}");
            assert_eq!(e.kind, ReadErrorKind::BadRow, "{text:?}");
            assert!(e.message.starts_with(&format!("unterminated quoted field in column {column}")), "{e}");
            assert!(v[..v.len() - 1].iter().all(Result::is_ok), "{text:?}: {v:?}");
        }
    }
    // Beyond the header's columns.
    assert_eq!(
        csv_err("ts,s\n1,x,\"y\n"),
        "t.csv:2: unterminated quoted field in cell 3 of 2 columns (no closing quote before the end of the input)"
    );
}

/// Quoted cells closed before the end keep working, at the end of the
/// input too: commas, newlines and doubled quotes, a quote inside an
/// unquoted cell, text after a closing quote.
#[test]
fn closed_quotes_at_the_end_are_cells() {
    for (text, want) in [
        ("ts,s\n1,\"a,\nb\"\"c\"", "a,\nb\"c"),
        ("ts,s\n1,\"a\"\"\"\n", "a\""),
        ("ts,s\n1,x\"y", "x\"y"),
        ("ts,s\n1,\"ab\"cd", "abcd"),
        ("ts,s\n1,\"\"\"\"", "\""),
    ] {
        assert_eq!(one_csv(text).unwrap().fields, [Value::str(want)], "{text:?}");
    }
}

/// An unterminated quote in the header is fatal: the whole input would
/// be the header.
#[test]
fn an_unterminated_quote_in_the_header_is_fatal() {
    let e = fatal("ts,\"type\n0,A\n");
    assert_eq!(e.to_string(), "t.csv:1: unterminated quoted field in column 2 of the header");
}

#[test]
fn bad_ts_is_a_bad_row() {
    assert_eq!(csv_err("ts,x\nabc,1\n"), "t.csv:2: `ts` is not an integer: `abc`");
    assert_eq!(csv_err("ts,x\n1.0,1\n"), "t.csv:2: `ts` is not an integer: `1.0`");
    assert_eq!(csv_err("ts,x\ntrue,1\n"), "t.csv:2: `ts` is not an integer: `true`");
    assert_eq!(
        csv_err("ts,x\n99999999999999999999,1\n"),
        "t.csv:2: `ts` `99999999999999999999` does not fit in 64 bits"
    );
    assert_eq!(csv_err("ts,x\n,1\n"), "t.csv:2: missing `ts`");
    assert_eq!(csv_err("x,ts\n1,  \n"), "t.csv:2: missing `ts`");
    let e = one_csv("ts,x\n abc ,1\n").unwrap_err();
    assert_eq!((e.row, e.line, e.kind), (Some(0), 2, ReadErrorKind::BadRow));
    assert_eq!(one_csv("ts\n +5 \n").unwrap().ts, 5);
    assert_eq!(one_csv("ts\n-9223372036854775808\n").unwrap().ts, i64::MIN);
}

#[test]
fn ragged_row_then_good_row() {
    let mut r = csv_reader("type,ts,a\nA,1,x\nA,2\nA,3,z\nA,4,w,extra\nA,5,v\n");
    let v = all(&mut r);
    assert_eq!(v.len(), 5);
    assert_eq!(v[0].as_ref().unwrap().row, 0);
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(e.to_string(), "t.csv:3: expected 3 cells, found 2");
    assert_eq!((e.row, e.line, e.kind), (Some(1), 3, ReadErrorKind::BadRow));
    let good = v[2].as_ref().unwrap();
    assert_eq!((good.row, good.ts, good.fields[0]), (2, 3, Value::str("z")));
    assert_eq!(v[3].as_ref().unwrap_err().to_string(), "t.csv:5: expected 3 cells, found 4");
    assert_eq!(v[3].as_ref().unwrap_err().row, Some(3));
    assert_eq!(v[4].as_ref().unwrap().row, 4);
    assert_eq!(r.rows(), 5);
    // Bad rows are not observed.
    assert_eq!(r.schema().type_info(Sym::new("A")).unwrap().count, 3);
}

#[test]
fn quoted_cells_and_physical_lines() {
    let text = "ts,name,note\n1,\"a,b\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",x\n3,\"c\"\n\n4,d,e\n";
    let mut r = csv_reader(text);
    let v = all(&mut r);
    let e0 = v[0].as_ref().unwrap();
    assert_eq!(e0.fields, [Value::str("a,b"), Value::str("say \"hi\"")]);
    assert_eq!(v[1].as_ref().unwrap().fields[0], Value::str("two\nlines"));
    // The row after a two-line cell starts on physical line 5.
    assert_eq!(v[2].as_ref().unwrap_err().to_string(), "t.csv:5: expected 3 cells, found 2");
    // The blank line is skipped and is not a row.
    let last = v[3].as_ref().unwrap();
    assert_eq!((last.row, last.ts), (3, 4));
    assert_eq!(v.len(), 4);
}

/// A bad row after blank lines is reported on its own line (the `csv`
/// crate gave a record the line of the first blank line before it), as
/// in JSON lines.
#[test]
fn a_bad_row_after_blank_lines_is_on_its_own_line() {
    let text = "ts,a\n1,x\n\n\r\n\noops,y\n\n4,z";
    let v = all(&mut csv_reader(text));
    assert_eq!(v[1].as_ref().unwrap_err().to_string(), "t.csv:6: `ts` is not an integer: `oops`");
    assert_eq!(v[2].as_ref().unwrap().row, 2);
    let mut r = csv_reader(text);
    let mut e = Event::default();
    r.next_event(&mut e).unwrap();
    assert!(r.next_event(&mut e).is_err());
    r.next_event(&mut e).unwrap();
    // No newline at the end: the position stays on the last line.
    assert_eq!((r.last_line(), r.position().line, r.position().byte), (8, 8, 24));
}

#[test]
fn invalid_utf8_in_a_cell_is_a_bad_row() {
    let mut r = Reader::new(&b"type,ts,x\nA,1,\xFFab\n\xFE,2,y\nA,3,ok\n"[..], "u.csv", Format::Csv).unwrap();
    let v = all(&mut r);
    assert_eq!(v[0].as_ref().unwrap_err().to_string(), "u.csv:2: invalid UTF-8 in column `x`");
    assert_eq!(v[1].as_ref().unwrap_err().to_string(), "u.csv:3: invalid UTF-8 in column `type`");
    assert_eq!(v[2].as_ref().unwrap().row, 2);
}

#[test]
fn crlf_line_endings() {
    let mut r = csv_reader("ts,x\r\n1,a\r\n2,b\r\n");
    let v: Vec<_> = all(&mut r).into_iter().map(Result::unwrap).collect();
    assert_eq!(v[1].fields, [Value::str("b")]);
    let mut r = json_reader("{\"ts\":1}\r\n\r\n{\"ts\":2}\r\n");
    assert_eq!(all(&mut r).len(), 2);
}

#[test]
fn ten_megabyte_csv_cell() {
    let big = "x".repeat(10 << 20);
    let text = format!("ts,s,n\n1,{big},2\n2,\"{big}\",3\n3,small,4\n");
    let mut r = csv_reader(&text);
    let v: Vec<_> = all(&mut r).into_iter().map(Result::unwrap).collect();
    assert_eq!(v.len(), 3);
    match v[0].fields[0] {
        Value::Str(s) => assert_eq!(s.as_str().len(), 10 << 20),
        other => panic!("{other:?}"),
    }
    assert_eq!(v[1].fields, v[0].fields.iter().copied().take(1).chain([Value::Int(3)]).collect::<Vec<_>>());
    assert_eq!(v[2].fields[1], Value::Int(4));
}

#[test]
fn ten_megabyte_json_line() {
    let big = "y".repeat(10 << 20);
    let text = format!("{{\"ts\":1,\"s\":\"{big}\",\"n\":2}}\n{{\"ts\":2,\"n\":3}}\n");
    let mut r = json_reader(&text);
    let v: Vec<_> = all(&mut r).into_iter().map(Result::unwrap).collect();
    assert_eq!(v.len(), 2);
    match v[0].fields[0] {
        Value::Str(s) => assert_eq!(s.as_str().len(), 10 << 20),
        other => panic!("{other:?}"),
    }
    assert_eq!(v[1].fields, [Value::Null, Value::Int(3)]);
}

#[test]
fn csv_line_over_the_limit_is_a_bad_row() {
    let text = format!("ts,s\n1,{}\n2,{}\n3,c\n", "a".repeat(50), "b".repeat(101));
    let mut r = Reader::with_max_line(text.as_bytes(), "t.csv", Format::Csv, 100).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 3);
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(e.kind, ReadErrorKind::BadRow);
    assert_eq!(e.row, Some(1));
    assert_eq!(e.to_string(), "t.csv:3: line longer than 100 bytes");
    // Reading goes on with the next line: row 2, on line 4.
    let last = v[2].as_ref().unwrap();
    assert_eq!((last.row, last.ts), (2, 3));
    assert_eq!(r.last_line(), 4);
}

#[test]
fn csv_rows_before_a_long_line_are_read() {
    let mut text = String::from("ts,s\n");
    for i in 0..2000 {
        text.push_str(&format!("{i},row\n"));
    }
    text.push_str(&format!("2000,{}\n", "x".repeat(200)));
    let mut r = Reader::with_max_line(text.as_bytes(), "t.csv", Format::Csv, 100).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 2001);
    assert!(v[..2000].iter().all(Result::is_ok));
    assert_eq!(v[2000].as_ref().unwrap_err().to_string(), "t.csv:2002: line longer than 100 bytes");
}

#[test]
fn csv_line_over_64_mib_is_a_bad_row() {
    let head = b"ts,s\n1,a\n2,".to_vec();
    let src =
        io::BufReader::new(head.as_slice().chain(io::repeat(b'z').take(MAX_LINE_LEN as u64)).chain(&b"\n3,c\n"[..]));
    let mut r = Reader::new(src, "big.csv", Format::Csv).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 3);
    assert!(v[0].is_ok());
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(e.to_string(), "big.csv:3: line longer than 64 MiB");
    assert!(e.is_bad_row());
    assert_eq!(v[2].as_ref().unwrap().ts, 3);
}

#[test]
fn csv_line_of_exactly_the_limit_is_read() {
    let text = format!("ts,s\n1,{}\n", "a".repeat(98));
    let mut r = Reader::with_max_line(text.as_bytes(), "t.csv", Format::Csv, 100).unwrap();
    assert_eq!(all(&mut r).len(), 1);
    assert!(all(&mut r).is_empty());
}

#[test]
fn json_line_over_the_limit_is_a_bad_row() {
    let head = b"{\"ts\":1}\n{\"ts\":2,\"s\":\"".to_vec();
    let tail = b"\"}\n\n{\"ts\":3}\n".to_vec();
    let src =
        io::BufReader::new(head.as_slice().chain(io::repeat(b'z').take(MAX_LINE_LEN as u64)).chain(tail.as_slice()));
    let mut r = Reader::new(src, "big.jsonl", Format::Jsonl).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 3);
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(e.to_string(), "big.jsonl:2: line longer than 64 MiB");
    assert_eq!((e.row, e.kind), (Some(1), ReadErrorKind::BadRow));
    let last = v[2].as_ref().unwrap();
    assert_eq!((last.row, last.ts), (2, 3));
}

/// A line without end (`/dev/zero`) is reported once it passes the
/// limit, not read for ever; the bytes it skipped count in the position.
#[test]
fn an_endless_json_line_is_reported_at_the_limit() {
    let src = io::BufReader::with_capacity(64, b"{\"ts\":1}\n".chain(io::repeat(b'x')));
    let mut r = Reader::with_max_line(src, "z.jsonl", Format::Jsonl, 1000).unwrap();
    let mut e = Event::default();
    assert!(r.next_event(&mut e).unwrap());
    let err = r.next_event(&mut e).unwrap_err();
    assert_eq!((err.line, err.row, err.kind), (2, Some(1), ReadErrorKind::BadRow));
    let at = r.position().byte;
    assert!((9 + 1000..9 + 1000 + 64).contains(&at), "{at}");
    // The rest of the line is skipped before the next one, which here
    // never comes: a line of 4,000 bytes, then one more event.
    let text = format!("{{\"ts\":1}}\n{}\n{{\"ts\":2}}\n", "x".repeat(4000));
    let mut r =
        Reader::with_max_line(io::BufReader::with_capacity(64, text.as_bytes()), "t", Format::Jsonl, 1000).unwrap();
    let v = all(&mut r);
    assert_eq!(v.len(), 3, "{v:?}");
    assert_eq!(v[1].as_ref().unwrap_err().line, 2);
    let last = v[2].as_ref().unwrap();
    assert_eq!((last.row, last.ts), (2, 2));
    assert_eq!(r.position().line, 4);
}

#[test]
fn json_line_limit_boundary() {
    let line = "{\"ts\":1}";
    let text = format!("{line}\n{line}  \n{line}");
    let mut r = Reader::with_max_line(text.as_bytes(), "t.jsonl", Format::Jsonl, line.len()).unwrap();
    let v = all(&mut r);
    assert!(v[0].is_ok());
    assert_eq!(v[1].as_ref().unwrap_err().line, 2);
    assert!(v[2].is_ok(), "the last line has no newline");
    assert_eq!(v.len(), 3);
}

struct Failing {
    first: Option<&'static [u8]>,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.first.take() {
            Some(b) => {
                buf[..b.len()].copy_from_slice(b);
                Ok(b.len())
            }
            None => Err(io::Error::other("disk on fire")),
        }
    }
}

#[test]
fn io_errors_are_fatal() {
    let e = Reader::new(io::BufReader::new(Failing { first: None }), "f.csv", Format::Csv).unwrap_err();
    assert_eq!(e.to_string(), "f.csv:1: read error: disk on fire");
    assert_eq!(e.kind, ReadErrorKind::Fatal);

    let src = io::BufReader::new(Failing { first: Some(b"ts,x\n1,2\n") });
    let mut r = Reader::new(src, "f.csv", Format::Csv).unwrap();
    let v = all(&mut r);
    assert!(v[0].is_ok());
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(e.kind, ReadErrorKind::Fatal);
    assert!(e.message.contains("disk on fire"), "{e}");

    let src = io::BufReader::new(Failing { first: Some(b"{\"ts\":1}\n") });
    let mut r = Reader::new(src, "f.jsonl", Format::Jsonl).unwrap();
    let v = all(&mut r);
    assert!(v[0].is_ok());
    let e = v[1].as_ref().unwrap_err();
    assert_eq!(e.to_string(), "f.jsonl:2: read error: disk on fire");
    assert_eq!(e.kind, ReadErrorKind::Fatal);
    assert_eq!(r.next_event(&mut Event::default()).unwrap_err(), *e);
}

#[test]
fn observe_can_be_turned_off() {
    let mut r = csv_reader("type,ts,x\nA,1,1\nA,2,s\nA,3,2.5\n");
    let mut e = Event::default();
    assert_eq!(r.next_event(&mut e), Ok(true));
    r.set_observe(false);
    assert_eq!(r.next_event(&mut e), Ok(true));
    r.set_observe(true);
    assert_eq!(r.next_event(&mut e), Ok(true));
    let info = r.schema().type_info(Sym::new("A")).unwrap();
    assert_eq!(info.count, 2);
    let k = info.kinds_of(0);
    assert!(k.contains(Kind::Int) && k.contains(Kind::Float) && !k.contains(Kind::Str));
    r.schema_mut().set_complete(true);
    assert!(r.schema().is_complete());
    assert!(format!("{r:?}").contains("t.csv"));
}

#[test]
fn csv_rows_reuse_the_field_vector() {
    let mut text = String::from("type,ts,a,b,c\n");
    for i in 0..100 {
        text.push_str(&format!("T{},{i},{i},s{},{}.5\n", i % 3, i % 5, i));
    }
    let mut r = csv_reader(&text);
    let mut e = Event::default();
    assert_eq!(r.next_event(&mut e), Ok(true));
    let ptr = e.fields.as_ptr();
    while r.next_event(&mut e).unwrap() {
        assert_eq!(e.fields.as_ptr(), ptr);
        assert_eq!(e.fields.len(), 3);
    }
    assert_eq!(e.row, 99);
    assert_eq!(e.fields, [Value::Int(99), Value::str("s4"), Value::Float(99.5)]);
}

#[test]
fn string_cache_is_bounded() {
    let mut cache = StrCache::default();
    for i in 0..CACHE_MAX_ENTRIES + 10 {
        let s = format!("k{i}");
        assert_eq!(cache.intern(s.as_bytes()), Some(Sym::new(&s)));
    }
    assert!(cache.tiny.len() <= CACHE_MAX_ENTRIES);
    for i in 0..CACHE_MAX_ENTRIES + 10 {
        let s = format!("key {i:09}");
        assert_eq!(cache.intern(s.as_bytes()), Some(Sym::new(&s)));
    }
    assert!(cache.short.len() <= CACHE_MAX_ENTRIES);
    for i in 0..CACHE_MAX_LONG + 10 {
        let s = format!("a longer key {i}");
        assert_eq!(cache.intern(s.as_bytes()), Some(Sym::new(&s)));
    }
    assert!(cache.long.len() <= CACHE_MAX_LONG);
    let long = "l".repeat(CACHE_MAX_KEY + 1);
    assert_eq!(cache.intern(long.as_bytes()), Some(Sym::new(&long)));
    assert!(!cache.long.contains_key(long.as_bytes()));
    assert_eq!(cache.intern(b"\xFF"), None);
    assert_eq!(cache.intern(b"a\xFF"), None);
}

#[test]
fn packed_short_strings_are_distinct() {
    // Every string of up to 3 bytes over a small alphabet, then random
    // ones of every short length: no two pack alike, and the cache gives
    // each the interner's symbol, from its map and from its recent
    // strings.
    let alphabet = [0u8, 1, b'a', b'b', 0xFF];
    let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
    for len in 1..=3 {
        let mut next = Vec::new();
        for s in strings.iter().filter(|s| s.len() == len - 1) {
            for &b in &alphabet {
                next.push([&s[..], &[b]].concat());
            }
        }
        strings.extend(next);
    }
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for len in 4..=SHORT {
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            strings.push((0..len).map(|i| alphabet[((x >> (3 * i)) % 5) as usize]).collect());
        }
    }
    strings.sort();
    strings.dedup();
    let mut seen = std::collections::HashMap::new();
    let mut folded = std::collections::HashMap::new();
    for s in &strings {
        if let Some(other) = seen.insert(pack(s), s) {
            panic!("{s:?} and {other:?} pack alike");
        }
        if s.len() < 8
            && let Some(other) = folded.insert(fold(pack(s)), s)
        {
            panic!("{s:?} and {other:?} fold alike");
        }
    }
    // Strings that differ only in their last or first byte, or in length.
    assert_ne!(pack(b"abcdefgh"), pack(b"abcdefgh\0"));
    assert_ne!(pack(b"abcdefghijklmno"), pack(b"abcdefghijklmnp"));
    assert_ne!(pack(b"abcd"), pack(b"abcd\0"));
    assert_ne!(pack(b""), pack(b"\0"));
    // And the cache gives the interner's symbols, recent or not.
    let mut cache = StrCache::default();
    for round in 0..2 {
        for s in strings.iter().filter(|s| std::str::from_utf8(s).is_ok()) {
            let text = std::str::from_utf8(s).unwrap();
            assert_eq!(cache.intern(s), Some(Sym::new(text)), "{text:?}, round {round}");
        }
    }
}

#[test]
fn long_cells_are_cut_in_messages() {
    // (A field cell is never in a message now: an integer that long is
    // a float; a `ts` is.)
    let big = "9".repeat(200);
    let msg = csv_err(&format!("ts,x\n{big},0\n"));
    assert!(msg.len() < 150, "{msg}");
    assert!(msg.contains("…"));
}
