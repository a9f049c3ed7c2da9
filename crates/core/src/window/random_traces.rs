//! Random traces in any order for the windows' unit tests: a small deterministic generator
//! and a clock that sometimes runs late.

/// A small deterministic generator.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// The ticks of a random trace in any order: a clock that moves 0–2 ticks per call, and a
/// share of the calls (0–3 in 8, drawn once) up to three windows late.
pub(crate) struct LateTicks {
    clock: u64,
    late_share: u64,
    window: u64,
}

impl LateTicks {
    pub(crate) fn new(random: &mut XorShift, window: u64) -> Self {
        Self {
            clock: 0,
            late_share: random.below(4),
            window,
        }
    }

    pub(crate) fn next(&mut self, random: &mut XorShift) -> u64 {
        self.clock += random.below(3);
        if random.below(8) < self.late_share {
            self.clock.saturating_sub(random.below(3 * self.window))
        } else {
            self.clock
        }
    }
}
