//! Zipf-distributed ranks by rejection-inversion (Hörmann and Derflinger, 1996): O(1) per
//! sample and no table, so a million-key distribution costs nothing to set up.
//!
//! Rank `k` in `1..=n` has probability proportional to `k^-s`. The sampler inverts the
//! integral `H` of the continuous hat `h(x) = x^-s` and accepts a candidate when it falls
//! under the histogram of the discrete probabilities; almost every draw is accepted at once.

use crate::rng::SplitMix64;

/// Why a Zipf law cannot be built.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum ZipfError {
    /// There must be at least one rank to draw.
    #[error("a Zipf law needs at least one rank")]
    NoRanks,
    /// The exponent must be positive and finite.
    #[error("a Zipf exponent must be positive and finite, not {0}")]
    Exponent(f64),
}

/// A Zipf(`n`, `s`) sampler over ranks `1..=n`.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    squeeze: f64,
}

impl Zipf {
    /// A sampler over `1..=n` with exponent `s`.
    ///
    /// # Errors
    /// [`ZipfError::NoRanks`] if `n == 0`; [`ZipfError::Exponent`] if `s` is not positive
    /// and finite.
    pub fn new(n: u64, s: f64) -> Result<Self, ZipfError> {
        if n == 0 {
            return Err(ZipfError::NoRanks);
        }
        if !(s > 0.0 && s.is_finite()) {
            return Err(ZipfError::Exponent(s));
        }
        let mut zipf = Self {
            n: n as f64,
            s,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            squeeze: 0.0,
        };
        zipf.h_integral_x1 = zipf.h_integral(1.5) - 1.0;
        zipf.h_integral_n = zipf.h_integral(zipf.n + 0.5);
        zipf.squeeze = 2.0 - zipf.h_integral_inv(zipf.h_integral(2.5) - zipf.h(2.0));
        Ok(zipf)
    }

    /// One rank in `1..=n`.
    #[inline]
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    /// The hat: `x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// `H(x) = (x^(1-s) - 1) / (1 - s)`, which is `ln x` at `s = 1`; written through
    /// `expm1(y) / y` so that it stays accurate for `s` near 1.
    fn h_integral(&self, x: f64) -> f64 {
        let ln_x = x.ln();
        expm1_over_y((1.0 - self.s) * ln_x) * ln_x
    }

    /// The inverse of [`Self::h_integral`].
    fn h_integral_inv(&self, u: f64) -> f64 {
        let t = (u * (1.0 - self.s)).max(-1.0);
        (ln1p_over_y(t) * u).exp()
    }
}

/// `expm1(y) / y`, continuous at 0.
fn expm1_over_y(y: f64) -> f64 {
    if y.abs() > 1e-8 {
        y.exp_m1() / y
    } else {
        1.0 + y / 2.0 * (1.0 + y / 3.0)
    }
}

/// `ln1p(y) / y`, continuous at 0.
fn ln1p_over_y(y: f64) -> f64 {
    if y.abs() > 1e-8 {
        y.ln_1p() / y
    } else {
        1.0 - y / 2.0 * (1.0 - 2.0 * y / 3.0)
    }
}

#[cfg(test)]
mod tests {
    use super::{Zipf, ZipfError};
    use crate::rng::SplitMix64;

    fn check_head(n: u64, s: f64) {
        let zipf = Zipf::new(n, s).unwrap();
        let mut rng = SplitMix64::new(42);
        let draws = 400_000;
        let mut counts = [0u64; 4];
        for _ in 0..draws {
            let k = zipf.sample(&mut rng);
            assert!((1..=n).contains(&k));
            if k <= 3 {
                counts[k as usize] += 1;
            }
        }
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        for k in 1..=3u64 {
            let expected = (k as f64).powf(-s) / norm;
            let got = counts[k as usize] as f64 / f64::from(draws);
            assert!(
                (got - expected).abs() < 0.02 * expected + 0.001,
                "n={n} s={s} rank {k}: got {got}, expected {expected}"
            );
        }
    }

    #[test]
    fn matches_the_exact_probabilities_of_the_head() {
        check_head(1000, 1.0);
        check_head(1000, 1.2);
        check_head(50, 0.7);
    }

    #[test]
    fn a_single_rank_is_always_drawn() {
        let zipf = Zipf::new(1, 1.0).unwrap();
        let mut rng = SplitMix64::new(1);
        assert!((0..100).all(|_| zipf.sample(&mut rng) == 1));
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        assert_eq!(Zipf::new(0, 1.0).err(), Some(ZipfError::NoRanks));
        assert!(matches!(Zipf::new(5, 0.0), Err(ZipfError::Exponent(_))));
        assert!(matches!(
            Zipf::new(5, f64::NAN),
            Err(ZipfError::Exponent(_))
        ));
        assert!(matches!(
            Zipf::new(5, f64::INFINITY),
            Err(ZipfError::Exponent(_))
        ));
    }
}
