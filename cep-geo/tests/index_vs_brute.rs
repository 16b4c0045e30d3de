//! The index answers exactly as the brute-force scan, on seeded random
//! positions and queries: around Brest, on cell edges, at window
//! boundaries, across the antimeridian and at high latitudes.

use cep_geo::ratio::splitmix64;
use cep_geo::{Config, EARTH_RADIUS_M, Position, ProximityIndex, near_brute};

/// A seeded stream of draws (splitmix64 over a counter).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        splitmix64(self.0)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The point `d` metres from (lat, lon) on bearing `b` degrees (small-angle
/// approximation: near the distance, not exactly at it, which is the point).
fn offset(lat: f64, lon: f64, d: f64, b: f64) -> (f64, f64) {
    let (s, c) = b.to_radians().sin_cos();
    let dlat = (d * c / EARTH_RADIUS_M).to_degrees();
    let dlon = (d * s / (EARTH_RADIUS_M * lat.to_radians().cos().max(1e-6))).to_degrees();
    let lon2 = (lon + dlon + 180.0).rem_euclid(360.0) - 180.0;
    ((lat + dlat).clamp(-90.0, 90.0), lon2)
}

/// Positions of `vessels` vessels around (lat, lon) within `spread`
/// degrees, `per` each at random times in [0, span) ms (some repeated).
fn positions(d: &mut Draw, vessels: i64, per: usize, centre: (f64, f64), spread: f64, span: i64) -> Vec<Position> {
    let mut out = Vec::new();
    for v in 0..vessels {
        for _ in 0..per {
            let ts = d.below(span as u64) as i64;
            let lat = (centre.0 + d.range(-spread, spread)).clamp(-90.0, 90.0);
            let mut lon = centre.1 + d.range(-spread, spread) / lat.to_radians().cos().max(0.05);
            lon = ((lon + 180.0).rem_euclid(360.0)) - 180.0;
            out.push(Position { ts, mmsi: 235_000_000 + v, lat, lon });
            if d.below(20) == 0 {
                // Another report at the same time: the later row wins.
                let (lat2, lon2) = offset(lat, lon, d.range(0.0, 2000.0), d.range(0.0, 360.0));
                out.push(Position { ts, mmsi: 235_000_000 + v, lat: lat2, lon: lon2 });
            }
        }
    }
    out
}

/// Runs `queries` queries, each around a random position: at a distance
/// near the threshold, at a time near that position's or at the window's
/// edges; checks the index against the scan. Returns how many were true.
fn check(seed: u64, positions: Vec<Position>, config: Config, queries: usize) -> usize {
    let mut d = Draw(seed);
    let index = ProximityIndex::new(positions.clone(), config).expect("index");
    let mut trues = 0;
    for q in 0..queries {
        let p = positions[d.below(positions.len() as u64) as usize];
        let dist = match d.below(4) {
            0 => d.range(0.0, config.distance_m),
            1 => config.distance_m * d.range(0.98, 1.02),
            2 => config.distance_m * d.range(0.9999, 1.0001),
            _ => d.range(0.0, 3.0 * config.distance_m),
        };
        let (lat, lon) = offset(p.lat, p.lon, dist, d.range(0.0, 360.0));
        let w = config.window_ms;
        let ts = match d.below(6) {
            0 => p.ts,
            1 => p.ts + w - 1,
            2 => p.ts + w,
            3 => p.ts - 1,
            4 => p.ts + d.below(w as u64) as i64,
            _ => d.below(700_000) as i64,
        };
        let mmsi = if d.below(3) == 0 { p.mmsi } else { 235_000_000 + d.below(400) as i64 };
        let want = near_brute(&positions, config, mmsi, lat, lon, ts).expect("brute");
        let got = index.near(mmsi, lat, lon, ts).expect("index");
        assert_eq!(got, want, "query {q}: near({mmsi}, {lat}, {lon}, {ts}) with {config:?}");
        trues += usize::from(got);
    }
    trues
}

#[test]
fn brest_equals_brute_force() {
    let mut d = Draw(1);
    let pos = positions(&mut d, 300, 8, (48.38, -4.49), 0.03, 600_000);
    let trues = check(2, pos, Config::default(), 4000);
    // Both answers occur often enough to mean something.
    assert!((400..3600).contains(&trues), "{trues} of 4000 true");
}

#[test]
fn other_distances_and_windows_equal_brute_force() {
    for (seed, distance_m, window_ms, spread) in
        [(3, 50.0, 5_000, 0.005), (4, 5_000.0, 600_000, 0.3), (5, 1.0, 60_000, 0.0001)]
    {
        let mut d = Draw(seed);
        let pos = positions(&mut d, 200, 6, (48.38, -4.49), spread, 600_000);
        let trues = check(seed + 100, pos, Config { distance_m, window_ms }, 1500);
        assert!(trues > 50, "{distance_m} m: {trues} of 1500 true");
    }
}

#[test]
fn cell_edges_equal_brute_force() {
    // Positions and queries on the grid lines of 500 m cells (side in
    // degrees = the distance's angle), a hair either side.
    let side = (500.0 / EARTH_RADIUS_M).to_degrees();
    let mut d = Draw(6);
    let mut pos = Vec::new();
    for i in 0..1500 {
        let row = ((48.38 + 90.0) / side).floor() + d.below(6) as f64;
        let col = ((-4.49 + 180.0) / side).floor() + d.below(6) as f64;
        let eps = [0.0, 1e-12, -1e-12, 1e-9, -1e-9][d.below(5) as usize];
        let lat = row * side - 90.0 + eps;
        let lon = col * side - 180.0 + [0.0, 1e-12, -1e-9, 0.5 * side][d.below(4) as usize];
        pos.push(Position { ts: d.below(120_000) as i64, mmsi: 235_000_000 + i % 150, lat, lon });
    }
    check(7, pos, Config::default(), 3000);
}

#[test]
fn antimeridian_and_high_latitudes_equal_brute_force() {
    for (seed, centre) in
        [(8, (10.0, 179.998)), (9, (-30.0, -179.999)), (10, (70.0, 20.0)), (11, (85.0, -100.0)), (12, (89.99, 0.0))]
    {
        let mut d = Draw(seed);
        let pos = positions(&mut d, 150, 5, centre, 0.02, 300_000);
        let trues = check(seed + 100, pos, Config::default(), 1000);
        assert!(trues > 50, "{centre:?}: {trues} of 1000 true");
    }
}

#[test]
fn only_the_latest_position_counts() {
    let config = Config::default();
    // Vessel 2 was at the query point at 10 s, then 5 km away at 20 s.
    let pos = vec![
        Position { ts: 10_000, mmsi: 2, lat: 48.38, lon: -4.49 },
        Position { ts: 20_000, mmsi: 2, lat: 48.425, lon: -4.49 },
    ];
    let index = ProximityIndex::new(pos, config).unwrap();
    assert_eq!(index.near(1, 48.38, -4.49, 15_000), Ok(true));
    assert_eq!(index.near(1, 48.38, -4.49, 20_000), Ok(false));
    // Its own positions never count.
    assert_eq!(index.near(2, 48.38, -4.49, 15_000), Ok(false));
    // The window is (ts - 60 s, ts]: 70 s is out, 69.999 s in.
    assert_eq!(index.near(1, 48.38, -4.49, 69_999), Ok(false));
    assert_eq!(index.near(1, 48.425, -4.49, 79_999), Ok(true));
    assert_eq!(index.near(1, 48.425, -4.49, 80_000), Ok(false));
    assert!(index.near(1, 91.0, 0.0, 0).is_err());
    assert!(index.near(1, 0.0, f64::NAN, 0).is_err());
}

#[test]
fn bad_configs_are_refused() {
    let bad = [
        Config { distance_m: 0.0, window_ms: 1 },
        Config { distance_m: f64::NAN, window_ms: 1 },
        Config { distance_m: 1.0, window_ms: 0 },
    ];
    for c in bad {
        assert!(ProximityIndex::new(Vec::new(), c).is_err(), "{c:?}");
    }
    let p = Position { ts: 0, mmsi: 1, lat: 0.0, lon: 200.0 };
    assert!(ProximityIndex::new(vec![p], Config::default()).is_err());
}
