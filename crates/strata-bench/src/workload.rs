//! What each client asks for: key numbers (patterns S, R, G, P, Z), key
//! names (`<prefix><decimal>`), the SET/GET interleave, SET values and the
//! `--verify` check. Pure computation, no I/O.
//!
//! Invariants: every generated key number lies in `[min, max]`; with
//! `--verify` a key's value depends only on the key's bytes and the data
//! size, so any client (or run) can check any other's writes.

use std::io::Write as _;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::Rng;

use crate::options::{KeyPattern, Options, Ratio};

use crate::dist::standard_normal;
pub use crate::dist::{Permutation, Zipf};

/// Which command a request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// SET key value.
    Set,
    /// GET key.
    Get,
}

/// Inclusive key-number range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// Smallest key number.
    pub min: u64,
    /// Largest key number (inclusive).
    pub max: u64,
}

impl KeyRange {
    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.max - self.min + 1
    }

    /// Always false (a range holds at least one key).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Client `index` of `clients`' slice for the P pattern and `allkeys`:
    /// slices are disjoint, contiguous and cover the range. A slice is empty
    /// (None) only when there are more clients than keys.
    pub fn slice(&self, index: usize, clients: usize) -> Option<KeyRange> {
        let n = u128::from(self.len());
        let c = clients.max(1) as u128;
        let i = index as u128;
        let lo = n * i / c;
        let hi = n * (i + 1) / c;
        if hi <= lo {
            return None;
        }
        Some(KeyRange {
            min: self.min + lo as u64,
            max: self.min + (hi - 1) as u64,
        })
    }
}

/// Produces key numbers for one side (SET or GET) of one client.
#[derive(Clone, Debug)]
pub struct KeyGen {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Sequential {
        range: KeyRange,
        next: u64,
    },
    Random {
        range: KeyRange,
    },
    Gaussian {
        range: KeyRange,
        median: f64,
        stddev: f64,
    },
    Zipf {
        range: KeyRange,
        zipf: Arc<Zipf>,
        perm: Permutation,
    },
}

impl KeyGen {
    /// S: `range` in order from its start, wrapping.
    pub fn sequential(range: KeyRange) -> KeyGen {
        KeyGen {
            kind: Kind::Sequential {
                range,
                next: range.min,
            },
        }
    }

    /// R: uniform over `range`.
    pub fn random(range: KeyRange) -> KeyGen {
        KeyGen {
            kind: Kind::Random { range },
        }
    }

    /// G: normal(median, stddev) truncated to `range`.
    pub fn gaussian(range: KeyRange, median: f64, stddev: f64) -> KeyGen {
        KeyGen {
            kind: Kind::Gaussian {
                range,
                median,
                stddev,
            },
        }
    }

    /// P: client `index` of `clients` walks its own slice sequentially
    /// (the whole range when there are more clients than keys).
    pub fn parallel(range: KeyRange, index: usize, clients: usize) -> KeyGen {
        let slice = range.slice(index, clients).unwrap_or_else(|| KeyRange {
            min: range.min + (index as u64 % range.len()),
            max: range.min + (index as u64 % range.len()),
        });
        KeyGen::sequential(slice)
    }

    /// Z: Zipf-Mandelbrot ranks mapped through the fixed permutation.
    pub fn zipf(range: KeyRange, zipf: Arc<Zipf>) -> KeyGen {
        KeyGen {
            kind: Kind::Zipf {
                range,
                zipf,
                perm: Permutation::new(range.len()),
            },
        }
    }

    /// Builds the generator `pattern` for client `index` of `clients`.
    pub fn for_pattern(
        pattern: KeyPattern,
        opts: &Options,
        zipf: &Arc<Zipf>,
        index: usize,
        clients: usize,
    ) -> KeyGen {
        let range = KeyRange {
            min: opts.key_minimum,
            max: opts.key_maximum,
        };
        match pattern {
            KeyPattern::Sequential => KeyGen::sequential(range),
            KeyPattern::Random => KeyGen::random(range),
            KeyPattern::Gaussian => KeyGen::gaussian(range, opts.median(), opts.stddev()),
            KeyPattern::Parallel => KeyGen::parallel(range, index, clients),
            KeyPattern::Zipf => KeyGen::zipf(range, zipf.clone()),
        }
    }

    /// The next key number.
    pub fn next_key(&mut self, rng: &mut impl Rng) -> u64 {
        match &mut self.kind {
            Kind::Sequential { range, next } => {
                let k = *next;
                *next = if k >= range.max { range.min } else { k + 1 };
                k
            }
            Kind::Random { range } => rng.gen_range(range.min..=range.max),
            Kind::Gaussian {
                range,
                median,
                stddev,
            } => {
                let (lo, hi) = (range.min as f64, range.max as f64);
                for _ in 0..64 {
                    let v = (*median + *stddev * standard_normal(rng)).round();
                    if v >= lo && v <= hi {
                        return v as u64;
                    }
                }
                median.round().clamp(lo, hi) as u64
            }
            Kind::Zipf { range, zipf, perm } => {
                let rank = zipf.sample_rank(rng);
                range.min + perm.apply(rank - 1)
            }
        }
    }
}

/// Chooses SET or GET in memtier's fixed cycle: `set` SETs then `get` GETs.
#[derive(Clone, Debug)]
pub struct RatioCycle {
    ratio: Ratio,
    pos: u64,
}

impl RatioCycle {
    /// A cycle starting with the SETs.
    pub fn new(ratio: Ratio) -> RatioCycle {
        RatioCycle { ratio, pos: 0 }
    }

    /// The next command.
    pub fn next_cmd(&mut self) -> Cmd {
        let period = u64::from(self.ratio.set) + u64::from(self.ratio.get);
        let p = self.pos % period;
        self.pos += 1;
        if p < u64::from(self.ratio.set) {
            Cmd::Set
        } else {
            Cmd::Get
        }
    }
}

/// Writes `<prefix><n>` (decimal) into `out`, replacing its contents.
pub fn key_name(prefix: &str, n: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(prefix.as_bytes());
    let _ = write!(out, "{n}");
}

/// FNV-1a 64 of the key, finished with a SplitMix64 mix.
fn key_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The `--verify` value of `key`: its 64-bit hash (little-endian) repeated
/// to `size` bytes. Replaces `out`'s contents.
pub fn value_for_key(key: &[u8], size: usize, out: &mut Vec<u8>) {
    let h = key_hash(key).to_le_bytes();
    out.clear();
    out.extend(h.iter().cycle().take(size));
}

/// True if `got` is exactly `key`'s `--verify` value of `size` bytes.
pub fn verify_value(key: &[u8], size: usize, got: &[u8]) -> bool {
    if got.len() != size {
        return false;
    }
    let h = key_hash(key).to_le_bytes();
    got.chunks(8).all(|c| c == &h[..c.len()])
}

/// The constant value SET without `--verify` (memtier-like filler).
pub fn filler_value(size: usize) -> Vec<u8> {
    b"0123456789abcdefghijklmnopqrstuvwxyz"
        .iter()
        .cycle()
        .take(size)
        .copied()
        .collect()
}

/// Seed of client `index`: the base seed, or a distinct one per client.
pub fn client_seed(base: u64, index: usize, distinct: bool) -> u64 {
    if distinct {
        key_hash(&(base ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes())
    } else {
        base
    }
}

/// Deterministic RNG for tests and clients.
pub fn rng_from_seed(seed: u64) -> StdRng {
    use rand::SeedableRng;
    StdRng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: usize = 200_000;

    fn mean_sd(v: &[u64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / n;
        (m, var.sqrt())
    }

    #[test]
    fn sequential_covers_range_in_order_and_wraps() {
        let mut g = KeyGen::sequential(KeyRange { min: 5, max: 104 });
        let mut rng = rng_from_seed(1);
        let got: Vec<u64> = (0..250).map(|_| g.next_key(&mut rng)).collect();
        let want: Vec<u64> = (5..=104).chain(5..=104).chain(5..=54).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn random_is_uniform_within_range() {
        let range = KeyRange {
            min: 1000,
            max: 100_999,
        };
        let mut g = KeyGen::random(range);
        let mut rng = rng_from_seed(2);
        let v: Vec<u64> = (0..SAMPLES).map(|_| g.next_key(&mut rng)).collect();
        assert!(v.iter().all(|&k| (1000..=100_999).contains(&k)));
        let (m, sd) = mean_sd(&v);
        assert!((m - 50_999.5).abs() < 300.0, "mean {m}");
        // Uniform sd = len / sqrt(12).
        assert!((sd - 100_000.0 / 12f64.sqrt()).abs() < 300.0, "sd {sd}");
        let (lo, hi) = (*v.iter().min().unwrap(), *v.iter().max().unwrap());
        assert!(lo < 1100 && hi > 100_899, "{lo} {hi}");
    }

    #[test]
    fn gaussian_matches_median_and_stddev() {
        let range = KeyRange {
            min: 1,
            max: 8_000_000,
        };
        let mut g = KeyGen::gaussian(range, 4_000_000.0, 1_000_000.0);
        let mut rng = rng_from_seed(3);
        let v: Vec<u64> = (0..SAMPLES).map(|_| g.next_key(&mut rng)).collect();
        assert!(v.iter().all(|&k| (1..=8_000_000).contains(&k)));
        let (m, sd) = mean_sd(&v);
        assert!((m - 4_000_000.0).abs() < 10_000.0, "mean {m}");
        assert!((sd - 1_000_000.0).abs() / 1_000_000.0 < 0.02, "sd {sd}");
    }

    #[test]
    fn gaussian_is_truncated_to_range() {
        let range = KeyRange { min: 0, max: 99 };
        let mut g = KeyGen::gaussian(range, 0.0, 1000.0);
        let mut rng = rng_from_seed(4);
        for _ in 0..10_000 {
            assert!(g.next_key(&mut rng) <= 99);
        }
    }

    #[test]
    fn parallel_slices_are_disjoint_and_cover_range() {
        let range = KeyRange {
            min: 10,
            max: 10_009,
        };
        let clients = 7;
        let mut seen = vec![0u32; 10_000];
        let mut rng = rng_from_seed(5);
        for i in 0..clients {
            let slice = range.slice(i, clients).unwrap();
            let mut g = KeyGen::parallel(range, i, clients);
            let first = g.next_key(&mut rng);
            assert_eq!(first, slice.min);
            seen[(first - 10) as usize] += 1;
            for _ in 1..slice.len() {
                let k = g.next_key(&mut rng);
                assert!(k >= slice.min && k <= slice.max);
                seen[(k - 10) as usize] += 1;
            }
            // Wraps back to the start of its own slice.
            assert_eq!(g.next_key(&mut rng), slice.min);
        }
        assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn slices_with_more_clients_than_keys() {
        let r = KeyRange { min: 0, max: 2 };
        let got: Vec<_> = (0..5).filter_map(|i| r.slice(i, 5)).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got.iter().map(|s| s.len()).sum::<u64>(), 3);
    }

    fn zipf_check(n: u64, s: f64, beta: f64, seed: u64) {
        let z = Zipf::new(n, s, beta);
        let mut rng = rng_from_seed(seed);
        let head = 10u64;
        let mut counts = vec![0u64; head as usize + 1];
        let mut in_head = 0u64;
        for _ in 0..SAMPLES {
            let k = z.sample_rank(&mut rng);
            assert!((1..=n).contains(&k));
            if k <= head {
                counts[k as usize] += 1;
                in_head += 1;
            }
        }
        let ratio = counts[1] as f64 / counts[2] as f64;
        let want = ((2.0 + beta) / (1.0 + beta)).powf(s);
        assert!(
            (ratio - want).abs() / want < 0.05,
            "P1/P2 {ratio} want {want}"
        );
        let want_head: f64 = (1..=head).map(|k| z.probability(k)).sum();
        let got_head = in_head as f64 / SAMPLES as f64;
        assert!(
            (got_head - want_head).abs() < 0.01,
            "head share {got_head} want {want_head}"
        );
        let p1 = counts[1] as f64 / SAMPLES as f64;
        assert!((p1 - z.probability(1)).abs() < 0.006, "p1 {p1}");
    }

    #[test]
    fn zipf_default_matches_formula() {
        zipf_check(100_000, 0.99, 0.0, 6);
    }

    #[test]
    fn zipf_mandelbrot_matches_formula() {
        zipf_check(100_000, 1.2, 2.0, 7);
        zipf_check(1_000, 1.0, 0.5, 8);
        zipf_check(50, 0.5, 0.0, 9);
    }

    #[test]
    fn permutation_is_a_bijection_and_spreads_hot_keys() {
        for n in [1u64, 2, 3, 10, 97, 1000, 4096] {
            let p = Permutation::new(n);
            let mut seen = vec![false; n as usize];
            for r in 0..n {
                let k = p.apply(r);
                assert!(!seen[k as usize]);
                seen[k as usize] = true;
            }
        }
        let p = Permutation::new(1_000_000);
        assert!(p.apply(0).abs_diff(p.apply(1)) > 1000);
    }

    #[test]
    fn zipf_keys_stay_in_range() {
        let range = KeyRange { min: 7, max: 1006 };
        let mut g = KeyGen::zipf(range, Arc::new(Zipf::new(range.len(), 0.99, 0.0)));
        let mut rng = rng_from_seed(10);
        for _ in 0..10_000 {
            let k = g.next_key(&mut rng);
            assert!((7..=1006).contains(&k));
        }
    }

    #[test]
    fn ratio_cycle_is_memtiers() {
        let mut c = RatioCycle::new(Ratio { set: 1, get: 3 });
        let got: Vec<_> = (0..8).map(|_| c.next_cmd()).collect();
        use Cmd::*;
        assert_eq!(got, [Set, Get, Get, Get, Set, Get, Get, Get]);
        let mut c = RatioCycle::new(Ratio { set: 0, get: 1 });
        assert!((0..5).all(|_| c.next_cmd() == Get));
    }

    #[test]
    fn keys_and_values() {
        let mut k = Vec::new();
        key_name("memtier-", 1234, &mut k);
        assert_eq!(k, b"memtier-1234");
        let mut v = Vec::new();
        value_for_key(&k, 20, &mut v);
        assert_eq!(v.len(), 20);
        assert_eq!(v[..8], v[8..16]);
        assert!(verify_value(&k, 20, &v));
        let mut bad = v.clone();
        bad[19] ^= 1;
        assert!(!verify_value(&k, 20, &bad));
        assert!(!verify_value(&k, 20, &v[..19]));
        assert!(!verify_value(b"memtier-1235", 20, &v));
        assert_eq!(filler_value(5), b"01234");
        assert_ne!(client_seed(1, 0, true), client_seed(1, 1, true));
        assert_eq!(client_seed(1, 0, false), client_seed(1, 1, false));
    }
}
