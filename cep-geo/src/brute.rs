//! The reference answer by a scan of every position: slow and obviously
//! right, for tests and for checking the index on new data.

use ahash::AHashMap;

use crate::geo::haversine_m;
use crate::index::{Config, QueryError, check_point};
use crate::positions::Position;

/// `near` by brute force, with the meaning of
/// [`ProximityIndex`](crate::ProximityIndex): each other vessel's latest
/// position in `(ts − window, ts]` (ties of time: the later in `positions`),
/// then whether any of those is within the distance.
pub fn near_brute(
    positions: &[Position],
    config: Config,
    mmsi: i64,
    lat: f64,
    lon: f64,
    ts: i64,
) -> Result<bool, QueryError> {
    check_point(lat, lon)?;
    let from = ts.saturating_sub(config.window_ms);
    let mut latest: AHashMap<i64, (i64, usize)> = AHashMap::new();
    for (i, p) in positions.iter().enumerate() {
        if p.mmsi == mmsi || p.ts <= from || p.ts > ts {
            continue;
        }
        let slot = latest.entry(p.mmsi).or_insert((p.ts, i));
        if (p.ts, i) > *slot {
            *slot = (p.ts, i);
        }
    }
    Ok(latest
        .values()
        .any(|&(_, i)| positions.get(i).is_some_and(|p| haversine_m(lat, lon, p.lat, p.lon) <= config.distance_m)))
}
