//! A tournament tree over per-sender finish times: the earliest one in `O(1)`, updates in
//! `O(log n)`.
//!
//! Replaces a binary heap of finish events in the decomposition: each sender has exactly one
//! live finish time, so updating it in place leaves no stale events to pop.

/// The key of a sender without a finish time.
pub(crate) const NEVER: u64 = u64::MAX;

/// Per-slot keys with the slot of the smallest key (lowest slot on ties) kept at the root.
///
/// A 4-ary tree: `levels[0]` holds one `key << 64 | slot` per slot (padded to a power of
/// four) and each entry of `levels[k + 1]` is the smallest of four in `levels[k]`. An update
/// recomputes one branch-free minimum of four per level, half as many levels as a binary tree.
#[derive(Debug, Clone)]
pub(crate) struct MinTree {
    levels: Vec<Vec<u128>>,
}

impl MinTree {
    /// `slots` keys, all [`NEVER`].
    pub(crate) fn new(slots: usize) -> Self {
        let mut width = 1;
        while width < slots {
            width *= 4;
        }
        let mut levels = vec![(0..width).map(|slot| pack(NEVER, slot)).collect::<Vec<_>>()];
        while let Some(below) = levels.last().filter(|level| level.len() > 1) {
            let above = below.chunks(4).map(min_of).collect();
            levels.push(above);
        }
        Self { levels }
    }

    /// The slot with the smallest key and that key (`NEVER` when no slot has a key).
    pub(crate) fn min(&self) -> (usize, u64) {
        let top = self.levels.last().map_or(pack(NEVER, 0), |level| level[0]);
        ((top as u64) as usize, (top >> 64) as u64)
    }

    /// Sets the key of `slot`.
    pub(crate) fn set(&mut self, slot: usize, key: u64) {
        self.set_packed(slot, pack(key, slot));
    }

    /// The smallest packed value (its high 64 bits are [`NEVER`] when no slot has a key).
    pub(crate) fn min_packed(&self) -> u128 {
        self.levels.last().map_or(u128::MAX, |level| level[0])
    }

    /// Sets the value of `slot` to `packed`, any key whose order as a `u128` is the order
    /// wanted (the slot is not appended: ties break on the value's low bits).
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
        _ => four.iter().copied().min().unwrap_or(u128::MAX),
    }
}

/// Orders by key, then slot.
fn pack(key: u64, slot: usize) -> u128 {
    u128::from(key) << 64 | slot as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_the_minimum_with_lowest_slot_on_ties() {
        let mut t = MinTree::new(5);
        assert_eq!(t.min().1, NEVER);
        t.set(3, 7);
        t.set(1, 9);
        assert_eq!(t.min(), (3, 7));
        t.set(4, 7);
        assert_eq!(t.min(), (3, 7));
        t.set(3, NEVER);
        assert_eq!(t.min(), (4, 7));
        t.set(0, 2);
        assert_eq!(t.min(), (0, 2));
        let single = MinTree::new(1);
        assert_eq!(single.min(), (0, NEVER));
        // Deeper trees: raising the minimum finds the next one.
        let mut big = MinTree::new(200);
        big.set(150, 5);
        big.set(10, 3);
        assert_eq!(big.min(), (10, 3));
        big.set(10, 9);
        assert_eq!(big.min(), (150, 5));
        big.set(150, NEVER);
        assert_eq!(big.min(), (10, 9));
    }
}
