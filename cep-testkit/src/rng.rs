//! One xorshift64 generator for every test that wants a long, fixed,
//! pseudo-random sequence (longer than property tests draw).
//!
//! It is the generator of DESIGN.md §3 and `cep_bench::w1::XorShift64`:
//! `x ^= x << 13; x ^= x >> 7; x ^= x << 17`, each draw returning the new
//! state; [`XorShift64::default`] starts at `0x9E3779B97F4A7C15`.
//!
//! # Examples
//! ```
//! use cep_testkit::XorShift64;
//! let mut rng = XorShift64::default();
//! let a = rng.next_u64();
//! assert_eq!(XorShift64::new(0x9E37_79B9_7F4A_7C15).next_u64(), a);
//! let mut next = XorShift64::new(7).into_fn();
//! assert_ne!(next(), next());
//! ```

/// The xorshift64 generator (state, then draws as described above).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorShift64(u64);

impl Default for XorShift64 {
    /// The state `0x9E3779B97F4A7C15`.
    fn default() -> Self {
        XorShift64(0x9E37_79B9_7F4A_7C15)
    }
}

impl XorShift64 {
    /// A generator from `seed` (a zero state stays zero: pass a seed that
    /// is not 0, `seed | 1` if in doubt).
    pub fn new(seed: u64) -> XorShift64 {
        XorShift64(seed)
    }

    /// The next draw (the new state).
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The generator as a closure returning the next draw, for code written
    /// as `let mut next = …; next()`.
    pub fn into_fn(mut self) -> impl FnMut() -> u64 {
        move || self.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws from the default state, as `cep_bench::w1` (and
    /// DESIGN.md §3) defines them: pinned, so that no caller's stream moves.
    #[test]
    fn the_sequence_is_the_designs() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut by_hand = Vec::new();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            by_hand.push(x);
        }
        let mut rng = XorShift64::default();
        let drawn: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        assert_eq!(drawn, by_hand);
        assert_eq!(drawn[0], FIRST);
        let mut next = XorShift64::default().into_fn();
        assert_eq!(next(), FIRST);
        assert_eq!(XorShift64::new(0).next_u64(), 0);
    }

    const FIRST: u64 = 0xDC1B_77AE_0BF3_4DAD;
}
