//! The report model: what a run recorded (SPEC §4). Its JSON form is a contract other tools
//! parse; `report/` renders it, the engine fills it, hosts judge it. It sits on the ground
//! floor beside the findings and the catalogue's metadata, and imports nothing above them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalogue::{Kind, catalogue};
use crate::exit::ExitCode;
use crate::finding::{Confidence, Finding, Severity};

/// The JSON report format version (SPEC §4). Bump only on a breaking change.
pub const REPORT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    Complete,
    Refused,
    Incomplete,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Ran,
    Skipped,
    NotImplemented,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub id: String,
    pub kind: Kind,
    pub status: CheckStatus,
    pub reason: Option<String>,
    /// Findings this check produced (before suppression and confidence filtering).
    #[serde(default)]
    pub findings: usize,
    /// Requests this check sent (its budget is in its catalogue entry).
    #[serde(default)]
    pub requests: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl Default for ToolInfo {
    fn default() -> Self {
        ToolInfo {
            name: "mcpprobe".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Why the gate stopped a run (JSON `refusal`, with `outcome: "refused"`): what a host acts on
/// without reading the reason's prose (the daemon's refusal metric, the Action's message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Refusal {
    OptedOut,
    Ownership,
    ActiveNotAuthorised,
    /// A host name resolving to an address that is not public, without
    /// `--allow-private-addresses` (SPEC §7).
    PrivateAddress,
}

impl Refusal {
    /// The name the JSON report uses (`opted_out`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The protocol fingerprint (INFO-01). Offline checks have none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub eras: Vec<String>,
    pub transport: Option<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// What the gate checked before anything else (SPEC §1): each opt-out step, the addresses the
/// scan was pinned to, the ownership proof, and the exchanges it sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateRecord {
    pub opt_out: Vec<String>,
    pub addresses: Vec<String>,
    /// How the addresses of a host name were judged (SPEC §7, "A proof names its addresses"):
    /// all public, a private one allowed by `--allow-private-addresses`, or the refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_check: Option<String>,
    pub ownership: Option<String>,
    pub exchanges: Vec<crate::finding::Exchange>,
}

/// `--fail-on` and `fail_on`: a severity threshold for the exit code, or `none` to never fail
/// on findings.
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
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase", ascii_case_insensitive)]
pub enum FailOn {
    Info,
    Low,
    Medium,
    High,
    Critical,
    None,
}

impl FailOn {
    pub fn severity(self) -> Option<Severity> {
        match self {
            FailOn::Info => Some(Severity::Info),
            FailOn::Low => Some(Severity::Low),
            FailOn::Medium => Some(Severity::Medium),
            FailOn::High => Some(Severity::High),
            FailOn::Critical => Some(Severity::Critical),
            FailOn::None => None,
        }
    }
}

/// The thresholds a report was judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `None` means "never fail on findings" (`--fail-on none`).
    pub fail_on: Option<Severity>,
    pub min_confidence: Confidence,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            fail_on: Some(Severity::High),
            min_confidence: Confidence::Low,
        }
    }
}

/// Everything a run recorded. Its JSON form is the contract of SPEC §4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub version: u32,
    pub tool: ToolInfo,
    pub target: String,
    pub outcome: RunOutcome,
    /// Why a run was refused or is incomplete.
    pub reason: Option<String>,
    /// Which gate refusal stopped the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    pub exit_code: i32,
    pub fingerprint: Option<Fingerprint>,
    pub tool_list_sha256: Option<String>,
    pub checks: Vec<CheckRecord>,
    pub findings: Vec<Finding>,
    pub requests_sent: u64,
    /// What the gate checked (absent for offline checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateRecord>,
    pub policy: Policy,
    /// Findings left out because their confidence is below `--min-confidence`.
    pub below_min_confidence: usize,
    /// The configuration's suppressions and what became of each (SPEC §4.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressions: Vec<SuppressionRecord>,
    /// With `--fail-on-new`: the previous report and how many findings are new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_report: Option<PreviousRecord>,
    /// The W3C trace id every request of a live scan carried (`traceparent`), to find the
    /// scan in the server's logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// When a live scan started (absent for offline checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    /// What the user should know about how the report was judged: an expired or stale
    /// suppression, say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// `scan --discover`: the client files read and what became of each server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoveryRecord>,
}

impl Report {
    /// A new report for `target`; every catalogue check starts as "skipped: not run", so no
    /// check can be absent from it.
    pub fn new(target: impl Into<String>, policy: Policy) -> Report {
        let checks = catalogue()
            .entries
            .iter()
            .map(|e| {
                let m = &e.meta;
                // An active check says it was not authorised until the gate lets it run
                // (SPEC §1.3); the engine records a stub as not implemented when it meets one.
                let (status, reason) = match m.kind {
                    Kind::Active => (CheckStatus::Skipped, ACTIVE_NOT_AUTHORISED.to_string()),
                    _ => (CheckStatus::Skipped, "not run".to_string()),
                };
                CheckRecord {
                    id: m.id.clone(),
                    kind: m.kind,
                    status,
                    reason: Some(reason),
                    findings: 0,
                    requests: 0,
                }
            })
            .collect();
        Report {
            version: REPORT_VERSION,
            tool: ToolInfo::default(),
            target: target.into(),
            outcome: RunOutcome::Complete,
            reason: None,
            refusal: None,
            exit_code: 0,
            fingerprint: None,
            tool_list_sha256: None,
            checks,
            findings: Vec::new(),
            requests_sent: 0,
            gate: None,
            policy,
            below_min_confidence: 0,
            suppressions: Vec::new(),
            previous_report: None,
            started_at: None,
            trace_id: None,
            warnings: Vec::new(),
            discovery: None,
        }
    }

    /// Marks every check that has not run as skipped for `reason` (a run stopped early).
    pub fn skip_rest(&mut self, reason: &str) {
        for c in self
            .checks
            .iter_mut()
            .filter(|c| c.reason.as_deref() == Some("not run"))
        {
            c.reason = Some(reason.to_string());
        }
    }

    /// Records the requests check `id` sent.
    pub fn record_requests(&mut self, id: &str, sent: u32) {
        if let Some(c) = self.checks.iter_mut().find(|c| c.id == id) {
            c.requests = sent;
        }
    }

    /// Records what check `id` did. Findings below the confidence floor are counted, not kept.
    pub fn record(&mut self, id: &str, outcome: Outcome) {
        let (status, reason, findings) = match outcome {
            Outcome::Ran(f) => (CheckStatus::Ran, None, f),
            Outcome::Skipped(r) => (CheckStatus::Skipped, Some(r), vec![]),
            Outcome::NotImplemented(r) => (CheckStatus::NotImplemented, Some(r), vec![]),
            Outcome::Error(r) => (CheckStatus::Error, Some(r), vec![]),
        };
        let n = findings.len();
        for f in findings {
            if f.confidence < self.policy.min_confidence {
                self.below_min_confidence += 1;
            } else {
                self.findings.push(f);
            }
        }
        match self.checks.iter_mut().find(|c| c.id == id) {
            Some(c) => {
                c.status = status;
                c.reason = reason;
                c.findings = n;
            }
            None => panic!("check {id} is not in the catalogue"),
        }
    }

    /// Records check `id` as an error that still found something before it failed (a judge
    /// that answered for some tools): the findings are kept, and the error makes the run
    /// incomplete.
    pub fn record_error_with(&mut self, id: &str, why: String, findings: Vec<Finding>) {
        self.record(id, Outcome::Ran(findings));
        if let Some(c) = self.checks.iter_mut().find(|c| c.id == id) {
            c.status = CheckStatus::Error;
            c.reason = Some(why);
        }
    }

    /// Sorts findings (worst first, then by check, rule and location) and sets the exit code.
    pub fn finish(&mut self) {
        self.sort_findings();
        if self.outcome == RunOutcome::Complete
            && self.checks.iter().any(|c| c.status == CheckStatus::Error)
        {
            self.outcome = RunOutcome::Incomplete;
            if self.reason.is_none() {
                self.reason = Some("a check errored".into());
            }
        }
        self.exit_code = self.compute_exit_code().code();
    }

    /// Worst first, then by check, rule and location (a stable sort: ties keep their order).
    pub fn sort_findings(&mut self) {
        let f = &self.findings;
        // The positions are sorted, then each finding moved once: a finding is a few hundred
        // bytes, and sorting thousands of them in place moved each a dozen times.
        let mut order: Vec<usize> = (0..f.len()).collect();
        order.sort_by(|&i, &j| {
            let (a, b) = (&f[i], &f[j]);
            b.severity
                .cmp(&a.severity)
                .then_with(|| a.check.cmp(&b.check))
                .then_with(|| a.rule.cmp(&b.rule))
                .then_with(|| a.location.tool.cmp(&b.location.tool))
                .then_with(|| a.location.pointer.cmp(&b.location.pointer))
        });
        permute(&mut self.findings, order);
    }

    /// SPEC §4: the exit code of this report judged by `policy` (the format never changes it).
    /// Findings below the policy's confidence floor and suppressed findings do not count.
    pub fn exit_code(&self, policy: &Policy) -> ExitCode {
        match self.outcome {
            RunOutcome::Refused => ExitCode::Gate,
            RunOutcome::Incomplete => ExitCode::Incomplete,
            RunOutcome::Complete => {
                let failing = policy.fail_on.is_some_and(|threshold| {
                    self.findings.iter().any(|f| {
                        f.counts()
                            && f.confidence >= policy.min_confidence
                            && f.severity >= threshold
                    })
                });
                if failing {
                    ExitCode::Findings
                } else {
                    ExitCode::Clean
                }
            }
        }
    }

    /// The exit code by the policy this report carries.
    pub fn compute_exit_code(&self) -> ExitCode {
        self.exit_code(&self.policy)
    }

    /// Judges the report by a host's policy: findings below its confidence floor are counted,
    /// not kept, and `exit_code` is set. The engine records everything; hosts apply policies.
    pub fn apply_policy(&mut self, policy: Policy) {
        let before = self.findings.len();
        self.findings
            .retain(|f| f.confidence >= policy.min_confidence);
        self.below_min_confidence += before - self.findings.len();
        self.policy = policy;
        self.exit_code = self.exit_code(&policy).code();
    }

    /// Applies `redact` to every string of the report (evidence, messages, the ladder's verdicts):
    /// the last safety net that keeps the user's secrets out of anything written.
    /// Fails closed: when the redacted form no longer reads as a report (a secret that is also
    /// an enum tag, say), every piece of evidence is withheld instead.
    pub fn redact(&mut self, redact: impl Fn(&str) -> String) {
        let redacted = serde_json::to_value(&*self).ok().and_then(|mut v| {
            crate::util::json::map_strings(&mut v, &redact);
            serde_json::from_value::<Report>(v).ok()
        });
        match redacted {
            Some(r) => *self = r,
            None => self.withhold_evidence(),
        }
    }

    /// Drops everything a server sent from the report (evidence, messages, the fingerprint's
    /// details, the gate's exchanges); keeps ids, severities and counts.
    fn withhold_evidence(&mut self) {
        const WITHHELD: &str = "withheld: the report could not be redacted";
        for f in &mut self.findings {
            f.evidence = crate::finding::Evidence::default();
            f.message = Some(WITHHELD.into());
            f.location = crate::finding::Location::default();
        }
        for c in &mut self.checks {
            if c.reason.is_some() {
                c.reason = Some(WITHHELD.into());
            }
        }
        if let Some(fp) = &mut self.fingerprint {
            fp.extra = serde_json::Map::new();
        }
        self.gate = None;
        self.reason = Some(WITHHELD.into());
    }

    /// The checks as the summaries count them: "N ran, N skipped, N not implemented, N errored".
    pub fn checks_line(&self) -> String {
        let count = |s: CheckStatus| self.checks.iter().filter(|c| c.status == s).count();
        format!(
            "{} ran, {} skipped, {} not implemented, {} errored",
            count(CheckStatus::Ran),
            count(CheckStatus::Skipped),
            count(CheckStatus::NotImplemented),
            count(CheckStatus::Error)
        )
    }

    /// The findings as the summaries count them: how many count, by severity
    /// ("0 critical, 2 high, …"), and the notes on the rest (suppressed; new and known with
    /// `--fail-on-new`; below `--min-confidence`).
    pub fn findings_summary(&self) -> (usize, String, Vec<String>) {
        let by_sev: Vec<String> = Severity::ALL_DESCENDING
            .iter()
            .map(|s| {
                format!(
                    "{} {s}",
                    self.counting().filter(|f| f.severity == *s).count()
                )
            })
            .collect();
        let mut notes = Vec::new();
        let suppressed = self.suppressed_count();
        if suppressed > 0 {
            notes.push(format!("{suppressed} suppressed"));
        }
        if let Some(prev) = &self.previous_report {
            notes.push(format!(
                "{} new, {} known to the previous report",
                prev.new,
                self.known_count()
            ));
        }
        if self.below_min_confidence > 0 {
            notes.push(format!(
                "{} below --min-confidence {}",
                self.below_min_confidence, self.policy.min_confidence
            ));
        }
        (self.counting().count(), by_sev.join(", "), notes)
    }

    pub fn counting(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.counts())
    }

    pub fn suppressed_count(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.suppressed.is_some())
            .count()
    }

    /// Findings a previous report already had (`--fail-on-new`), suppressed ones aside.
    pub fn known_count(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.suppressed.is_none() && f.new == Some(false))
            .count()
    }

    pub fn to_json(&self) -> String {
        match serde_json::to_string_pretty(self) {
            Ok(s) => s,
            Err(e) => panic!("a report always serialises: {e}"),
        }
    }
}

/// Rearranges `items` so that position k holds what was at `order[k]` (`order` a permutation
/// of the positions), one cycle at a time: each item is swapped into place once.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..order.len() {
        let mut at = start;
        while let Some(&from) = order.get(at).filter(|&&k| k != DONE) {
            if let Some(slot) = order.get_mut(at) {
                *slot = DONE;
            }
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// What one check did in one run. A check is never silently absent from a report: it ran
/// (with zero or more findings), was skipped (and says why), is not implemented, or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ran(Vec<Finding>),
    Skipped(String),
    NotImplemented(String),
    Error(String),
}

/// Reason every active stub gives in every report (SPEC §1.3: registered stubs in v0.1).
pub const ACTIVE_NOT_IMPLEMENTED: &str =
    "not implemented yet: this active check is a registered stub with a plan; no payload is sent";

/// Why an implemented active check did not run: the gate did not authorise it (SPEC §1.3).
pub const ACTIVE_NOT_AUTHORISED: &str = "not authorised: --active (with --authorised-by, --scope and --verify) was not given; nothing was called";

/// What became of one suppression in a report (JSON `suppressions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuppressionStatus {
    /// It matched findings and holds.
    Active,
    /// It matched findings, but its `until` has passed: they count again.
    Expired,
    /// Its check ran and it matched nothing: remove or correct it.
    Stale,
    /// Its check did not run in this report (an offline `check`, a skipped check): unknown.
    NotRun,
}

/// A suppression as the report records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuppressionRecord {
    pub check: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub status: SuppressionStatus,
    /// Findings it matched.
    pub matched: usize,
}

/// What `--fail-on-new` compared with (JSON `previous_report`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousRecord {
    pub file: String,
    /// Findings of this report whose fingerprint the previous report did not have.
    pub new: usize,
    /// Findings it already had.
    pub known: usize,
}

#[cfg(test)]
mod tests {
    /// The refusal names are a contract (SPEC §4's `refusal`, the daemon's store and metrics):
    /// `as_str` (strum) spells each as serde writes it in the JSON report.
    #[test]
    fn refusal_names_are_the_json_reports() {
        use super::Refusal;
        for (r, name) in [
            (Refusal::OptedOut, "opted_out"),
            (Refusal::Ownership, "ownership"),
            (Refusal::ActiveNotAuthorised, "active_not_authorised"),
            (Refusal::PrivateAddress, "private_address"),
        ] {
            assert_eq!(r.as_str(), name);
            assert_eq!(serde_json::to_value(r).ok(), Some(serde_json::json!(name)));
        }
    }

    /// Every permutation (of up to 7 items, and random larger ones) lands each item where the
    /// order says.
    #[test]
    fn permute_moves_each_item_where_the_order_says() {
        fn check(order: Vec<usize>) {
            let mut items: Vec<String> = (0..order.len()).map(|i| format!("item {i}")).collect();
            let want: Vec<String> = order.iter().map(|&i| items[i].clone()).collect();
            super::permute(&mut items, order);
            assert_eq!(items, want);
        }
        fn all(prefix: Vec<usize>, n: usize) {
            if prefix.len() == n {
                return check(prefix);
            }
            for k in (0..n).filter(|k| !prefix.contains(k)) {
                let mut p = prefix.clone();
                p.push(k);
                all(p, n);
            }
        }
        for n in 0..=7 {
            all(Vec::new(), n);
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for n in [100, 1000, 8626] {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                order.swap(i, (seed % (i as u64 + 1)) as usize);
            }
            check(order);
        }
    }
}

// --- scan --discover (issue 26): what a report of a discovered set adds ---

/// What became of one server (of one or several entries with the same launch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Its name in the report (the entry's name; `name@client` when two different servers
    /// share a name).
    pub name: String,
    /// Every entry that launches it: client, file, pointer.
    pub entries: Vec<EntryRecord>,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `scanned`, `not_scanned`, `would_scan` (dry run), `disabled`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The commands that would let mcpprobe scan it (a proof).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to_allow: Vec<String>,
    /// Variables passed to it, by name; and withheld (not allowed with `--env`, or unset).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_passed: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_withheld: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RunOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_list_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<usize>,
    #[serde(default)]
    pub requests_sent: u64,
    #[serde(default)]
    pub findings: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryRecord {
    /// The client's name (`cursor`, `claude-code`, …).
    pub client: String,
    /// `user`, `project` or `given`.
    pub scope: String,
    pub file: String,
    pub pointer: String,
}

/// The part of a report only a discovered set has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveryRecord {
    pub configs: Vec<DiscoveredFile>,
    pub servers: Vec<ServerRecord>,
    /// Documented files that do not exist here.
    #[serde(default)]
    pub absent: usize,
}

/// A client file, as a report keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveredFile {
    /// The client's name (`cursor`, `claude-code`, …).
    pub client: String,
    /// `user`, `project` or `given`.
    pub scope: String,
    pub path: String,
    pub status: String,
    pub servers: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}
