//! Writes the seed corpora under `fuzz/corpus/*` (run from anywhere:
//! `cargo run --manifest-path fuzz/Cargo.toml --example mkseeds`).
use std::fs;

fn put(dir: &str, name: &str, bytes: &[u8]) {
    let d = format!("{}/corpus/{dir}", env!("CARGO_MANIFEST_DIR"));
    fs::create_dir_all(&d).unwrap();
    fs::write(format!("{d}/{name}"), bytes).unwrap();
}

fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- ")
            && !name.contains(' ')
        {
            out.push((name.to_owned(), String::new()));
            continue;
        }
        if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

fn csv_to_jsonl(csv: &str) -> String {
    let mut lines = csv.lines();
    let Some(head) = lines.next() else { return String::new() };
    let cols: Vec<&str> = head.split(',').collect();
    let mut out = String::new();
    for l in lines {
        let cells: Vec<&str> = l.split(',').collect();
        let mut parts = Vec::new();
        for (c, v) in cols.iter().zip(cells) {
            if v.is_empty() {
                continue;
            }
            let val = if v.parse::<f64>().is_ok() { v.to_owned() } else { format!("\"{v}\"") };
            parts.push(format!("\"{c}\":{val}"));
        }
        out.push_str(&format!("{{{}}}\n", parts.join(",")));
    }
    out
}

fn main() {
    let mut csvs: Vec<String> = Vec::new();
    let mut n = 0;
    for entry in fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata")).unwrap() {
        let p = entry.unwrap().path();
        let text = fs::read_to_string(&p).unwrap();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if p.extension().is_some_and(|e| e == "cep") {
            put("query", &name, text.as_bytes());
            continue;
        }
        for (sec, body) in sections(&text) {
            match sec.as_str() {
                "query" => put("query", &name, body.as_bytes()),
                "events" => {
                    csvs.push(body.clone());
                }
                _ => {}
            }
        }
        n += 1;
    }
    // The examples of docs/language.md.
    let lang = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/language.md")).unwrap();
    for (i, block) in lang.split("```").enumerate().filter(|(i, _)| i % 2 == 1) {
        // A fence may name a language on its first line (```text).
        let b = match block.split_once('\n') {
            Some((info, rest)) if info.chars().all(|c| c.is_ascii_alphanumeric()) => rest,
            _ => block,
        }
        .trim();
        if b.starts_with("QUERY") || b.starts_with("PATTERN") {
            put("query", &format!("lang{i}"), b.as_bytes());
        }
    }
    put("query", "hand1", b"PATTERN SEQ(A a, NOT B b, C c WITHIN 5 s) WHERE c.x > avg(a.x) WITHIN 10 EVENTS PARTITION BY k SELECT LATEST AFTER MATCH SKIP TO LAST a");
    put("query", "hand2", b"PATTERN (A|B)* a[] WHERE count(a) < 3 AND a.LEN > 0 AND sum(a.price) % 2 = 0 OR abs(-a[1].x) <> first(a.x) / 0;\nQUERY z PATTERN SEQ(Tick? t, Tick+ u) WHERE strict-contiguity AND PREV(u.price, 1024) != -9223372036854775808 AND t.sym = 'IBM' WITHIN 1 day");
    put("query", "hand3", b"-- comment\nQUERY q PATTERN SEQ(A a, B+ b[], D d) WHERE skip-till-any-match AND b[i].price >= b[i-1].price AND max(b.vol) > min(b.vol) AND last(b.price) > 1.5e3 WITHIN 500 AFTER MATCH SKIP TO NEXT ROW;");
    put("query", "hand4", b"PATTERN SEQ(Tick r, Tick s) WHERE partition-contiguity AND [sym] AND NOT (r.price = s.price) AND s.x - r.x * 2 >= \"a\" WITHIN 2 min;");
    put("query", &"qckpt".to_string(), cep_fuzz::CKPT_QUERY.as_bytes());
    eprintln!("{n} cases, {} event files", csvs.len());

    // Readers: flag byte + body.
    let mut hand: Vec<(u8, String)> = vec![
        (0, "ts,type,key,price\n1,A,1,2.5\n2,B,\"x,y\",\n3,C,\"a\"\"b\",-7\n".into()),
        (0, "\u{feff}ts,price\r\n1,10\r\n2,11\r\n".into()),
        (0, "ts,price\n1\n2,3,4\nx,5\n9223372036854775808,1\n".into()),
        (0, "ts,price\n1,\"open\n2,3\n".into()),
        (1, "{\"ts\":1,\"type\":\"A\",\"price\":10,\"s\":\"x\"}\n{\"ts\":2,\"price\":1.5e3,\"n\":null,\"b\":true}\n\n{\"ts\":3}\n".into()),
        (1, "{\"ts\":1,\"a\":[1]}\n{\"ts\":\"2\"}\n{bad\n{\"ts\":1e400}\n{\"ts\":4,\"type\":7}\n".into()),
        (1, "\u{feff}{\"ts\":5,\"k\":\"\\u00e9\\ud83d\\ude00\"}\r\n{\"ts\":6,\"ts\":7}\n".into()),
    ];
    for c in &csvs {
        hand.push((0, c.clone()));
        hand.push((1, csv_to_jsonl(c)));
    }
    for (i, (fmt, body)) in hand.iter().enumerate() {
        for flags in [0u8, 2, 4 | 8] {
            let mut v = vec![fmt | flags];
            v.extend_from_slice(body.as_bytes());
            put("reader", &format!("s{i}_{flags}"), &v);
        }
        for flags in [0u8, 2, 4 | 0x10, 2 | 8 | 0x20, 0x80] {
            let mut v = vec![fmt | flags];
            v.extend_from_slice(body.as_bytes());
            put("parallel", &format!("s{i}_{flags}"), &v);
        }
    }

    // Levels.
    let lv: [&[u8]; 4] = [
        b"id,key,field,direction,level,band\na17,7,price,above,10100,5\nin,AAPL,price,enter,100..110,0.5\nb,1,price,below,100,0\nx,7,vol,exit,1..2,0\n",
        b"key,id,band,level,direction,field\n7,a,0,5,above,price\n",
        b"id,key,field,direction,level,band\na,1,price,sideways,5,0\n",
        b"id,key,field,direction,level,band\n\"a,b\",\"1\",price,enter, 5 .. 7 ,1e-3\nc,2.5,p,above,-1e308,inf\n",
    ];
    for (i, b) in lv.iter().enumerate() {
        put("levels", &format!("s{i}"), b);
    }

    for (i, b) in cep_fuzz::checkpoint_seeds().iter().enumerate() {
        put("checkpoint", &format!("s{i}"), b);
    }
}
