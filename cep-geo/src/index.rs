//! [`ProximityIndex`]: `near(mmsi, lat, lon, ts)` over positions loaded up
//! front, so that the answer is a pure function of the arguments.

use std::fmt;

use ahash::AHashMap;

use crate::geo::{haversine_m, reach};
use crate::grid::{Around, CellKey, Grid};
use crate::positions::Position;

/// What "near" means: within `distance_m` metres, among positions of the
/// window `(ts − window_ms, ts]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The distance threshold in metres (positive, finite); "within"
    /// includes the threshold itself.
    pub distance_m: f64,
    /// The window's length in milliseconds (positive).
    pub window_ms: i64,
}

impl Default for Config {
    /// The service's defaults: 500 m, 60 s.
    fn default() -> Config {
        Config { distance_m: 500.0, window_ms: 60_000 }
    }
}

/// A [`Config`] the index cannot work with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConfigError {
    /// The distance is not positive and finite.
    Distance(f64),
    /// The window is not positive.
    Window(i64),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Distance(d) => write!(f, "the distance must be positive and finite metres, not {d}"),
            ConfigError::Window(w) => write!(f, "the window must be positive, not {w} ms"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Arguments of a query that no position can answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueryError {
    /// Latitude not a number in [-90, 90].
    Latitude(f64),
    /// Longitude not a number in [-180, 180].
    Longitude(f64),
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Latitude(v) => write!(f, "lat must be in [-90, 90], not {v}"),
            QueryError::Longitude(v) => write!(f, "lon must be in [-180, 180], not {v}"),
        }
    }
}

impl std::error::Error for QueryError {}

/// Checks a query's coordinates.
pub(crate) fn check_point(lat: f64, lon: f64) -> Result<(), QueryError> {
    if !(-90.0..=90.0).contains(&lat) {
        return Err(QueryError::Latitude(lat));
    }
    if !(-180.0..=180.0).contains(&lon) {
        return Err(QueryError::Longitude(lon));
    }
    Ok(())
}

/// A position's place in time order: its time, then its row in the file
/// (so that of two positions of one vessel at one time, the later row is
/// the latest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    ts: i64,
    idx: u32,
}

/// Answers "is another vessel within the distance of this point, now?".
///
/// `near(mmsi, lat, lon, ts)` is true iff some vessel other than `mmsi`
/// has its latest position at or before `ts` inside the window
/// `(ts − window, ts]`, and that position lies within the distance of
/// (lat, lon). Only a vessel's latest position counts: one that was near
/// earlier in the window but has since moved away is not near.
///
/// Positions are bucketed into grid cells whose side is the distance's
/// angle (the stLD blocking); each cell's entries are sorted by time. A
/// query looks at the cells that can hold a point within the distance (3
/// rows of 4 or 5 cells at Brest's latitude, wider towards the poles),
/// skips the entries outside its box, takes each
/// cell's entries of the window by binary search, and checks a candidate
/// against its vessel's track (sorted by time) to know whether it is that
/// vessel's latest position.
#[derive(Debug)]
pub struct ProximityIndex {
    config: Config,
    grid: Grid,
    positions: Vec<Position>,
    cells: AHashMap<CellKey, Vec<Entry>>,
    tracks: AHashMap<i64, Vec<Entry>>,
    /// Every position in time order, for the queries whose circle is too
    /// wide for the cells (near the poles).
    by_time: Vec<Entry>,
}

/// Positions beyond this count are refused (row numbers are `u32`).
pub const MAX_POSITIONS: usize = u32::MAX as usize;

impl ProximityIndex {
    /// Builds the index over `positions` (any order; their order breaks
    /// ties of time within one vessel: the later one is the latest).
    pub fn new(positions: Vec<Position>, config: Config) -> Result<ProximityIndex, BuildError> {
        if !(config.distance_m.is_finite() && config.distance_m > 0.0) {
            return Err(BuildError::Config(ConfigError::Distance(config.distance_m)));
        }
        if config.window_ms <= 0 {
            return Err(BuildError::Config(ConfigError::Window(config.window_ms)));
        }
        if positions.len() > MAX_POSITIONS {
            return Err(BuildError::TooMany(positions.len()));
        }
        let grid = Grid::new(config.distance_m);
        let mut cells: AHashMap<CellKey, Vec<Entry>> = AHashMap::new();
        let mut tracks: AHashMap<i64, Vec<Entry>> = AHashMap::new();
        let mut by_time = Vec::with_capacity(positions.len());
        for (idx, p) in (0u32..).zip(&positions) {
            check_point(p.lat, p.lon).map_err(|e| BuildError::Position { idx: idx as usize, error: e })?;
            let e = Entry { ts: p.ts, idx };
            cells.entry(grid.cell(p.lat, p.lon)).or_default().push(e);
            tracks.entry(p.mmsi).or_default().push(e);
            by_time.push(e);
        }
        for list in cells.values_mut().chain(tracks.values_mut()) {
            list.sort_unstable();
        }
        by_time.sort_unstable();
        Ok(ProximityIndex { config, grid, positions, cells, tracks, by_time })
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The positions, in the order given to [`ProximityIndex::new`].
    pub fn positions(&self) -> &[Position] {
        &self.positions
    }

    /// Whether another vessel than `mmsi` is within the distance of
    /// (lat, lon) at `ts` (see the type's docs).
    pub fn near(&self, mmsi: i64, lat: f64, lon: f64, ts: i64) -> Result<bool, QueryError> {
        check_point(lat, lon)?;
        let from = ts.saturating_sub(self.config.window_ms);
        let r = reach(lat, self.config.distance_m);
        let query = Query { mmsi, lat, lon, ts, dlat: r.dlat, dlon: r.dlon.unwrap_or(360.0) };
        let hit = |entries: &[Entry]| {
            let lo = entries.partition_point(|e| e.ts <= from);
            let hi = entries.partition_point(|e| e.ts <= ts);
            entries.get(lo..hi).unwrap_or(&[]).iter().any(|e| self.counts(*e, &query))
        };
        Ok(match self.grid.around(lat, lon, r) {
            Around::Everything => hit(&self.by_time),
            Around::Cells { rows, cols, ncols } => (rows.0..=rows.1).any(|row| {
                cols.iter()
                    .take(ncols)
                    .any(|&(c0, c1)| (c0..=c1).any(|col| self.cells.get(&(row, col)).is_some_and(|list| hit(list))))
            }),
        })
    }

    /// Whether the window's entry `e` makes the query true: another
    /// vessel, within the distance, and its vessel's latest position.
    fn counts(&self, e: Entry, q: &Query) -> bool {
        let Some(p) = self.positions.get(e.idx as usize) else { return false };
        // The box of `reach` holds every point within the distance: a
        // cheap test before the trigonometry, which it never contradicts.
        let dlon = (p.lon - q.lon).abs();
        if p.mmsi == q.mmsi || (p.lat - q.lat).abs() > q.dlat || dlon.min(360.0 - dlon) > q.dlon {
            return false;
        }
        if haversine_m(q.lat, q.lon, p.lat, p.lon) > self.config.distance_m {
            return false;
        }
        let Some(track) = self.tracks.get(&p.mmsi) else { return false };
        let at = track.partition_point(|t| t.ts <= q.ts);
        at.checked_sub(1).and_then(|i| track.get(i)) == Some(&e)
    }
}

/// A query's arguments and its box (half-height and half-width in
/// degrees) of [`reach`].
#[derive(Debug)]
struct Query {
    mmsi: i64,
    lat: f64,
    lon: f64,
    ts: i64,
    dlat: f64,
    dlon: f64,
}

/// Why [`ProximityIndex::new`] refused its input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BuildError {
    /// The configuration.
    Config(ConfigError),
    /// A position's coordinates (`idx`: its place in the input, from 0).
    Position {
        /// The position's place in the input.
        idx: usize,
        /// What is wrong with it.
        error: QueryError,
    },
    /// More positions than [`MAX_POSITIONS`].
    TooMany(usize),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Config(e) => e.fmt(f),
            BuildError::Position { idx, error } => write!(f, "position {idx}: {error}"),
            BuildError::TooMany(n) => write!(f, "{n} positions: at most {MAX_POSITIONS}"),
        }
    }
}

impl std::error::Error for BuildError {}
