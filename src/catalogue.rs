//! The check catalogue, read from the TOML files under `checks/` that are embedded at build time.
//!
//! This is the only place check metadata lives. Rust code asks the catalogue for titles,
//! severities, references and fixes; it never repeats them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::finding::{Confidence, Evidence, Finding, FindingBuilder, Location, Severity};

/// passive, active or other: SPEC §3.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Kind {
    Passive,
    Active,
    Other,
}

impl Kind {
    /// The name the catalogue's TOML and the reports use (`passive`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which pipeline stage runs a check (its TOML's `stage`): the engine schedules by this, and
/// names no check id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The metadata rules over the inventory as a document: offline (`mcpprobe check`) too,
    /// and in a scan on a blocking thread.
    Rules,
    /// The judge (META-01): after the sessions are closed, only with a judge configured.
    Judge,
    /// Against the live target that passed the gate, after the inventory was read.
    Live,
    /// Only when authorised (SPEC §1.3), after every passive check.
    Active,
}

/// What else a check needs before it runs (its TOML's `needs`): the engine runs that part of
/// the pipeline when a selected check needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Need {
    /// OAuth discovery (an anonymous handshake and the metadata documents).
    Oauth,
    /// A loopback listener the target is pointed at (local targets only).
    Listener,
    /// The pinned baseline: compared, and written when the scan completes.
    Baseline,
}

/// One rule code of a rules check (P1…A10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleMeta {
    pub code: String,
    pub severity: Severity,
    pub confidence: Confidence,
    pub title: String,
    pub owasp_mcp: Vec<String>,
    pub owasp_asi: Vec<String>,
    /// How to fix what this rule found: each rule has its own (required; the catalogue refuses
    /// one that is blank, the check's own fix, or another rule's).
    pub fix: String,
}

/// One check, exactly as its TOML file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckMeta {
    pub id: String,
    pub kind: Kind,
    pub title: String,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity_note: Option<String>,
    pub confidence: Confidence,
    pub owasp_mcp: Vec<String>,
    pub owasp_asi: Vec<String>,
    pub spec: String,
    /// The most requests this check may send in one scan (its share of SPEC §10's budget),
    /// enforced by the client: a check that tries to send more is an error. The ladder, the
    /// inventory and OAuth discovery are pipeline stages with their own requests.
    pub requests: u32,
    pub stage: Stage,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<Need>,
    /// A record of what was seen (INFO-01, INFO-02), not a problem: its findings never count
    /// for the exit code.
    #[serde(default)]
    pub informational: bool,
    pub why: String,
    pub fix: String,
    /// `fix` on one line, as findings carry it (filled when the catalogue loads: a 20 MB list
    /// yields thousands of findings).
    #[serde(skip)]
    pub fix_line: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleMeta>,
}

impl CheckMeta {
    /// Starts a finding of this check (and of one of its rules), taking title, severity, confidence,
    /// references and fix from the catalogue, so a check cannot get them wrong.
    pub fn finding(&self, rule: Option<&RuleMeta>) -> FindingBuilder {
        let (title, severity, confidence, mcp, asi, fix) = match rule {
            Some(r) => (
                r.title.clone(),
                r.severity,
                r.confidence,
                &r.owasp_mcp,
                &r.owasp_asi,
                r.fix.clone(),
            ),
            None => (
                self.title.clone(),
                self.severity,
                self.confidence,
                &self.owasp_mcp,
                &self.owasp_asi,
                self.fix_line.clone(),
            ),
        };
        FindingBuilder::new(Finding {
            check: self.id.clone(),
            rule: rule.map(|r| r.code.clone()),
            subcode: None,
            title,
            message: None,
            severity,
            confidence,
            location: Location::default(),
            evidence: Evidence::default(),
            references: mcp.iter().chain(asi.iter()).cloned().collect(),
            fix,
            fingerprint: String::new(),
            suppressed: None,
            default_severity: None,
            new: None,
        })
    }

    /// [`CheckMeta::finding`] of the rule with code `rule`: a code the entry lacks is a defect
    /// of the check's code (the catalogue tests hold every code a check uses).
    pub fn finding_of(&self, rule: Option<&str>) -> FindingBuilder {
        let rule = rule.map(|code| match self.rule(code) {
            Some(r) => r,
            None => panic!("{} has no rule {code} in its catalogue entry", self.id),
        });
        self.finding(rule)
    }

    pub fn rule(&self, code: &str) -> Option<&RuleMeta> {
        self.rules.iter().find(|r| r.code == code)
    }
}

/// The names of the reference lists (checks/taxonomy.toml).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Taxonomy {
    pub owasp_mcp: BTreeMap<String, String>,
    pub owasp_asi: BTreeMap<String, String>,
}

impl Taxonomy {
    /// "MCP03 Tool Poisoning" for "MCP03".
    pub fn describe(&self, id: &str) -> String {
        match self.owasp_mcp.get(id).or_else(|| self.owasp_asi.get(id)) {
            Some(name) => format!("{id} {name}"),
            None => id.to_string(),
        }
    }
}

/// One `checks/<kind>/<ID>.toml`, embedded by build.rs.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    pub id: &'static str,
    /// The folder: `passive`, `active` or `other`.
    pub kind: &'static str,
    /// The file, relative to the repository.
    pub path: &'static str,
    pub toml: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));

/// A catalogue entry: its metadata and where it was written. The implementation is
/// `crate::checks::get(id)`, a floor above.
pub struct Entry {
    pub meta: CheckMeta,
    pub path: &'static str,
}

pub struct Catalogue {
    pub entries: Vec<Entry>,
    pub taxonomy: Taxonomy,
}

const TAXONOMY: &str = include_str!("../checks/taxonomy.toml");

static CATALOGUE: LazyLock<Result<Catalogue, String>> = LazyLock::new(|| load(SOURCES, TAXONOMY));

/// The catalogue. Its data is embedded at build time and validated by the test suite, so an
/// invalid catalogue is a build defect, not a runtime condition.
pub fn catalogue() -> &'static Catalogue {
    match &*CATALOGUE {
        Ok(c) => c,
        Err(e) => panic!("the embedded check catalogue is invalid: {e}"),
    }
}

/// Validation result, for tests and `checks` commands that want to report instead of panic.
pub fn validate() -> Result<&'static Catalogue, &'static str> {
    CATALOGUE.as_ref().map_err(|e| e.as_str())
}

impl Catalogue {
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.meta.id.eq_ignore_ascii_case(id))
    }

    /// The metadata of an id the code itself names (an implementation's own id).
    pub fn meta(&self, id: &str) -> &CheckMeta {
        match self.get(id) {
            Some(e) => &e.meta,
            None => panic!("check id {id} is not in the catalogue"),
        }
    }

    /// The checks of `stage`, in display order.
    pub fn in_stage(&self, stage: Stage) -> impl Iterator<Item = &CheckMeta> {
        self.metas().filter(move |m| m.stage == stage)
    }

    pub fn metas(&self) -> impl Iterator<Item = &CheckMeta> {
        self.entries.iter().map(|e| &e.meta)
    }
}

fn load(sources: &[Source], taxonomy: &str) -> Result<Catalogue, String> {
    let taxonomy: Taxonomy =
        toml::from_str(taxonomy).map_err(|e| format!("checks/taxonomy.toml: {e}"))?;
    let mut entries = Vec::new();
    let mut seen = BTreeSet::new();
    for src in sources {
        let mut meta: CheckMeta =
            toml::from_str(src.toml).map_err(|e| format!("{}: {e}", src.path))?;
        meta.fix_line = crate::finding::one_line(&meta.fix);
        let fail = |what: String| Err(format!("{}: {what}", src.path));
        if meta.id != src.id {
            return fail(format!("id {:?} differs from the file name", meta.id));
        }
        if meta.kind.as_str() != src.kind {
            return fail(format!("kind {:?} differs from the folder", meta.kind));
        }
        if (meta.kind == Kind::Active) != (meta.stage == Stage::Active) {
            return fail(format!(
                "stage {:?} does not fit kind {:?}: active checks, and only they, run in the active stage",
                meta.stage, meta.kind
            ));
        }
        if meta.needs.contains(&Need::Listener) && meta.stage != Stage::Active {
            return fail("only an active check can need the loopback listener".into());
        }
        if !seen.insert(meta.id.clone()) {
            return fail("duplicate id".into());
        }
        let mut codes = BTreeSet::new();
        let refs = meta
            .owasp_mcp
            .iter()
            .map(|r| (r, &taxonomy.owasp_mcp))
            .chain(meta.owasp_asi.iter().map(|r| (r, &taxonomy.owasp_asi)));
        let rule_refs = meta.rules.iter().flat_map(|rule| {
            rule.owasp_mcp
                .iter()
                .map(|r| (r, &taxonomy.owasp_mcp))
                .chain(rule.owasp_asi.iter().map(|r| (r, &taxonomy.owasp_asi)))
        });
        for (r, list) in refs.chain(rule_refs) {
            if !list.contains_key(r) {
                return fail(format!("reference {r} is not in checks/taxonomy.toml"));
            }
        }
        let mut fixes = BTreeMap::new();
        for rule in &meta.rules {
            if !codes.insert(rule.code.clone()) {
                return fail(format!("duplicate rule code {}", rule.code));
            }
            // Each rule says how to fix what it found, in its own words.
            let fix = rule.fix.trim();
            if fix.is_empty() {
                return fail(format!("rule {}: fix is empty", rule.code));
            }
            if fix == meta.fix.trim() {
                return fail(format!(
                    "rule {}: fix repeats the check's fix; say how to fix this rule's finding",
                    rule.code
                ));
            }
            if let Some(other) = fixes.insert(fix, rule.code.as_str()) {
                return fail(format!(
                    "rules {other} and {} share one fix; each rule has its own",
                    rule.code
                ));
            }
        }
        for (field, text) in [
            ("title", &meta.title),
            ("why", &meta.why),
            ("fix", &meta.fix),
        ] {
            if text.trim().is_empty() {
                return fail(format!("{field} is empty"));
            }
        }
        entries.push(Entry {
            meta,
            path: src.path,
        });
    }
    // Display order: passive, active, other; by id within a kind.
    entries.sort_by(|a, b| (a.meta.kind, &a.meta.id).cmp(&(b.meta.kind, &b.meta.id)));
    Ok(Catalogue { entries, taxonomy })
}

/// Why a check the request left out was skipped.
pub const NOT_SELECTED: &str =
    "not selected (--checks / --skip-checks, or the configuration's checks / skip_checks)";

/// A check id the catalogue does not hold, with the closest one it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", unknown_check(id, suggestion.as_deref()))]
pub struct UnknownCheck {
    pub id: String,
    pub suggestion: Option<String>,
}

/// The message of an unknown check id.
pub fn unknown_check(id: &str, suggestion: Option<&str>) -> String {
    let n = catalogue().entries.len();
    match suggestion {
        Some(s) => format!(
            "no check named {id:?}; did you mean {s}? (`mcpprobe checks` lists the {n} checks)"
        ),
        None => format!("no check named {id:?}; `mcpprobe checks` lists the {n} checks"),
    }
}

/// Which checks run: validated catalogue ids. INFO-01 and INFO-02 always run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    only: Option<BTreeSet<String>>,
    skip: BTreeSet<String>,
}

/// Lowercase alphanumerics only: `auth01`, `AUTH_01` and `auth-01` are the same id.
fn squash(id: &str) -> String {
    id.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The catalogue id `raw` names exactly (case-insensitive), or the error with the closest id.
pub fn check_id(raw: &str) -> Result<String, UnknownCheck> {
    let raw = raw.trim();
    let ids: Vec<&str> = catalogue().metas().map(|m| m.id.as_str()).collect();
    if let Some(id) = ids.iter().find(|id| id.eq_ignore_ascii_case(raw)) {
        return Ok((*id).to_string());
    }
    let wanted = squash(raw);
    let suggestion = ids
        .iter()
        .map(|id| (strsim::levenshtein(&wanted, &squash(id)), *id))
        .min()
        .filter(|(d, _)| *d <= 2)
        .map(|(_, id)| id.to_string());
    Err(UnknownCheck {
        id: raw.to_string(),
        suggestion,
    })
}

impl Selection {
    /// Every check.
    pub fn all() -> Selection {
        Selection::default()
    }

    /// `only` (empty: every check) minus `skip`; an unknown id is an error naming the closest.
    pub fn new<S: AsRef<str>>(only: &[S], skip: &[S]) -> Result<Selection, UnknownCheck> {
        let ids = |list: &[S]| -> Result<BTreeSet<String>, UnknownCheck> {
            list.iter()
                .map(AsRef::as_ref)
                .filter(|s| !s.trim().is_empty())
                .map(check_id)
                .collect()
        };
        let only = ids(only)?;
        Ok(Selection {
            only: (!only.is_empty()).then_some(only),
            skip: ids(skip)?,
        })
    }

    /// Whether check `id` runs.
    pub fn includes(&self, id: &str) -> bool {
        id.starts_with("INFO-")
            || (self.only.as_ref().is_none_or(|o| o.contains(id)) && !self.skip.contains(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_serde_names() {
        for (k, name) in [
            (Kind::Passive, "passive"),
            (Kind::Active, "active"),
            (Kind::Other, "other"),
        ] {
            assert_eq!(k.as_str(), name);
            assert_eq!(serde_json::to_value(k).expect("json"), name);
        }
    }

    /// The real catalogue with `edit` applied to the TOML of check `id`.
    fn load_edited(id: &str, edit: impl Fn(&mut toml::Table)) -> Result<Catalogue, String> {
        let texts: Vec<String> = SOURCES
            .iter()
            .map(|s| {
                if s.id != id {
                    return s.toml.to_string();
                }
                let mut t: toml::Table = toml::from_str(s.toml).expect("the entry parses");
                edit(&mut t);
                toml::to_string(&t).expect("serialises")
            })
            .collect();
        let sources: Vec<Source> = SOURCES
            .iter()
            .zip(&texts)
            .map(|(s, t)| Source {
                toml: Box::leak(t.clone().into_boxed_str()),
                ..*s
            })
            .collect();
        load(&sources, TAXONOMY)
    }

    fn rule(t: &mut toml::Table, i: usize) -> &mut toml::Table {
        t.get_mut("rules")
            .and_then(|r| r.as_array_mut())
            .and_then(|r| r.get_mut(i))
            .and_then(|r| r.as_table_mut())
            .expect("a rule")
    }

    #[test]
    fn every_rule_carries_its_own_fix() {
        assert!(load_edited("CARD-02", |_| {}).is_ok());
        let missing = load_edited("CARD-02", |t| {
            rule(t, 1).remove("fix");
        });
        let e = missing.err().unwrap_or_default();
        assert!(e.contains("CARD-02") && e.contains("fix"), "{e}");
        let blank = load_edited("CARD-02", |t| {
            rule(t, 1).insert("fix".into(), "  ".into());
        });
        assert!(
            blank
                .err()
                .unwrap_or_default()
                .contains("rule A2: fix is empty")
        );
        let card_level = load_edited("CARD-02", |t| {
            let fix = t.get("fix").cloned().expect("the check's fix");
            rule(t, 2).insert("fix".into(), fix);
        });
        assert!(
            card_level
                .err()
                .unwrap_or_default()
                .contains("rule A3: fix repeats the check's fix")
        );
        let shared = load_edited("META-02", |t| {
            let fix = rule(t, 0).get("fix").cloned().expect("P1's fix");
            rule(t, 3).insert("fix".into(), fix);
        });
        assert!(
            shared
                .err()
                .unwrap_or_default()
                .contains("rules P1 and P4 share one fix")
        );
    }

    #[test]
    fn a_stage_must_fit_the_kind() {
        let active_live = load_edited("ACT-01", |t| {
            t.insert("stage".into(), "live".into());
        });
        let e = active_live.err().unwrap_or_default();
        assert!(
            e.contains("ACT-01") && e.contains("stage Live does not fit kind Active"),
            "{e}"
        );
        let passive_active = load_edited("AUTH-01", |t| {
            t.insert("stage".into(), "active".into());
        });
        assert!(
            passive_active
                .err()
                .unwrap_or_default()
                .contains("stage Active does not fit kind Passive")
        );
        let listener = load_edited("AUTH-01", |t| {
            t.insert("needs".into(), toml::Value::Array(vec!["listener".into()]));
        });
        assert!(
            listener
                .err()
                .unwrap_or_default()
                .contains("only an active check can need the loopback listener")
        );
        let unknown = load_edited("AUTH-01", |t| {
            t.insert("needs".into(), toml::Value::Array(vec!["tea".into()]));
        });
        assert!(unknown.err().unwrap_or_default().contains("AUTH-01"));
        let missing = load_edited("AUTH-01", |t| {
            t.remove("stage");
        });
        assert!(missing.err().unwrap_or_default().contains("stage"));
    }
}
