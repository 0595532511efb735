//! Portable seeded randomness: the one generator every randomized routine of the workspace uses.
//!
//! `rand`'s standard generator may change its algorithm in any release, which would silently change every
//! seeded number the project publishes. [`seeded_rng`] instead returns ChaCha with 8 rounds from
//! `rand_chacha`, whose output for a given key and stream is part of that crate's semantic
//! version, and builds the key from the seed itself (no seed-expansion function in between), so
//! a `(seed, stream)` pair names the same sequence on every platform and release of this crate.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The generator [`seeded_rng`] returns: ChaCha8 (`rand_chacha::ChaCha8Rng`).
///
/// It implements `rand::Rng`, so `rand::RngExt::random_range` and
/// `rand::seq::SliceRandom::shuffle` work on it.
pub type SeededRng = ChaCha8Rng;

/// A generator for `seed` on stream `stream`: the same pair always yields the same sequence.
///
/// The 256-bit ChaCha key is the seed in little-endian bytes followed by zeros, and `stream` is
/// ChaCha's 64-bit stream (nonce) number. Streams of one seed are independent sequences, so a
/// routine that needs several generators (one per layer, one per restart, ...) takes one seed
/// from its caller and numbers its streams, instead of deriving new seeds by arithmetic.
///
/// # Complexity
///
/// `O(1)` time; each 64-bit draw afterwards costs a fraction of a ChaCha8 block (16 words per block).
///
/// # Examples
///
/// ```
/// use comm_cost_model::seeded_rng;
/// use rand::RngExt;
///
/// let a: Vec<u64> = (0..3).map(|_| seeded_rng(7, 0).random_range(0..100)).collect();
/// assert!(a.iter().all(|&x| x == a[0])); // same seed and stream, same first draw
///
/// let mut rng = seeded_rng(7, 0);
/// let first: Vec<u32> = (0..4).map(|_| rng.random_range(0..1000)).collect();
/// let mut other = seeded_rng(7, 1);
/// let second: Vec<u32> = (0..4).map(|_| other.random_range(0..1000)).collect();
/// assert_ne!(first, second); // another stream, another sequence
/// ```
#[must_use]
pub fn seeded_rng(seed: u64, stream: u64) -> SeededRng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(stream);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::Rng;

    /// Pins the generator: if a dependency update changed these words, every seeded number in
    /// `docs/reproduction.md` would change with them.
    #[test]
    fn output_is_pinned() {
        let mut rng = seeded_rng(2024, 0);
        let words: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(words, PINNED);
        let mut other = seeded_rng(2024, 1);
        assert_ne!(other.next_u64(), PINNED[0]);
    }

    const PINNED: [u64; 3] = [
        9_302_566_278_486_500_040,
        3_303_158_521_086_055_408,
        7_917_249_687_029_353_809,
    ];
}
