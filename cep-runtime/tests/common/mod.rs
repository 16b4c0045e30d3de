//! What the job tests share: the queries, their schema, a seeded stream
//! and a scratch directory.

#![allow(dead_code)]

use std::path::PathBuf;

use cep_core::{Event, Schema, Sym, Value};

pub const QUERIES: &str = "QUERY ab PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 40;\n\
                       QUERY quiet PATTERN SEQ(A a, NOT B b WITHIN 15) WHERE [k]";

pub fn schema() -> Schema {
    let mut s = Schema::new();
    s.field("k");
    s.field("x");
    s
}

/// A seeded stream of A and B events over 11 keys.
pub fn events(n: usize) -> Vec<Event> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let ty = if rnd() % 3 == 0 { "B" } else { "A" };
            let fields = vec![Value::Int((rnd() % 11) as i64), Value::Int((rnd() % 100) as i64)];
            Event::new(Sym::new(ty), i as i64 * 2, 0, fields)
        })
        .collect()
}

pub struct Dir(pub PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn dir(tag: &str) -> Dir {
    Dir(std::env::temp_dir().join(format!("cep-job-test-{tag}-{}", std::process::id())))
}
