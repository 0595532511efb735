//! A fast hasher for the exact searches' memo tables, whose keys are short slices of machine
//! words built by the search itself.
//!
//! The standard library's SipHash resists collision attacks at about ten times the cost; here
//! a collision can only make a lookup slower (the tables compare whole keys), and every search
//! is bounded by its step budget and the layer's deadline, so the cheaper mix is safe. Under
//! `perf`, SipHash was a third of the 2-slot search's time (issue 20).

use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of the mix: an odd constant with well-spread bits (the one of the Fx hash
/// used by rustc; a fact, not code).
const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// Word-at-a-time multiply-rotate hashing (`h = (rotl(h, 5) ^ word) * K`).
#[derive(Default, Clone, Copy)]
pub(crate) struct WordHasher(u64);

impl WordHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.mix(x);
    }

    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.mix(x as u64);
    }
}

/// [`std::collections::HashMap`]'s hasher parameter for [`WordHasher`].
pub(crate) type WordHash = BuildHasherDefault<WordHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Keys that differ in one word, in their length or only in order hash apart, and a map
    /// over them finds exactly what was put in.
    #[test]
    fn distinct_keys_stay_distinct() {
        let mut map: HashMap<Vec<i64>, usize, WordHash> = HashMap::default();
        let mut keys = Vec::new();
        for a in -3..3i64 {
            for b in -3..3i64 {
                keys.push(vec![a, b]);
                keys.push(vec![a, b, 0]);
            }
        }
        for (i, k) in keys.iter().enumerate() {
            map.insert(k.clone(), i);
        }
        assert_eq!(map.len(), keys.len());
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.get(&k[..]), Some(&i));
        }
        assert_eq!(map.get(&[7i64, 7][..]), None);
        let hash = |k: &[i64]| {
            use std::hash::BuildHasher;
            WordHash::default().hash_one(k)
        };
        assert_ne!(hash(&[1, 2]), hash(&[2, 1]));
        assert_ne!(hash(&[1, 2]), hash(&[1, 2, 0]));
    }
}
