//! Divisors of the counts the parallelization search enumerates, from one factorization each.
//!
//! The search needs the divisors of many divisors of the same few counts (GPUs, batch, layers,
//! HB-domain size). Factoring each count once by trial division (`O(sqrt n)`) lets every later
//! divisor list and divisor count cost `O(divisors)` and `O(primes)`, so the search can bound its
//! work before doing any of it.

/// A count and its prime factorization.
pub(crate) struct Factored {
    /// `(prime, exponent)` pairs, primes ascending.
    primes: Vec<(u64, u32)>,
}

impl Factored {
    /// Factors `n` (0 and 1 have no prime factors).
    ///
    /// `O(sqrt n)` divisions at most: `i <= m / i` instead of `i * i <= m`, which wraps near
    /// 2^64.
    pub(crate) fn new(n: u64) -> Self {
        let mut primes = Vec::new();
        let mut m = n;
        let mut i = 2;
        while m > 1 && i <= m / i {
            let mut e = 0;
            while m % i == 0 {
                m /= i;
                e += 1;
            }
            if e > 0 {
                primes.push((i, e));
            }
            i += 1;
        }
        if m > 1 {
            primes.push((m, 1));
        }
        Self { primes }
    }

    /// The exponents of `m` over this count's primes; `m` must divide the count (a cofactor
    /// outside them is ignored: callers only ask about divisors).
    fn exponents(&self, mut m: u64) -> Vec<u32> {
        self.primes
            .iter()
            .map(|&(p, _)| {
                let mut e = 0;
                while m > 0 && m % p == 0 {
                    m /= p;
                    e += 1;
                }
                e
            })
            .collect()
    }

    /// How many divisors `m` has, for `m` dividing the count: `O(primes · log m)`.
    pub(crate) fn divisor_count(&self, m: u64) -> u64 {
        self.exponents(m)
            .iter()
            .fold(1u64, |acc, &e| acc.saturating_mul(u64::from(e) + 1))
    }

    /// The divisors of `m` up to `cap` (0 = no cap), ascending, for `m` dividing the count:
    /// `O(d(m) log d(m))`.
    pub(crate) fn divisors(&self, m: u64, cap: u64) -> Vec<u64> {
        let limit = if cap == 0 { u64::MAX } else { cap };
        let mut out = vec![1u64];
        for (&(p, _), &e) in self.primes.iter().zip(&self.exponents(m)) {
            let len = out.len();
            for i in 0..len {
                let mut x = out[i];
                for _ in 0..e {
                    // A divisor of `m` cannot overflow; the cap prunes the rest.
                    match x.checked_mul(p) {
                        Some(y) if y <= limit => {
                            x = y;
                            out.push(y);
                        }
                        _ => break,
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(n: u64, cap: u64) -> Vec<u64> {
        (1..=n)
            .filter(|d| n % d == 0 && (cap == 0 || *d <= cap))
            .collect()
    }

    #[test]
    fn divisors_of_divisors_match_brute_force() {
        for n in 1..=400u64 {
            let f = Factored::new(n);
            for m in (1..=n).filter(|m| n % m == 0) {
                for cap in [0, 1, 3, 10] {
                    assert_eq!(f.divisors(m, cap), brute(m, cap), "n={n} m={m} cap={cap}");
                }
                assert_eq!(f.divisor_count(m), brute(m, 0).len() as u64);
            }
        }
    }

    #[test]
    fn large_counts_factor_without_wrapping() {
        let f = Factored::new(u64::MAX);
        // 2^64 - 1 = 3 * 5 * 17 * 257 * 641 * 65537 * 6700417.
        assert_eq!(f.divisor_count(u64::MAX), 128);
        let f = Factored::new(1 << 40);
        assert_eq!(f.divisors(1 << 40, 0).len(), 41);
        assert_eq!(f.divisors(1 << 40, 1000).last(), Some(&512));
        assert_eq!(Factored::new(0).divisors(0, 0), vec![1]);
    }
}
