//! Memory follows active keys: idle keys go, by `remove_idle` and by the automatic sweep, and
//! live keys stay, against every variant.

use slidelimit::Options;

use crate::reference::{Config, Reference};
use crate::variants::{all_variants, for_each_variant, limit, no_auto_sweep};

const KEYS: u64 = 100_000;

#[test]
fn a_hundred_thousand_idle_keys_are_all_removed_by_remove_idle() {
    for_each_variant::<u64>(limit(2, 10), no_auto_sweep(), |name, limiter| {
        // Key i is hit at tick i: fresh from i + 10.
        for key in 0..KEYS {
            limiter.hit(&key, key);
        }
        assert_eq!(limiter.tracked_keys(), 100_000, "{name}");
        // Horizon 49_990 (lateness one window): keys 0..=49_980 are idle.
        assert_eq!(limiter.remove_idle(50_000), 49_981, "{name}");
        assert_eq!(limiter.tracked_keys(), 50_019, "{name}");
        assert_eq!(limiter.status(&49_981, 49_990).count, 1, "{name}: kept");
        assert_eq!(limiter.remove_idle(KEYS + 19), 50_019, "{name}");
        assert_eq!(limiter.tracked_keys(), 0, "{name}");
        assert_eq!(limiter.remove_idle(u64::MAX), 0, "{name}");
    });
}

#[test]
fn the_automatic_sweep_keeps_tracked_keys_bounded_as_new_keys_arrive() {
    // Default options: sweep floor 4096. Key i arrives at tick i and is never used again,
    // so at most about 2 windows of keys are live at any time.
    let config = Config {
        max_requests: 2,
        window_ticks: 10,
        lateness_ticks: None,
        sweep_floor_keys: 4096,
    };
    assert_eq!(config.options(), Options::default().key_shards(1));
    for limiter in all_variants::<u64>(config.limit(), config.options()) {
        let name = limiter.name();
        let mut model = Reference::new(config);
        let mut most = 0;
        for key in 0..KEYS {
            assert!(limiter.check_and_hit(&key, key), "{name}");
            assert!(model.check_and_hit(&key, key));
            let tracked = limiter.tracked_keys();
            assert_eq!(tracked, model.tracked_keys(), "{name}: after key {key}");
            most = most.max(tracked);
        }
        // At the floor the queue takes every key held, and each creation then looks at up to
        // eight of them: the map shrinks by up to seven keys per creation until it is caught
        // up.
        assert!(
            most <= 4096 + 4096 / 8,
            "{name}: {most} keys tracked at once"
        );
        // Below the floor a shard takes no step, and at it one creation in eight steps: the
        // map ends within a stride of the floor.
        assert!(limiter.tracked_keys() <= 4096 + 8, "{name}");
        // The keys still live at the end survived every sweep with their hits.
        for key in KEYS - 10..KEYS {
            assert_eq!(limiter.status(&key, KEYS - 1).count, 1, "{name}: key {key}");
        }
    }
}

#[test]
fn the_sweep_in_shard_steps_keeps_tracked_keys_bounded_and_variants_identical() {
    // Default options: 512 shards, each sweeping itself from its share of the 4096-key floor
    // (8 keys) on, one key-creating call in eight looking at up to 64 keys of its shard. Key i
    // arrives at tick i/4 and is never used again. Every variant steps alike, so they track
    // the same number of keys after every call.
    let limiters = all_variants::<u64>(crate::variants::limit(2, 10), Options::default());
    let mut most = 0;
    for key in 0..KEYS {
        let tracked: Vec<usize> = limiters
            .iter()
            .map(|limiter| {
                assert!(limiter.check_and_hit(&key, key / 4), "{}", limiter.name());
                limiter.tracked_keys()
            })
            .collect();
        assert!(
            tracked.iter().all(|&t| t == tracked[0]),
            "after key {key}: {tracked:?}"
        );
        most = most.max(tracked[0]);
    }
    // No shard holds much more than its share before it sweeps, nor sweeps below it.
    assert!(most <= 4096 + 512, "{most} keys tracked at once");
    assert!(most >= 4096 / 2, "shards swept below their floor: {most}");
    assert!(
        limiters[0].tracked_keys() < 4096 + 512,
        "{}",
        limiters[0].tracked_keys()
    );
}

#[test]
fn a_live_key_survives_a_sweep() {
    for_each_variant::<u32>(limit(2, 10), no_auto_sweep(), |name, limiter| {
        assert!(limiter.check_and_hit(&1, 100), "{name}");
        assert!(limiter.check_and_hit(&1, 105), "{name}");
        limiter.hit(&2, 50);
        // Horizon 100: key 2 (fresh from 60) goes, key 1 (fresh from 115) stays.
        assert_eq!(limiter.remove_idle(110), 1, "{name}");
        assert_eq!(limiter.tracked_keys(), 1, "{name}");
        assert!(
            !limiter.check_and_hit(&1, 109),
            "{name}: both hits still count"
        );
        assert_eq!(limiter.status(&1, 109).retry_after_ticks, 1, "{name}");
        assert!(limiter.check_and_hit(&1, 110), "{name}");
    });
}

#[test]
fn a_key_within_the_lateness_horizon_is_kept() {
    let options = no_auto_sweep().lateness_ticks(50);
    for_each_variant::<u32>(limit(1, 10), options, |name, limiter| {
        assert!(limiter.check_and_hit(&1, 100), "{name}"); // fresh from 110
        assert_eq!(
            limiter.remove_idle(159),
            0,
            "{name}: horizon 109: a call at 109 still sees the hit"
        );
        assert!(!limiter.check_and_hit(&1, 109), "{name}");
        assert_eq!(limiter.remove_idle(160), 1, "{name}: horizon 110");
        assert!(limiter.check_and_hit(&1, 110), "{name}");
    });
}

#[test]
fn key_rotation_tracks_at_most_twice_the_active_keys() {
    // A steady active population: 5 new keys per tick, each called once per window for 4
    // windows and then never again, so 4,000 keys are active (called within the last window)
    // at any time once the rotation is under way. The automatic sweep (1,024-key floor)
    // must keep the tracked keys within twice that, in every variant.
    const WINDOW: u64 = 200;
    const PER_TICK: u64 = 5;
    const LIFE_CALLS: u64 = 4;
    let active = PER_TICK * WINDOW * LIFE_CALLS;
    let options = Options::default().sweep_floor_keys(1024);
    for limiter in all_variants::<u64>(crate::variants::limit(2, WINDOW), options) {
        let name = limiter.name();
        let mut most = 0;
        for now in 0..20 * WINDOW {
            for call in 0..LIFE_CALLS {
                let Some(started) = now.checked_sub(call * WINDOW) else {
                    continue;
                };
                for j in 0..PER_TICK {
                    assert!(
                        limiter.check_and_hit(&(started * PER_TICK + j), now),
                        "{name}"
                    );
                }
            }
            if now >= LIFE_CALLS * WINDOW {
                most = most.max(limiter.tracked_keys());
            }
        }
        assert!(
            most <= 2 * active as usize,
            "{name}: {most} keys tracked for {active} active"
        );
        assert!(
            most > active as usize,
            "{name}: active keys were dropped: {most}"
        );
    }
}

#[test]
fn no_automatic_sweep_step_removes_more_than_one_shard() {
    // 20,000 keys, each idle one tick after its call: with the 512 default shards, a call
    // that sweeps removes only what one shard holds (about 1/512 of the keys), never the map.
    for limiter in all_variants::<u64>(crate::variants::limit(1, 1), Options::default()) {
        let name = limiter.name();
        let (mut tracked, mut most_removed) = (0usize, 0usize);
        for key in 0..20_000u64 {
            assert!(limiter.check_and_hit(&key, key * 2), "{name}");
            let after = limiter.tracked_keys();
            most_removed = most_removed.max((tracked + 1).saturating_sub(after));
            tracked = after;
        }
        assert!(most_removed > 0, "{name}: the sweep ran");
        assert!(
            most_removed <= 64,
            "{name}: one call removed {most_removed} keys"
        );
    }
}
