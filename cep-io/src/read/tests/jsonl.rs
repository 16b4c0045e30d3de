//! JSON lines: values, types and `ts`, bad lines, field widths.

use super::*;

#[test]
fn json_basic() {
    let text = r#"{"type":"Tick","ts":1000,"key":1,"price":10.5,"up":true,"sym":"IBM","gone":null}
{"ts":2000,"price":3,"extra":"x"}
"#;
    let mut r = json_reader(text);
    assert_eq!(r.format(), Format::Jsonl);
    let v: Vec<_> = all(&mut r).into_iter().map(Result::unwrap).collect();
    let s = r.schema();
    assert_eq!(s.field_names().collect::<Vec<_>>(), ["key", "price", "up", "sym", "gone", "extra"]);
    assert!(!s.fields_closed());
    assert!(!s.is_complete());
    assert_eq!(v[0].ty.as_str(), "Tick");
    assert_eq!((v[0].ts, v[0].row), (1000, 0));
    // A trailing NULL is not stored: `get` reads it.
    assert_eq!(v[0].fields, [Value::Int(1), Value::Float(10.5), Value::Bool(true), Value::str("IBM")]);
    assert_eq!(v[0].get(4), Value::Null);
    assert_eq!(v[1].ty.as_str(), "Event");
    assert_eq!((v[1].ts, v[1].row), (2000, 1));
    assert_eq!(v[1].fields, [Value::Null, Value::Int(3), Value::Null, Value::Null, Value::Null, Value::str("x")]);
    assert_eq!(s.type_names(), ["Event", "Tick"]);
    assert!(s.type_info(Sym::new("Tick")).unwrap().kinds_of(1).contains(Kind::Float));
}

#[test]
fn json_values() {
    assert_eq!(json_field("-7"), Value::Int(-7));
    assert_eq!(json_field("9223372036854775807"), Value::Int(i64::MAX));
    assert_eq!(json_field("-9223372036854775808"), Value::Int(i64::MIN));
    assert_eq!(json_field("1.0"), Value::Float(1.0));
    assert_eq!(json_field("1e3"), Value::Float(1000.0));
    assert_eq!(json_field("1e300"), Value::Float(1e300));
    assert_eq!(json_field("-1.5e19"), Value::Float(-1.5e19));
    assert_eq!(json_field("20000000000000000000.0"), Value::Float(2e19));
    assert_eq!(json_field("false"), Value::Bool(false));
    assert_eq!(json_field(r#""a\"b\u00e9""#), Value::str("a\"bé"));
    assert_eq!(json_field(r#""""#), Value::str(""));
    assert_eq!(json_field("null"), Value::Null);
    // Duplicate keys: the last wins.
    let e = one_json(r#"{"x":1,"ts":5,"x":2,"ts":6}"#).unwrap();
    assert_eq!((e.ts, e.fields[0]), (6, Value::Int(2)));
    // Escaped keys.
    let e = one_json(r#"{"ts":1,"p\u0072ice":2}"#).unwrap();
    assert_eq!(e.fields, [Value::Int(2)]);
    // Whitespace around the object.
    assert!(one_json("  {\"ts\" : 1 }  ").is_ok());
}

#[test]
fn json_type_rules() {
    assert_eq!(one_json(r#"{"ts":1,"type":""}"#).unwrap().ty.as_str(), "Event");
    assert_eq!(one_json(r#"{"ts":1,"type":null}"#).unwrap().ty.as_str(), "Event");
    assert_eq!(one_json(r#"{"type":"A","ts":1}"#).unwrap().ty.as_str(), "A");
    assert_eq!(json_err(r#"{"ts":1,"type":5}"#), "t.jsonl:1: `type` is not a string: `5`");
    assert_eq!(json_err(r#"{"ts":1,"type":true}"#), "t.jsonl:1: `type` is not a string: `true`");
    assert_eq!(json_err(r#"{"ts":1,"type":["A"]}"#), "t.jsonl:1: field `type`: nested values are not supported");
}

#[test]
fn json_ts_rules() {
    assert_eq!(one_json(r#"{"ts":-5}"#).unwrap().ts, -5);
    assert_eq!(json_err(r#"{"x":1}"#), "t.jsonl:1: missing `ts`");
    assert_eq!(json_err(r#"{"ts":null}"#), "t.jsonl:1: missing `ts`");
    assert_eq!(json_err(r#"{"ts":1.5}"#), "t.jsonl:1: `ts` is not an integer: `1.5`");
    assert_eq!(json_err(r#"{"ts":1e3}"#), "t.jsonl:1: `ts` is not an integer: `1e3`");
    assert_eq!(json_err(r#"{"ts":"5"}"#), "t.jsonl:1: `ts` is not an integer: `\"5\"`");
    assert_eq!(json_err(r#"{"ts":true}"#), "t.jsonl:1: `ts` is not an integer: `true`");
    assert_eq!(
        json_err(r#"{"ts":9223372036854775808}"#),
        "t.jsonl:1: `ts` `9223372036854775808` does not fit in 64 bits"
    );
    assert_eq!(
        json_err(r#"{"s":"1,2 -3","ts":99999999999999999999}"#),
        "t.jsonl:1: `ts` `99999999999999999999` does not fit in 64 bits"
    );
    assert_eq!(json_err(r#"{"ts":{}}"#), "t.jsonl:1: field `ts`: nested values are not supported");
}

#[test]
fn json_minus_zero_is_the_int_zero() {
    // serde_json hands `-0` over as the float -0.0: `ts` -0 was rejected
    // as "`-0` does not fit in 64 bits", and a field -0 read as a float
    // where CSV reads an int. Found by `ts_out_of_range_float_negative_or_missing`.
    let e = one_json(r#"{"ts":-0,"x":-0,"y":-0.0,"z":-0e0}"#).unwrap();
    assert_eq!(e.ts, 0);
    assert_eq!(e.fields[0].to_words(), Value::Int(0).to_words());
    assert_eq!(e.fields[1].to_words(), Value::Float(-0.0).to_words());
    assert_eq!(e.fields[2].to_words(), Value::Float(-0.0).to_words());
    assert_eq!(one_csv("ts,x\n-0,-0\n").unwrap().fields[0].to_words(), Value::Int(0).to_words());
}

#[test]
fn json_integers_beyond_i64_are_bad_rows() {
    assert_eq!(
        json_err(r#"{"ts":0,"x":9223372036854775808}"#),
        "t.jsonl:1: integer `9223372036854775808` in field `x` does not fit in 64 bits"
    );
    assert_eq!(
        json_err(r#"{"ts":0,"s":"-5 \"7","y":1.5,"x":99999999999999999999}"#),
        "t.jsonl:1: integer `99999999999999999999` in field `x` does not fit in 64 bits"
    );
    assert_eq!(
        json_err(r#"{"ts":0,"x":-9223372036854775809}"#),
        "t.jsonl:1: integer `-9223372036854775809` in field `x` does not fit in 64 bits"
    );
}

#[test]
fn json_float_overflow_is_a_bad_row() {
    let e = one_json(r#"{"ts":0,"x":1e999}"#).unwrap_err();
    assert_eq!(e.kind, ReadErrorKind::BadRow);
    assert!(e.message.starts_with("invalid JSON: number out of range"), "{e}");
    assert!(!e.message.contains("line 1"), "{e}");
    let e = one_json(r#"{"ts":0,"x":NaN}"#).unwrap_err();
    assert!(e.message.starts_with("invalid JSON"), "{e}");
}

#[test]
fn json_nested_values_are_bad_rows() {
    assert_eq!(json_err(r#"{"ts":0,"x":[1,2]}"#), "t.jsonl:1: field `x`: nested values are not supported");
    assert_eq!(json_err(r#"{"ts":0,"x":{"a":1}}"#), "t.jsonl:1: field `x`: nested values are not supported");
}

#[test]
fn json_non_objects_are_bad_rows() {
    assert_eq!(json_err("[1,2]"), "t.jsonl:1: expected a JSON object, found an array");
    assert_eq!(json_err("5"), "t.jsonl:1: expected a JSON object, found a number");
    assert_eq!(json_err("\"s\""), "t.jsonl:1: expected a JSON object, found a string");
    assert_eq!(json_err("null"), "t.jsonl:1: expected a JSON object, found null");
    assert_eq!(json_err("true"), "t.jsonl:1: expected a JSON object, found a bool");
    assert_eq!(json_err("-1.5"), "t.jsonl:1: expected a JSON object, found a number");
    let e = json_err(r#"{"ts":1} {"ts":2}"#);
    assert!(e.starts_with("t.jsonl:1: invalid JSON: trailing characters at column"), "{e}");
}

#[test]
fn invalid_json_then_good_line() {
    let text = "{\"ts\":1}\n\n   \n{\"ts\":2,\n\t\n{\"ts\":3,\"x\":\"é\"}\n";
    let mut r = json_reader(text);
    let v = all(&mut r);
    assert_eq!(v.len(), 3);
    assert_eq!(v[0].as_ref().unwrap().row, 0);
    let e = v[1].as_ref().unwrap_err();
    assert_eq!((e.line, e.row, e.kind), (4, Some(1), ReadErrorKind::BadRow));
    assert_eq!(e.to_string(), "t.jsonl:4: invalid JSON: EOF while parsing a value at column 8");
    let good = v[2].as_ref().unwrap();
    assert_eq!((good.row, good.ts, good.fields[0]), (2, 3, Value::str("é")));
    assert_eq!(r.rows(), 3);
}

#[test]
fn json_invalid_utf8_is_a_bad_row() {
    let mut r = Reader::new(&b"{\"ts\":1,\"x\":\"\xFF\"}\n{\"ts\":2}\n"[..], "u.jsonl", Format::Jsonl).unwrap();
    let v = all(&mut r);
    assert!(v[0].as_ref().unwrap_err().message.starts_with("invalid JSON"));
    assert_eq!(v[1].as_ref().unwrap().row, 1);
}

#[test]
fn blank_and_empty_json_inputs() {
    let mut r = json_reader("");
    assert!(all(&mut r).is_empty());
    let mut r = json_reader("\n  \n\t\n");
    assert!(all(&mut r).is_empty());
    assert_eq!(r.rows(), 0);
    let mut r = json_reader("\n\n{\"ts\":7}\n\n");
    let v = all(&mut r);
    assert_eq!(v[0].as_ref().unwrap().row, 0);
    assert_eq!(r.rows(), 1);
    let mut r = json_reader("\n\n{\"ts\":x}");
    assert_eq!(all(&mut r)[0].as_ref().unwrap_err().line, 3);
}

/// A JSON event holds its fields up to the last one present, not the
/// schema's width: the fields after it are NULL to `Event::get`.
#[test]
fn json_events_hold_fields_up_to_their_last() {
    let mut r = json_reader("{\"ts\":1,\"a\":1}\n{\"ts\":2,\"b\":2}\n{\"ts\":3,\"a\":3}\n{\"ts\":4,\"b\":null}\n");
    let v: Vec<_> = all(&mut r).into_iter().map(Result::unwrap).collect();
    assert_eq!(v[0].fields, [Value::Int(1)]);
    assert_eq!(v[1].fields, [Value::Null, Value::Int(2)]);
    assert_eq!(v[2].fields, [Value::Int(3)]);
    assert_eq!((v[2].get(1), v[2].get(7)), (Value::Null, Value::Null));
    assert!(v[3].fields.is_empty());
    // When a key repeats, the last value wins, NULL too.
    let e = one_json("{\"ts\":1,\"a\":1,\"b\":2,\"b\":null}").unwrap();
    assert_eq!((e.get(0), e.get(1)), (Value::Int(1), Value::Null));
}

/// An event is as wide as its own last field, not as all the keys seen
/// before it: after rows that each brought a new key, every row cost
/// (to fill with NULLs) and, where events are kept (the read-ahead, a
/// parallel reader's blocks), took memory in proportion to all of them.
#[test]
fn a_wide_schema_does_not_widen_narrow_events() {
    let keys = 2000;
    let mut text = String::from("{\"ts\":0,\"a\":0}\n");
    text.extend((1..keys).map(|i| format!("{{\"ts\":{i},\"k{i}\":1}}\n")));
    text.extend((0..keys).map(|i| format!("{{\"ts\":{i},\"a\":{i}}}\n")));
    let mut r = json_reader(&text);
    let mut e = Event::default();
    let mut rows = 0;
    while r.next_event(&mut e).unwrap() {
        if rows >= keys {
            assert_eq!(e.fields, [Value::Int(rows as i64 - keys as i64)]);
        }
        rows += 1;
    }
    assert_eq!((rows, r.schema().field_count()), (2 * keys, keys));
    // With the fields fixed, new keys are checked, not kept.
    let mut fixed = json_reader("{\"ts\":0,\"a\":1}\n");
    assert!(fixed.next_event(&mut e).unwrap());
    fixed.schema_mut().field("q");
    fixed.fix_fields();
    let text = "{\"ts\":1,\"new\":5,\"a\":2,\"q\":3}\n{\"ts\":2,\"new\":[1]}\n{\"ts\":3,\"new\":1e999}\n";
    let mut rest = fixed.reopen(text.as_bytes(), fixed.position());
    let v = all(&mut rest);
    assert_eq!(v[0].as_ref().unwrap().fields, [Value::Int(2), Value::Int(3)]);
    assert_eq!(v[1].as_ref().unwrap_err().message, "field `new`: nested values are not supported");
    assert!(v[2].as_ref().unwrap_err().message.starts_with("invalid JSON"), "{v:?}");
    assert_eq!(rest.schema().field_count(), 2);
}

#[test]
fn nth_number_skips_strings() {
    let t = br#"{"a":"1 \" 2","b":-3.5e2,"c":[7],"d":44}"#;
    assert_eq!(nth_number(t, 0), Some(&b"-3.5e2"[..]));
    assert_eq!(nth_number(t, 1), Some(&b"7"[..]));
    assert_eq!(nth_number(t, 2), Some(&b"44"[..]));
    assert_eq!(nth_number(t, 3), None);
}

#[test]
fn garbage_never_panics() {
    let inputs: [&[u8]; 8] = [
        b"\"",
        b"ts\n\"",
        b"ts,a\n1,\"unterminated\n",
        b"\xFF\xFE\n\x00",
        b"ts\n\x00\n",
        b"{\"ts\":",
        b"{\"ts\":1,\"\\ud800\":1}",
        b"}{",
    ];
    for input in inputs {
        for format in [Format::Csv, Format::Jsonl] {
            if let Ok(mut r) = Reader::new(input, "g", format) {
                let _ = all(&mut r);
            }
        }
    }
}
