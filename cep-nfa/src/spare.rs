//! Matches handed back by the caller once written, whose
//! vectors the next matches an engine builds reuse. A query that completes
//! several matches per event otherwise allocates (and frees) two vectors
//! per match.

use cep_core::Match;

/// Matches an engine keeps to fill again, at most.
pub const SPARE_MATCHES: usize = 64;

/// Matches handed back to an engine
/// ([`MatchQueue::recycle`](crate::engines::api::MatchQueue::recycle)), at
/// most [`SPARE_MATCHES`] of them.
#[derive(Debug, Default)]
pub(crate) struct SpareMatches(Vec<Match>);

impl SpareMatches {
    /// Keeps `m` to fill again, unless enough are kept.
    #[inline]
    pub(crate) fn keep(&mut self, m: Match) {
        if self.0.len() < SPARE_MATCHES {
            self.0.push(m);
        }
    }

    /// A match to fill again, if one is kept.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<Match> {
        self.0.pop()
    }
}
