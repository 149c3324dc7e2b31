//! The check catalogue, read from the TOML files under `checks/` that are embedded at build time.
//!
//! This is the only place check metadata lives. Rust code asks the catalogue for titles,
//! severities, references and fixes; it never repeats them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::checks::{CatalogueSource, Check, SOURCES};
use crate::finding::{Confidence, Severity};

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

/// A catalogue entry: its metadata and its implementation.
pub struct Entry {
    pub meta: CheckMeta,
    pub path: &'static str,
    pub check: &'static dyn Check,
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

    pub fn metas(&self) -> impl Iterator<Item = &CheckMeta> {
        self.entries.iter().map(|e| &e.meta)
    }
}

fn load(sources: &[CatalogueSource], taxonomy: &str) -> Result<Catalogue, String> {
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
        if src.check.id() != meta.id {
            return fail(format!(
                "the implementation names id {:?}, the catalogue {:?}",
                src.check.id(),
                meta.id
            ));
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
            check: src.check,
        });
    }
    // Display order: passive, active, other; by id within a kind.
    entries.sort_by(|a, b| (a.meta.kind, &a.meta.id).cmp(&(b.meta.kind, &b.meta.id)));
    Ok(Catalogue { entries, taxonomy })
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
        let sources: Vec<CatalogueSource> = SOURCES
            .iter()
            .zip(&texts)
            .map(|(s, t)| CatalogueSource {
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
}
