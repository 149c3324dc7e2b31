//! What a host applies to the report the engine wrote, before it judges the exit code: the
//! configuration's severities and suppressions (SPEC §4.1) and, with `--fail-on-new`, what a
//! previous report already knew. The engine records everything; these only mark findings.
//! The CLI, the daemon and the Python package share this one implementation.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Deserialize;

use crate::finding::{Finding, Severity, Suppressed};
use crate::model::Report;

/// A severity the configuration sets for a check or one of its rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeverityOverride {
    pub check: String,
    pub rule: Option<String>,
    pub severity: Severity,
}

/// A known check id, in the catalogue's spelling (an unknown one names the closest).
pub(crate) fn known_check(id: &str) -> Result<String, String> {
    crate::catalogue::check_id(id).map_err(|e| e.to_string())
}

/// A rule code of check `check`, in the catalogue's spelling.
pub(crate) fn known_rule(check: &str, rule: &str) -> Result<String, String> {
    let meta = crate::catalogue::catalogue().meta(check);
    meta.rules
        .iter()
        .find(|r| r.code.eq_ignore_ascii_case(rule))
        .map(|r| r.code.clone())
        .ok_or_else(|| {
            let codes: Vec<&str> = meta.rules.iter().map(|r| r.code.as_str()).collect();
            if codes.is_empty() {
                format!("{check} has no rule codes")
            } else {
                format!(
                    "{check} has no rule {rule:?} (its rules: {})",
                    codes.join(", ")
                )
            }
        })
}

/// One `[[suppress]]` entry: a reviewed exception with a reason and, perhaps, an expiry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SuppressionEntry")]
pub struct Suppression {
    pub check: String,
    pub rule: Option<String>,
    /// A tool name.
    pub tool: Option<String>,
    /// A JSON Pointer: matches that location and everything under it.
    pub pointer: Option<String>,
    pub reason: String,
    /// The last day it holds; after it the finding counts again and a warning says so.
    pub until: Option<NaiveDate>,
    /// Where it was written (`mcpprobe.toml:12`), for warnings.
    pub source: Option<String>,
}

/// The file's form of a [`Suppression`], validated into one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuppressionEntry {
    #[serde(deserialize_with = "check_field")]
    check: String,
    rule: Option<String>,
    tool: Option<String>,
    pointer: Option<String>,
    #[serde(deserialize_with = "reason_field")]
    reason: String,
    #[serde(default, deserialize_with = "until_field")]
    until: Option<NaiveDate>,
}

fn check_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = String::deserialize(d)?;
    known_check(&id).map_err(serde::de::Error::custom)
}

/// A reason that says something: checked on the field, so that the error names its line and
/// `suppress[N].reason`.
fn reason_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let reason = String::deserialize(d)?;
    if reason.trim().is_empty() {
        return Err(serde::de::Error::custom(
            "`reason` must say why the finding is acceptable",
        ));
    }
    Ok(reason)
}

/// A date, written as a string (`"2027-03-01"`) or as a TOML date (`2027-03-01`).
fn until_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
    let v = toml::Value::deserialize(d)?;
    let text = match &v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Datetime(dt) if dt.time.is_none() && dt.offset.is_none() => dt.to_string(),
        _ => String::new(),
    };
    NaiveDate::parse_from_str(&text, "%Y-%m-%d")
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("must be a date, YYYY-MM-DD, not {v}")))
}

impl TryFrom<SuppressionEntry> for Suppression {
    type Error = String;
    fn try_from(e: SuppressionEntry) -> Result<Self, String> {
        let check = e.check;
        let rule = e.rule.map(|r| known_rule(&check, &r)).transpose()?;
        if e.tool.is_some() && e.pointer.is_some() {
            return Err("give `tool` or `pointer`, not both".into());
        }
        if let Some(p) = &e.pointer
            && !p.is_empty()
            && !p.starts_with('/')
        {
            return Err(format!(
                "`pointer` {p:?} is not a JSON Pointer (it starts with /)"
            ));
        }
        Ok(Suppression {
            check,
            rule,
            tool: e.tool,
            pointer: e.pointer,
            reason: e.reason,
            until: e.until,
            source: None,
        })
    }
}

impl Suppression {
    /// Whether this entry is about `f` (dates aside).
    pub fn matches(&self, f: &Finding) -> bool {
        self.check == f.check
            && self
                .rule
                .as_ref()
                .is_none_or(|r| f.rule.as_ref() == Some(r))
            && self
                .tool
                .as_ref()
                .is_none_or(|t| f.location.tool.as_ref() == Some(t))
            && self.pointer.as_ref().is_none_or(|p| {
                f.location.pointer.as_deref().is_some_and(|fp| {
                    fp == p || (fp.starts_with(p.as_str()) && fp[p.len()..].starts_with('/'))
                })
            })
    }

    fn expired(&self, today: NaiveDate) -> bool {
        self.until.is_some_and(|u| today > u)
    }

    /// How a warning names this entry.
    fn name(&self) -> String {
        let mut what = self.check.clone();
        if let Some(r) = &self.rule {
            what = format!("{what}/{r}");
        }
        if let Some(t) = &self.tool {
            what = format!("{what} on tool {t:?}");
        }
        if let Some(p) = &self.pointer {
            what = format!("{what} at {p:?}");
        }
        match &self.source {
            Some(src) => format!("the suppression of {what} ({src})"),
            None => format!("the suppression of {what}"),
        }
    }
}

pub use crate::model::{PreviousRecord, SuppressionRecord, SuppressionStatus};

/// The fingerprints of a previous JSON report (`--fail-on-new PREVIOUS.json`).
#[derive(Debug, Clone)]
pub struct PreviousReport {
    pub file: String,
    fingerprints: HashSet<String>,
}

/// A previous report that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PreviousReportError {
    #[error("cannot read the previous report {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an mcpprobe JSON report (version 1): {message}")]
    Invalid { path: PathBuf, message: String },
}

/// The largest previous report read.
const MAX_PREVIOUS_BYTES: u64 = 256 * 1024 * 1024;

impl PreviousReport {
    /// Reads the fingerprints of a JSON report written by `--json` or `--format json`.
    pub fn load(path: &Path) -> Result<PreviousReport, PreviousReportError> {
        use std::io::Read as _;
        let read = |source| PreviousReportError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .map_err(read)?
            .take(MAX_PREVIOUS_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        let invalid = |message: String| PreviousReportError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        if bytes.len() as u64 > MAX_PREVIOUS_BYTES {
            return Err(invalid(format!("larger than {MAX_PREVIOUS_BYTES} bytes")));
        }
        Self::parse(&bytes, &path.display().to_string()).map_err(invalid)
    }

    /// Parses a JSON report's findings; `file` names it in the report.
    pub fn parse(bytes: &[u8], file: &str) -> Result<PreviousReport, String> {
        #[derive(Deserialize)]
        struct Head {
            version: u32,
            tool: Tool,
            findings: Vec<Fp>,
        }
        #[derive(Deserialize)]
        struct Tool {
            name: String,
        }
        #[derive(Deserialize)]
        struct Fp {
            fingerprint: String,
        }
        let head: Head = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if head.version != crate::model::REPORT_VERSION || head.tool.name != "mcpprobe" {
            return Err(format!(
                "written by {:?}, report version {}",
                head.tool.name, head.version
            ));
        }
        Ok(PreviousReport {
            file: file.to_string(),
            fingerprints: head.findings.into_iter().map(|f| f.fingerprint).collect(),
        })
    }

    pub fn knows(&self, f: &Finding) -> bool {
        self.fingerprints.contains(&f.fingerprint)
    }
}

/// Everything a host applies to a report beside its [`crate::model::Policy`].
#[derive(Debug, Clone, Default)]
pub struct Review {
    pub severities: Vec<SeverityOverride>,
    pub suppressions: Vec<Suppression>,
    pub previous: Option<PreviousReport>,
}

impl Review {
    /// Marks `report`'s findings: severities first (a rule's entry wins over its check's), then
    /// suppressions (the first holding entry wins; expired ones only warn), then new or known.
    /// `today` decides expiry. Call before [`Report::apply_policy`], which sets the exit code.
    pub fn apply(&self, report: &mut Report, today: NaiveDate) {
        for f in &mut report.findings {
            let rule_entry = self
                .severities
                .iter()
                .find(|o| o.check == f.check && o.rule.is_some() && o.rule == f.rule);
            let check_entry = || {
                self.severities
                    .iter()
                    .find(|o| o.check == f.check && o.rule.is_none())
            };
            if let Some(o) = rule_entry.or_else(check_entry)
                && o.severity != f.severity
            {
                f.default_severity.get_or_insert(f.severity);
                f.severity = o.severity;
            }
        }
        let mut matched = vec![0usize; self.suppressions.len()];
        for f in &mut report.findings {
            // A finding already accepted (by --update-baseline) keeps its reason.
            let mut held = f.suppressed.is_some();
            for (i, s) in self.suppressions.iter().enumerate() {
                if !s.matches(f) {
                    continue;
                }
                matched[i] += 1;
                if !held && !s.expired(today) {
                    f.suppressed = Some(Suppressed {
                        reason: s.reason.clone(),
                        until: s.until.map(|u| u.to_string()),
                    });
                    held = true;
                }
            }
        }
        for (s, &n) in self.suppressions.iter().zip(&matched) {
            let ran = report
                .checks
                .iter()
                .any(|c| c.id == s.check && c.status == crate::model::CheckStatus::Ran);
            let status = if n == 0 && !ran {
                SuppressionStatus::NotRun
            } else if n == 0 {
                report.warnings.push(format!(
                    "{} matched no finding: it is stale, remove it or correct it",
                    s.name()
                ));
                SuppressionStatus::Stale
            } else if s.expired(today) {
                report.warnings.push(format!(
                    "{} expired on {}: its {n} finding(s) count again",
                    s.name(),
                    s.until.map(|u| u.to_string()).unwrap_or_default()
                ));
                SuppressionStatus::Expired
            } else {
                SuppressionStatus::Active
            };
            report.suppressions.push(SuppressionRecord {
                check: s.check.clone(),
                rule: s.rule.clone(),
                tool: s.tool.clone(),
                pointer: s.pointer.clone(),
                reason: s.reason.clone(),
                until: s.until.map(|u| u.to_string()),
                source: s.source.clone(),
                status,
                matched: n,
            });
        }
        report.sort_findings();
        if let Some(prev) = &self.previous {
            let mut new = 0;
            for f in &mut report.findings {
                let is_new = !prev.knows(f);
                new += usize::from(is_new);
                f.new = Some(is_new);
            }
            report.previous_report = Some(PreviousRecord {
                file: prev.file.clone(),
                new,
                known: report.findings.len() - new,
            });
        }
    }
}
