//! Alert files: the CSV of `cep run --levels` (LANGUAGE.md §4), read with
//! errors that name the line.
//!
//! Columns `id,key,field,direction,level,band`, in any order, each once.
//! `key` is typed like an event cell (so `7` matches the int key 7 and
//! `AAPL` the string key); `direction` is `above`, `below`, `enter` or
//! `exit`; `level` is a number, or `LO..HI` for `enter` and `exit`; `band`
//! is a number `>= 0`.

use std::io::Read;

use ahash::AHashMap;
use cep_core::Value;

use crate::alert::{Alert, Direction, Trigger};

/// The columns of an alert file.
pub const COLUMNS: [&str; 6] = ["id", "key", "field", "direction", "level", "band"];

/// A bad alert file: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// The file's name, as given.
    pub file: String,
    /// 1-based line (the header is line 1).
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for FileError {}

/// Reads every alert of a file, checking each row (and that no id repeats).
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_index::{file::read_alerts, Trigger};
/// let text = "id,key,field,direction,level,band\n\
///             a17,7,price,above,10100,5\n\
///             in,AAPL,price,enter,100..110,0.5\n";
/// let alerts = read_alerts(text.as_bytes(), "alerts.csv").unwrap();
/// assert_eq!(alerts[0].key, Value::Int(7));
/// assert_eq!(alerts[1].trigger, Trigger::Enter { lo: 100.0, hi: 110.0 });
///
/// let bad = "id,key,field,direction,level,band\na,1,price,sideways,5,0\n";
/// let err = read_alerts(bad.as_bytes(), "alerts.csv").unwrap_err();
/// assert_eq!(err.to_string(),
///            "alerts.csv:2: unknown direction `sideways`: expected above, below, enter or exit");
/// ```
pub fn read_alerts(src: impl Read, file: &str) -> Result<Vec<Alert>, FileError> {
    let fail = |line: u64, message: String| FileError { file: file.to_owned(), line, message };
    let mut rdr = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(src);
    let mut records = rdr.records();
    let header = match records.next() {
        None => return Err(fail(1, format!("empty file: expected the header `{}`", COLUMNS.join(",")))),
        Some(r) => r.map_err(|e| fail(line_of(&e), format!("CSV error: {e}")))?,
    };
    let mut at = [usize::MAX; 6];
    for (i, name) in header.iter().enumerate() {
        let name = name.trim();
        let Some(c) = COLUMNS.iter().position(|&c| c == name) else {
            return Err(fail(1, format!("unknown column `{name}`: expected {}", COLUMNS.join(","))));
        };
        if at[c] != usize::MAX {
            return Err(fail(1, format!("column `{name}` appears twice")));
        }
        at[c] = i;
    }
    if let Some(c) = at.iter().position(|&i| i == usize::MAX) {
        return Err(fail(1, format!("missing column `{}` (columns: {})", COLUMNS[c], COLUMNS.join(","))));
    }
    let mut alerts = Vec::new();
    let mut seen: AHashMap<String, u64> = AHashMap::new();
    for record in records {
        let record = record.map_err(|e| fail(line_of(&e), format!("CSV error: {e}")))?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != header.len() {
            return Err(fail(line, format!("{} cells, expected {}", record.len(), header.len())));
        }
        let cell = |c: usize| record[at[c]].trim();
        let alert = parse_row(cell).map_err(|m| fail(line, m))?;
        alert.validate().map_err(|e| fail(line, e.to_string()))?;
        if let Some(first) = seen.insert(alert.id.clone(), line) {
            return Err(fail(line, format!("duplicate alert id `{}` (first on line {first})", alert.id)));
        }
        alerts.push(alert);
    }
    Ok(alerts)
}

fn line_of(e: &csv::Error) -> u64 {
    e.position().map_or(0, |p| p.line())
}

fn parse_row<'a>(cell: impl Fn(usize) -> &'a str) -> Result<Alert, String> {
    let id = cell(0);
    if id.is_empty() {
        return Err("empty id".into());
    }
    let key = cep_core::cell::parse_cell(cell(1));
    if key == Value::Null {
        return Err(format!("alert `{id}`: empty key"));
    }
    let field = cell(2);
    if field.is_empty() {
        return Err(format!("alert `{id}`: empty field"));
    }
    let dir = cell(3);
    let direction = Direction::parse(dir)
        .ok_or_else(|| format!("unknown direction `{dir}`: expected above, below, enter or exit"))?;
    let level = cell(4);
    let trigger = match direction {
        Direction::Above => Trigger::Above(number(level, "level")?),
        Direction::Below => Trigger::Below(number(level, "level")?),
        Direction::Enter | Direction::Exit => {
            let Some((lo, hi)) = level.split_once("..") else {
                return Err(format!("level `{level}` of a `{dir}` alert must be a range LO..HI"));
            };
            let (lo, hi) = (number(lo.trim(), "level")?, number(hi.trim(), "level")?);
            if direction == Direction::Enter { Trigger::Enter { lo, hi } } else { Trigger::Exit { lo, hi } }
        }
    };
    let band = number(cell(5), "band")?;
    Ok(Alert { id: id.to_owned(), key, field: field.to_owned(), trigger, band })
}

fn number(text: &str, column: &str) -> Result<f64, String> {
    match cep_core::cell::parse_cell(text) {
        Value::Null => Err(format!("empty {column}")),
        v => v.as_f64().ok_or_else(|| format!("{column} `{text}` is not a number")),
    }
}
