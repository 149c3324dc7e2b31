//! `mcpprobe daemon` (SPEC §8, §8.1): scheduled re-scans of the targets in `mcpprobe.toml` and
//! of those imported into its store ([`targets`]), through one [`crate::engine::Scanner`] (so
//! the host-keyed rate limit covers every target of a host), each run gate first, its state in
//! a [`store::Store`], with a status API, badges, metrics and a web page ([`http`]). A host of
//! the engine, like the CLI: it reads the environment for tokens (and only for them), never
//! prints (logs go through `tracing`).

pub mod http;
pub mod metrics;
pub mod page;
pub mod postgres;
pub mod schedule;
pub mod sqlite;
pub mod store;
pub mod targets;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigFileError};
use crate::engine::{
    ConfigError, Credentials, ScanLimits, ScanRequest, Scanned, Scanner, SecretSource, Selection,
    StoredBaseline, Target,
};
use crate::model::{Policy, Report, RunOutcome};
use crate::net::redact::{Secrets, SharedSecrets};
use crate::review::Review;
use store::{Claim, Claimed, Counts, Finished, RunStatus, Store, StoreError, TargetRow};

/// The status endpoint's default address (SPEC §8).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";
/// Scans in flight at most, by default.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;
/// The shortest token `api_token_env` may hold (a guessable token guards nothing).
pub const MIN_API_TOKEN: usize = 16;
/// A run's lease; renewed every third of it while the scan runs.
pub const LEASE: Duration = Duration::from_secs(60);

/// The worker name of a daemon whose host named none.
pub const DEFAULT_WORKER: &str = "daemon";

/// How often the scheduler applies retention.
const PRUNE_EVERY_MS: i64 = 3_600_000;

/// One target, ready to scan.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    pub name: String,
    /// The URL as it may be shown (API, page, store, logs): its query secrets redacted.
    pub url: String,
    /// The URL as configured, for the scan itself (SPEC §7: never shown).
    pub scan_url: SecretString,
    pub every_ms: i64,
    pub offset_ms: i64,
    pub policy: Policy,
    pub token: Option<SecretString>,
    pub checks: Selection,
    pub review: Review,
    /// `allow_private_addresses = true`: the name may resolve to addresses that are not public.
    pub allow_private_addresses: bool,
}

/// A PostgreSQL URL and the environment variable it came from (the URL is a secret: it
/// usually holds a password).
#[derive(Debug, Clone)]
pub struct DatabaseUrl {
    pub var: String,
    pub url: SecretString,
}

impl DatabaseUrl {
    /// The store `database_url_env` names, read through `env`; `None` without the key (the
    /// SQLite file). An unset variable is an error naming the file, line and key.
    pub fn of(
        config: &Config,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<DatabaseUrl>, ConfigFileError> {
        let Some(var) = &config.database_url_env else {
            return Ok(None);
        };
        match env(var).filter(|v| !v.trim().is_empty()) {
            Some(url) => Ok(Some(DatabaseUrl {
                var: var.clone(),
                url: SecretString::from(url.trim().to_string()),
            })),
            None => {
                let l = &config.lines;
                Err(l.error(
                    l.top("database_url_env"),
                    "database_url_env",
                    format!("the environment variable {var} is not set"),
                ))
            }
        }
    }
}

/// The daemon's settings, checked: every error names the file, line and key.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    pub listen: SocketAddr,
    pub max_concurrent: usize,
    pub state_dir: PathBuf,
    /// The bearer token the status endpoint requires (from `api_token_env`); exposed only to
    /// compare what a request shows.
    pub api_token: Option<SecretString>,
    pub rate: u32,
    /// How much history the store keeps (`keep_runs`, `keep_days`).
    pub retention: store::Retention,
    /// The shared PostgreSQL store (`database_url_env`), when configured.
    pub database: Option<DatabaseUrl>,
    /// This daemon's name among the workers sharing a store (metrics' `worker` label,
    /// `/healthz`, the owner of its leases); the host sets it ([`DEFAULT_WORKER`] otherwise).
    pub worker: String,
    /// A run's (and a host's) lease, renewed every third of it; [`LEASE`] unless a test
    /// shortens it.
    pub lease: Duration,
    /// Every target's interval, when a test set one ([`DaemonConfig::hurry`]).
    pub every_override: Option<i64>,
    pub targets: Vec<TargetSpec>,
    /// Every secret of the configuration (SPEC §7): each target's token and URL query values,
    /// the API token. Redacted from every run stored, every target row and every log line.
    /// The imported targets' secrets join them in each [`targets::TargetSet`].
    pub secrets: Secrets,
    /// What the logs redact: [`DaemonConfig::secrets`], then those of the current target set
    /// (the host's log writer reads it at each line).
    pub log_secrets: SharedSecrets,
    /// The file's top-level policy, checks and suppressions, for imported targets.
    pub defaults: targets::Defaults,
    /// Where imported targets' tokens come from ([`DaemonConfig::with_env`]).
    pub env: targets::Env,
}

impl DaemonConfig {
    /// Checks the daemon's keys of `config`. `env` reads an environment variable (tokens come
    /// only from there); `default_state` is the state folder of SPEC §1.2.
    pub fn new(
        config: &Config,
        env: impl Fn(&str) -> Option<String>,
        default_state: PathBuf,
    ) -> Result<DaemonConfig, ConfigFileError> {
        let l = &config.lines;
        let listen_text = config.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            l.error(
                l.top("listen"),
                "listen",
                format!("{listen_text:?} is not an address and port (127.0.0.1:9464)"),
            )
        })?;
        let api_token = match &config.api_token_env {
            Some(var) => match env(var).filter(|v| !v.is_empty()) {
                Some(t) if t.chars().count() < MIN_API_TOKEN => {
                    return Err(l.error(
                        l.top("api_token_env"),
                        "api_token_env",
                        format!(
                            "the environment variable {var} holds a token of {} characters: the status endpoint's token must have at least {MIN_API_TOKEN}",
                            t.chars().count()
                        ),
                    ));
                }
                Some(t) => Some(SecretString::from(t)),
                None => {
                    return Err(l.error(
                        l.top("api_token_env"),
                        "api_token_env",
                        format!("the environment variable {var} is not set"),
                    ));
                }
            },
            None => None,
        };
        if !listen.ip().is_loopback() && api_token.is_none() {
            return Err(l.error(
                l.top("listen"),
                "listen",
                format!(
                    "{listen} is not a loopback address: reports hold evidence from the servers, so set api_token_env to the environment variable of a bearer token every request must show"
                ),
            ));
        }
        let max_concurrent = match config.max_concurrent_scans {
            Some(0) => {
                return Err(l.error(
                    l.top("max_concurrent_scans"),
                    "max_concurrent_scans",
                    "must be at least 1",
                ));
            }
            Some(n) => usize::try_from(n).unwrap_or(DEFAULT_MAX_CONCURRENT),
            None => DEFAULT_MAX_CONCURRENT,
        };
        let retention = store::Retention {
            runs: match config.keep_runs {
                Some(0) => {
                    return Err(l.error(
                        l.top("keep_runs"),
                        "keep_runs",
                        "must be at least 1 (a target's latest run is always kept)",
                    ));
                }
                Some(n) => n,
                None => store::Retention::default().runs,
            },
            days: match config.keep_days {
                Some(0) => {
                    return Err(l.error(l.top("keep_days"), "keep_days", "must be at least 1"));
                }
                Some(n) => i64::from(n),
                None => store::Retention::default().days,
            },
        };
        let database = DatabaseUrl::of(config, &env)?;
        let defaults = targets::Defaults::of(config);
        let mut targets = Vec::new();
        for (i, t) in config.targets.iter().enumerate() {
            let spec = targets::spec_of(t, &defaults, &env)
                .map_err(|e| l.error(l.target(i), format!("targets[{i}].{}", e.key), e.message))?;
            targets.push(spec);
        }
        let mut sources: Vec<SecretSource> = targets::secret_sources(&targets);
        sources.extend(
            api_token
                .iter()
                .map(|v| SecretSource::Other(v.expose_secret().to_string())),
        );
        // The database URL, whole and its password (a driver's message may quote either).
        if let Some(d) = &database {
            sources.push(SecretSource::Url(d.url.expose_secret().to_string()));
            sources.push(SecretSource::Other(d.url.expose_secret().to_string()));
        }
        let secrets = Secrets::from_sources(&sources);
        for t in &mut targets {
            t.url = secrets.redact(&t.url);
        }
        Ok(DaemonConfig {
            listen,
            max_concurrent,
            state_dir: config.state_dir.clone().unwrap_or(default_state),
            api_token,
            rate: config.rate.unwrap_or(crate::net::DEFAULT_RATE),
            retention,
            database,
            worker: DEFAULT_WORKER.to_string(),
            lease: LEASE,
            every_override: None,
            targets,
            log_secrets: SharedSecrets::new(secrets.clone()),
            secrets,
            defaults,
            env: targets::Env::none(),
        })
    }

    /// Shortens every target's interval to `every` and the lease to `lease` (tests of a fleet
    /// run many slots in seconds; the configuration's floor of 30 s stays for users).
    pub fn hurry(&mut self, every: Option<Duration>, lease: Option<Duration>) {
        if let Some(every) = every.filter(|d| !d.is_zero()) {
            self.every_override = Some(ms(every));
            for t in &mut self.targets {
                t.every_ms = ms(every);
                t.offset_ms = schedule::offset_ms(&t.name, t.every_ms);
            }
        }
        if let Some(lease) = lease.filter(|d| !d.is_zero()) {
            self.lease = lease;
        }
    }

    /// Where imported targets' tokens are read from (`token_env`), when the daemon loads them:
    /// the process's environment unless the host says otherwise.
    pub fn with_env(
        mut self,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> DaemonConfig {
        self.env = targets::Env::new(env);
        self
    }

    pub fn rows(&self) -> Vec<TargetRow> {
        self.targets
            .iter()
            .map(|t| TargetRow {
                name: t.name.clone(),
                // The store never holds a query secret (`url` is the redacted form).
                url: t.url.clone(),
                every_ms: t.every_ms,
            })
            .collect()
    }
}

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("a store operation did not finish: {0}")]
    Blocking(String),
}

/// A duration in the store's unit (milliseconds).
pub fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Wall-clock milliseconds; the daemon's clock (tests give the scanner a fake one).
pub fn now_ms(scanner: &Scanner) -> i64 {
    scanner.now().timestamp_millis()
}

/// Runs a store operation off the async threads.
pub async fn db<T: Send + 'static>(
    store: &Arc<dyn Store>,
    f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, DaemonError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(store.as_ref()))
        .await
        .map_err(|e| DaemonError::Blocking(e.to_string()))?
        .map_err(DaemonError::from)
}

/// The daemon: one scanner, one store, the targets.
pub struct Daemon {
    pub config: Arc<DaemonConfig>,
    pub store: Arc<dyn Store>,
    pub scanner: Arc<Scanner>,
    pub metrics: Arc<metrics::Metrics>,
    /// The configuration's targets merged with the imported ones ([`targets`]).
    pub targets: Arc<targets::LiveTargets>,
}

impl Daemon {
    pub fn new(config: DaemonConfig, store: Arc<dyn Store>, scanner: Scanner) -> Daemon {
        let config = Arc::new(config);
        Daemon {
            targets: Arc::new(targets::LiveTargets::new(config.clone())),
            config,
            store,
            scanner: Arc::new(scanner),
            metrics: Arc::new(metrics::Metrics::default()),
        }
    }

    /// Runs the schedule until `shutdown` fires (then running scans are cancelled and recorded
    /// as interrupted, their slots released), or, with `once`, until every target's current
    /// slot was tried once.
    ///
    /// Politeness across a fleet: before it claims a target, the worker leases the target's
    /// host (one worker scans a host at a time, so the per-host rate of its scanner holds for
    /// the whole fleet); it keeps the lease while any run of that host is in flight, renewing
    /// it every third of its length, and gives it up once nothing of the host is due. A lost
    /// host lease cancels the host's runs (recorded as interrupted, their slots released).
    pub async fn run(&self, shutdown: CancellationToken, once: bool) -> Result<(), DaemonError> {
        self.scanner.warm().await;
        let rows = self.config.rows();
        let now = now_ms(&self.scanner);
        db(&self.store, move |s| s.sync_targets(&rows, now)).await?;
        let mut pass = Pass {
            // Slots that already ran need no claim (one query instead of one claim per target).
            tried: db(&self.store, |s| s.held_slots())
                .await?
                .into_iter()
                .collect(),
            ..Pass::default()
        };
        let permits = Arc::new(tokio::sync::Semaphore::new(self.config.max_concurrent));
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Ended>();
        // Retention runs at start and then hourly, off the async threads, one transaction.
        let mut pruned_at: Option<i64> = None;
        let mut tasks = tokio::task::JoinSet::new();
        // Every run's cancellation: a shutdown, or an error of the scheduler itself.
        let stop = shutdown.child_token();
        let lease = ms(self.config.lease);
        // How soon a pass is tried again while a host or a target is held elsewhere.
        let retry_ms = (lease / 6).clamp(100, 10_000);
        // --once waits out a host's quiet second once (the daemon it replaces gave the host up
        // just now), never another daemon's live lease.
        let mut waited_quiet = false;
        // The first store error of a slot whose claim was given up.
        let mut given_up: Option<DaemonError> = None;
        loop {
            while let Ok(ended) = done_rx.try_recv() {
                pass.ended(ended);
            }
            let now = now_ms(&self.scanner);
            if pruned_at.is_none_or(|at| now - at >= PRUNE_EVERY_MS) {
                pruned_at = Some(now);
                self.prune(now).await;
            }
            let mut wake = now + 60_000;
            let mut claimed_nothing = true;
            // A claim the store failed this pass (tried again on a later one).
            let mut claim_failed = false;
            // Hosts with a target another run holds, this pass.
            let mut pending: HashSet<String> = HashSet::new();
            // Every permit is taken: the rest of the pass only notes the hosts of the targets
            // still due, so that a host this worker holds is kept for them, not given up (and
            // left quiet) while its targets wait for a permit.
            let mut full = false;
            let set = self.current_targets().await;
            // Hosts with the fewest of this worker's runs first, a host it holds before one it
            // would have to lease (then the targets' own order): a permit that frees up goes to
            // a host this worker holds and leaves idle before a second scan of a busy one, so
            // every host it holds is kept at its rate.
            let mut order: Vec<(usize, bool, usize, String)> = set
                .targets
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let host = pass.host_of(t);
                    let (runs, unheld) =
                        pass.hosts.get(&host).map_or((0, true), |h| (h.runs, false));
                    (runs, unheld, i, host)
                })
                .collect();
            order.sort_unstable();
            for (_, _, i, host) in order {
                let Some(t) = set.targets.get(i) else {
                    continue;
                };
                let slot = schedule::slot_at(now, t.every_ms, t.offset_ms);
                wake = wake.min(slot + t.every_ms);
                if pass.in_flight.contains(&t.name)
                    || pass.tried.get(&t.name).is_some_and(|held| *held >= slot)
                {
                    continue;
                }
                if full {
                    pending.insert(host);
                    continue;
                }
                // A host another worker holds is asked for again after `retry_ms`, not at
                // every pass (a pass runs whenever a run ends).
                if let Some(until) = pass.refused.get(&host) {
                    if *until > now {
                        wake = wake.min(*until);
                        continue;
                    }
                    pass.refused.remove(&host);
                }
                if !pass.hosts.contains_key(&host) {
                    let Some(held) = self.lease_host(&host, now, &stop).await? else {
                        pass.refused.insert(host, now + retry_ms);
                        wake = wake.min(now + retry_ms);
                        continue;
                    };
                    pass.hosts.insert(host.clone(), held);
                }
                // A host whose lease was lost: its runs are being cancelled; it is given up
                // once they ended (and asked for again after that), never scanned meanwhile.
                if pass.hosts.get(&host).is_some_and(|h| h.lost.is_cancelled()) {
                    continue;
                }
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    // A run finishing wakes the loop.
                    full = true;
                    pending.insert(host);
                    continue;
                };
                let (name, worker) = (t.name.clone(), self.config.worker.clone());
                let claim = match db(&self.store, move |s| {
                    s.claim_for(&name, slot, &worker, now, lease)
                })
                .await
                {
                    Ok(c) => {
                        pass.unclaimed.remove(&t.name);
                        c
                    }
                    // A store that cannot claim (the database unreachable for a moment, a lock
                    // that timed out) stops this pass, not the daemon nor its running scans:
                    // the pass is tried again after `retry_ms`, one slot at most CLAIM_RETRIES
                    // times (then the target waits for its next slot).
                    Err(e) => {
                        let tries = pass.claim_failed(&t.name, slot);
                        if tries >= CLAIM_RETRIES {
                            tracing::warn!(target: "mcpprobe::daemon", target_name = %t.name, "{} could not be claimed ({tries} tries): this slot is given up, the next one runs: {e}", t.name);
                            pass.tried.insert(t.name.clone(), slot);
                            given_up.get_or_insert(e);
                            continue;
                        }
                        tracing::warn!(target: "mcpprobe::daemon", target_name = %t.name, "{} could not be claimed (try {tries} of {CLAIM_RETRIES}; again in {retry_ms} ms): {e}", t.name);
                        claim_failed = true;
                        pending.insert(host);
                        wake = wake.min(now + retry_ms);
                        break;
                    }
                };
                let claim = match claim {
                    Claimed::Run(c) => c,
                    Claimed::Done => {
                        pass.tried.insert(t.name.clone(), slot);
                        continue;
                    }
                    // Another run holds the target (a worker that died: its lease lapses):
                    // try again on a later pass, keeping the host.
                    Claimed::Busy => {
                        pending.insert(host);
                        wake = wake.min(now + retry_ms);
                        continue;
                    }
                };
                pass.tried.insert(t.name.clone(), slot);
                claimed_nothing = false;
                let Some(held) = pass.hosts.get_mut(&host) else {
                    continue;
                };
                held.runs += 1;
                pass.in_flight.insert(t.name.clone());
                let run = Runner {
                    target: t.clone(),
                    store: self.store.clone(),
                    scanner: self.scanner.clone(),
                    metrics: self.metrics.clone(),
                    rate: self.config.rate,
                    lease: self.config.lease,
                    secrets: set.secrets.clone(),
                    host_lost: held.lost.clone(),
                };
                let (cancel, done) = (held.stop.child_token(), done_tx.clone());
                tasks.spawn(async move {
                    let (name, slot) = (run.target.name.clone(), claim.slot);
                    let recorded = run.run(claim, cancel).await;
                    drop(permit);
                    let _ = done.send(Ended {
                        name,
                        host,
                        slot,
                        recorded,
                    });
                });
            }
            // A host with nothing in flight and nothing waiting is given up at once.
            pass.release_idle(&self.store, &pending, now_ms(&self.scanner))
                .await;
            // --once does not wait for another daemon's lease: what it could claim, it ran.
            if once && pass.in_flight.is_empty() && claimed_nothing && !claim_failed {
                let refused = pass.refused.values().any(|until| *until > now);
                if waited_quiet || !refused {
                    break;
                }
                waited_quiet = true;
                pass.refused.clear();
                wake = now + store::HOST_QUIET_MS + 100;
            }
            let sleep_ms = u64::try_from((wake - now).max(1)).unwrap_or(60_000);
            tokio::select! {
                () = shutdown.cancelled() => break,
                ended = done_rx.recv() => {
                    if let Some(ended) = ended {
                        pass.ended(ended);
                    }
                }
                () = self.targets.changed() => {}
                () = tokio::time::sleep(Duration::from_millis(sleep_ms)) => {}
            }
        }
        // Shutdown (or --once done): running scans see the cancellation and record themselves.
        while tasks.join_next().await.is_some() {}
        while let Ok(ended) = done_rx.try_recv() {
            pass.ended(ended);
        }
        pass.release_all(&self.store, now_ms(&self.scanner)).await;
        // --once says when a slot it should have run could not be claimed.
        match given_up {
            Some(e) if once => Err(e),
            _ => Ok(()),
        }
    }

    /// Applies retention (a failure is logged: history that could not be trimmed is no reason
    /// to stop scanning).
    async fn prune(&self, now: i64) {
        let keep = self.config.retention;
        match db(&self.store, move |s| s.prune(&keep, now)).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(target: "mcpprobe::daemon", "retention deleted {n} old runs (keep_runs {}, keep_days {})", keep.runs, keep.days)
            }
            Err(e) => tracing::warn!(target: "mcpprobe::daemon", "retention failed: {e}"),
        }
    }

    /// Leases `host` for this worker and starts renewing it; `None` while another worker
    /// holds it. A store error is logged and treated as held elsewhere (tried again soon).
    async fn lease_host(
        &self,
        host: &str,
        now: i64,
        stop: &CancellationToken,
    ) -> Result<Option<HeldHost>, DaemonError> {
        let (h, worker, lease) = (
            host.to_string(),
            self.config.worker.clone(),
            ms(self.config.lease),
        );
        let granted = match db(&self.store, move |s| s.lease_host(&h, &worker, now, lease)).await {
            Ok(g) => g,
            Err(e) => {
                tracing::warn!(target: "mcpprobe::daemon", "the lease of host {host} could not be taken: {e}");
                None
            }
        };
        let Some(granted) = granted else {
            return Ok(None);
        };
        let (lost, stop, done) = (
            CancellationToken::new(),
            stop.child_token(),
            CancellationToken::new(),
        );
        let scanner = self.scanner.clone();
        let renewer = renew_host_lease(
            self.store.clone(),
            self.config.lease,
            move || now_ms(&scanner),
            granted,
            HostStop {
                lost: lost.clone(),
                stop: stop.clone(),
                done: done.clone(),
            },
        );
        Ok(Some(HeldHost {
            runs: 0,
            lost,
            stop,
            done,
            renewer,
        }))
    }
}

/// The politeness key of a target: its URL's host, in lower case (the port aside: two servers
/// of one machine share its capacity).
fn host_of(t: &TargetSpec) -> String {
    url::Url::parse(t.scan_url.expose_secret())
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_else(|| t.name.clone())
}

/// How many times a slot whose run could not be recorded is tried again (without a restart).
const RECORD_RETRIES: u32 = 3;

/// How many times a slot is claimed when the store fails the claim, a pass apart.
pub const CLAIM_RETRIES: u32 = 3;

/// What one run's task reports when it ends.
struct Ended {
    name: String,
    host: String,
    slot: i64,
    /// Whether its end was recorded (a run the store could not record is tried again).
    recorded: bool,
}

/// A host this worker leased.
struct HeldHost {
    /// Runs of the host in flight.
    runs: usize,
    /// Cancelled when the lease is lost (the host's runs say so when they record).
    lost: CancellationToken,
    /// The host's runs' cancellation: a shutdown, or the lease lost.
    stop: CancellationToken,
    /// Tells the renewer to stop.
    done: CancellationToken,
    /// The renewer; it ends with the lease it last held (`None` once lost).
    renewer: tokio::task::JoinHandle<Option<store::HostLease>>,
}

/// The scheduler's state across passes.
#[derive(Default)]
struct Pass {
    /// Per target: the latest slot it ran (or that another worker's run holds).
    tried: HashMap<String, i64>,
    /// Targets with a run in flight.
    in_flight: HashSet<String>,
    hosts: HashMap<String, HeldHost>,
    /// Hosts another worker held, and when to ask for them again.
    refused: HashMap<String, i64>,
    /// Per target: the slot whose record failed, and how many times.
    failed: HashMap<String, (i64, u32)>,
    /// Per target: the slot the store failed to claim, and how many times.
    unclaimed: HashMap<String, (i64, u32)>,
    /// Per target: a hash of its URL (the URL may hold a secret) and its host ([`host_of`],
    /// read once rather than at every pass).
    host_of: HashMap<String, (u64, String)>,
    url_hasher: std::collections::hash_map::RandomState,
}

impl Pass {
    /// `t`'s host, from the cache while its URL is the same.
    fn host_of(&mut self, t: &TargetSpec) -> String {
        let url = {
            use std::hash::BuildHasher as _;
            self.url_hasher.hash_one(t.scan_url.expose_secret())
        };
        if let Some((u, h)) = self.host_of.get(&t.name)
            && *u == url
        {
            return h.clone();
        }
        let h = host_of(t);
        // Targets come and go (imports, removals): the cache is dropped rather than grown
        // without bound.
        if self.host_of.len() >= 100_000 {
            self.host_of.clear();
        }
        self.host_of.insert(t.name.clone(), (url, h.clone()));
        h
    }

    /// Counts a failed claim of `slot` of `target`: the tries of that slot so far.
    fn claim_failed(&mut self, target: &str, slot: i64) -> u32 {
        let tries = match self.unclaimed.get(target) {
            Some((s, n)) if *s == slot => n + 1,
            _ => 1,
        };
        self.unclaimed.insert(target.to_string(), (slot, tries));
        tries
    }

    fn ended(&mut self, e: Ended) {
        self.in_flight.remove(&e.name);
        if let Some(h) = self.hosts.get_mut(&e.host) {
            h.runs = h.runs.saturating_sub(1);
        }
        if e.recorded {
            self.failed.remove(&e.name);
            return;
        }
        // Not recorded: the slot is tried again on a later pass, a bounded number of times.
        let tries = match self.failed.get(&e.name) {
            Some((slot, n)) if *slot == e.slot => n + 1,
            _ => 1,
        };
        self.failed.insert(e.name.clone(), (e.slot, tries));
        if tries <= RECORD_RETRIES && self.tried.get(&e.name) == Some(&e.slot) {
            self.tried.remove(&e.name);
        }
    }

    /// Gives up the hosts with no run in flight and no target waiting (`pending`), or whose
    /// lease was lost (once their cancelled runs ended: a run still in flight counts against
    /// the host it started under, never against a lease taken after).
    async fn release_idle(&mut self, store: &Arc<dyn Store>, pending: &HashSet<String>, now: i64) {
        let idle: Vec<String> = self
            .hosts
            .iter()
            .filter(|(host, h)| {
                h.runs == 0 && (!pending.contains(host.as_str()) || h.lost.is_cancelled())
            })
            .map(|(host, _)| host.clone())
            .collect();
        for host in idle {
            if let Some(h) = self.hosts.remove(&host) {
                release(store, h, now).await;
            }
        }
    }

    async fn release_all(&mut self, store: &Arc<dyn Store>, now: i64) {
        for (_, h) in self.hosts.drain() {
            release(store, h, now).await;
        }
    }
}

/// Stops a host's renewer and gives its lease up (a lease already lost needs nothing).
async fn release(store: &Arc<dyn Store>, h: HeldHost, now: i64) {
    h.done.cancel();
    if let Ok(Some(lease)) = h.renewer.await {
        let host = lease.host.clone();
        if let Err(e) = db(store, move |s| s.release_host(&lease, now)).await {
            // It lapses after its lease: nothing is lost but time.
            tracing::warn!(target: "mcpprobe::daemon", "the lease of host {host} could not be given up: {e}");
        }
    }
}

/// How a host's renewer signals and is stopped.
struct HostStop {
    /// Cancelled when the lease is lost.
    lost: CancellationToken,
    /// The host's runs' cancellation, cancelled with `lost`.
    stop: CancellationToken,
    /// Stops the renewer (between renewals).
    done: CancellationToken,
}

/// Renews a host's lease every third of `lease` until `signals.done`; ends with the lease it
/// holds, or `None` once lost (one store error is tried again after a twelfth of the lease,
/// as for runs; a refused renewal is a loss at once), which cancels the host's runs.
fn renew_host_lease(
    store: Arc<dyn Store>,
    lease: Duration,
    now_ms: impl Fn() -> i64 + Send + 'static,
    mut held: store::HostLease,
    signals: HostStop,
) -> tokio::task::JoinHandle<Option<store::HostLease>> {
    tokio::spawn(async move {
        let mut failed = false;
        loop {
            let wait = if failed { lease / 12 } else { lease / 3 };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = signals.done.cancelled() => return Some(held),
            }
            let now = now_ms();
            let renewed = tokio::task::spawn_blocking({
                let (store, mut h) = (store.clone(), held.clone());
                move || {
                    let ok = store.renew_host(&mut h, now, ms(lease));
                    (ok, h)
                }
            })
            .await;
            match renewed {
                Ok((Ok(true), next)) => {
                    held = next;
                    failed = false;
                }
                Ok((Err(e), _)) if !failed => {
                    tracing::warn!(target: "mcpprobe::daemon", "the lease of host {} could not be renewed, trying again: {e}", held.host);
                    failed = true;
                }
                _ => {
                    tracing::warn!(target: "mcpprobe::daemon", "the lease of host {} was lost: its runs are cancelled", held.host);
                    signals.lost.cancel();
                    signals.stop.cancel();
                    return None;
                }
            }
        }
    })
}

/// The incomplete report of a run that never started its scan: why, and every check skipped.
fn unstarted(t: &TargetSpec, why: String, skip: &str) -> Report {
    let mut r = Report::new(t.url.clone(), t.policy);
    r.outcome = RunOutcome::Incomplete;
    r.reason = Some(why);
    r.skip_rest(skip);
    r.finish();
    r
}

/// One run of one target.
struct Runner {
    target: TargetSpec,
    store: Arc<dyn Store>,
    scanner: Arc<Scanner>,
    metrics: Arc<metrics::Metrics>,
    rate: u32,
    lease: Duration,
    /// The configuration's secrets, redacted from everything the run stores.
    secrets: Secrets,
    /// Cancelled when this worker lost its lease on the target's host.
    host_lost: CancellationToken,
}

/// A run's report as the daemon records it, with the state the scan observed and the proof
/// the gate accepted.
struct Reviewed {
    report: Report,
    /// The observed state as JSON, its secrets redacted (`None` when the scan observed none).
    observed_json: Option<String>,
    proof: Option<crate::gate::ProofUsed>,
}

/// Renews the claim's lease (`lease` long) every third of it until `done`, keeping the new epoch
/// in `epoch`. A store error is tried again once (after a twelfth of the lease) before the
/// scan is given up; a renewal the store refuses (another epoch holds the run) is a lost
/// lease at once. Either way it sets `lost` and cancels `stop`.
#[allow(clippy::too_many_arguments)]
fn renew_lease(
    store: Arc<dyn Store>,
    lease: Duration,
    now_ms: impl Fn() -> i64 + Send + 'static,
    mut c: Claim,
    epoch: Arc<AtomicI64>,
    stop: CancellationToken,
    done: CancellationToken,
    lost: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut failed = false;
        loop {
            let wait = if failed { lease / 12 } else { lease / 3 };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = done.cancelled() => return,
            }
            let now = now_ms();
            let renewed = tokio::task::spawn_blocking({
                let (store, mut c) = (store.clone(), c.clone());
                move || {
                    let ok = store.renew(&mut c, now, ms(lease));
                    (ok, c)
                }
            })
            .await;
            match renewed {
                Ok((Ok(true), next)) => {
                    epoch.store(next.epoch, Ordering::SeqCst);
                    c = next;
                    failed = false;
                }
                Ok((Err(e), _)) if !failed => {
                    tracing::warn!(target: "mcpprobe::daemon", "run {}: its lease could not be renewed, trying again: {e}", c.run_id);
                    failed = true;
                }
                _ => {
                    lost.store(true, Ordering::Relaxed);
                    stop.cancel();
                    return;
                }
            }
        }
    })
}

impl Runner {
    /// Runs and records the run; `false` when it could not be recorded (the scheduler tries
    /// the slot again).
    async fn run(self, claim: Claim, cancel: CancellationToken) -> bool {
        let name = self.target.name.clone();
        // The claim's current epoch, shared by the renewer (which bumps it) and whatever
        // records the run (finish and interrupt hold only with it).
        let epoch = Arc::new(AtomicI64::new(claim.epoch));
        if let Err(e) = self.scan(claim.clone(), &epoch, cancel).await {
            tracing::error!(target: "mcpprobe::daemon", target_name = %name, "run {} failed: {e}", claim.run_id);
            let c = Claim {
                epoch: epoch.load(Ordering::SeqCst),
                ..claim
            };
            let (store, now) = (self.store.clone(), now_ms(&self.scanner));
            let why = self
                .secrets
                .redact(&format!("the daemon could not record it: {e}"));
            let _ = db(&store, move |s| s.interrupt(&c, &why, now)).await;
            return false;
        }
        true
    }

    /// One run: reads the accepted baseline, scans under a renewed lease, then records the
    /// run as interrupted or as the reviewed report (pinning a first complete state).
    async fn scan(
        &self,
        claim: Claim,
        epoch: &Arc<AtomicI64>,
        cancel: CancellationToken,
    ) -> Result<(), DaemonError> {
        let t = &self.target;
        let started = std::time::Instant::now();
        tracing::info!(target: "mcpprobe::daemon", target_name = %t.name, run = claim.run_id, slot = claim.slot, "run {} of {} started", claim.run_id, t.name);
        let name = t.name.clone();
        let accepted = db(&self.store, move |s| s.accepted_baseline(&name)).await?;
        let label = format!("the accepted baseline of target {}", t.name);
        // An accepted baseline that cannot be read fails closed: the run is incomplete and says
        // why, rather than comparing with nothing (the rug-pull check would be off for good).
        let old = match accepted.as_ref().map(|b| {
            crate::baseline::parse(b.json.as_bytes(), Path::new(&label)).map_err(|e| (b.id, e))
        }) {
            None => None,
            Some(Ok(b)) => Some(b),
            Some(Err((id, e))) => return self.record_unreadable_baseline(&claim, id, &e).await,
        };
        let req = self.request(StoredBaseline { label, old })?;
        let (scanned, lost) = self.scan_leased(&req, &claim, epoch, &cancel).await;
        // Recorded with the epoch of the last renewal: an older copy would be refused.
        let claim = Claim {
            epoch: epoch.load(Ordering::SeqCst),
            ..claim
        };
        let now = now_ms(&self.scanner);
        let duration = started.elapsed();
        if cancel.is_cancelled() || lost {
            return self
                .record_interrupted(&claim, &cancel, duration, now)
                .await;
        }
        let reviewed = self.reviewed(scanned);
        self.record_finished(&claim, accepted.as_ref(), reviewed, duration, now)
            .await
    }

    /// Records the run as incomplete, every check skipped, because the accepted baseline `id`
    /// could not be read (`e`): nothing is sent to the target.
    async fn record_unreadable_baseline(
        &self,
        claim: &Claim,
        id: i64,
        e: &crate::baseline::BaselineError,
    ) -> Result<(), DaemonError> {
        let t = &self.target;
        let r = unstarted(
            t,
            format!(
                "the accepted baseline #{id} of target {} could not be read ({e}); accept a run again with `mcpprobe daemon accept {}`",
                t.name, t.name
            ),
            "the accepted baseline could not be read",
        );
        let finished = Finished {
            status: RunStatus::Incomplete,
            exit_code: r.exit_code,
            counts: Counts::default(),
            tool_list_sha256: None,
            requests: 0,
            reason: r.reason.clone(),
            report_json: r.to_json(),
            observed_json: None,
            compared_with: Some(id),
            refusal: None,
            duration_ms: 0,
            proof: None,
        };
        let (c, now) = (claim.clone(), now_ms(&self.scanner));
        db(&self.store, move |s| s.finish(&c, &finished, now)).await?;
        tracing::error!(target: "mcpprobe::daemon", target_name = %t.name, "run {}: the accepted baseline #{id} could not be read", claim.run_id);
        Ok(())
    }

    /// The target's scan request: its URL, token, checks and address rule, the daemon's rate,
    /// and `stored` (the accepted baseline the scan compares with).
    fn request(&self, stored: StoredBaseline) -> Result<ScanRequest, DaemonError> {
        let t = &self.target;
        let mut req = ScanRequest::new(match Target::http(t.scan_url.expose_secret()) {
            Ok(target) => target,
            Err(e) => return Err(DaemonError::Blocking(e.to_string())),
        });
        req.credentials = Credentials {
            token: t.token.clone(),
            headers: Vec::new(),
        };
        req.checks = t.checks.clone();
        req.allow_private_addresses = t.allow_private_addresses;
        req.limits = ScanLimits {
            rate: self.rate,
            ..ScanLimits::default()
        };
        req.stored_baseline = Some(stored);
        Ok(req)
    }

    /// Runs the scan (stopped by `cancel`) while the run's lease is renewed; returns what the
    /// scanner returned and whether the lease was lost (which stopped the scan too).
    async fn scan_leased(
        &self,
        req: &ScanRequest,
        claim: &Claim,
        epoch: &Arc<AtomicI64>,
        cancel: &CancellationToken,
    ) -> (Result<Scanned, ConfigError>, bool) {
        // The lease is renewed while the scan runs; a lost lease stops the scan.
        let scan_cancel = cancel.child_token();
        let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = CancellationToken::new();
        let scanner = self.scanner.clone();
        let renewer = renew_lease(
            self.store.clone(),
            self.lease,
            move || now_ms(&scanner),
            claim.clone(),
            epoch.clone(),
            scan_cancel.clone(),
            done.clone(),
            lost.clone(),
        );
        let scanned = self.scanner.scan_observed(req, scan_cancel).await;
        // The renewer stops between renewals: one under way is waited for, so the epoch it
        // wrote is the one the run is recorded with.
        done.cancel();
        let _ = renewer.await;
        (scanned, lost.load(Ordering::Relaxed))
    }

    /// Records a run stopped before its end: the daemon shutting down (`cancel` fired) or the
    /// run's lease lost.
    async fn record_interrupted(
        &self,
        claim: &Claim,
        cancel: &CancellationToken,
        duration: Duration,
        now: i64,
    ) -> Result<(), DaemonError> {
        let t = &self.target;
        let why = if self.host_lost.is_cancelled() {
            "interrupted: the worker lost its lease on the target's host"
        } else if cancel.is_cancelled() {
            "interrupted: the daemon was shutting down"
        } else {
            "interrupted: the run's lease was lost"
        };
        let c = claim.clone();
        db(&self.store, move |s| s.interrupt(&c, why, now)).await?;
        self.metrics.record(RunStatus::Interrupted, duration);
        tracing::info!(target: "mcpprobe::daemon", target_name = %t.name, outcome = "interrupted", duration_ms = duration.as_millis() as u64, "run {} interrupted", claim.run_id);
        Ok(())
    }

    /// The report to record from what the scanner returned (a scan that could not start is an
    /// incomplete report saying why): redacted, then the target's review and policy applied;
    /// with the observed state, redacted, as JSON.
    fn reviewed(&self, scanned: Result<Scanned, ConfigError>) -> Reviewed {
        let t = &self.target;
        let (mut report, observed, proof) = match scanned {
            Ok(s) => (s.report, s.observed, s.proof),
            Err(e) => (
                unstarted(
                    t,
                    format!("the scan could not start: {e}"),
                    "the scan could not start",
                ),
                None,
                None,
            ),
        };
        // Every secret of the configuration (not only this target's) stays out of the store.
        report.redact(|s| self.secrets.redact(s));
        t.review.apply(&mut report, self.scanner.now().date_naive());
        report.apply_policy(t.policy);
        let observed_json = observed.map(|mut b| {
            b.redact(&|s| self.secrets.redact(s));
            b
        });
        let observed_json = observed_json.as_ref().and_then(|b| b.to_pretty_json().ok());
        Reviewed {
            report,
            observed_json,
            proof,
        }
    }

    /// Records the finished run (compared with `accepted`, if any) unless it lost its claim,
    /// pins the first complete state as the accepted baseline, and counts and logs the run.
    async fn record_finished(
        &self,
        claim: &Claim,
        accepted: Option<&store::StoredBaseline>,
        reviewed: Reviewed,
        duration: Duration,
        now: i64,
    ) -> Result<(), DaemonError> {
        let t = &self.target;
        let Reviewed {
            report,
            observed_json,
            proof,
        } = reviewed;
        let status = match report.outcome {
            RunOutcome::Complete => RunStatus::Complete,
            RunOutcome::Refused => RunStatus::Refused,
            RunOutcome::Incomplete => RunStatus::Incomplete,
        };
        let finished = Finished {
            status,
            exit_code: report.exit_code,
            counts: Counts::of(&report),
            tool_list_sha256: report.tool_list_sha256.clone(),
            requests: report.requests_sent,
            reason: report.reason.clone(),
            report_json: report.to_json(),
            observed_json: observed_json.clone(),
            compared_with: accepted.map(|b| b.id),
            refusal: report.refusal.map(crate::model::Refusal::as_str),
            duration_ms: i64::try_from(duration.as_millis()).unwrap_or(i64::MAX),
            proof: proof.as_ref().map(store::ProofRecord::of),
        };
        let (c, name) = (claim.clone(), t.name.clone());
        let first_pin = accepted.is_none() && status == RunStatus::Complete;
        let held = db(&self.store, move |s| {
            let held = s.finish(&c, &finished, now)?;
            // The first complete state a target shows is its accepted baseline; later changes
            // are BASE-01/02 findings until `daemon accept`.
            if let (true, true, Some(json)) = (held, first_pin, observed_json) {
                s.accept_baseline(&name, &json, now)?;
            }
            Ok(held)
        })
        .await?;
        if !held {
            tracing::warn!(target: "mcpprobe::daemon", target_name = %t.name, "run {} lost its claim before it finished: not recorded", claim.run_id);
            return Ok(());
        }
        self.metrics.record(status, duration);
        tracing::info!(
            target: "mcpprobe::daemon",
            target_name = %t.name,
            outcome = status.as_str(),
            exit_code = report.exit_code,
            duration_ms = duration.as_millis() as u64,
            requests = report.requests_sent,
            trace_id = report.trace_id.as_deref().unwrap_or(""),
            "run {} of {}: {}",
            claim.run_id,
            t.name,
            status.as_str()
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The renewer keeps the epoch of its last renewal where the run's record reads it: the
    /// run finishes with it, and a copy of the claim from before the renewal is refused.
    #[tokio::test]
    async fn a_renewed_run_is_recorded_with_the_renewals_epoch() {
        let dir = tempfile::tempdir().expect("dir");
        let store: Arc<dyn Store> = Arc::new(
            crate::daemon::sqlite::SqliteStore::open(&dir.path().join("d.sqlite3")).expect("open"),
        );
        let row = store::TargetRow {
            name: "a".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            every_ms: 60_000,
        };
        store.sync_targets(&[row], 0).expect("targets");
        let store::Claimed::Run(claim) = store.claim("a", 0, 0, 60_000).expect("claim") else {
            panic!("claimed")
        };
        // A clock that moves a lease on at each reading.
        let clock = Arc::new(AtomicI64::new(0));
        let now = {
            let clock = clock.clone();
            move || clock.fetch_add(20_000, Ordering::SeqCst)
        };
        let epoch = Arc::new(AtomicI64::new(claim.epoch));
        let (stop, done) = (CancellationToken::new(), CancellationToken::new());
        let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
        tokio::time::pause();
        let renewer = renew_lease(
            store.clone(),
            LEASE,
            now,
            claim.clone(),
            epoch.clone(),
            stop.clone(),
            done.clone(),
            lost.clone(),
        );
        // Past two renewals (each a third of the lease), then the scan ends.
        tokio::time::sleep(LEASE / 3 * 2 + Duration::from_millis(1)).await;
        done.cancel();
        renewer.await.expect("the renewer ends");
        let current = epoch.load(Ordering::SeqCst);
        assert!(current > claim.epoch, "renewed: {current}");
        assert!(!lost.load(Ordering::Relaxed) && !stop.is_cancelled());
        let finished = store::Finished {
            status: RunStatus::Complete,
            exit_code: 0,
            counts: Counts::default(),
            tool_list_sha256: None,
            requests: 0,
            reason: None,
            report_json: "{}".into(),
            observed_json: None,
            compared_with: None,
            refusal: None,
            duration_ms: 1,
            proof: None,
        };
        assert!(
            !store.finish(&claim, &finished, 1).expect("stale"),
            "a stale copy loses"
        );
        let recorded = Claim {
            epoch: current,
            ..claim
        };
        assert!(store.finish(&recorded, &finished, 1).expect("finish"));
    }

    #[test]
    fn database_url_env_names_its_variable_and_keeps_the_url_secret() {
        let text = "database_url_env = \"DB\"\n";
        let config = Config::parse(text, Path::new("mcpprobe.toml")).expect("valid");
        let e = DatabaseUrl::of(&config, |_| None).expect_err("unset");
        let shown = e.to_string();
        assert!(
            shown.contains("database_url_env") && shown.contains("DB is not set"),
            "{shown}"
        );
        let url = "postgres://u:pw-s3cret@db.internal/fleet";
        let d = DaemonConfig::new(
            &config,
            |v| (v == "DB").then(|| url.to_string()),
            PathBuf::from("/tmp/state"),
        )
        .expect("a daemon config");
        let db = d.database.as_ref().expect("the shared store");
        assert_eq!((db.var.as_str(), db.url.expose_secret()), ("DB", url));
        assert!(!format!("{d:?}").contains("pw-s3cret"));
        assert_eq!(
            d.secrets.redact(&format!("cannot reach {url}")),
            "cannot reach [REDACTED]"
        );
    }

    #[test]
    fn the_api_token_is_compared_not_shown() {
        let text = "listen = \"0.0.0.0:9464\"\napi_token_env = \"API\"\n";
        let config = Config::parse(text, Path::new("mcpprobe.toml")).expect("valid");
        let token = "s3cret-api-token-of-enough-length";
        let d = DaemonConfig::new(
            &config,
            |v| (v == "API").then(|| token.to_string()),
            PathBuf::from("/tmp/state"),
        )
        .expect("a daemon config");
        assert_eq!(d.api_token.as_ref().map(|t| t.expose_secret()), Some(token));
        let shown = format!("{d:?}");
        assert!(!shown.contains(token), "{shown}");
        assert_eq!(d.secrets.redact(token), "[REDACTED]");
    }
}
