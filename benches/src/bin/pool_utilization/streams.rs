//! The request streams, from smooth to bursty: seeded, deterministic, ticks in milliseconds,
//! sorted. Rates are given relative to the pool's capacity `L / T`.

use serde::Serialize;
use slidelimit_trace::rng::SplitMix64;

/// One stream family; `generate` draws a trace of it from a seed.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Poisson arrivals at `load × L / T`.
    Poisson { load: f64 },
    /// Bursts of `size / 2 ..= 3·size / 2` requests (uniform, mean `size`: a fixed size would
    /// line up with some key thresholds and not others), spread uniformly over `width_ticks`;
    /// burst starts a Poisson process with mean gap `size / (load × L / T)` (so the mean rate
    /// is `load × L / T`).
    OnOff {
        size: u64,
        width_ticks: u64,
        load: f64,
    },
    /// Every `period_ticks`, `size` requests within `width_ticks`, over a Poisson trickle of
    /// `trickle_per_minute` requests per minute (the seed's "451 keys very rapidly, then one
    /// or two a minute").
    BurstTrickle {
        size: u64,
        width_ticks: u64,
        period_ticks: u64,
        trickle_per_minute: f64,
    },
    /// A Poisson process whose rate follows a day's sine: `load × L / T × (1 + a·sin(2πt/day))`.
    Diurnal { load: f64, amplitude: f64 },
}

/// A named stream.
#[derive(Clone, Debug, Serialize)]
pub struct Stream {
    pub name: &'static str,
    pub description: String,
    #[serde(skip)]
    pub shape: Shape,
}

const MINUTE: u64 = 60_000;
const DAY: u64 = 24 * 60 * MINUTE;

/// The streams of the study, for a pool of `total_uses` per `cooldown` ticks.
#[must_use]
pub fn streams(total_uses: u64, cooldown: u64) -> Vec<Stream> {
    let t_min = cooldown / MINUTE;
    let mut out = Vec::new();
    for (name, load) in [
        ("poisson-0.5x", 0.5),
        ("poisson-1x", 1.0),
        ("poisson-2x", 2.0),
    ] {
        out.push(Stream {
            name,
            description: format!(
                "Poisson arrivals at {load}x capacity ({:.0} per {t_min} min)",
                load * total_uses as f64
            ),
            shape: Shape::Poisson { load },
        });
    }
    for (name, size) in [
        ("bursts-50", 50),
        ("bursts-250", 250),
        ("bursts-500", 500),
        ("bursts-1000", 1000),
    ] {
        let gap_min = size as f64 / total_uses as f64 * t_min as f64;
        out.push(Stream {
            name,
            description: format!(
                "bursts of {}-{} requests (mean {size}) within 5 s, Poisson burst starts every {gap_min:.0} min on average (1x capacity)",
                size / 2,
                size * 3 / 2
            ),
            shape: Shape::OnOff {
                size,
                width_ticks: 5_000,
                load: 1.0,
            },
        });
    }
    for (name, period_ticks) in [
        ("burst-trickle-60m", 60 * MINUTE),
        ("burst-trickle-11m", 11 * MINUTE),
    ] {
        out.push(Stream {
            name,
            description: format!(
                "451 requests within 2 s every {} min, over a trickle of 1.5 per minute (Poisson)",
                period_ticks / MINUTE
            ),
            shape: Shape::BurstTrickle {
                size: 451,
                width_ticks: 2_000,
                period_ticks,
                trickle_per_minute: 1.5,
            },
        });
    }
    out.push(Stream {
        name: "diurnal",
        description: "Poisson, rate 1x capacity x (1 + 0.9 sin(2 pi t / 24 h)): 0.1x at night, 1.9x at the peak".to_owned(),
        shape: Shape::Diurnal {
            load: 1.0,
            amplitude: 0.9,
        },
    });
    out
}

/// Exponential gap with mean `1 / rate` (rate per tick).
fn exponential(rng: &mut SplitMix64, rate: f64) -> f64 {
    -(1.0 - rng.next_f64()).ln() / rate
}

/// Poisson arrival ticks in `[0, duration)` at `rate` per tick, each kept with probability
/// `keep(t)` (thinning, for a time-varying rate below `rate`).
fn poisson(
    rng: &mut SplitMix64,
    rate: f64,
    duration: u64,
    mut keep: impl FnMut(f64) -> f64,
    out: &mut Vec<u64>,
) {
    let mut t = exponential(rng, rate);
    while t < duration as f64 {
        if rng.next_f64() < keep(t) {
            out.push(t as u64);
        }
        t += exponential(rng, rate);
    }
}

/// A trace of `shape` over `duration` ticks, for a pool of `total_uses` per `cooldown`.
#[must_use]
pub fn generate(
    shape: Shape,
    seed: u64,
    duration: u64,
    total_uses: u64,
    cooldown: u64,
) -> Vec<u64> {
    let capacity = total_uses as f64 / cooldown as f64; // uses per tick
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    match shape {
        Shape::Poisson { load } => poisson(&mut rng, load * capacity, duration, |_| 1.0, &mut out),
        Shape::OnOff {
            size,
            width_ticks,
            load,
        } => {
            let burst_rate = load * capacity / size as f64;
            let mut start = exponential(&mut rng, burst_rate);
            while start < duration as f64 {
                let this_size = size / 2 + rng.below(size + 1);
                for _ in 0..this_size {
                    out.push(start as u64 + rng.below(width_ticks));
                }
                start += exponential(&mut rng, burst_rate);
            }
        }
        Shape::BurstTrickle {
            size,
            width_ticks,
            period_ticks,
            trickle_per_minute,
        } => {
            let mut start = 0;
            while start < duration {
                out.extend((0..size).map(|_| start + rng.below(width_ticks)));
                start += period_ticks;
            }
            let rate = trickle_per_minute / MINUTE as f64;
            poisson(&mut rng, rate, duration, |_| 1.0, &mut out);
        }
        Shape::Diurnal { load, amplitude } => {
            let peak = load * capacity * (1.0 + amplitude);
            let day = DAY as f64;
            poisson(
                &mut rng,
                peak,
                duration,
                |t| (1.0 + amplitude * (std::f64::consts::TAU * t / day).sin()) / (1.0 + amplitude),
                &mut out,
            );
        }
    }
    out.retain(|&t| t < duration);
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::{generate, streams};

    #[test]
    fn streams_are_sorted_deterministic_and_near_their_mean_rate() {
        let (total, cooldown, duration) = (500, 600_000, 24 * 3_600_000);
        for stream in streams(total, cooldown) {
            let a = generate(stream.shape, 7, duration, total, cooldown);
            assert_eq!(a, generate(stream.shape, 7, duration, total, cooldown));
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "{}", stream.name);
            assert!(a.last().is_some_and(|&t| t < duration));
            // 1x capacity over a day is 72,000 requests; every stream is within 0.05x-2.5x.
            let load = a.len() as f64 / 72_000.0;
            assert!((0.05..2.5).contains(&load), "{}: {load}", stream.name);
        }
    }
}
