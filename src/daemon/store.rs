//! The daemon's state behind one interface (SPEC §8.1): targets, runs claimed with a lease and
//! unique per (target, slot), their reports, the accepted baselines, and the ownership proof
//! each run relied on (the proof files `mcpprobe verify` writes in the state folder stay what
//! the gate reads on every run; the store records which one a run used). SQLite is the embedded
//! default ([`super::sqlite::SqliteStore`]); PostgreSQL ([`super::postgres::PgStore`]) is the
//! store a fleet of daemons shares (claims with `FOR UPDATE SKIP LOCKED`, host leases). The
//! interface is synchronous: callers on async threads go through [`super::db`]
//! (`spawn_blocking`). Times are unix milliseconds, passed in by the caller.

use serde::{Deserialize, Serialize};

use crate::finding::Severity;

/// A store that cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the state database {path}: {message}")]
    Database { path: String, message: String },
    #[error(
        "the state database {path} was written by a newer mcpprobe (schema {found}, this build knows {known})"
    )]
    NewerSchema {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("no target named {0:?}")]
    UnknownTarget(String),
    #[error("target {0:?} has no run with a complete inventory to accept")]
    NothingToAccept(String),
    #[error("target {0:?} has no run {1} with a complete inventory to accept")]
    NoSuchRunToAccept(String, i64),
    /// `remove_target` of a target the configuration file defines (remove it there).
    #[error(
        "target {0:?} is defined in the configuration file, not imported: remove it from the file"
    )]
    ConfiguredTarget(String),
}

/// How a run ended (or that it has not).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Refused,
    Incomplete,
    /// Cancelled by a shutdown, or its lease lapsed (the daemon died): the slot was released.
    Interrupted,
}

impl RunStatus {
    /// The name the store and the API use (`complete`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The status named exactly `s` (as stored).
    pub fn parse(s: &str) -> Option<RunStatus> {
        s.parse().ok()
    }
}

/// Findings that count, by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub critical: u32,
    pub high: u32,
    pub medium: u32,
    pub low: u32,
    pub info: u32,
}

impl Counts {
    pub fn of(report: &crate::model::Report) -> Counts {
        let mut c = Counts::default();
        for f in report.counting() {
            let n = match f.severity {
                Severity::Critical => &mut c.critical,
                Severity::High => &mut c.high,
                Severity::Medium => &mut c.medium,
                Severity::Low => &mut c.low,
                Severity::Info => &mut c.info,
            };
            *n += 1;
        }
        c
    }

    pub fn get(&self, s: Severity) -> u32 {
        match s {
            Severity::Critical => self.critical,
            Severity::High => self.high,
            Severity::Medium => self.medium,
            Severity::Low => self.low,
            Severity::Info => self.info,
        }
    }

    /// The worst severity with a finding, info aside (info findings are no problem).
    pub fn worst(&self) -> Option<Severity> {
        [
            Severity::Critical,
            Severity::High,
            Severity::Medium,
            Severity::Low,
        ]
        .into_iter()
        .find(|s| self.get(*s) > 0)
    }
}

/// One run, as lists show it (`GET /targets/{name}/runs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub target: String,
    /// The schedule slot it ran for (slot start, unix ms).
    pub slot: i64,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub counts: Counts,
    pub tool_list_sha256: Option<String>,
    pub requests: u64,
    /// Why it was refused, incomplete or interrupted.
    pub reason: Option<String>,
    /// The daemon that ran it (its worker name; none for runs from before version 5).
    pub worker: Option<String>,
    /// The ownership proof the gate accepted for it (none when the gate stopped it, or it
    /// never reached the gate).
    pub proof: Option<ProofRecord>,
}

/// An ownership proof a run relied on: its method (`local`, `dns-txt`), host and, for a stored
/// proof, when it was verified and when it expires. Never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofRecord {
    pub method: String,
    pub host: String,
    pub verified_ms: Option<i64>,
    pub expires_ms: Option<i64>,
}

impl ProofRecord {
    pub fn of(p: &crate::gate::ProofUsed) -> ProofRecord {
        ProofRecord {
            method: p.method.clone(),
            host: p.host.clone(),
            verified_ms: p.verified_at.map(|t| t.timestamp_millis()),
            expires_ms: p.expires_at.map(|t| t.timestamp_millis()),
        }
    }
}

/// What a claim got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The slot is this run's.
    Run(Claim),
    /// The slot already has a run that holds it (complete, refused, incomplete).
    Done,
    /// Another run of the target holds a live lease (no overlap): try again later.
    Busy,
}

/// A run claimed for a slot: the handle its scan renews and finishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub run_id: i64,
    pub target: String,
    pub slot: i64,
    /// Bumped by every renewal; a renewal that finds another epoch lost the lease.
    pub epoch: i64,
}

/// What a finished run records.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: RunStatus,
    pub exit_code: i32,
    pub counts: Counts,
    pub tool_list_sha256: Option<String>,
    pub requests: u64,
    pub reason: Option<String>,
    /// The JSON report (SPEC §4).
    pub report_json: String,
    /// The complete state the run observed (a baseline file's JSON), when it read one.
    pub observed_json: Option<String>,
    /// The id of the accepted baseline it was compared with.
    pub compared_with: Option<i64>,
    /// For a refused run: its [`crate::model::Refusal`] (`opted_out`, `ownership`, …).
    pub refusal: Option<&'static str>,
    pub duration_ms: i64,
    /// The ownership proof the gate accepted.
    pub proof: Option<ProofRecord>,
}

/// What `/metrics` reads from the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Finished runs by status.
    pub runs_by_status: Vec<(RunStatus, u64)>,
    pub requests: u64,
    /// Refused runs by refusal class.
    pub refusals: Vec<(String, u64)>,
    /// Findings of each active target's latest finished run, summed.
    pub latest_findings: Counts,
    pub targets: u64,
    /// Per target: the latest finished run (for `?per_target=1`).
    pub latest: Vec<RunSummary>,
}

/// What a finished run keeps beside its summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDocuments {
    pub report_json: String,
    pub observed_json: Option<String>,
    /// The accepted baseline it was compared with.
    pub compared_with: Option<i64>,
}

/// An accepted baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBaseline {
    pub id: i64,
    pub json: String,
    pub accepted_ms: i64,
}

/// A target as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRow {
    pub name: String,
    pub url: String,
    pub every_ms: i64,
}

/// A target imported (`mcpprobe daemon targets import`, `POST /targets`) rather than written
/// in the configuration file: its definition is the JSON of a `[[targets]]` table
/// ([`crate::config::TargetConfig`]'s keys), checked again each time the daemon loads it.
/// `token_env` names a variable: the spec never holds a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedTarget {
    pub name: String,
    /// The URL as it may be shown (its query secrets redacted).
    pub url: String,
    pub every_ms: i64,
    /// The target's keys as canonical JSON (keys sorted): what the daemon schedules, and what
    /// an import compares to tell a changed target from an unchanged one.
    pub spec: String,
}

/// What an import did, by name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportSummary {
    /// Not stored before, or removed since (its history is kept and continues).
    pub added: u64,
    /// Imported before with another spec.
    pub updated: u64,
    /// Imported before with the same spec: nothing was written.
    pub unchanged: u64,
    /// Named by the configuration file, which wins: the import of that name is not kept.
    pub shadowed: u64,
}

/// The daemon's state. Every method is one transaction.
pub trait Store: Send + Sync {
    /// Makes the stored configuration targets the configured ones (new added, changed
    /// updated; ones that left the file keep their history but are no longer listed). Imported
    /// targets are left as they are, but a name the file holds becomes the file's (the
    /// configuration wins; its imported spec is dropped).
    fn sync_targets(&self, targets: &[TargetRow], now_ms: i64) -> Result<(), StoreError>;
    /// The listed targets, configured and imported, by name.
    fn targets(&self) -> Result<Vec<TargetRow>, StoreError>;
    /// Imports `targets`, all or none: a name not listed is added (a removed one comes back
    /// with its history), an imported one whose spec changed is updated, one with the same
    /// spec is left unchanged, and a name the configuration file holds stays the file's
    /// (counted as shadowed, its import not kept).
    fn import_targets(
        &self,
        targets: &[ImportedTarget],
        now_ms: i64,
    ) -> Result<ImportSummary, StoreError>;
    /// Stops listing and scheduling imported target `name`; its history stays.
    /// [`StoreError::UnknownTarget`] when no such target is listed,
    /// [`StoreError::ConfiguredTarget`] when the configuration file defines it.
    fn remove_target(&self, name: &str) -> Result<(), StoreError>;
    /// The listed imported targets, by name.
    fn imported_targets(&self) -> Result<Vec<ImportedTarget>, StoreError>;
    /// Claims `slot` of `target` for `worker` (recorded with the run). A run whose lease
    /// lapsed is marked interrupted first, releasing its slot.
    fn claim_for(
        &self,
        target: &str,
        slot: i64,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Claimed, StoreError>;
    /// [`Store::claim_for`] by the default worker (a daemon alone).
    fn claim(
        &self,
        target: &str,
        slot: i64,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Claimed, StoreError> {
        self.claim_for(target, slot, super::DEFAULT_WORKER, now_ms, lease_ms)
    }
    /// Extends the lease; `false` when it was lost (the scan must stop).
    fn renew(&self, claim: &mut Claim, now_ms: i64, lease_ms: i64) -> Result<bool, StoreError>;
    /// Records the end of a run that still holds its claim (its current epoch); `false` when
    /// it no longer does (its lease lapsed and another run took over, or this copy of the
    /// claim is from before a renewal): nothing is recorded then.
    fn finish(&self, claim: &Claim, run: &Finished, now_ms: i64) -> Result<bool, StoreError>;
    /// Records the run as interrupted and releases its slot; `false` when the claim no longer
    /// holds (another epoch: it lost its lease), and nothing is recorded.
    fn interrupt(&self, claim: &Claim, reason: &str, now_ms: i64) -> Result<bool, StoreError>;
    /// The runs of a target, newest first.
    fn runs(&self, target: &str, limit: usize) -> Result<Vec<RunSummary>, StoreError>;
    fn run(&self, target: &str, id: i64) -> Result<Option<RunSummary>, StoreError>;
    /// The latest slot of each target that has a finished run holding it (not interrupted,
    /// not running: a run left `running` by a daemon that died is claimed again once its lease
    /// lapses): the scheduler skips those without a claim.
    fn held_slots(&self) -> Result<Vec<(String, i64)>, StoreError>;
    /// The newest run of every active target (running ones included), in one query.
    fn latest_runs(&self) -> Result<Vec<RunSummary>, StoreError>;
    /// A run's JSON report, observed state and the baseline it was compared with.
    fn run_documents(&self, target: &str, id: i64) -> Result<Option<RunDocuments>, StoreError>;
    /// The JSON report of the latest finished run.
    fn latest_report(&self, target: &str) -> Result<Option<String>, StoreError>;
    /// When the target last had a clean complete run, and its first run (for the badge's
    /// "30 days without a clean scan").
    fn last_clean_and_first(&self, target: &str) -> Result<(Option<i64>, Option<i64>), StoreError>;
    fn accepted_baseline(&self, target: &str) -> Result<Option<StoredBaseline>, StoreError>;
    fn baseline(&self, id: i64) -> Result<Option<StoredBaseline>, StoreError>;
    /// Accepts `json` as the target's baseline (a first pin, or `daemon accept`).
    fn accept_baseline(&self, target: &str, json: &str, now_ms: i64) -> Result<i64, StoreError>;
    /// Accepts the state the latest run with a complete inventory observed.
    fn accept_latest(&self, target: &str, now_ms: i64) -> Result<i64, StoreError>;
    /// Accepts the state run `id` observed (the run a reviewer looked at, not whatever ran
    /// since).
    fn accept_run(&self, target: &str, id: i64, now_ms: i64) -> Result<i64, StoreError>;
    fn totals(&self) -> Result<Totals, StoreError>;
    /// Deletes the runs beyond `keep` (with their documents and proof links): a target's
    /// newest `keep.runs`, none older than `keep.days`; never a running run, a target's latest
    /// run, or the run its accepted baseline came from. Baselines no remaining run compares
    /// with go too, the accepted one of each target aside. Counters are kept. Returns the
    /// runs deleted.
    fn prune(&self, keep: &Retention, now_ms: i64) -> Result<u64, StoreError>;
    /// Leases `host` to `worker` (politeness across a fleet: one worker scans a host at a
    /// time): granted when no live lease holds it (none, or one that lapsed, whoever held it);
    /// `None` while another lease is live, this worker's own included.
    fn lease_host(
        &self,
        host: &str,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<HostLease>, StoreError>;
    /// Extends a host's lease; `false` when it was lost (it lapsed and another worker took
    /// it): the worker must stop scanning the host.
    fn renew_host(
        &self,
        lease: &mut HostLease,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Gives the host up at `now_ms`; `false` when the lease was no longer this one. The host
    /// stays quiet for [`HOST_QUIET_MS`] before another worker may lease it, so the per-host
    /// rate holds across a handover (two workers' requests never fall in one second).
    fn release_host(&self, lease: &HostLease, now_ms: i64) -> Result<bool, StoreError>;
}

/// How long a host given up stays unleased (see [`Store::release_host`]).
pub const HOST_QUIET_MS: i64 = 1_000;

/// A host leased to a worker: the handle it renews and releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLease {
    pub host: String,
    pub worker: String,
    /// Bumped by every grant and renewal; a renewal that finds another epoch lost the lease.
    pub epoch: i64,
}

/// How much history the store keeps (`keep_runs`, `keep_days` in `mcpprobe.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Runs kept per target (newest first).
    pub runs: u64,
    /// Days a run is kept.
    pub days: i64,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            runs: 200,
            days: 90,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_status_names_are_the_stored_and_serde_names() {
        for (s, name) in [
            (RunStatus::Running, "running"),
            (RunStatus::Complete, "complete"),
            (RunStatus::Refused, "refused"),
            (RunStatus::Incomplete, "incomplete"),
            (RunStatus::Interrupted, "interrupted"),
        ] {
            assert_eq!(s.as_str(), name);
            assert_eq!(serde_json::to_value(s).expect("json"), name);
            assert_eq!(RunStatus::parse(name), Some(s));
        }
        // As stored: exact, not any case.
        assert_eq!(RunStatus::parse("Complete"), None);
        assert_eq!(RunStatus::parse("done"), None);
    }
}
