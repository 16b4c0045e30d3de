//! The stable radix sort that puts a whole slot's timers in deadline order
//! when the watermark passes the slot at once (see
//! [`TimerWheel::fire_slot`](super::TimerWheel)), instead of cascading them
//! level by level.

use super::key::{BITS, SLOTS};
use super::lists::Slot;

/// Sorts `timers` stably by the low `digits` 6-bit digits of their keys
/// (the others being equal), with `spare` as the second buffer: insertion
/// sort for a few timers, else a least-significant-digit radix sort that
/// skips the digits all of them share. O(digits × timers), and it allocates
/// only when `spare` must grow.
pub(super) fn sort_by_low_digits<T: Copy>(timers: &mut Vec<Slot<T>>, spare: &mut Vec<Slot<T>>, digits: usize) {
    /// Below this many timers, insertion sort.
    const FEW: usize = 16;
    if timers.len() <= FEW {
        for i in 1..timers.len() {
            let timer = timers[i];
            let mut j = i;
            while j > 0 && timers[j - 1].key > timer.key {
                timers[j] = timers[j - 1];
                j -= 1;
            }
            timers[j] = timer;
        }
        return;
    }
    let digit = |key: u64, shift: usize| (key >> shift) as usize & (SLOTS - 1);
    for d in 0..digits {
        let shift = BITS as usize * d;
        let mut starts = [0u32; SLOTS];
        for timer in timers.iter() {
            starts[digit(timer.key, shift)] += 1;
        }
        if starts.contains(&(timers.len() as u32)) {
            continue; // one digit for all: already in order by it
        }
        let mut at = 0;
        for start in &mut starts {
            (*start, at) = (at, at + *start);
        }
        spare.clear();
        spare.resize(timers.len(), timers[0]);
        for &timer in timers.iter() {
            let start = &mut starts[digit(timer.key, shift)];
            spare[*start as usize] = timer;
            *start += 1;
        }
        std::mem::swap(timers, spare);
    }
}
