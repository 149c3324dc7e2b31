//! Rates, quotas and budgets: the scan's rate and its quota, the per-host limiter keys, each
//! check's request budget and the inventory's body cap (task-locals of the future that runs
//! them), and the scan-wide slow-server budget (SPEC §7, §3, §10).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::Quota;

use super::{NetError, Network, Request};
use crate::finding::{Exchange, Message};

/// The highest `--rate` accepted (SPEC §7).
pub const MAX_RATE: u32 = 10;
/// The default `--rate`.
pub const DEFAULT_RATE: u32 = 5;
/// What a request may take for free: beyond it, its time counts against the scan's
/// slow-server budget (a request stopped at a time cap counts whole).
pub const SLOW_REQUEST: Duration = Duration::from_secs(1);

/// Caps on time and size for everything a server sends.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// From sending a request to the end of its body (or of the time we read an open stream).
    pub response_timeout: Duration,
    pub max_body: usize,
    /// The scan-wide slow-server budget (SPEC §10): the time slow requests may take together
    /// (what each took beyond [`SLOW_REQUEST`]; all of it when it hit a time cap or timed
    /// out). No request
    /// is given more than what is left of it; once it is spent, requests fail fast.
    pub slow_budget: Duration,
    /// Requests stopped at a time cap (or timed out) before the budget counts as spent.
    pub max_capped: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(10),
            max_body: 8 * 1024 * 1024,
            slow_budget: Duration::from_secs(15),
            max_capped: 3,
        }
    }
}

/// A rate outside 1..=[`MAX_RATE`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a rate of {0} requests per second is refused: mcpprobe sends 1 to {MAX_RATE} per second")]
pub struct RateError(pub u32);

pub(super) fn quota(rate: u32) -> Result<Quota, RateError> {
    let r = NonZeroU32::new(rate)
        .filter(|r| r.get() <= MAX_RATE)
        .ok_or(RateError(rate))?;
    // governor's default burst equals the rate; SPEC §7 wants requests spaced evenly.
    Ok(Quota::per_second(r).allow_burst(NonZeroU32::MIN))
}

tokio::task_local! {
    /// The request budget of the check that is running (SPEC §3: each check's budget, from its
    /// catalogue entry, is enforced here for every client and session it uses).
    static BUDGET: Arc<Budget>;
}

tokio::task_local! {
    /// A lower body cap for the requests of one future (the inventory's byte budget: a page
    /// that would pass it is never read whole).
    static BODY_LIMIT: usize;
}

/// Runs `f` with response bodies capped at `limit` bytes (never above [`Limits::max_body`]).
pub async fn with_body_limit<F: std::future::Future>(limit: usize, f: F) -> F::Output {
    BODY_LIMIT.scope(limit, f).await
}

/// What a check may send, and what it sent.
#[derive(Debug)]
pub struct Budget {
    check: &'static str,
    limit: u32,
    used: std::sync::atomic::AtomicU32,
    refused: AtomicBool,
}

impl Budget {
    fn take(&self) -> Result<(), NetError> {
        let used = self.used.fetch_add(1, Ordering::SeqCst) + 1;
        if used > self.limit {
            self.used.fetch_sub(1, Ordering::SeqCst);
            self.refused.store(true, Ordering::SeqCst);
            return Err(NetError::OverBudget {
                check: self.check,
                budget: self.limit,
            });
        }
        Ok(())
    }
}

/// What a budgeted future sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetUse {
    pub sent: u32,
    /// A request was refused because the budget was spent.
    pub exceeded: bool,
}

/// Runs `f` with a budget of `limit` requests for `check`: a request beyond it is refused.
pub async fn with_budget<F: std::future::Future>(
    check: &'static str,
    limit: u32,
    f: F,
) -> (F::Output, BudgetUse) {
    let budget = Arc::new(Budget {
        check,
        limit,
        used: std::sync::atomic::AtomicU32::new(0),
        refused: AtomicBool::new(false),
    });
    let out = BUDGET.scope(budget.clone(), f).await;
    let used = BudgetUse {
        sent: budget.used.load(Ordering::SeqCst),
        exceeded: budget.refused.load(Ordering::SeqCst),
    };
    (out, used)
}

/// The keys of the per-host limiter for a request to `host` pinned to `addrs`.
pub(super) fn limiter_keys(host: &str, addrs: &[IpAddr]) -> Vec<String> {
    let mut keys = vec![format!(
        "name:{}",
        host.trim_end_matches('.').to_ascii_lowercase()
    )];
    keys.extend(addrs.iter().map(|a| format!("addr:{a}")));
    keys.sort();
    keys.dedup();
    keys
}

/// The scan-wide slow-server budget: what slow requests spent, and the probe that spent it.
#[derive(Debug, Default)]
pub(super) struct Slow {
    spent_ms: AtomicU64,
    capped: AtomicU32,
    exhausted: AtomicBool,
    /// The slow probes, in order (the first few), for the report.
    probes: Mutex<Vec<String>>,
}

impl Network {
    /// Charges one request to the budget of the check that is running (a logical request: its
    /// redirect hops are not charged again; a session end is never refused for budget).
    #[allow(clippy::result_large_err)] // the error type of every send, as the callers return it
    pub(super) fn charge(&self, req: &Request) -> Result<(), (NetError, Exchange)> {
        if req.closing {
            return Ok(());
        }
        match BUDGET.try_with(|b| b.take()) {
            Ok(Err(e)) => Err((
                e,
                Exchange {
                    request: Message {
                        method: Some(req.method.to_string()),
                        url: Some(self.shown_url(&req.url)),
                        ..Message::default()
                    },
                    response: None,
                    note: Some("not sent: over the check's request budget".into()),
                },
            )),
            _ => Ok(()),
        }
    }
    /// The body cap of a request sent now: [`Limits::max_body`], or less within
    /// [`with_body_limit`].
    pub(super) fn body_limit(&self) -> usize {
        let max = self.shared.settings.limits.max_body;
        BODY_LIMIT.try_with(|l| (*l).min(max)).unwrap_or(max)
    }
    /// What is left of the slow-server budget for one wait of at most `want`; `None` once the
    /// budget is spent (nothing more should wait on this server).
    pub fn slow_window(&self, want: Duration) -> Option<Duration> {
        let s = &self.shared;
        if s.slow.exhausted.load(Ordering::SeqCst) {
            return None;
        }
        let spent = Duration::from_millis(s.slow.spent_ms.load(Ordering::SeqCst));
        let left = s.settings.limits.slow_budget.saturating_sub(spent);
        if left.is_zero() {
            return None;
        }
        Some(want.min(left))
    }

    /// Counts a wait of `elapsed` for `probe` against the slow-server budget (`capped`: it was
    /// stopped at its time cap or timed out, and counts whole). Otherwise only what it took
    /// beyond [`SLOW_REQUEST`] counts: a server that answers in 1.2 s is not dripping.
    pub fn record_slow(&self, probe: &str, elapsed: Duration, capped: bool) {
        if !capped && elapsed <= SLOW_REQUEST {
            return;
        }
        let s = &self.shared;
        let counted = if capped {
            elapsed
        } else {
            elapsed - SLOW_REQUEST
        };
        let ms = u64::try_from(counted.as_millis()).unwrap_or(u64::MAX);
        let spent = s
            .slow
            .spent_ms
            .fetch_add(ms, Ordering::SeqCst)
            .saturating_add(ms);
        let capped_n = if capped {
            s.slow.capped.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            s.slow.capped.load(Ordering::SeqCst)
        };
        if let Ok(mut probes) = s.slow.probes.lock()
            && probes.len() < 4
        {
            probes.push(format!(
                "{probe}: {:.1} s{}",
                elapsed.as_secs_f64(),
                if capped {
                    ", stopped at the time cap"
                } else {
                    ""
                }
            ));
        }
        let budget_ms =
            u64::try_from(s.settings.limits.slow_budget.as_millis()).unwrap_or(u64::MAX);
        if capped_n >= s.settings.limits.max_capped || spent >= budget_ms {
            s.slow.exhausted.store(true, Ordering::SeqCst);
        }
    }

    pub(super) fn slow_spent(&self) -> bool {
        self.shared.slow.exhausted.load(Ordering::SeqCst)
    }

    pub(super) fn slow_summary(&self) -> String {
        let s = &self.shared.slow;
        let probes = s.probes.lock().map(|p| p.join("; ")).unwrap_or_default();
        format!(
            "{} slow requests took {:.1} s of the scan's {} s slow-server budget; slow probes: {probes}",
            s.capped.load(Ordering::SeqCst),
            s.spent_ms.load(Ordering::SeqCst) as f64 / 1000.0,
            self.shared.settings.limits.slow_budget.as_secs()
        )
    }

    /// Why the scan stopped sending to this server, once its slow-server budget is spent
    /// (the scan is then incomplete).
    pub fn slow_stop(&self) -> Option<String> {
        self.slow_spent().then(|| {
            format!(
                "the server is too slow: {}; the requests after that were not sent",
                self.slow_summary()
            )
        })
    }
}

/// How the slow-server budget names a request: its JSON-RPC method, HTTP method and path, and
/// the check that sent it.
pub(super) fn probe_name(req: &Request) -> String {
    let rpc = req
        .body
        .as_deref()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string));
    let check = BUDGET.try_with(|b| b.check).ok();
    let mut name = format!("{} {}", req.method, req.url.path());
    if let Some(m) = rpc {
        name = format!("{m} ({name})");
    }
    if let Some(c) = check {
        name = format!("{c}: {name}");
    }
    name
}
