//! The rate limit of a whole process, keyed by host (SPEC §1.4, §7): every scan of one
//! [`crate::engine::Scanner`] waits here, so scans of one host together never exceed its rate.
//! Burst of one: requests to a host are spaced evenly, never bunched.
//!
//! The spacing of a host is that of the *lowest* rate among the process's rate and the rates
//! of the scans that are using the host now: two scans of one host at 5 and 10 requests per
//! second together send at most 5 a second to it (the lower rate is what its owner asked for);
//! once the slower scan ends, the other goes back to its own rate. A scan holds a [`Lease`]
//! (its rate); the hosts it has sent to count its rate until the lease is dropped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::{MAX_RATE, RateError};

/// One host's schedule.
#[derive(Debug, Default)]
struct Host {
    /// When the last request to it was let through (or is scheduled to be).
    last: Option<Instant>,
    /// The rates of the scans using it now, with how many scans ask for each.
    rates: BTreeMap<u32, usize>,
}

/// The process's per-host limiter. See the module documentation.
pub struct Politeness {
    rate: u32,
    hosts: Mutex<HashMap<String, Host>>,
}

fn checked(rate: u32) -> Result<u32, RateError> {
    if (1..=MAX_RATE).contains(&rate) {
        Ok(rate)
    } else {
        Err(RateError(rate))
    }
}

fn interval(rate: u32) -> Duration {
    Duration::from_secs(1) / rate.max(1)
}

impl Politeness {
    pub fn new(rate: u32) -> Result<Politeness, RateError> {
        Ok(Politeness {
            rate: checked(rate)?,
            hosts: Mutex::new(HashMap::new()),
        })
    }

    /// Requests per second per host, at most (a scan asking for less lowers it for its hosts).
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// One scan's hold on the limiter at `rate` (1..=[`MAX_RATE`]): while it lives, every host
    /// it has sent to is spaced at no more than `rate`, for every scan.
    pub fn lease(self: &Arc<Self>, rate: u32) -> Result<Lease, RateError> {
        Ok(Lease {
            politeness: self.clone(),
            rate: checked(rate)?,
            keys: Mutex::new(HashSet::new()),
        })
    }

    /// The rate `key` is spaced at now: the lowest of the process's and of its scans'.
    pub fn rate_of(&self, key: &str) -> u32 {
        let Ok(hosts) = self.hosts.lock() else {
            return 1;
        };
        hosts
            .get(key)
            .and_then(|h| h.rates.keys().next().copied())
            .map_or(self.rate, |r| r.min(self.rate))
    }

    /// Takes the slot of every key in `keys` at once, now, if all their spacings allow (the
    /// time since the last request let through on each is at least the interval of the rate in
    /// force there); otherwise the instant to try again (the latest of their next slots). The
    /// slots are taken when the request actually goes, all together: booked one key after the
    /// other, or ahead of time, a request that waited on its second key (or a task that woke
    /// late on a busy machine) would leave the first key's slot earlier than its send, and the
    /// next request would follow it closer than the rate allows.
    fn take(&self, keys: &[String]) -> Result<(), Instant> {
        let now = Instant::now();
        // A panic elsewhere poisoned the table: its instants are still right.
        let mut hosts = self
            .hosts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = now;
        for key in keys {
            let host = hosts.entry(key.clone()).or_default();
            let rate = host
                .rates
                .keys()
                .next()
                .copied()
                .map_or(self.rate, |r| r.min(self.rate));
            // Spaced from the previous request at the rate in force now (a slower scan that
            // joins slows the very next request).
            if let Some(last) = host.last {
                next = next.max(last + interval(rate));
            }
        }
        if next > now {
            return Err(next);
        }
        for key in keys {
            hosts.entry(key.clone()).or_default().last = Some(now);
        }
        Ok(())
    }

    fn join(&self, key: &str, rate: u32) {
        if let Ok(mut hosts) = self.hosts.lock() {
            *hosts
                .entry(key.to_string())
                .or_default()
                .rates
                .entry(rate)
                .or_default() += 1;
        }
    }

    fn leave(&self, key: &str, rate: u32) {
        if let Ok(mut hosts) = self.hosts.lock()
            && let Some(h) = hosts.get_mut(key)
            && let Some(n) = h.rates.get_mut(&rate)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                h.rates.remove(&rate);
            }
        }
    }

    /// Forgets hosts no scan uses whose last request is long enough ago to have no effect on
    /// the next (a daemon meets many hosts).
    pub fn forget_idle(&self) {
        let now = Instant::now();
        if let Ok(mut hosts) = self.hosts.lock() {
            hosts.retain(|_, h| {
                !h.rates.is_empty() || h.last.is_some_and(|l| l + interval(1) > now)
            });
        }
    }

    /// Hosts remembered (for tests of [`Politeness::forget_idle`]).
    pub fn hosts(&self) -> usize {
        self.hosts.lock().map(|h| h.len()).unwrap_or(0)
    }
}

impl std::fmt::Debug for Politeness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Politeness")
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

/// One scan's hold on a [`Politeness`]: its rate counts for the hosts it sent to until it is
/// dropped.
pub struct Lease {
    politeness: Arc<Politeness>,
    rate: u32,
    keys: Mutex<HashSet<String>>,
}

impl Lease {
    /// The scan's rate.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Waits for a slot of every key (the host name and each address it was pinned to, so that
    /// two names of one server, or a name and its IP literal, share a rate).
    pub async fn wait(&self, keys: &[String]) {
        for k in keys {
            let new = self.keys.lock().is_ok_and(|mut ks| ks.insert(k.clone()));
            if new {
                self.politeness.join(k, self.rate);
            }
        }
        while let Err(at) = self.politeness.take(keys) {
            tokio::time::sleep_until(at).await;
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Ok(keys) = self.keys.lock() {
            for k in keys.iter() {
                self.politeness.leave(k, self.rate);
            }
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("rate", &self.rate).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worst one-second window of `times`.
    fn worst_second(times: &mut [Instant]) -> usize {
        times.sort();
        (0..times.len())
            .map(|i| {
                times[i..]
                    .iter()
                    .take_while(|t| t.duration_since(times[i]) < Duration::from_secs(1))
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    /// The shortest gap between two of `times`.
    /// The shortest time five requests in a row took. One gap between two also holds a late
    /// wake-up of the first (on a loaded machine a request can be let go 50 ms late and the
    /// next on time), so the spacing is read over four gaps at a time.
    fn min_gap(times: &mut [Instant]) -> Duration {
        times.sort();
        times
            .windows(5)
            .map(|w| w[4].duration_since(w[0]))
            .min()
            .unwrap_or(Duration::MAX)
    }

    #[tokio::test]
    async fn two_scans_of_one_host_share_the_lower_rate_and_the_faster_recovers_alone() {
        let p = Arc::new(Politeness::new(MAX_RATE).expect("rate"));
        let key = vec!["mcp.example".to_string()];
        let slow = p.lease(5).expect("5");
        let fast = p.lease(10).expect("10");
        let times = Arc::new(Mutex::new(Vec::new()));
        let run = |lease: Lease, n: usize| {
            let (key, times) = (key.clone(), times.clone());
            tokio::spawn(async move {
                for _ in 0..n {
                    lease.wait(&key).await;
                    times.lock().expect("lock").push(Instant::now());
                }
                lease
            })
        };
        let (a, b) = (run(slow, 10), run(fast, 10));
        let (slow, fast) = (a.await.expect("a"), b.await.expect("b"));
        let mut all = times.lock().expect("lock").clone();
        assert_eq!(all.len(), 20);
        // 5 a second is a request every 200 ms: five in a row span 800 ms (two limiters that
        // did not share the rate, 15 a second, 270 ms); 200 ms are left for late wake-ups.
        let gap = min_gap(&mut all);
        assert!(
            gap >= Duration::from_millis(600),
            "five requests within {gap:?}"
        );
        assert!(worst_second(&mut all) <= 6, "{}", worst_second(&mut all));
        assert_eq!(p.rate_of("mcp.example"), 5);
        // The slower scan ended: the other is back to its own rate.
        p.forget_idle();
        assert_eq!(p.hosts(), 1, "a host in use is kept");
        drop(slow);
        assert_eq!(p.rate_of("mcp.example"), 10);
        times.lock().expect("lock").clear();
        drop(run(fast, 12).await.expect("again"));
        let mut alone = times.lock().expect("lock").clone();
        // 10 a second: five in a row span 400 ms (at 5 and 10 together they would not).
        let gap = min_gap(&mut alone);
        assert!(
            gap >= Duration::from_millis(300),
            "five requests within {gap:?}"
        );
        // (At 5 a second they would span 800 ms.)
        assert!(gap < Duration::from_millis(700), "still slowed: {gap:?}");
        assert!(
            worst_second(&mut alone) >= 9,
            "{}",
            worst_second(&mut alone)
        );
        assert_eq!(p.rate_of("mcp.example"), MAX_RATE);
        // Another host is not slowed by either.
        assert_eq!(p.rate_of("other.example"), MAX_RATE);
    }

    /// Requests keyed by a name and an address, by the name alone and by the address alone: on
    /// each key, no two requests closer than the rate's interval (taking the keys one after the
    /// other let a request that waited on its second key follow the first closer).
    #[tokio::test(start_paused = true)]
    async fn every_key_of_a_request_is_spaced_at_its_send() {
        let p = Arc::new(Politeness::new(10).expect("rate"));
        type Sent = Vec<(Instant, Vec<String>)>;
        let sent: Arc<Mutex<Sent>> = Arc::default();
        let mut tasks = Vec::new();
        for keys in [
            vec!["name"],
            vec!["addr", "name"],
            vec!["addr"],
            vec!["addr", "name"],
        ] {
            let keys: Vec<String> = keys.into_iter().map(String::from).collect();
            let (lease, sent) = (p.lease(10).expect("10"), sent.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..8 {
                    lease.wait(&keys).await;
                    sent.lock()
                        .expect("lock")
                        .push((Instant::now(), keys.clone()));
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        let sent = sent.lock().expect("lock").clone();
        assert_eq!(sent.len(), 32);
        for key in ["addr", "name"] {
            let mut times: Vec<Instant> = sent
                .iter()
                .filter(|(_, ks)| ks.iter().any(|k| k == key))
                .map(|(t, _)| *t)
                .collect();
            times.sort();
            let closest = times
                .windows(2)
                .map(|w| w[1].duration_since(w[0]))
                .min()
                .unwrap_or(Duration::MAX);
            assert!(closest >= Duration::from_millis(100), "{key}: {closest:?}");
            assert!(worst_second(&mut times) <= 10, "{key}");
        }
    }

    #[test]
    fn rates_outside_one_to_ten_are_refused() {
        assert!(Politeness::new(0).is_err());
        assert!(Politeness::new(11).is_err());
        let p = Arc::new(Politeness::new(5).expect("5"));
        assert!(p.lease(0).is_err());
        assert!(p.lease(10).is_ok());
    }
}
