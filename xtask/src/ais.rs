//! `cargo xtask ais DIR`: synthetic AIS-like positions for the maritime
//! workload (DESIGN.md §3 W7), the encounter query, and a README.
//!
//! Vessels sail on a few shipping lanes off Brest (48.38°N, 4.49°W): the
//! Ouessant traffic separation scheme, the Iroise crossing, the Chenal du
//! Four, the Goulet de Brest, and routes towards the Channel and the Bay
//! of Biscay (the area spans about 47.3–49.3°N, 6.1–3.9°W). Each vessel's track is a list of
//! waypoints in time, and it reports once a minute (its own phase in the
//! minute, plus jitter). Four kinds of vessel:
//!
//! - planted **encounters**: pairs (the first `2 × encounters` vessels)
//!   that sail side by side 100–250 m apart for six minutes around a known
//!   time, at 6–10 kn, the second one reporting one second before the
//!   first, so that at each of the first one's reports in the meeting the
//!   other's latest position is within a few hundred metres;
//! - **loiterers** (about 10 %): arrive at an anchorage, drift below 1 kn
//!   for 10–30 minutes, leave at 6–10 kn;
//! - **slow** vessels (about 20 %): fishing, 1.5–4.5 kn, a new heading
//!   every 5–15 minutes, anywhere in the area;
//! - **fast** vessels (the rest): 8–20 kn on a lane, turning at its ends.
//!
//! Random draws come from splitmix64 (Steele, Lea and Flood, 2014), its
//! state starting at the seed: a documented generator with no dependency,
//! so that one seed gives the same bytes on every run (`f64` formatting is
//! exact; only a platform's `sin`/`cos` could move a last printed digit).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use crate::csv::{create_dir, write_file};

/// Default number of vessels (DESIGN.md §3 W7: about 5,000).
pub const VESSELS: usize = 5_000;
/// Default minutes of traffic: one hour, 300,000 rows (about 16 MB).
pub const MINUTES: u32 = 60;
/// Default seed (W7 is "seed 004").
pub const SEED: u64 = 4;

/// The most rows `main` writes (they are generated and sorted in memory).
pub const MAX_ROWS: usize = 100_000_000;

/// The reference point: Brest harbour.
pub const BREST: (f64, f64) = (48.38, -4.49);

/// The query of the workload (LANGUAGE.md §8): the one the benchmark runs.
pub use cep_bench::w7::ENCOUNTER as ENCOUNTER_QUERY;

/// The first vessel's MMSI (a French-flag MID of 235… style number).
pub const FIRST_MMSI: i64 = 235_000_001;

/// Metres per degree of latitude on the sphere of radius 6,371,008.8 m.
const M_PER_DEG: f64 = 111_195.08;
/// Metres per second in a knot.
const KNOT: f64 = 1852.0 / 3600.0;
const MINUTE_MS: i64 = 60_000;
/// Half the length of a planted meeting, in minutes.
const MEET_HALF_MIN: i64 = 3;

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Vessels (at least 1).
    pub vessels: usize,
    /// Minutes of traffic (at least 1).
    pub minutes: u32,
    /// The generator's seed.
    pub seed: u64,
}

/// One message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// Milliseconds from the start.
    pub ts: i64,
    pub mmsi: i64,
    pub lat: f64,
    pub lon: f64,
    /// Knots.
    pub speed: f64,
    /// Degrees clockwise from north, 0–359.
    pub heading: u32,
}

/// A planted encounter: `a` and `b` within `offset_m` (plus a second's
/// sailing) of each other at every report of `a` in `[from_ms, to_ms]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Encounter {
    pub a: i64,
    pub b: i64,
    pub from_ms: i64,
    pub to_ms: i64,
    /// Where they meet (the middle of the meeting), degrees.
    pub lat: f64,
    pub lon: f64,
    /// Their distance apart, metres.
    pub offset_m: f64,
}

/// The generated traffic.
#[derive(Debug)]
pub struct Fleet {
    /// Sorted by (ts, mmsi).
    pub rows: Vec<Row>,
    pub encounters: Vec<Encounter>,
    /// MMSIs of the loiterers, with their loitering interval (ms).
    pub loiterers: Vec<(i64, i64, i64)>,
    pub slow: usize,
    pub fast: usize,
}

/// splitmix64: a 64-bit state advanced by the golden-ratio increment and
/// mixed (the generator of the `SplittableRandom` paper).
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in [0, 1) from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform float in [lo, hi).
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// A uniform integer in [0, n) (n > 0; the modulo bias is negligible
    /// for the small n used here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A point in metres east and north of [`BREST`] (an equirectangular
/// projection: exact enough over the 100 km of the area).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Xy(f64, f64);

impl Xy {
    fn from_deg(lat: f64, lon: f64) -> Xy {
        Xy((lon - BREST.1) * M_PER_DEG * BREST.0.to_radians().cos(), (lat - BREST.0) * M_PER_DEG)
    }

    fn to_deg(self) -> (f64, f64) {
        (BREST.0 + self.1 / M_PER_DEG, BREST.1 + self.0 / (M_PER_DEG * BREST.0.to_radians().cos()))
    }

    fn add(self, o: Xy) -> Xy {
        Xy(self.0 + o.0, self.1 + o.1)
    }

    fn scale(self, k: f64) -> Xy {
        Xy(self.0 * k, self.1 * k)
    }

    fn len(self) -> f64 {
        self.0.hypot(self.1)
    }

    /// The unit vector of a heading (degrees clockwise from north).
    fn heading(deg: f64) -> Xy {
        let r = deg.to_radians();
        Xy(r.sin(), r.cos())
    }
}

/// Shipping lanes: (lat, lon) to (lat, lon), and the lane's half-width in
/// metres (vessels keep a fixed offset from its axis). The corridors are
/// wide and long enough that 5,000 vessels are not all within 500 m of
/// one another: with the defaults, about half of the positions have a
/// neighbour within 500 m (the loiterers at anchor almost all do), so
/// `near` is neither almost always true nor almost never.
const LANES: [Lane; 7] = [
    // Ouessant TSS, northbound and southbound.
    Lane { from: (47.90, -5.80), to: (49.10, -5.35), half_width_m: 3000.0 },
    Lane { from: (49.10, -5.60), to: (47.90, -6.05), half_width_m: 3000.0 },
    // The Iroise crossing, from the Goulet to the TSS.
    Lane { from: (48.31, -4.78), to: (48.45, -5.50), half_width_m: 2000.0 },
    // Chenal du Four, and on south past the Raz de Sein.
    Lane { from: (48.00, -4.75), to: (48.70, -4.85), half_width_m: 2000.0 },
    // Goulet de Brest into the roadstead.
    Lane { from: (48.31, -4.78), to: (48.37, -4.45), half_width_m: 500.0 },
    // Towards the Channel, and towards the Bay of Biscay.
    Lane { from: (48.75, -5.20), to: (49.20, -4.00), half_width_m: 3000.0 },
    Lane { from: (48.10, -5.10), to: (47.40, -4.40), half_width_m: 3000.0 },
];

/// A shipping lane: its axis and its half-width.
#[derive(Clone, Copy, Debug)]
struct Lane {
    /// One end, (lat, lon) in degrees.
    from: (f64, f64),
    /// The other end.
    to: (f64, f64),
    /// Vessels keep a fixed offset of at most this from the axis, metres.
    half_width_m: f64,
}

/// Where the slow vessels fish: (south, west) to (north, east).
const FISHING: ((f64, f64), (f64, f64)) = ((47.60, -6.00), (49.00, -4.60));

/// Anchorages for the loiterers (Bertheaume bay, Camaret, the roadstead,
/// Douarnenez bay); each loiterer anchors within 2.5 km of one.
const ANCHORAGES: [(f64, f64); 4] = [(48.335, -4.69), (48.285, -4.60), (48.35, -4.48), (48.12, -4.40)];

/// A track: positions at times, linear in between (times increasing).
#[derive(Debug)]
struct Track(Vec<(f64, Xy)>);

impl Track {
    /// Position, speed (knots) and heading (degrees) at `t` (ms), held
    /// constant past the last waypoint.
    fn at(&self, t: f64) -> (Xy, f64, f64) {
        let w = &self.0;
        let i = w.partition_point(|(wt, _)| *wt <= t);
        let (Some(&(t0, p0)), Some(&(t1, p1))) = (w.get(i.saturating_sub(1)), w.get(i.min(w.len().saturating_sub(1))))
        else {
            return (Xy(0.0, 0.0), 0.0, 0.0);
        };
        if i == 0 || i >= w.len() || t1 <= t0 {
            return (if i == 0 { p0 } else { p1 }, 0.0, 0.0);
        }
        let k = (t - t0) / (t1 - t0);
        let d = Xy(p1.0 - p0.0, p1.1 - p0.1);
        let speed = d.len() / ((t1 - t0) / 1000.0) / KNOT;
        let heading = d.0.atan2(d.1).to_degrees().rem_euclid(360.0);
        (p0.add(d.scale(k)), speed, heading)
    }
}

/// A vessel on a random lane, at a random place along it and offset from
/// its axis, going either way at a speed drawn in `speed_kn`; it turns at
/// the lane's ends.
fn lane_track(rng: &mut SplitMix64, end_ms: f64, speed_kn: (f64, f64)) -> Track {
    let Lane { from: a, to: b, half_width_m: half_width } = LANES[rng.below(LANES.len() as u64) as usize];
    let (p, q) = (Xy::from_deg(a.0, a.1), Xy::from_deg(b.0, b.1));
    let along = Xy(q.0 - p.0, q.1 - p.1);
    let len = along.len();
    let unit = along.scale(1.0 / len);
    let right = Xy(unit.1, -unit.0);
    let lateral = rng.range(-half_width, half_width);
    let speed = rng.range(speed_kn.0, speed_kn.1) * KNOT;
    let mut u = rng.range(0.0, len);
    let mut forward = rng.below(2) == 0;
    let at = |u: f64| p.add(unit.scale(u)).add(right.scale(lateral));
    let mut t = 0.0;
    let mut w = vec![(0.0, at(u))];
    while t <= end_ms {
        let to = if forward { len } else { 0.0 };
        t += (to - u).abs() / speed * 1000.0;
        u = to;
        forward = !forward;
        w.push((t, at(u)));
    }
    Track(w)
}

/// A fishing vessel: a new heading every 5 to 15 minutes at a speed drawn
/// in `speed_kn`, turned back towards the middle of [`FISHING`] when it
/// has left it.
fn fishing_track(rng: &mut SplitMix64, end_ms: f64, speed_kn: (f64, f64)) -> Track {
    let ((s, w), (n, e)) = FISHING;
    let (lo, hi) = (Xy::from_deg(s, w), Xy::from_deg(n, e));
    let middle = Xy((lo.0 + hi.0) / 2.0, (lo.1 + hi.1) / 2.0);
    let mut at = Xy(rng.range(lo.0, hi.0), rng.range(lo.1, hi.1));
    let mut t = 0.0;
    let mut w = vec![(0.0, at)];
    while t <= end_ms {
        let inside = (lo.0..=hi.0).contains(&at.0) && (lo.1..=hi.1).contains(&at.1);
        let heading = if inside {
            rng.range(0.0, 360.0)
        } else {
            (middle.0 - at.0).atan2(middle.1 - at.1).to_degrees() + rng.range(-30.0, 30.0)
        };
        let leg = rng.range(5.0, 15.0) * MINUTE_MS as f64;
        let v = rng.range(speed_kn.0, speed_kn.1) * KNOT / 1000.0;
        at = at.add(Xy::heading(heading).scale(v * leg));
        t += leg;
        w.push((t, at));
    }
    Track(w)
}

/// A loiterer: sails in at 6–10 kn, drifts below 1 kn at an anchorage
/// from `from` to `to` (ms), sails out.
fn loiter_track(rng: &mut SplitMix64, end_ms: f64, from: f64, to: f64) -> Track {
    let (lat, lon) = ANCHORAGES[rng.below(ANCHORAGES.len() as u64) as usize];
    let anchor = Xy::from_deg(lat, lon).add(Xy(rng.range(-2500.0, 2500.0), rng.range(-2500.0, 2500.0)));
    // Arrive from and leave to the west half (the sea side).
    let arrive = Xy::heading(rng.range(200.0, 340.0));
    let leave = Xy::heading(rng.range(200.0, 340.0));
    let (v_in, v_out) = (rng.range(6.0, 10.0) * KNOT, rng.range(6.0, 10.0) * KNOT);
    let drift_kn = rng.range(0.1, 0.7);
    let drift_to = anchor.add(Xy::heading(rng.range(0.0, 360.0)).scale(drift_kn * KNOT * (to - from) / 1000.0));
    Track(vec![
        (0.0, anchor.add(arrive.scale(v_in * from / 1000.0))),
        (from, anchor),
        (to, drift_to),
        (end_ms.max(to) + 1.0, drift_to.add(leave.scale(v_out * (end_ms.max(to) + 1.0 - to) / 1000.0))),
    ])
}

/// A planted pair: `a` sails straight through the meeting point; `b`
/// converges, sails beside `a` at `offset` metres through the meeting,
/// and diverges.
fn encounter_tracks(rng: &mut SplitMix64, end_ms: f64, meet_ms: f64) -> (Track, Track, Xy, f64) {
    let Lane { from: a, to: b, .. } = LANES[rng.below(LANES.len() as u64) as usize];
    let k = rng.range(0.3, 0.7);
    let meet = Xy::from_deg(a.0 + (b.0 - a.0) * k, a.1 + (b.1 - a.1) * k);
    let heading = rng.range(0.0, 360.0);
    let v = Xy::heading(heading).scale(rng.range(6.0, 10.0) * KNOT / 1000.0); // metres per ms
    let offset = rng.range(100.0, 250.0);
    let side = Xy::heading(heading + 90.0).scale(offset);
    let half = (MEET_HALF_MIN * MINUTE_MS) as f64;
    let (m0, m1) = (meet_ms - half, meet_ms + half);
    let a_at = |t: f64| meet.add(v.scale(t - meet_ms));
    let turn_in = rng.range(30.0, 90.0) * if rng.below(2) == 0 { 1.0 } else { -1.0 };
    let turn_out = rng.range(30.0, 90.0) * if rng.below(2) == 0 { 1.0 } else { -1.0 };
    let v_in = Xy::heading(heading + turn_in).scale(rng.range(6.0, 12.0) * KNOT / 1000.0);
    let v_out = Xy::heading(heading + turn_out).scale(rng.range(6.0, 12.0) * KNOT / 1000.0);
    let last = end_ms.max(m1) + 1.0;
    let track_a = Track(vec![(0.0, a_at(0.0)), (last, a_at(last))]);
    let b0 = a_at(m0).add(side);
    let b1 = a_at(m1).add(side);
    let mut wb = Vec::new();
    if m0 > 0.0 {
        wb.push((0.0, b0.add(v_in.scale(-m0))));
    }
    wb.push((m0, b0));
    wb.push((m1, b1));
    wb.push((last, b1.add(v_out.scale(last - m1))));
    (track_a, Track(wb), meet, offset)
}

/// Generates the traffic of `params`.
pub fn generate(params: Params) -> Fleet {
    let vessels = params.vessels.max(1);
    let minutes = i64::from(params.minutes.max(1));
    let end_ms = (minutes * MINUTE_MS) as f64;
    let mut rng = SplitMix64(params.seed);
    // One pair per 100 vessels, at least one when there are two vessels.
    let pairs = if vessels >= 2 { (vessels / 100).max(1) } else { 0 };
    let mut tracks: Vec<Track> = Vec::with_capacity(vessels);
    // Per vessel: report phase in the minute (ms), and whether it copies
    // the previous vessel's jitter one second earlier (encounter `b`).
    let mut phases: Vec<(i64, bool)> = Vec::with_capacity(vessels);
    let mut encounters = Vec::new();
    let mut loiterers = Vec::new();
    let (mut slow, mut fast) = (0, 0);
    for pair in 0..pairs {
        // Meetings in the middle half of the run, on whole minutes.
        let meet_min = minutes / 4 + rng.below((minutes / 2).max(1) as u64) as i64;
        let meet_ms = meet_min * MINUTE_MS;
        let (a, b, at, offset) = encounter_tracks(&mut rng, end_ms, meet_ms as f64);
        let phase = 3_000 + rng.below(54_000) as i64;
        tracks.push(a);
        phases.push((phase, false));
        tracks.push(b);
        phases.push((phase - 1_000, true));
        let (lat, lon) = at.to_deg();
        let half = MEET_HALF_MIN * MINUTE_MS;
        let mmsi = FIRST_MMSI + 2 * pair as i64;
        encounters.push(Encounter {
            a: mmsi,
            b: mmsi + 1,
            // The meeting, less a minute each side for the report phases.
            from_ms: meet_ms - half + MINUTE_MS,
            to_ms: meet_ms + half - MINUTE_MS,
            lat,
            lon,
            offset_m: offset,
        });
    }
    for i in tracks.len()..vessels {
        let kind = rng.below(100);
        let track = if kind < 10 {
            let len = rng.range(10.0, 30.0).min(minutes as f64 * 0.8) * MINUTE_MS as f64;
            let from = rng.range(0.0, (end_ms - len).max(0.0));
            loiterers.push((FIRST_MMSI + i as i64, from as i64, (from + len) as i64));
            loiter_track(&mut rng, end_ms, from, from + len)
        } else if kind < 30 {
            slow += 1;
            fishing_track(&mut rng, end_ms, (1.5, 4.5))
        } else {
            fast += 1;
            lane_track(&mut rng, end_ms, (8.0, 20.0))
        };
        tracks.push(track);
        phases.push((2_000 + rng.below(56_000) as i64, false));
    }
    let mut rows = Vec::with_capacity(vessels.saturating_mul(minutes as usize).min(MAX_ROWS));
    for minute in 0..minutes {
        let mut jitter = 0;
        for (i, (track, &(phase, copies))) in tracks.iter().zip(&phases).enumerate() {
            if !copies {
                jitter = rng.below(4_001) as i64 - 2_000;
            }
            let ts = minute * MINUTE_MS + phase + jitter;
            let (xy, speed, heading) = track.at(ts as f64);
            let (lat, lon) = xy.to_deg();
            rows.push(Row {
                ts,
                mmsi: FIRST_MMSI + i as i64,
                lat,
                lon,
                speed: (speed * 10.0).round() / 10.0,
                heading: (heading.round() as u32) % 360,
            });
        }
    }
    rows.sort_by_key(|r| (r.ts, r.mmsi));
    Fleet { rows, encounters, loiterers, slow, fast }
}

/// Writes the rows as CSV with the header `type,ts,mmsi,lat,lon,speed,heading`.
pub fn write_csv(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    writeln!(out, "type,ts,mmsi,lat,lon,speed,heading")?;
    for r in rows {
        writeln!(out, "AIS,{},{},{:.6},{:.6},{:.1},{}", r.ts, r.mmsi, r.lat, r.lon, r.speed, r.heading)?;
    }
    Ok(())
}

/// What DIR/README.txt says.
fn readme(params: Params, fleet: &Fleet) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Synthetic AIS-like positions near Brest (48.38N, 4.49W), written by \
         `cargo xtask ais DIR --vessels {} --minutes {} --seed {}`.\n\
         No real AIS data set is available here: these tracks are made up (see xtask/src/ais.rs).\n\n\
         ais.csv       {} rows, type,ts,mmsi,lat,lon,speed,heading; ts in ms from 0, sorted by (ts, mmsi);\n\
         \x20             one message per vessel-minute (its own phase, +-2 s jitter); speed in knots.\n\
         encounter.cep the W7 query (REMOTE near(...)).\n\n\
         vessels: {} planted-encounter vessels, {} loiterers (< 1 kn at an anchorage for 10-30 min), \
         {} slow (fishing, 1.5-4.5 kn), {} fast (8-20 kn)\n\
         seed: {} (splitmix64)\n\n\
         {} planted encounters: a and b sail side by side at the given distance; at every report of a\n\
         between from_ms and to_ms, b's latest position (one second older) is that far away.\n\
         a,b,from_ms,to_ms,lat,lon,distance_m",
        params.vessels,
        params.minutes,
        params.seed,
        fleet.rows.len(),
        2 * fleet.encounters.len(),
        fleet.loiterers.len(),
        fleet.slow,
        fleet.fast,
        params.seed,
        fleet.encounters.len(),
    );
    for e in &fleet.encounters {
        let _ = writeln!(s, "{},{},{},{},{:.5},{:.5},{:.0}", e.a, e.b, e.from_ms, e.to_ms, e.lat, e.lon, e.offset_m);
    }
    s
}

/// `cargo xtask ais DIR`: writes `ais.csv`, `encounter.cep` and `README.txt`.
pub fn main(dir: &Path, params: Params) -> Result<(), String> {
    if params.vessels == 0 || params.minutes == 0 {
        return Err("--vessels and --minutes must be at least 1".into());
    }
    // The rows are sorted in memory (about 50 bytes each).
    if params.vessels.saturating_mul(params.minutes as usize) > MAX_ROWS {
        return Err(format!("--vessels × --minutes must be at most {MAX_ROWS} rows"));
    }
    create_dir(dir)?;
    let fleet = generate(params);
    let csv = dir.join("ais.csv");
    write_file(&csv, |out| write_csv(out, &fleet.rows))?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write("encounter.cep", ENCOUNTER_QUERY)?;
    write("README.txt", &readme(params, &fleet))?;
    println!(
        "wrote {} rows ({} vessels, {} minutes, seed {}) to {}, with {} planted encounters and {} loiterers; \
         see {}",
        fleet.rows.len(),
        params.vessels,
        params.minutes,
        params.seed,
        csv.display(),
        fleet.encounters.len(),
        fleet.loiterers.len(),
        dir.join("README.txt").display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Params = Params { vessels: 400, minutes: 60, seed: SEED };

    fn bytes(params: Params) -> Vec<u8> {
        let mut out = Vec::new();
        write_csv(&mut out, &generate(params).rows).expect("write to memory");
        out
    }

    #[test]
    fn same_seed_same_bytes() {
        let a = bytes(SMALL);
        assert_eq!(a, bytes(SMALL));
        assert_ne!(a, bytes(Params { seed: 5, ..SMALL }));
        assert!(a.starts_with(b"type,ts,mmsi,lat,lon,speed,heading\nAIS,"));
    }

    #[test]
    fn sorted_one_row_per_vessel_minute_near_brest() {
        let fleet = generate(SMALL);
        assert_eq!(fleet.rows.len(), 400 * 60);
        assert!(fleet.rows.windows(2).all(|w| (w[0].ts, w[0].mmsi) < (w[1].ts, w[1].mmsi)));
        let mut per = std::collections::HashMap::new();
        for r in &fleet.rows {
            *per.entry(r.mmsi).or_insert(0) += 1;
            assert!((47.2..49.5).contains(&r.lat) && (-6.6..-3.6).contains(&r.lon), "{r:?}");
            assert!(r.ts >= 0 && r.ts < 61 * MINUTE_MS && r.heading < 360 && r.speed >= 0.0, "{r:?}");
        }
        assert_eq!(per.len(), 400);
        assert!(per.values().all(|n| *n == 60));
        // A mix of fast and slow.
        let fast = fleet.rows.iter().filter(|r| r.speed > 5.0).count();
        assert!(fast > fleet.rows.len() / 2 && fast < fleet.rows.len() * 9 / 10, "{fast}");
        assert!(fleet.slow > 0 && fleet.fast > 0);
    }

    #[test]
    fn planted_encounters_are_within_the_distance() {
        let fleet = generate(SMALL);
        assert_eq!(fleet.encounters.len(), 4);
        let positions: Vec<cep_geo::Position> =
            fleet.rows.iter().map(|r| cep_geo::Position { ts: r.ts, mmsi: r.mmsi, lat: r.lat, lon: r.lon }).collect();
        let index = cep_geo::ProximityIndex::new(positions, cep_geo::Config::default()).expect("index");
        for e in &fleet.encounters {
            let a: Vec<&Row> =
                fleet.rows.iter().filter(|r| r.mmsi == e.a && (e.from_ms..=e.to_ms).contains(&r.ts)).collect();
            assert!(a.len() >= 3, "{e:?}: {} reports of a", a.len());
            for ra in a {
                let rb = fleet.rows.iter().rev().find(|r| r.mmsi == e.b && r.ts <= ra.ts).expect("b's latest");
                assert!(ra.ts - rb.ts <= 1_000, "{e:?}");
                let d = cep_geo::haversine_m(ra.lat, ra.lon, rb.lat, rb.lon);
                assert!(d <= e.offset_m + 20.0 && d <= 300.0, "{e:?}: {d} m at {}", ra.ts);
                assert!(ra.speed > 5.0 && rb.speed > 5.0, "{ra:?} {rb:?}");
                assert_eq!(index.near(ra.mmsi, ra.lat, ra.lon, ra.ts), Ok(true));
            }
        }
    }

    #[test]
    fn loiterers_loiter() {
        let fleet = generate(SMALL);
        assert!(fleet.loiterers.len() >= 20, "{}", fleet.loiterers.len());
        for &(mmsi, from, to) in &fleet.loiterers {
            let inside: Vec<f64> = fleet
                .rows
                .iter()
                .filter(|r| r.mmsi == mmsi && r.ts > from + MINUTE_MS && r.ts < to - MINUTE_MS)
                .map(|r| r.speed)
                .collect();
            assert!(inside.len() >= 5 && inside.iter().all(|s| *s < 1.0), "{mmsi}: {inside:?}");
            assert!(fleet.rows.iter().any(|r| r.mmsi == mmsi && r.speed > 5.0) || to - from > 40 * MINUTE_MS);
        }
    }

    #[test]
    fn writes_the_three_files() {
        let scratch = cep_testkit::Scratch::new("xtask", "ais");
        let dir = scratch.join("out");
        main(&dir, Params { vessels: 50, minutes: 5, seed: 1 }).expect("write");
        let csv = std::fs::read_to_string(dir.join("ais.csv")).expect("csv");
        assert_eq!(csv.lines().count(), 1 + 50 * 5);
        assert_eq!(std::fs::read_to_string(dir.join("encounter.cep")).expect("cep"), ENCOUNTER_QUERY);
        let readme = std::fs::read_to_string(dir.join("README.txt")).expect("readme");
        assert!(readme.contains("seed: 1") && readme.contains("1 planted encounters"), "{readme}");
        assert!(main(&dir, Params { vessels: 0, minutes: 5, seed: 1 }).is_err());
        assert!(main(&dir, Params { vessels: usize::MAX, minutes: 5, seed: 1 }).is_err());
    }
}
