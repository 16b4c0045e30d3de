//! Positions, and loading them from the CSV files of `cargo xtask ais`
//! (LANGUAGE.md §1): columns found by header name, others ignored.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// One reported position of one vessel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Position {
    /// Event time, milliseconds.
    pub ts: i64,
    /// The vessel.
    pub mmsi: i64,
    /// Latitude, degrees in [-90, 90].
    pub lat: f64,
    /// Longitude, degrees in [-180, 180].
    pub lon: f64,
}

/// Why a positions file could not be loaded.
#[derive(Debug)]
pub struct LoadError {
    /// The file's line (1-based; the header is line 1), if the error has one.
    pub line: Option<u64>,
    /// What went wrong.
    pub kind: LoadErrorKind,
}

/// The kinds of [`LoadError`].
#[derive(Debug)]
pub enum LoadErrorKind {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// The CSV itself is malformed (unequal rows, bad UTF-8).
    Csv(String),
    /// The header lacks a required column.
    MissingColumn(&'static str),
    /// A cell is empty or not of its column's type.
    BadCell {
        /// The column's name.
        column: &'static str,
        /// The cell's text.
        text: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A latitude or longitude outside its range.
    OutOfRange {
        /// The column's name.
        column: &'static str,
        /// The value.
        value: f64,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        match &self.kind {
            LoadErrorKind::Io(e) => write!(f, "{e}"),
            LoadErrorKind::Csv(e) => write!(f, "bad CSV: {e}"),
            LoadErrorKind::MissingColumn(c) => write!(f, "the header has no column `{c}`"),
            LoadErrorKind::BadCell { column, text, expected } => {
                write!(f, "column `{column}`: {text:?} is not {expected}")
            }
            LoadErrorKind::OutOfRange { column, value } => write!(f, "column `{column}`: {value} is out of range"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            LoadErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Loads the positions of the CSV file at `path`, in file order.
pub fn load_csv_file(path: &Path) -> Result<Vec<Position>, LoadError> {
    let file = std::fs::File::open(path).map_err(|e| LoadError { line: None, kind: LoadErrorKind::Io(e) })?;
    load_csv(std::io::BufReader::new(file))
}

/// Loads the positions of CSV text: columns `ts`, `mmsi` (integers) and
/// `lat`, `lon` (numbers) found by header name, other columns ignored,
/// one record reused for every row.
pub fn load_csv(input: impl Read) -> Result<Vec<Position>, LoadError> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(input);
    let header = reader.headers().map_err(|e| csv_error(&e))?.clone();
    let column = |name: &'static str| {
        header
            .iter()
            .position(|h| h.trim() == name)
            .ok_or(LoadError { line: Some(1), kind: LoadErrorKind::MissingColumn(name) })
    };
    let (c_ts, c_mmsi, c_lat, c_lon) = (column("ts")?, column("mmsi")?, column("lat")?, column("lon")?);
    let mut out = Vec::new();
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(&e)),
        }
        let line = record.position().map(|p| p.line());
        let cell = |i: usize| record.get(i).unwrap_or("").trim();
        let bad = |column, text: &str, expected| LoadError {
            line,
            kind: LoadErrorKind::BadCell { column, text: text.to_owned(), expected },
        };
        let int = |i, name| cell(i).parse::<i64>().map_err(|_| bad(name, cell(i), "an integer"));
        let float = |i, name, limit: f64| {
            let v = cell(i).parse::<f64>().map_err(|_| bad(name, cell(i), "a number"))?;
            if !v.is_finite() || v.abs() > limit {
                return Err(LoadError { line, kind: LoadErrorKind::OutOfRange { column: name, value: v } });
            }
            Ok(v)
        };
        out.push(Position {
            ts: int(c_ts, "ts")?,
            mmsi: int(c_mmsi, "mmsi")?,
            lat: float(c_lat, "lat", 90.0)?,
            lon: float(c_lon, "lon", 180.0)?,
        });
    }
    Ok(out)
}

fn csv_error(e: &csv::Error) -> LoadError {
    let line = e.position().map(|p| p.line());
    LoadError { line, kind: LoadErrorKind::Csv(e.to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_by_name_others_ignored() {
        let text = "type,ts,mmsi,lat,lon,speed\nAIS,1000,235000001,48.38,-4.49,12.5\nAIS,2000,235000002,48.4,-4.5,0\n";
        let p = load_csv(text.as_bytes()).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0], Position { ts: 1000, mmsi: 235000001, lat: 48.38, lon: -4.49 });
        assert_eq!(p[1].mmsi, 235000002);
    }

    #[test]
    fn bad_rows_name_their_line() {
        let e = load_csv("ts,mmsi,lat,lon\n1,2,3,4\n5,x,3,4\n".as_bytes()).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().contains("line 3: column `mmsi`"), "{e}");
        let e = load_csv("ts,mmsi,lat,lon\n1,2,95,4\n".as_bytes()).unwrap_err();
        assert!(matches!(e.kind, LoadErrorKind::OutOfRange { column: "lat", .. }), "{e}");
        let e = load_csv("ts,mmsi,lat\n1,2,3\n".as_bytes()).unwrap_err();
        assert!(matches!(e.kind, LoadErrorKind::MissingColumn("lon")), "{e}");
        let e = load_csv("ts,mmsi,lat,lon\n1,2,3\n".as_bytes()).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        let e = load_csv("ts,mmsi,lat,lon\n1,2,NaN,4\n".as_bytes()).unwrap_err();
        assert!(matches!(e.kind, LoadErrorKind::OutOfRange { .. }), "{e}");
    }
}
