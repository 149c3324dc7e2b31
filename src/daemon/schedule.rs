//! When a target runs (SPEC §8.1): at a fixed offset inside its interval, derived from a hash of
//! its name, so that a thousand daily targets do not all start at midnight. Time is cut into
//! slots `[k·every + offset, (k+1)·every + offset)`; a target runs once per slot, and after
//! downtime only the current slot is due (one catch-up, not one per missed slot).

use sha2::{Digest, Sha256};

/// The target's offset inside its interval, in ms: stable across restarts and machines.
pub fn offset_ms(name: &str, every_ms: i64) -> i64 {
    let h = Sha256::digest(name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&h[..8]);
    let n = u64::from_be_bytes(first);
    let every = every_ms.max(1).unsigned_abs();
    i64::try_from(n % every).unwrap_or(0)
}

/// The start of the slot that holds `now_ms`.
pub fn slot_at(now_ms: i64, every_ms: i64, offset_ms: i64) -> i64 {
    let every = every_ms.max(1);
    (now_ms - offset_ms).div_euclid(every) * every + offset_ms
}

/// The start of the slot after the one that holds `now_ms`.
pub fn next_slot(now_ms: i64, every_ms: i64, offset_ms: i64) -> i64 {
    slot_at(now_ms, every_ms, offset_ms) + every_ms.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_tile_time_at_a_stable_offset() {
        let day = 86_400_000;
        let off = offset_ms("prod", day);
        assert_eq!(off, offset_ms("prod", day), "stable");
        assert!((0..day).contains(&off));
        let s = slot_at(1_800_000_000_000, day, off);
        assert!(s <= 1_800_000_000_000 && 1_800_000_000_000 < s + day);
        assert_eq!((s - off).rem_euclid(day), 0);
        assert_eq!(next_slot(1_800_000_000_000, day, off), s + day);
        assert_eq!(slot_at(s, day, off), s, "a slot starts at its own start");
        assert_eq!(slot_at(s - 1, day, off), s - day);
    }

    #[test]
    fn offsets_spread_targets_over_the_interval() {
        let day = 86_400_000;
        let hours: std::collections::BTreeSet<i64> = (0..1000)
            .map(|i| offset_ms(&format!("target-{i}"), day) / 3_600_000)
            .collect();
        assert_eq!(
            hours.len(),
            24,
            "1,000 daily targets start in every hour of the day"
        );
    }
}
