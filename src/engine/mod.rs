//! The engine (SPEC §1.4): [`Scanner::scan`] runs the whole pipeline — gate, fingerprint,
//! inventory, OAuth discovery, checks, baseline — and returns a [`Report`]. It never prints
//! (progress goes through `tracing`), never reads the environment, never exits and never owns
//! Ctrl-C: the CLI, the daemon, the Action and the Python package are thin hosts around it.
//!
//! A gate refusal, an unreachable target, an interruption, an errored or panicking check are
//! outcomes recorded in the report; `Err` is only a configuration error ([`ConfigError`]).
//!
//! ```no_run
//! use mcpprobe::engine::{ScanRequest, Scanner, ScannerConfig, Selection, Target};
//! use mcpprobe::model::Policy;
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn example() -> Result<(), mcpprobe::engine::ConfigError> {
//! // One scanner per process: its rate limit is shared by every scan of a host.
//! let scanner = Scanner::new(ScannerConfig::new("/var/lib/mcpprobe"))?;
//! let mut req = ScanRequest::new(Target::http("http://127.0.0.1:3000/mcp")?);
//! req.checks = Selection::new(&["META-02", "AUTH-01"], &[] as &[&str])?;
//! let cancel = CancellationToken::new(); // cancel() from anywhere stops the scan promptly
//! let mut report = scanner.scan(&req, cancel).await?;
//! report.apply_policy(Policy::default()); // fail on high, keep every confidence
//! println!("{:?}: exit {}", report.outcome, report.exit_code);
//! # Ok(())
//! # }
//! ```

pub mod request;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::FutureExt as _;
use tokio_util::sync::CancellationToken;

pub use request::{
    ActiveRequest, BaselineRequest, ConfigError, Credentials, ExposeSecret, ScanLimits,
    ScanRequest, SecretSource, SecretString, Selection, StoredBaseline, Target,
};

use crate::catalogue::{Kind, Need, Stage, catalogue};
use crate::checks::{Check, Live, Outcome};
use crate::gate::state::StateDir;
use crate::gate::{self, HttpTarget, Stop};
use crate::model::{GateRecord, Report, RunOutcome};
use crate::net::dns::Dns;
use crate::net::{Network, Politeness, Settings};
use crate::protocol::inventory::{self, Inventory};
use crate::protocol::ladder::{self, Fingerprint};
use crate::protocol::session::Session;

/// How long an interrupted scan may take to end its sessions (they are ended concurrently, each
/// within a limiter wait and a reply of [`crate::net::CLOSING_TIMEOUT`]).
pub const GRACE: Duration = Duration::from_secs(5);

pub use crate::catalogue::NOT_SELECTED;

/// The ids of the selected checks that need `need` (their TOML's `needs`); an active check
/// counts only when the active stage is authorised.
fn needing(req: &ScanRequest, need: Need, authorised: bool) -> Vec<&'static str> {
    catalogue()
        .metas()
        .filter(|m| m.needs.contains(&need) && req.checks.includes(&m.id))
        .filter(|m| m.stage != Stage::Active || authorised)
        .map(|m| m.id.as_str())
        .collect()
}

/// Asks the rules to stop when the scan future that waits for them is dropped.
struct StopOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Where the engine learns the time (tests and the daemon may use their own).
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// What a [`Scanner`] is built from.
pub struct ScannerConfig {
    /// The state folder (proofs, authorisation records). The host finds it; the engine never
    /// reads the environment.
    pub state_dir: PathBuf,
    /// The name server to ask, or the system's.
    pub resolver: Option<SocketAddr>,
    /// Requests per second per host, across every scan of this scanner (1..=10).
    pub host_rate: u32,
    pub clock: Arc<dyn Clock>,
    /// For tests: implementations that replace catalogue checks of the same id.
    #[doc(hidden)]
    pub overrides: Vec<&'static dyn Check>,
}

impl ScannerConfig {
    pub fn new(state_dir: impl Into<PathBuf>) -> ScannerConfig {
        ScannerConfig {
            state_dir: state_dir.into(),
            resolver: None,
            host_rate: crate::net::DEFAULT_RATE,
            clock: Arc::new(SystemClock),
            overrides: Vec::new(),
        }
    }
}

/// Shared by every scan of a process: the resolver, the state folder, the clock, and one rate
/// limiter keyed by host.
pub struct Scanner {
    dns: Dns,
    state: StateDir,
    clock: Arc<dyn Clock>,
    politeness: Arc<Politeness>,
    overrides: Vec<&'static dyn Check>,
}

/// Why a scan stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interruption {
    Cancelled,
    Cap(Duration),
}

impl Interruption {
    fn reason(self) -> String {
        match self {
            Interruption::Cancelled => "interrupted: the scan was cancelled".into(),
            Interruption::Cap(d) => format!(
                "interrupted: the scan hit its {} s cap (a slow server, or a slow judge?)",
                d.as_secs_f64()
            ),
        }
    }
}

/// The pinned state a scan compares with: a `--baseline` file, or one a host stored (the
/// daemon's accepted baseline).
struct Pinned {
    /// How messages name it (the file's path, or the host's label).
    label: PathBuf,
    /// The file to write the new state to (a first pin, or `--update-baseline`); `None` for a
    /// host's stored baseline, which the host keeps itself.
    file: Option<PathBuf>,
    update: bool,
    old: Option<crate::baseline::Baseline>,
    /// The complete state this scan read, for a host that stores baselines itself.
    observed: std::sync::Mutex<Option<crate::baseline::Baseline>>,
}

/// What [`Scanner::scan_observed`] returns: the report, and the server's complete state as
/// this scan read it (tools, prompts, resources; `None` when the inventory was not read
/// completely), which a host that keeps baselines itself may store or accept.
#[derive(Debug)]
pub struct Scanned {
    pub report: Report,
    pub observed: Option<crate::baseline::Baseline>,
    /// The ownership proof the gate accepted for an HTTP target (`None` when the gate stopped
    /// the run, and for a stdio server), for a host that records which proof a run relied on.
    pub proof: Option<gate::ProofUsed>,
    /// The inventory as read (`{"tools", "prompts", …}`, redacted), when the request asked to
    /// keep it ([`ScanRequest::keep_inventory`]): for rules over several servers.
    pub inventory: Option<serde_json::Value>,
}

/// What a scan noticed on its way, for [`Scanned`].
#[derive(Default)]
struct Seen {
    proof: std::sync::Mutex<Option<gate::ProofUsed>>,
    inventory: std::sync::Mutex<Option<serde_json::Value>>,
}

/// What the live stages hand the checks.
struct Parts<'a> {
    /// The gate's authorisation of an active run (none without `--active`).
    authorised: Option<&'a gate::Authorised>,
    fp: &'a Fingerprint,
    inventory: Option<&'a Inventory>,
    client: Option<&'a crate::net::Client>,
    url: Option<&'a url::Url>,
    sessions: &'a [Session],
    loopback: bool,
}

impl Scanner {
    /// Must be called inside a tokio runtime (the resolver is built on it).
    pub fn new(config: ScannerConfig) -> Result<Scanner, ConfigError> {
        Ok(Scanner {
            dns: Dns::new(config.resolver)?,
            state: StateDir::new(config.state_dir),
            clock: config.clock,
            politeness: Arc::new(Politeness::new(config.host_rate)?),
            overrides: config.overrides,
        })
    }

    pub fn state(&self) -> &StateDir {
        &self.state
    }

    pub fn dns(&self) -> &Dns {
        &self.dns
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Builds what every scan reads once per process (the TLS configuration, the catalogue,
    /// the rule tables and their automata, the call rule's vocabulary) on a blocking thread, by running every
    /// rule on a one-tool list. A daemon does it before its first run: otherwise its first
    /// scans build them at once, and the requests other scans have been let through wait
    /// behind that work and reach their hosts closer together than the rate.
    pub async fn warm(&self) {
        let checks = self.rule_checks(|_| true);
        let _ = tokio::task::spawn_blocking(move || {
            let _ = crate::net::tls_config();
            let _ = crate::active::words::vocabulary();
            let tools = serde_json::json!({"tools": [{
                "name": "get_forecast",
                "description": "Returns the forecast for a city.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}
            }]});
            run_rule_checks(checks, &tools, None);
        })
        .await;
    }

    /// The catalogue's metadata-rule checks that `include` keeps (with the test overrides).
    fn rule_checks(&self, include: impl Fn(&str) -> bool) -> Vec<&'static dyn Check> {
        catalogue()
            .entries
            .iter()
            .filter(|e| e.meta.stage == Stage::Rules && include(&e.meta.id))
            .filter_map(|e| self.check(&e.meta.id))
            .collect()
    }

    fn check(&self, id: &str) -> Option<&'static dyn Check> {
        self.overrides
            .iter()
            .copied()
            .find(|c| c.id() == id)
            .or_else(|| crate::checks::get(id))
    }

    /// Runs one scan. The future is `Send`; it ends promptly once `cancel` fires (sessions are
    /// still ended, within [`GRACE`]) or the request's whole-scan cap passes, with an
    /// `incomplete` report.
    pub async fn scan(
        &self,
        req: &ScanRequest,
        cancel: CancellationToken,
    ) -> Result<Report, ConfigError> {
        self.scan_observed(req, cancel).await.map(|s| s.report)
    }

    /// [`Scanner::scan`], also returning the state the scan observed (see [`Scanned`]).
    pub async fn scan_observed(
        &self,
        req: &ScanRequest,
        cancel: CancellationToken,
    ) -> Result<Scanned, ConfigError> {
        // A corrupt or foreign baseline is a configuration error before anything is sent (and
        // the file is never written over).
        let pinned = match (&req.baseline, &req.stored_baseline) {
            (Some(_), Some(_)) => return Err(ConfigError::TwoBaselines),
            (Some(b), None) => Some(Pinned {
                label: b.path.clone(),
                file: Some(b.path.clone()),
                update: b.update,
                old: crate::baseline::load(&b.path)?,
                observed: std::sync::Mutex::new(None),
            }),
            (None, Some(s)) => Some(Pinned {
                label: PathBuf::from(&s.label),
                file: None,
                update: false,
                old: s.old.clone(),
                observed: std::sync::Mutex::new(None),
            }),
            (None, None) => None,
        };
        let seen = Seen::default();
        let report = self
            .scan_pinned(req, cancel, pinned.as_ref(), &seen)
            .await?;
        let observed = pinned.and_then(|p| p.observed.into_inner().ok()).flatten();
        Ok(Scanned {
            report,
            observed,
            proof: seen.proof.into_inner().ok().flatten(),
            inventory: if req.keep_inventory {
                seen.inventory.into_inner().ok().flatten()
            } else {
                None
            },
        })
    }

    async fn scan_pinned(
        &self,
        req: &ScanRequest,
        cancel: CancellationToken,
        pinned: Option<&Pinned>,
        seen: &Seen,
    ) -> Result<Report, ConfigError> {
        req.limits.validate()?;
        if let Some(j) = &req.judge {
            j.limits.validate().map_err(ConfigError::JudgeLimits)?;
        }
        let mut report = Report::new(req.target.to_string(), Default::default());
        report.started_at = Some(self.clock.now());
        // SPEC §1.3: an unauthorised --active stops before anything is sent.
        if let Some(active) = &req.active
            && let Err(why) = gate::authorise_active(
                active.authorised_by.as_deref(),
                active.scope.as_deref(),
                active.verify,
            )
        {
            refuse_active(&mut report, &why);
            report.finish();
            return Ok(report);
        }
        let http_target = match &req.target {
            Target::Http(url) => Some(HttpTarget::parse(url.as_str())?),
            Target::Stdio { .. } => None,
        };
        let settings = Settings {
            rate: req.limits.rate,
            limits: crate::net::Limits {
                connect_timeout: req.limits.connect_timeout,
                response_timeout: req.limits.response_timeout,
                max_body: req.limits.max_body,
                ..crate::net::Limits::default()
            },
            token: req.credentials.token.clone(),
            headers: req.credentials.headers.clone(),
            trace_file: req.trace_file.clone(),
            // The one redaction set (SPEC §7), built before the first request.
            secrets: req.secret_sources(),
        };
        let scan_cancel = cancel.child_token();
        let net = Network::new(settings, self.politeness.clone(), scan_cancel.clone())?;
        let interrupted = {
            let work = async {
                match &http_target {
                    Some(t) => {
                        self.run_http(req, t.clone(), &net, pinned, seen, &mut report)
                            .await
                    }
                    None => self.run_stdio(req, &net, pinned, seen, &mut report).await,
                }
            };
            let mut work = std::pin::pin!(work);
            // A judge's time is its own budget, on top of the scan's.
            let cap_for = req.limits.scan_cap
                + req
                    .judge
                    .as_ref()
                    .map_or(Duration::ZERO, |j| j.limits.total);
            let cap = tokio::time::sleep(cap_for);
            let why = tokio::select! {
                r = &mut work => { r?; None }
                () = cancel.cancelled() => Some(Interruption::Cancelled),
                () = cap => Some(Interruption::Cap(cap_for)),
            };
            if why.is_some() {
                // Every request and wait now fails fast; the pipeline unwinds and ends its
                // sessions (those requests are still sent, briefly).
                scan_cancel.cancel();
                if let Ok(r) = tokio::time::timeout(GRACE, &mut work).await {
                    r?;
                }
            }
            why
        };
        if let Some(why) = interrupted {
            report.outcome = RunOutcome::Incomplete;
            report.reason = Some(why.reason());
            report.skip_rest("the scan was interrupted");
        }
        // A server that dripped or stalled spent the slow-server budget: what was not sent
        // makes the scan incomplete (SPEC §10), naming the slow probes.
        if let Some(why) = net.slow_stop() {
            tracing::warn!("{why}");
            if report.outcome == RunOutcome::Complete {
                report.outcome = RunOutcome::Incomplete;
                report.reason = Some(why);
            } else if let Some(r) = report.reason.as_mut() {
                r.push_str("; ");
                r.push_str(&why);
            }
        }
        // Whatever a finished scan left behind (a legacy SSE reader) stops now.
        scan_cancel.cancel();
        self.politeness.forget_idle();
        report.requests_sent += net.requests_sent();
        report.trace_id = Some(net.trace_id().to_string());
        if let Some(why) = net.sync_trace().await {
            report.warnings.push(why);
        }
        report.finish();
        // Whatever a server echoed back, the user's secrets never reach a report.
        let secrets = net.secrets().clone();
        report.redact(|s| secrets.redact(s));
        Ok(report)
    }

    /// The HTTP pipeline: gate, ladder, inventory, checks, session close.
    async fn run_http(
        &self,
        req: &ScanRequest,
        target: HttpTarget,
        net: &Network,
        pinned: Option<&Pinned>,
        seen: &Seen,
        report: &mut Report,
    ) -> Result<(), ConfigError> {
        let dns = &self.dns;
        let gated = async {
            let cleared = gate::clear_opt_out_with(
                target,
                dns,
                net,
                GateRecord::default(),
                req.address_rule(),
            )
            .await?;
            gate::prove_ownership(cleared, dns, &self.state, self.clock.now()).await
        };
        let owned = match gated.await {
            Ok(o) => o,
            Err(halted) => {
                let gate::Halted { stop, record } = *halted;
                report.gate = Some(record);
                use crate::model::Refusal;
                let (outcome, refusal, skip) = match stop {
                    Stop::OptedOut(_) => (
                        RunOutcome::Refused,
                        Some(Refusal::OptedOut),
                        "stopped by the gate",
                    ),
                    Stop::Refused(_) => (
                        RunOutcome::Refused,
                        Some(Refusal::Ownership),
                        "stopped by the gate",
                    ),
                    Stop::PrivateAddress(_) => (
                        RunOutcome::Refused,
                        Some(Refusal::PrivateAddress),
                        "stopped by the gate",
                    ),
                    Stop::Unreachable(_) => (
                        RunOutcome::Incomplete,
                        None,
                        "the target could not be reached",
                    ),
                };
                let why = stop.to_string();
                if refusal.is_some() {
                    report.refusal = refusal;
                }
                tracing::warn!("{why}");
                report.outcome = outcome;
                report.reason = Some(why);
                report.skip_rest(skip);
                return Ok(());
            }
        };
        report.gate = Some(owned.record().clone());
        if let Ok(mut p) = seen.proof.lock() {
            *p = Some(owned.proof_used());
        }
        let client = match owned.client(net) {
            Ok(c) => c,
            Err(e) => {
                report.outcome = RunOutcome::Incomplete;
                report.reason = Some(format!("no HTTP client for the target: {e}"));
                report.skip_rest("the target could not be reached");
                return Ok(());
            }
        };
        for tool in &req.exclude_tools {
            client.guard().exclude(tool);
        }
        let url = owned.target().url.clone();
        tracing::info!(target: "mcpprobe::progress", "fingerprinting {}", net.shown_url(&url));
        let (fp, sessions) = ladder::http(&client, &url).await;
        let inventory = match sessions.first() {
            Some(main) if !net.cancelled().is_cancelled() => {
                tracing::info!(target: "mcpprobe::progress", "reading the inventory");
                Some(inventory::read(main, &fp).await)
            }
            _ => None,
        };
        if let Some(inv) = &inventory {
            guard_destructive(&client, inv);
        }
        let mint = req.active.as_ref().map(|a| owned.authorise_active(a));
        let active = match self.begin_active(req, &owned.target().host, mint, inventory.as_ref()) {
            Ok(Ok(active)) => active,
            Ok(Err(why)) => {
                close_all(sessions).await;
                refuse_active(report, &why);
                return Ok(());
            }
            // No active run without its record: end the sessions, then report the error.
            Err(e) => {
                close_all(sessions).await;
                return Err(e);
            }
        };
        let parts = Parts {
            authorised: active.as_ref().map(|a| &a.auth),
            fp: &fp,
            inventory: inventory.as_ref(),
            client: Some(&client),
            url: Some(&url),
            sessions: &sessions,
            loopback: matches!(owned.proof(), gate::Proof::Local(_)),
        };
        let calls = self.assess(req, report, net, pinned, seen, parts).await;
        close_all(sessions).await;
        if let Some(run) = &active {
            self.record_authorisation(req, run, Some(&calls))?;
        }
        self.judge_stage(req, net, inventory.as_ref(), report).await;
        Ok(())
    }

    /// A stdio server: the opt-out does not apply and the proof is local (mcpprobe starts the
    /// server itself); the server is always stopped at the end.
    async fn run_stdio(
        &self,
        req: &ScanRequest,
        net: &Network,
        pinned: Option<&Pinned>,
        seen: &Seen,
        report: &mut Report,
    ) -> Result<(), ConfigError> {
        let Target::Stdio { program, args, env } = &req.target else {
            return Ok(());
        };
        report.gate = Some(GateRecord {
            opt_out: vec![
                "skipped: a stdio server that mcpprobe starts itself has nothing to opt out from"
                    .into(),
            ],
            ownership: Some("local: a stdio server started by mcpprobe".into()),
            ..GateRecord::default()
        });
        let env: Vec<(&str, &str)> = env
            .iter()
            .map(|(n, v)| (n.as_str(), v.expose_secret()))
            .collect();
        let process =
            match crate::protocol::stdio::StdioProcess::spawn(program, args, &env, net.cancelled())
            {
                Ok(p) => p,
                Err(e) => {
                    report.outcome = RunOutcome::Incomplete;
                    report.reason = Some(e);
                    report.skip_rest("the stdio server could not be started");
                    return Ok(());
                }
            };
        let mint = req
            .active
            .as_ref()
            .map(|a| gate::authorise_stdio_active(a, &process));
        let (fp, session) = ladder::stdio(process).await;
        let inventory = if fp.eras.is_empty() || net.cancelled().is_cancelled() {
            None
        } else {
            Some(inventory::read(&session, &fp).await)
        };
        let active = match self.begin_active(req, "stdio", mint, inventory.as_ref()) {
            Ok(Ok(active)) => active,
            Ok(Err(why)) => {
                session.close().await;
                refuse_active(report, &why);
                return Ok(());
            }
            Err(e) => {
                session.close().await;
                return Err(e);
            }
        };
        let sessions = std::slice::from_ref(&session);
        let parts = Parts {
            authorised: active.as_ref().map(|a| &a.auth),
            fp: &fp,
            inventory: inventory.as_ref(),
            client: None,
            url: None,
            sessions,
            loopback: true,
        };
        let calls = self.assess(req, report, net, pinned, seen, parts).await;
        if let Some((sent, stderr)) = session.stdio_stats().await {
            report.requests_sent += sent;
            net.trace_line(&serde_json::json!({"stdio_stderr": stderr}));
        }
        session.close().await;
        if let Some(run) = &active {
            self.record_authorisation(req, run, Some(&calls))?;
        }
        self.judge_stage(req, net, inventory.as_ref(), report).await;
        Ok(())
    }

    /// META-01 (SPEC §12): the judge reads the inventory's tools, after the sessions are closed
    /// (a judge that takes minutes holds nothing open on the server) and after the gate
    /// decided; it sends nothing to the target.
    async fn judge_stage(
        &self,
        req: &ScanRequest,
        net: &Network,
        inventory: Option<&Inventory>,
        report: &mut Report,
    ) {
        let Some(config) = &req.judge else {
            return;
        };
        let judged: Vec<&str> = catalogue()
            .in_stage(Stage::Judge)
            .filter(|m| req.checks.includes(&m.id))
            .map(|m| m.id.as_str())
            .collect();
        if judged.is_empty() || net.cancelled().is_cancelled() {
            return;
        }
        let Some(inv) = inventory else {
            let why = "no inventory was read: the judge had nothing to review";
            for id in judged {
                report.record(id, Outcome::Skipped(why.into()));
            }
            return;
        };
        tracing::info!(target: "mcpprobe::progress", "asking the judge about {} tools", inv.tools().len());
        let secrets = net.secrets().clone();
        let redact = move |s: &str| secrets.redact(s);
        crate::judge::review(config, inv.tools(), &redact, net.cancelled())
            .await
            .record(report);
    }

    /// The rules stage's checks (`stage = "rules"`: the metadata rules) over the inventory, on a blocking thread
    /// so that a large or hostile inventory never holds an async worker. A cancelled scan (or
    /// its whole-scan cap) stops them between texts; a dropped scan future does too.
    async fn run_rules(
        &self,
        req: &ScanRequest,
        net: &Network,
        inventory: Option<&crate::protocol::inventory::Inventory>,
    ) -> Option<crate::checks::RuleOutcomes> {
        let inv = inventory?;
        let value = inv.value.clone();
        let checks = self.rule_checks(|id| req.checks.includes(id));
        let stop = StopOnDrop(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
            false,
        )));
        let flag = stop.0.clone();
        let task = tokio::task::spawn_blocking(move || run_rule_checks(checks, &value, Some(flag)));
        let mut task = std::pin::pin!(task);
        let joined = tokio::select! {
            r = &mut task => r,
            () = net.cancelled().cancelled() => {
                stop.0.store(true, std::sync::atomic::Ordering::Relaxed);
                task.await
            }
        };
        joined.ok().flatten()
    }

    /// Runs every check against what the ladder and the inventory found, and fills the report;
    /// returns the calls the active stage made (for the authorisation record). The steps, in
    /// order: the rules stage, the baseline, the fingerprint's record, OAuth discovery, the
    /// live checks (and the active ones' plans), the active stage, the outcome, the pin.
    async fn assess(
        &self,
        req: &ScanRequest,
        report: &mut Report,
        net: &Network,
        pinned: Option<&Pinned>,
        seen: &Seen,
        parts: Parts<'_>,
    ) -> Vec<crate::active::CallRecord> {
        let fp = parts.fp;
        if req.keep_inventory
            && let Some(inv) = parts.inventory
            && let Ok(mut slot) = seen.inventory.lock()
        {
            // Redacted as everything a scan hands out: the user's secrets echoed in a
            // description stay here.
            let mut value = (*inv.value).clone();
            let secrets = net.secrets().clone();
            crate::net::redact::redact_value(&mut value, &|s: &str| secrets.redact(s));
            *slot = Some(value);
        }
        let rules = self.run_rules(req, net, parts.inventory).await;
        // The inventory as the rules read it, again (the rules stage's tree lived on its own
        // thread), for the checks that read it live.
        let input = rules
            .as_ref()
            .and(parts.inventory)
            .and_then(|inv| crate::rules::Input::shared_inventory(&inv.value));
        let doc = input.as_ref().map(|i| i.document());
        let (baseline, pin) = self.baseline_stage(req, net, pinned, parts.inventory);
        if let (Some(p), Some(obs)) = (pinned, &pin)
            && let Ok(mut slot) = p.observed.lock()
        {
            *slot = Some(obs.clone());
        }
        let mut cx = Live {
            fingerprint: fp,
            inventory: parts.inventory,
            input: input.as_ref(),
            doc: doc.as_ref(),
            client: parts.client,
            url: parts.url,
            dns: parts.client.map(|_| &self.dns),
            follow_authorization_server: req.follow_authorization_server,
            sessions: parts.sessions,
            credentialed: !req.credentials.is_empty(),
            loopback: parts.loopback,
            baseline: baseline.as_ref(),
            oauth: None,
            rules: rules.as_ref(),
        };
        record_fingerprint(report, fp, input.as_ref());
        let stop = stop_reason(fp, parts.inventory);
        self.oauth_stage(req, &mut cx, &parts, report).await;
        let active_checks = self.live_stage(req, net, &cx, &parts, report).await;
        let calls = self
            .active_stage(req, net, &cx, &parts, &active_checks, report)
            .await;
        record_outcome(report, stop, parts.inventory);
        write_pin(pinned, pin, net, report);
        calls
    }

    /// OAuth discovery, a stage of its own: run when a selected check needs it (an active one
    /// only when authorised); each reads its value from `cx`.
    async fn oauth_stage(
        &self,
        req: &ScanRequest,
        cx: &mut Live<'_>,
        parts: &Parts<'_>,
        report: &mut Report,
    ) {
        if !needing(req, Need::Oauth, parts.authorised.is_some()).is_empty()
            && parts.client.is_some()
        {
            let discovery = std::panic::AssertUnwindSafe(crate::checks::oauth::discover(cx))
                .catch_unwind()
                .await;
            match discovery {
                Ok(d) => cx.oauth = Some(d),
                Err(panic) => {
                    let why = format!(
                        "OAuth discovery panicked: {}",
                        panic_message(panic.as_ref())
                    );
                    for id in needing(req, Need::Oauth, false) {
                        report.record(id, Outcome::Error(why.clone()));
                    }
                }
            }
        }
    }

    /// Every selected check that is not active, in catalogue order, against the live target
    /// (the rules stage's checks read its outcomes); an active check is planned for the
    /// active stage when authorised, else recorded as not authorised with what it would call.
    async fn live_stage(
        &self,
        req: &ScanRequest,
        net: &Network,
        cx: &Live<'_>,
        parts: &Parts<'_>,
        report: &mut Report,
    ) -> Vec<ActivePlan> {
        let mut active_checks: Vec<ActivePlan> = Vec::new();
        for entry in &catalogue().entries {
            let id = entry.meta.id.as_str();
            let Some(check) = self.check(id) else {
                report.record(id, Outcome::Error(crate::checks::NO_IMPLEMENTATION.into()));
                continue;
            };
            if entry.meta.kind == Kind::Active {
                if !req.checks.includes(id) {
                    report.record(id, Outcome::Skipped(NOT_SELECTED.into()));
                    continue;
                }
                if let (Some(active), Some(_)) = (check.active(), parts.authorised) {
                    // Run in the active stage, after every passive check.
                    active_checks.push((entry.meta.id.as_str(), entry.meta.requests, active));
                    continue;
                }
                let outcome = match check.active() {
                    Some(active) => {
                        let plan = parts
                            .inventory
                            .map(|inv| {
                                format!(
                                    "; {}",
                                    crate::active::describe(
                                        active,
                                        entry.meta.requests,
                                        inv.tools()
                                    )
                                )
                            })
                            .unwrap_or_default();
                        Outcome::Skipped(format!("{}{plan}", crate::checks::ACTIVE_NOT_AUTHORISED))
                    }
                    // A registered stub (none today): not implemented in every report.
                    None => Outcome::NotImplemented(crate::checks::ACTIVE_NOT_IMPLEMENTED.into()),
                };
                report.record(id, outcome);
                continue;
            }
            if !req.checks.includes(id) {
                report.record(id, Outcome::Skipped(NOT_SELECTED.into()));
                continue;
            }
            if net.cancelled().is_cancelled() {
                break;
            }
            if entry.meta.stage == Stage::Judge && req.judge.is_some() {
                // The judge is a stage of its own, after the sessions are closed.
                continue;
            }
            tracing::debug!(target: "mcpprobe::progress", "running {id}");
            let budget = entry.meta.requests;
            let run = std::panic::AssertUnwindSafe(check.live(cx)).catch_unwind();
            let (outcome, used) = crate::net::with_budget(check.id(), budget, run).await;
            let outcome = match outcome {
                _ if net.cancelled().is_cancelled() => {
                    Outcome::Skipped("the scan was interrupted before this check finished".into())
                }
                Err(panic) => Outcome::Error(format!(
                    "the check panicked: {}",
                    panic_message(panic.as_ref())
                )),
                Ok(_) if used.exceeded => Outcome::Error(format!(
                    "the check tried to send more than its budget of {budget} requests (checks/{}); its result is not trusted",
                    entry.meta.id
                )),
                Ok(o) => o,
            };
            report.record_requests(id, used.sent);
            report.record(id, outcome);
        }
        active_checks
    }

    /// The active stage (SPEC §13): the planned active checks, each inside its permit, under
    /// the gate's authorisation; returns the calls made.
    async fn active_stage(
        &self,
        req: &ScanRequest,
        net: &Network,
        cx: &Live<'_>,
        parts: &Parts<'_>,
        active_checks: &[ActivePlan],
        report: &mut Report,
    ) -> Vec<crate::active::CallRecord> {
        let mut calls = Vec::new();
        if let (Some(auth), Some(active)) = (parts.authorised, &req.active)
            && !active_checks.is_empty()
        {
            match (parts.inventory, parts.sessions.first()) {
                (Some(inv), Some(session)) if !net.cancelled().is_cancelled() => {
                    let policy = crate::active::CallPolicy {
                        scope: crate::active::CallPolicy::parse_scope(auth.scope()),
                        exclude: req.exclude_tools.clone(),
                        include_unannotated: active.include_unannotated,
                    };
                    tracing::info!(target: "mcpprobe::progress", "active checks (scope {})", auth.scope());
                    let listener = parts.loopback && !needing(req, Need::Listener, true).is_empty();
                    let env = self
                        .stage_env(cx, inv, &policy, listener, parts.loopback, session)
                        .await;
                    let stage = crate::active::run(
                        auth,
                        &policy,
                        session,
                        inv.tools(),
                        active_checks,
                        &env,
                        active.dry_run,
                        net.cancelled(),
                    )
                    .await;
                    for (id, outcome) in stage.outcomes {
                        let made = stage.calls.iter().filter(|c| c.check == id).count();
                        report.record_requests(&id, u32::try_from(made).unwrap_or(u32::MAX));
                        report.record(&id, outcome);
                    }
                    if !stage.not_called.is_empty() {
                        let listed: Vec<String> = stage
                            .not_called
                            .iter()
                            .take(20)
                            .map(|(n, why)| {
                                format!("`{}`: {why}", crate::util::escape::escape_trimmed(n, 80))
                            })
                            .collect();
                        let more = stage.not_called.len().saturating_sub(20);
                        report.warnings.push(format!(
                            "active checks never called {} tool{}: {}{}",
                            stage.not_called.len(),
                            if stage.not_called.len() == 1 { "" } else { "s" },
                            listed.join("; "),
                            if more > 0 {
                                format!("; and {more} more")
                            } else {
                                String::new()
                            }
                        ));
                    }
                    calls = stage.calls;
                }
                _ => {
                    for (id, _, _) in active_checks {
                        report.record(
                            id,
                            Outcome::Skipped("no inventory or session: nothing to call".into()),
                        );
                    }
                }
            }
        }
        calls
    }
    /// What the active stage offers its checks: a loopback listener when the target is local
    /// (never for a remote one, which must not be pointed at its own loopback), whether OAuth
    /// is advertised, and the resource templates in scope.
    async fn stage_env(
        &self,
        cx: &Live<'_>,
        inv: &Inventory,
        policy: &crate::active::CallPolicy,
        listener: bool,
        local: bool,
        session: &Session,
    ) -> crate::active::StageEnv {
        let mut env = crate::active::StageEnv {
            oauth_advertised: cx
                .oauth
                .as_ref()
                .is_some_and(crate::checks::oauth::Discovery::advertised),
            anonymous_possible: session.anonymous_twin().is_some(),
            ..Default::default()
        };
        if listener {
            match crate::active::listener::Listener::start().await {
                Ok(l) => env.listener = Some(l),
                Err(e) => {
                    env.no_listener = Some(format!("the loopback listener could not start: {e}"))
                }
            }
        } else if local {
            env.no_listener = Some("no selected check needs the loopback listener".into());
        } else {
            env.no_listener = Some(
                "the target is not local: its loopback is not mcpprobe's, and a remote server is never pointed at its own (a --collaborator URL is not supported yet)"
                    .into(),
            );
        }
        if let Some(templates) = inv
            .value
            .get("resourceTemplates")
            .and_then(serde_json::Value::as_array)
        {
            for (i, t) in templates.iter().enumerate() {
                let name = t
                    .get("name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("");
                if policy
                    .scope
                    .iter()
                    .any(|p| crate::active::policy::glob(p, name))
                {
                    env.templates.push((i, t.clone()));
                }
            }
        }
        env
    }

    /// Compares the inventory with the pinned state; returns what BASE-01/02 report, and the
    /// state to write after the scan (a first pin, or `--update-baseline`).
    fn baseline_stage(
        &self,
        req: &ScanRequest,
        net: &Network,
        pinned: Option<&Pinned>,
        inventory: Option<&Inventory>,
    ) -> (
        Option<crate::checks::BaselineView>,
        Option<crate::baseline::Baseline>,
    ) {
        use crate::checks::BaselineView;
        let Some(p) = pinned else {
            return (None, None);
        };
        let Some(inv) = inventory else {
            return (
                Some(BaselineView::Unusable(
                    "no inventory was read: nothing compared, the baseline file was left as it was"
                        .into(),
                )),
                None,
            );
        };
        if !inv.notes.is_empty() {
            return (
                Some(BaselineView::Unusable(format!(
                    "the inventory was not read completely ({}): nothing compared, the baseline file was left as it was",
                    inv.notes.join("; ")
                ))),
                None,
            );
        }
        let mut new = crate::baseline::Baseline::from_inventory(
            &req.target.to_string(),
            self.clock.now(),
            &inv.value,
        );
        let secrets = net.secrets().clone();
        new.redact(&|s| secrets.redact(s));
        let path = p.label.clone();
        match &p.old {
            None => (Some(BaselineView::Pinning { path }), Some(new)),
            Some(old) => {
                let mut findings = crate::baseline::compare(old, &new);
                if old.target != new.target {
                    // Said in the report, not only in a log: every difference may come from
                    // scanning another server.
                    findings.push(
                        crate::checks::finding(&crate::checks::other_base_01::CHECK, None)
                            .subcode("target")
                            .severity(crate::finding::Severity::Info)
                            .message(format!(
                                "the baseline {} was pinned for {}, and this scan is of {}: its differences may come from another server",
                                path.display(),
                                old.target,
                                new.target
                            ))
                            .build(),
                    );
                }
                let accepted = p.update;
                // An accepted change rewrites the file; an unchanged state leaves it as it is
                // (the caller writes only when `update` is set and something changed).
                let changed = !findings.is_empty();
                (
                    Some(BaselineView::Compared {
                        path,
                        findings,
                        accepted,
                    }),
                    (changed || p.file.is_none()).then_some(new),
                )
            }
        }
    }

    /// The gate's authorisation of an active run, minted by `mint` (`None` without `--active`),
    /// and its record written before the first call. `Ok(Err(why))` is a refusal.
    fn begin_active(
        &self,
        req: &ScanRequest,
        host: &str,
        mint: Option<Result<gate::Authorised, gate::AuthorisationError>>,
        inventory: Option<&Inventory>,
    ) -> Result<Result<Option<ActiveRun>, gate::AuthorisationError>, ConfigError> {
        let auth = match mint {
            None => return Ok(Ok(None)),
            Some(Err(why)) => return Ok(Err(why)),
            Some(Ok(a)) => a,
        };
        let mut run = ActiveRun {
            auth,
            host: host.to_string(),
            path: PathBuf::new(),
            tool_list_sha256: inventory.map(|i| crate::rules::fingerprint::tools_sha256(i.tools())),
            started: self.clock.now(),
        };
        run.path = self.record_authorisation(req, &run, None)?;
        Ok(Ok(Some(run)))
    }

    /// SPEC §1.3: every active run leaves an authorisation record in the state folder, written
    /// after the inventory (so that it carries the tool-list fingerprint) and before the first
    /// call, then rewritten with every call made (`calls`).
    fn record_authorisation(
        &self,
        req: &ScanRequest,
        run: &ActiveRun,
        calls: Option<&[crate::active::CallRecord]>,
    ) -> Result<PathBuf, ConfigError> {
        let now = self.clock.now();
        let active = req.active.clone().unwrap_or_default();
        let planned: Vec<&str> = catalogue()
            .entries
            .iter()
            .filter(|e| e.meta.kind == Kind::Active && req.checks.includes(&e.meta.id))
            .filter(|e| self.check(&e.meta.id).is_some_and(|c| c.active().is_some()))
            .map(|e| e.meta.id.as_str())
            .collect();
        let record = serde_json::json!({
            "authorised_by": run.auth.authorised_by(),
            "scope": run.auth.scope(),
            "target": req.target.to_string(),
            "time": run.started.to_rfc3339(),
            "finished_at": calls.is_some().then(|| now.to_rfc3339()),
            "proof": run.auth.proof(),
            "tool_list_sha256": run.tool_list_sha256,
            "checks_planned": planned,
            "excluded_tools": req.exclude_tools,
            "include_unannotated": active.include_unannotated,
            "dry_run": active.dry_run,
            "status": if calls.is_some() { "finished" } else { "started" },
            "calls": calls.unwrap_or_default(),
        });
        if calls.is_some() {
            self.state.update_authorisation(&run.path, &record)?;
            return Ok(run.path.clone());
        }
        Ok(self
            .state
            .save_authorisation(&record, &run.host, run.started)?)
    }
}

/// An active check planned for the active stage: its id, request budget and implementation.
type ActivePlan = (&'static str, u32, &'static dyn crate::active::ActiveCheck);

/// The fingerprint's record in the report, and the tool list's hash.
fn record_fingerprint(
    report: &mut Report,
    fp: &Fingerprint,
    input: Option<&crate::rules::Input<'_>>,
) {
    let mut fingerprint = crate::model::Fingerprint {
        eras: fp.eras.clone(),
        transport: fp.transport.clone(),
        ..Default::default()
    };
    if let Ok(serde_json::Value::Object(mut m)) = serde_json::to_value(fp) {
        m.remove("eras");
        m.remove("transport");
        fingerprint.extra = m;
    }
    report.fingerprint = Some(fingerprint);
    report.tool_list_sha256 = input.map(|i| i.tools_sha256().to_string());
}

/// Why the scan could not check everything, from what the ladder found.
fn stop_reason(fp: &Fingerprint, inventory: Option<&Inventory>) -> Option<String> {
    if let Some(u) = &fp.unreachable {
        Some(format!("the target could not be reached: {u}"))
    } else if let Some(n) = &fp.not_mcp {
        Some(format!("not an MCP endpoint: {n}"))
    } else if fp.eras.is_empty() && fp.auth_required {
        Some("every rung answered 401/403: the server needs credentials (--token or --header); era unknown, inventory not read".into())
    } else if inventory.is_none() {
        Some("no session could be opened to read the inventory".into())
    } else {
        None
    }
}

/// The run's outcome: incomplete when the target stopped it or the inventory was truncated.
fn record_outcome(report: &mut Report, stop: Option<String>, inventory: Option<&Inventory>) {
    if let Some(why) = stop {
        report.outcome = RunOutcome::Incomplete;
        report.reason = Some(why);
    } else if let Some(why) = inventory.and_then(|i| i.truncated.as_ref()) {
        // The inventory's byte budget stopped the lists: N1 says what was left out, and
        // the scan did not check everything.
        report.outcome = RunOutcome::Incomplete;
        report.reason = Some(format!("the inventory was truncated: {why}"));
    }
}

/// Writes the pinned state, only for a scan that was not interrupted: a first pin never
/// replaces a file that appeared meanwhile; a failure is an error of every baseline check.
fn write_pin(
    pinned: Option<&Pinned>,
    pin: Option<crate::baseline::Baseline>,
    net: &Network,
    report: &mut Report,
) {
    let write = pinned.is_some_and(|p| p.old.is_none() || p.update);
    if let (Some(new), Some(path), true) = (pin, pinned.and_then(|p| p.file.as_ref()), write)
        && !net.cancelled().is_cancelled()
    {
        let first_pin = pinned.is_some_and(|p| p.old.is_none());
        let written = if first_pin {
            crate::baseline::save_new(path, &new)
        } else {
            crate::baseline::save_checked(path, &new)
        };
        match written {
            Ok(()) => {
                tracing::info!(target: "mcpprobe::progress", "baseline written to {}", path.display())
            }
            Err(e) => {
                // Selected or not: the pinned file the user keeps was not written.
                for m in catalogue()
                    .metas()
                    .filter(|m| m.needs.contains(&Need::Baseline))
                {
                    report.record(
                        &m.id,
                        Outcome::Error(format!("the baseline could not be written: {e}")),
                    );
                }
            }
        }
    }
}

/// An authorised active run: the gate's token and its record.
struct ActiveRun {
    auth: gate::Authorised,
    host: String,
    /// The record in the state folder.
    path: PathBuf,
    tool_list_sha256: Option<String>,
    started: DateTime<Utc>,
}

/// A run the gate refused for active mode: nothing more is sent.
fn refuse_active(report: &mut Report, why: &gate::AuthorisationError) {
    let why = why.to_string();
    tracing::warn!("{why}");
    report.outcome = RunOutcome::Refused;
    report.refusal = Some(crate::model::Refusal::ActiveNotAuthorised);
    report.reason = Some(why);
    report.skip_rest("stopped by the gate: active mode not authorised");
}

/// Ends every session at once (an interrupted scan has [`GRACE`] for all of them).
async fn close_all(sessions: Vec<Session>) {
    futures_util::future::join_all(sessions.into_iter().map(Session::close)).await;
}

/// Runs `checks` on a tools/list value (on a blocking thread; `stop` ends them between texts),
/// a panicking check an error of its own; `None` when the value is not one.
fn run_rule_checks(
    checks: Vec<&'static dyn Check>,
    value: &serde_json::Value,
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
) -> Option<crate::checks::RuleOutcomes> {
    let input = crate::rules::Input::shared_inventory(value)?;
    let mut outcomes = crate::checks::RuleOutcomes::new();
    let mut doc = input.document();
    doc.stop = stop;
    for check in checks {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::offline::run_offline(check, &input, &doc)
        }));
        let outcome = match run {
            Ok(o) => o,
            Err(panic) => Outcome::Error(format!(
                "the check panicked: {}",
                panic_message(panic.as_ref())
            )),
        };
        outcomes.insert(check.id(), outcome);
    }
    Some(outcomes)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Tools annotated `destructiveHint: true` can never be called (SPEC §1.3).
fn guard_destructive(client: &crate::net::Client, inv: &Inventory) {
    for t in inv.tools() {
        if t.pointer("/annotations/destructiveHint") == Some(&serde_json::Value::Bool(true))
            && let Some(name) = t.get("name").and_then(serde_json::Value::as_str)
        {
            client.guard().exclude(name);
        }
    }
}
