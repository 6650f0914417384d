//! The random distributions key patterns draw from: Zipf-Mandelbrot
//! (pattern Z), a random permutation of a key range (pattern P), and the
//! standard normal (pattern G). Pure computation.

use rand::Rng;

/// Zipf-Mandelbrot sampler over ranks `1..=n`: P(k) ∝ 1/(k+beta)^s.
///
/// Exact rejection-inversion (Hörmann & Derflinger 1996) with
/// h(x) = (x+beta)^-s; O(1) memory and expected O(1) time.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    s: f64,
    beta: f64,
    h_x1: f64,
    h_n: f64,
}

impl Zipf {
    /// A sampler over `n >= 1` ranks with exponent `s >= 0` and shift
    /// `beta >= 0`.
    pub fn new(n: u64, s: f64, beta: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1),
            s,
            beta,
            h_x1: 0.0,
            h_n: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - z.h(1.0);
        z.h_n = z.h_integral(z.n as f64 + 0.5);
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * (x + self.beta).ln()).exp()
    }

    /// ∫ h = ((x+beta)^(1-s) - 1) / (1-s), stable near s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let l = (x + self.beta).ln();
        helper_expm1_div((1.0 - self.s) * l) * l
    }

    fn h_integral_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (helper_ln1p_div(t) * y).exp() - self.beta
    }

    /// One rank in `1..=n` (1 is the most popular).
    pub fn sample_rank(&self, rng: &mut impl Rng) -> u64 {
        loop {
            let u = self.h_n + rng.gen::<f64>() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n as f64) as u64;
            if u >= self.h_integral(k as f64 + 0.5) - self.h(k as f64) {
                return k;
            }
        }
    }

    /// Exact probability of rank `k` (for tests and reports): O(n).
    pub fn probability(&self, k: u64) -> f64 {
        let total: f64 = (1..=self.n).map(|i| self.h(i as f64)).sum();
        self.h(k as f64) / total
    }
}

/// expm1(x)/x, 1 at 0.
fn helper_expm1_div(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x / 2.0 * (1.0 + x / 3.0)
    }
}

/// ln1p(x)/x, 1 at 0.
fn helper_ln1p_div(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// Fixed bijection from rank offsets `0..n` onto key offsets `0..n`:
/// `(a * r + c) mod n` with `a` coprime to `n` near `n / φ`, so consecutive
/// (hot) ranks land far apart. Identical in every client and run.
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    n: u64,
    a: u64,
    c: u64,
}

impl Permutation {
    /// The permutation of `0..n`.
    pub fn new(n: u64) -> Permutation {
        let n = n.max(1);
        let mut a = ((n as f64 * 0.618_033_988_749_895) as u64).max(1);
        while gcd(a, n) != 1 {
            a += 1;
        }
        Permutation {
            n,
            a: a % n,
            c: n / 3,
        }
    }

    /// Image of `r` (taken mod n).
    pub fn apply(&self, r: u64) -> u64 {
        if self.n == 1 {
            return 0;
        }
        ((u128::from(self.a) * u128::from(r % self.n) + u128::from(self.c)) % u128::from(self.n))
            as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One standard normal variate (Box-Muller).
pub(crate) fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
