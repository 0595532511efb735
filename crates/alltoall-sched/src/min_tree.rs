//! A tournament tree over per-sender finish times: the earliest one in `O(1)`, updates in
//! `O(log n)`.
//!
//! Replaces a binary heap of finish events in the decomposition: each sender has exactly one
//! live finish time, so updating it in place leaves no stale events to pop.

/// A slot without a key: above every packed `(key, slot)`, including key `u64::MAX` (a real
/// finish tick when a line sums to exactly `2^64 - 1`), so no key value doubles as "none".
const EMPTY: u128 = u128::MAX;

/// Per-slot optional keys with the slot of the smallest key (lowest slot on ties) kept at the root.
///
/// A 4-ary tree: `levels[0]` holds one `key << 64 | slot` per slot (padded to a power of
/// four) and each entry of `levels[k + 1]` is the smallest of four in `levels[k]`. An update
/// recomputes one branch-free minimum of four per level, half as many levels as a binary tree.
#[derive(Debug, Clone)]
pub(crate) struct MinTree {
    levels: Vec<Vec<u128>>,
}

impl MinTree {
    /// `slots` slots, all without a key.
    pub(crate) fn new(slots: usize) -> Self {
        let mut width = 1;
        while width < slots {
            width *= 4;
        }
        let mut levels = vec![(0..width).map(|_| EMPTY).collect::<Vec<_>>()];
        while let Some(below) = levels.last().filter(|level| level.len() > 1) {
            let above = below.chunks(4).map(min_of).collect();
            levels.push(above);
        }
        Self { levels }
    }

    /// The slot with the smallest key and that key (`None` when no slot has a key).
    pub(crate) fn min(&self) -> Option<(usize, u64)> {
        let top = self.levels.last().map_or(EMPTY, |level| level[0]);
        if top == EMPTY {
            return None;
        }
        let slot = usize::try_from(top & u128::from(u64::MAX)).ok()?;
        let key = u64::try_from(top >> 64).ok()?;
        Some((slot, key))
    }

    /// Sets the key of `slot` (`None` removes it).
    pub(crate) fn set(&mut self, slot: usize, key: Option<u64>) {
        self.set_packed(slot, key.map_or(EMPTY, |key| pack(key, slot)));
    }

    /// The smallest packed value, `None` when no slot has a key.
    pub(crate) fn min_packed(&self) -> Option<u128> {
        self.levels
            .last()
            .map(|level| level[0])
            .filter(|&top| top != EMPTY)
    }

    /// Sets the value of `slot` to `packed`, any value whose order as a `u128` is the order
    /// wanted (the slot is not appended: ties break on the value's low bits); `u128::MAX`
    /// means no key.
    pub(crate) fn set_packed(&mut self, slot: usize, packed: u128) {
        let mut idx = slot;
        self.levels[0][idx] = packed;
        for k in 1..self.levels.len() {
            let base = idx & !3;
            let best = min_of(&self.levels[k - 1][base..base + 4]);
            idx /= 4;
            // An unchanged minimum leaves every level above unchanged too.
            if self.levels[k][idx] == best {
                break;
            }
            self.levels[k][idx] = best;
        }
    }
}

/// The smallest of (up to) four packed keys, as two independent comparisons then one.
fn min_of(four: &[u128]) -> u128 {
    match four {
        [a, b, c, d] => (*a).min(*b).min((*c).min(*d)),
        _ => four.iter().copied().min().unwrap_or(EMPTY),
    }
}

/// Orders by key, then slot.
fn pack(key: u64, slot: usize) -> u128 {
    // `slot < n <= u64::MAX`, so it fits the low half (and never makes `EMPTY`).
    u128::from(key) << 64 | slot as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_the_minimum_with_lowest_slot_on_ties() {
        let mut t = MinTree::new(5);
        assert_eq!(t.min(), None);
        t.set(3, Some(7));
        t.set(1, Some(9));
        assert_eq!(t.min(), Some((3, 7)));
        t.set(4, Some(7));
        assert_eq!(t.min(), Some((3, 7)));
        t.set(3, None);
        assert_eq!(t.min(), Some((4, 7)));
        t.set(0, Some(2));
        assert_eq!(t.min(), Some((0, 2)));
        let single = MinTree::new(1);
        assert_eq!(single.min(), None);
        // Deeper trees: raising the minimum finds the next one.
        let mut big = MinTree::new(200);
        big.set(150, Some(5));
        big.set(10, Some(3));
        assert_eq!(big.min(), Some((10, 3)));
        big.set(10, Some(9));
        assert_eq!(big.min(), Some((150, 5)));
        big.set(150, None);
        assert_eq!(big.min(), Some((10, 9)));
    }

    /// Issue 13: key `u64::MAX` used to be the "no key" sentinel, so a run finishing at tick
    /// `2^64 - 1` was never ended.
    #[test]
    fn the_largest_key_is_a_key() {
        let mut t = MinTree::new(3);
        t.set(2, Some(u64::MAX));
        assert_eq!(t.min(), Some((2, u64::MAX)));
        t.set(1, Some(u64::MAX));
        assert_eq!(t.min(), Some((1, u64::MAX)));
        t.set(1, None);
        t.set(2, None);
        assert_eq!(t.min(), None);
    }
}
