//! The shared vocabulary: severity, confidence, findings and their evidence.
//!
//! Checks, rules, baselines and reports all speak this module; none of them owns it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How bad a finding is. Ordered: `Info < Low < Medium < High < Critical`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase", ascii_case_insensitive)]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub const ALL_DESCENDING: [Severity; 5] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ];

    /// The name reports and the API use (`high`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The severity named `s` (`high`), any case.
    pub fn parse(s: &str) -> Option<Severity> {
        s.trim().parse().ok()
    }

    /// The GitHub code-scanning `security-severity` score (CVSS-like, 0.0–10.0).
    pub fn security_severity(self) -> &'static str {
        match self {
            Severity::Info => "0.0",
            Severity::Low => "3.0",
            Severity::Medium => "5.5",
            Severity::High => "8.0",
            Severity::Critical => "9.5",
        }
    }
}

/// How sure a heuristic is. Ordered: `Low < Medium < High`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase", ascii_case_insensitive)]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    /// The confidence named `s` (`medium`), any case.
    pub fn parse(s: &str) -> Option<Confidence> {
        s.trim().parse().ok()
    }

    /// The name reports and the API use (`medium`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Where a finding is: a JSON Pointer into what the server sent, and the tool it concerns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub pointer: Option<String>,
    pub tool: Option<String>,
    /// The server, in a report of several (`scan --discover`): its name in its client's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// One HTTP (or stdio) message kept as evidence. Bodies are capped; secrets are redacted before
/// a message is ever stored here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `POST`, `GET`… for requests; absent for responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP status, for responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// True when `body` was cut at the evidence cap.
    #[serde(default)]
    pub truncated: bool,
}

/// A request and the response it got (none on a timeout or a refused connection).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    pub request: Message,
    pub response: Option<Message>,
    /// What happened instead of a response, or a note about it (a timeout, a redirect not followed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The exact evidence a finding rests on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The exact text that fired (trimmed around the match), as the server sent it. Renderers
    /// escape it; it is never printed raw.
    pub text: Option<String>,
    pub exchanges: Vec<Exchange>,
}

/// Why a finding does not count (a suppression from the configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suppressed {
    pub reason: String,
    /// The last day the suppression holds, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

/// One thing a check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub check: String,
    pub rule: Option<String>,
    /// Which of a check's distinct problems this is (`host` in `TRANS-01/host`, the tested
    /// header, the probe): part of the fingerprint, so no two findings of one report share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subcode: Option<String>,
    pub title: String,
    /// What exactly is wrong here, in one sentence (the title is the rule's general name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub severity: Severity,
    pub confidence: Confidence,
    pub location: Location,
    pub evidence: Evidence,
    pub references: Vec<String>,
    pub fix: String,
    /// Stable across runs and machines: see [`Finding::fingerprint`].
    pub fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<Suppressed>,
    /// The catalogue's severity, when the configuration changed it (SPEC §4.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_severity: Option<Severity>,
    /// With `--fail-on-new`: whether a previous report lacked this finding. Known findings
    /// do not count for the exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<bool>,
}

impl Finding {
    /// SHA-256 over check, rule, location and evidence text: the same problem in the same place
    /// gets the same fingerprint in every run (used for SARIF `partialFingerprints` and
    /// `--fail-on-new`). Exchanges are left out: session ids and dates differ between runs.
    pub fn compute_fingerprint(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.check.as_str(),
            self.rule.as_deref().unwrap_or(""),
            self.location.pointer.as_deref().unwrap_or(""),
            self.location.tool.as_deref().unwrap_or(""),
            self.evidence.text.as_deref().unwrap_or(""),
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        // Hashed only when present, so findings without one keep their fingerprints.
        if let Some(sub) = &self.subcode {
            h.update(b"subcode\0");
            h.update(sub.as_bytes());
            h.update([0u8]);
        }
        if let Some(server) = &self.location.server {
            h.update(b"server\0");
            h.update(server.as_bytes());
            h.update([0u8]);
        }
        hex::encode(h.finalize())
    }

    /// Whether it counts for the exit code: not suppressed, and not known to a previous
    /// report (`--fail-on-new`).
    pub fn counts(&self) -> bool {
        self.suppressed.is_none() && self.new != Some(false)
    }
}

/// Catalogue prose is wrapped for reading in TOML; findings carry it as one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Builds a [`Finding`]; `build` fills the fingerprint.
#[derive(Debug, Clone)]
pub struct FindingBuilder {
    finding: Finding,
}

impl FindingBuilder {
    /// Builds on `finding` (the catalogue starts every finding: [`crate::catalogue::CheckMeta::finding`]).
    pub fn new(finding: Finding) -> FindingBuilder {
        FindingBuilder { finding }
    }
    /// The sub-code that tells this finding from the check's other findings (`TRANS-01/host`).
    pub fn subcode(mut self, subcode: impl Into<String>) -> Self {
        self.finding.subcode = Some(subcode.into());
        self
    }
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.finding.message = Some(message.into());
        self
    }
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.finding.location.pointer = Some(pointer.into());
        self
    }
    pub fn tool(mut self, tool: impl Into<String>) -> Self {
        self.finding.location.tool = Some(tool.into());
        self
    }
    pub fn server(mut self, server: impl Into<String>) -> Self {
        self.finding.location.server = Some(server.into());
        self
    }
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.finding.evidence.text = Some(text.into());
        self
    }
    pub fn exchange(mut self, exchange: Exchange) -> Self {
        self.finding.evidence.exchanges.push(exchange);
        self
    }
    /// Context may lower or raise a default severity where the catalogue says so (AUTH-01).
    pub fn severity(mut self, severity: Severity) -> Self {
        self.finding.severity = severity;
        self
    }
    pub fn confidence(mut self, confidence: Confidence) -> Self {
        self.finding.confidence = confidence;
        self
    }
    pub fn build(mut self) -> Finding {
        self.finding.fingerprint = self.finding.compute_fingerprint();
        self.finding
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn severity_and_confidence_names_are_serde_names() {
        for s in Severity::ALL_DESCENDING {
            assert_eq!(serde_json::to_value(s).expect("json"), s.as_str());
            assert_eq!(s.to_string(), s.as_str());
            assert_eq!(
                Severity::parse(&format!(" {} ", s.as_str().to_uppercase())),
                Some(s)
            );
        }
        let names: Vec<&str> = Severity::ALL_DESCENDING
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(names, ["critical", "high", "medium", "low", "info"]);
        assert_eq!(Severity::parse("severe"), None);
        // Display pads as a `str` does (the terminal report aligns on it).
        assert_eq!(
            format!("{:>6}|{:<6}|", Severity::Low, Severity::High),
            "   low|high  |"
        );
        for (c, name) in [
            (Confidence::Low, "low"),
            (Confidence::Medium, "medium"),
            (Confidence::High, "high"),
        ] {
            assert_eq!((c.as_str(), c.to_string()), (name, name.to_string()));
            assert_eq!(serde_json::to_value(c).expect("json"), name);
            assert_eq!(Confidence::parse("  MeDiUm"), Some(Confidence::Medium));
        }
        assert_eq!(Confidence::parse(""), None);
    }
}
