//! `--true-ratio P`: answers that are true for a stable pseudo-random
//! fraction P of the calls, to run the paper's grid of true ratios without
//! arranging the data to give them.

/// splitmix64's finaliser (Steele, Lea and Flood, 2014): a fixed, documented
/// mixer, so that an answer is the same across runs, machines and versions
/// (unlike a std or ahash hasher, which may change or be seeded).
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hash of a call's arguments: splitmix64 chained over mmsi, the bits
/// of lat and lon, and ts.
pub fn args_hash(mmsi: i64, lat: f64, lon: f64, ts: i64) -> u64 {
    [lat.to_bits(), lon.to_bits(), ts as u64].into_iter().fold(splitmix64(mmsi as u64), |h, x| splitmix64(h ^ x))
}

/// True for a fraction `p` of argument tuples: the hash's top 53 bits, read
/// as a number in [0, 1), fall below `p`. `p` ≤ 0 is never true, `p` ≥ 1
/// always.
pub fn ratio_answer(p: f64, mmsi: i64, lat: f64, lon: f64, ts: i64) -> bool {
    let u = (args_hash(mmsi, lat, lon, ts) >> 11) as f64 / (1u64 << 53) as f64;
    u < p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_is_the_published_one() {
        // The first output of splitmix64 seeded with 0 (the state is
        // incremented before mixing).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn about_p_of_the_calls_are_true_and_stable() {
        for p in [0.0, 0.1, 0.5, 0.9, 1.0] {
            let n = 20_000;
            let t = (0..n).filter(|&i| ratio_answer(p, 235_000_000 + i % 97, 48.0, -4.5, i * 1000)).count();
            let got = t as f64 / n as f64;
            assert!((got - p).abs() < 0.02, "p {p}: {got}");
        }
        assert_eq!(ratio_answer(0.5, 1, 2.0, 3.0, 4), ratio_answer(0.5, 1, 2.0, 3.0, 4));
    }
}
