//! Rug-pull baselines (SPEC §5): the pinned state of a server, written when a scan is approved,
//! and the findings (BASE-01, BASE-02) of a later state compared with it.
//!
//! Engine-level and pure: values in, values or findings out. Nothing here prints, reads the
//! environment or the clock; the only side effects are [`load`], [`save`] and [`save_checked`]
//! on the one path they are given.
//!
//! A baseline file that [`load`] rejects (corrupt or foreign) is never overwritten by
//! [`save_checked`], the writer hosts use; [`save`] itself writes unconditionally.
//!
//! Rule codes (data: `checks/other/BASE-01.toml`, `BASE-02.toml`):
//! BASE-01 `B1` tool added, `B2` removed, `B3` renamed with unchanged content, `B4` definition
//! changed (any field but the annotations), `B5` annotations loosened, `B6` other annotation
//! change; BASE-02 `R1` instructions, `R2` prompt, `R3` resource, `R4` resource template added,
//! removed or changed.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::finding::Finding;
use crate::rules::fingerprint::{self, Indexed, ListDiff};

/// The baseline file format version. Bump only on a breaking change.
pub const BASELINE_VERSION: u32 = 1;

/// The pinned state of a server: the file format of SPEC §5.
///
/// Every list is in canonical order (tools and prompts by name, resources by `uri`, templates by
/// `uriTemplate`, ties by canonical JSON) and holds its entries without `_meta` and `icons`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub version: u32,
    pub target: String,
    pub written_at: DateTime<Utc>,
    /// [`fingerprint::tools_sha256`] of `tools`; [`load`] refuses a file where it does not match.
    pub tool_list_sha256: String,
    pub instructions: Option<String>,
    pub tools: Vec<Value>,
    pub prompts: Vec<Value>,
    pub resources: Vec<Value>,
    pub resource_templates: Vec<Value>,
}

/// The four lists of a baseline: the inventory key, the baseline key, the key field.
const LISTS: [(&str, &str, &str); 4] = [
    ("tools", "tools", "name"),
    ("prompts", "prompts", "name"),
    ("resources", "resources", "uri"),
    ("resourceTemplates", "resource_templates", "uriTemplate"),
];

/// The top-level keys of a baseline file.
const KEYS: [&str; 9] = [
    "version",
    "target",
    "written_at",
    "tool_list_sha256",
    "instructions",
    "tools",
    "prompts",
    "resources",
    "resource_templates",
];

impl Baseline {
    /// Applies `redact` to every string the server sent (the user's secrets echoed in a
    /// description never reach a file meant to be committed), and re-hashes the tools.
    pub fn redact(&mut self, redact: &dyn Fn(&str) -> String) {
        let mut all = Value::Array(
            [
                &self.tools,
                &self.prompts,
                &self.resources,
                &self.resource_templates,
            ]
            .into_iter()
            .map(|l| Value::Array(l.clone()))
            .collect(),
        );
        crate::net::redact::redact_value(&mut all, redact);
        if let Value::Array(mut lists) = all
            && lists.len() == 4
        {
            let mut take = || match lists.pop() {
                Some(Value::Array(l)) => l,
                _ => Vec::new(),
            };
            self.resource_templates = take();
            self.resources = take();
            self.prompts = take();
            self.tools = take();
        }
        self.instructions = self.instructions.as_deref().map(redact);
        self.target = redact(&self.target);
        self.tool_list_sha256 = fingerprint::tools_sha256(&self.tools);
    }

    /// The baseline of a scan's inventory value (`{"tools", "prompts", "resources",
    /// "resourceTemplates", "instructions"}`, any key may be absent).
    pub fn from_inventory(target: &str, written_at: DateTime<Utc>, inventory: &Value) -> Baseline {
        let list = |inventory_key: &str, key_field: &str| -> Vec<Value> {
            let items = inventory
                .get(inventory_key)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            Indexed::new(items, key_field)
                .items
                .iter()
                .map(|it| sorted(fingerprint::strip(it.value)))
                .collect()
        };
        let [tools, prompts, resources, resource_templates] =
            LISTS.map(|(inventory_key, _, key_field)| list(inventory_key, key_field));
        Baseline {
            version: BASELINE_VERSION,
            target: target.to_string(),
            written_at,
            tool_list_sha256: fingerprint::tools_sha256(&tools),
            instructions: inventory
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string),
            tools,
            prompts,
            resources,
            resource_templates,
        }
    }

    /// The pretty, sorted JSON text [`save`] writes (every object's keys sorted, two-space
    /// indent, a trailing newline).
    pub fn to_pretty_json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(&self.to_sorted_value()?)?;
        text.push('\n');
        Ok(text)
    }
}

impl Baseline {
    /// The baseline as JSON with every object's keys sorted (what [`Baseline::to_pretty_json`]
    /// prints; a file of several baselines nests these).
    pub fn to_sorted_value(&self) -> Result<Value, serde_json::Error> {
        Ok(sorted(serde_json::to_value(self)?))
    }
}

/// A value with every object's keys in sorted order (whatever map serde_json was built with).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut members: Vec<(String, Value)> = m.into_iter().collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, x)| (k, sorted(x)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Why a baseline file could not be read or written. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("baseline {}: cannot read it: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not valid JSON, not of the baseline's shape, or a `tool_list_sha256` that does not
    /// match its own tools.
    #[error("baseline {} is corrupt: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    /// Valid JSON that is not a baseline of this version (another version, a report…).
    #[error("baseline {} is not an mcpprobe baseline version {BASELINE_VERSION}: {detail}", path.display())]
    Foreign { path: PathBuf, detail: String },
    #[error("baseline {}: cannot write it: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl BaselineError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            BaselineError::Read { path, .. }
            | BaselineError::Corrupt { path, .. }
            | BaselineError::Foreign { path, .. }
            | BaselineError::Write { path, .. } => path,
        }
    }
}

/// Reads a baseline: `Ok(None)` when the file does not exist.
///
/// A file that is not valid JSON, not of this shape, or whose `tool_list_sha256` does not match
/// its own tools is [`BaselineError::Corrupt`]; valid JSON of another `version`, or a document
/// that is not a baseline at all (a JSON report, say), is [`BaselineError::Foreign`]. Both name
/// the file, and serde's line and column or key where it gives one.
pub fn load(path: &Path) -> Result<Option<Baseline>, BaselineError> {
    match read_if_present(path)? {
        Some(bytes) => parse(&bytes, path).map(Some),
        None => Ok(None),
    }
}

/// A baseline file's bytes; `Ok(None)` when it does not exist (a first pin).
pub fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>, BaselineError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(BaselineError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// [`load`] of bytes already read (`path` names them in errors). For fuzzing and hosts that
/// keep baselines elsewhere than in a file.
#[doc(hidden)]
pub fn parse(bytes: &[u8], path: &Path) -> Result<Baseline, BaselineError> {
    let corrupt = |detail: String| BaselineError::Corrupt {
        path: path.to_path_buf(),
        detail,
    };
    let foreign = |detail: String| BaselineError::Foreign {
        path: path.to_path_buf(),
        detail,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let Value::Object(top) = &value else {
        return Err(foreign(format!(
            "a JSON {}, not an object",
            crate::rules::definitions::kind(&value)
        )));
    };
    match top.get("version") {
        None => return Err(foreign("no `version` key".into())),
        Some(v) if v.as_u64() == Some(u64::from(BASELINE_VERSION)) => {}
        Some(v) => {
            return Err(foreign(format!(
                "`version` is {}; this build reads version {BASELINE_VERSION}",
                fingerprint::canonical(v)
            )));
        }
    }
    if let Some(k) = top.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(foreign(format!(
            "unknown key `{k}` (a report or another tool's file?)"
        )));
    }
    let baseline: Baseline = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let actual = fingerprint::tools_sha256(&baseline.tools);
    if actual != baseline.tool_list_sha256 {
        return Err(corrupt(format!(
            "`tool_list_sha256` is {:?} but its tools hash to {actual} (edited by hand?)",
            baseline.tool_list_sha256
        )));
    }
    Ok(baseline)
}

/// Writes `baseline` to `path` (see [`Baseline::to_pretty_json`]) atomically: through a unique
/// temporary file in the same folder, renamed over `path`, so a reader or a concurrent writer
/// never sees a partial file and no temporary file is left behind.
///
/// `save` does not look at what is at `path`: it replaces it, even a file [`load`] rejects.
/// Hosts writing a baseline (the first run of `--baseline`, `--update-baseline`) call
/// [`save_checked`], which never touches a corrupt or foreign file.
pub fn save(path: &Path, baseline: &Baseline) -> Result<(), BaselineError> {
    let write_err = |source: std::io::Error| BaselineError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = baseline.to_pretty_json().map_err(|e| write_err(e.into()))?;
    // A baseline is a file to commit and share: it keeps the old file's permissions (0644 new).
    crate::util::atomic::write_atomically(path, &text, crate::util::atomic::Visibility::Shared)
        .map_err(write_err)
}

/// Writes a first pin: only when no file is at `path` (a pin another scan wrote meanwhile is
/// never replaced without a comparison).
pub fn save_new(path: &Path, baseline: &Baseline) -> Result<(), BaselineError> {
    let write_err = |source: std::io::Error| BaselineError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = baseline.to_pretty_json().map_err(|e| write_err(e.into()))?;
    crate::util::atomic::write_new_atomically(path, &text, crate::util::atomic::Visibility::Shared)
        .map_err(write_err)
}

/// Like [`save`], but refuses to replace a file that [`load`] rejects (corrupt, foreign or
/// unreadable): it returns that error and leaves the file byte for byte as it was. A missing
/// file or a valid baseline is written.
pub fn save_checked(path: &Path, baseline: &Baseline) -> Result<(), BaselineError> {
    load(path)?;
    save(path, baseline)
}

/// The BASE-01 (tools) and BASE-02 (instructions, prompts, resources, resource templates)
/// findings of `new` compared with `old`.
///
/// Entries are compared by canonical JSON, so order and formatting never count. Tools go through
/// the same linear diff as `mcpprobe diff` ([`fingerprint::diff_indexed`]). Findings contain no
/// time: the same change gives the same findings, with the same fingerprints, in every run.
pub fn compare(old: &Baseline, new: &Baseline) -> Vec<Finding> {
    let mut out = Vec::new();
    compare_tools(old, new, &mut out);
    if old.instructions != new.instructions {
        let text = field_lines(&[(
            "/instructions".to_string(),
            old.instructions.as_deref().map(|s| Value::String(s.into())),
            new.instructions.as_deref().map(|s| Value::String(s.into())),
        )]);
        let what = match (&old.instructions, &new.instructions) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        };
        out.push(
            crate::catalogue::catalogue()
                .meta("BASE-02")
                .finding_of(Some("R1"))
                .message(format!("server instructions {what} since the baseline"))
                .pointer("/instructions")
                .text(text)
                .build(),
        );
    }
    for (rule, noun, (_, list_key, key_field), a, b) in [
        ("R2", "prompt", LISTS[1], &old.prompts, &new.prompts),
        ("R3", "resource", LISTS[2], &old.resources, &new.resources),
        (
            "R4",
            "resource template",
            LISTS[3],
            &old.resource_templates,
            &new.resource_templates,
        ),
    ] {
        let (o, n) = (Indexed::new(a, key_field), Indexed::new(b, key_field));
        let d = fingerprint::diff_indexed(&o, &n, false);
        let finding = |key: &str, what: &str, text: String| {
            crate::catalogue::catalogue()
                .meta("BASE-02")
                .finding_of(Some(rule))
                .message(format!("{noun} `{key}` {what} since the baseline"))
                .pointer(format!("/{list_key}/{}", token(key)))
                .tool(key)
                .text(text)
                .build()
        };
        for &i in &d.added {
            let it = &n.items[i];
            out.push(finding(it.key, "added", whole(None, Some(it.value))));
        }
        for &i in &d.removed {
            let it = &o.items[i];
            out.push(finding(it.key, "removed", whole(Some(it.value), None)));
        }
        for &(i, j) in &d.changed {
            let (x, y) = (&o.items[i], &n.items[j]);
            let fields = owned(fingerprint::changed_fields(x.value, y.value));
            let what = format!("changed ({})", top_fields(&fields));
            out.push(finding(x.key, &what, field_lines(&fields)));
        }
    }
    // Identical findings (the same change twice under a duplicate key) are one finding.
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(f.fingerprint.clone()));
    out
}

/// One JSON Pointer reference token (RFC 6901: `~` → `~0`, `/` → `~1`).
fn token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// A field change with owned values: `(pointer, old, new)`.
type Field = (String, Option<Value>, Option<Value>);

fn owned(fields: Vec<(String, Option<&Value>, Option<&Value>)>) -> Vec<Field> {
    fields
        .into_iter()
        .map(|(p, a, b)| (p, a.cloned(), b.cloned()))
        .collect()
}

fn compare_tools(old: &Baseline, new: &Baseline, out: &mut Vec<Finding>) {
    let (o, n) = (
        Indexed::new(&old.tools, "name"),
        Indexed::new(&new.tools, "name"),
    );
    let ListDiff {
        added,
        removed,
        renamed,
        changed,
    } = fingerprint::diff_indexed(&o, &n, true);
    let finding = |rule: &str, tool: &str, message: String, text: String| {
        crate::catalogue::catalogue()
            .meta("BASE-01")
            .finding_of(Some(rule))
            .message(message)
            .pointer(format!("/tools/{}", token(tool)))
            .tool(tool)
            .text(text)
            .build()
    };
    for i in added {
        let it = &n.items[i];
        out.push(finding(
            "B1",
            it.key,
            format!("tool `{}` added since the baseline", it.key),
            whole(None, Some(it.value)),
        ));
    }
    for i in removed {
        let it = &o.items[i];
        out.push(finding(
            "B2",
            it.key,
            format!("tool `{}` removed since the baseline", it.key),
            whole(Some(it.value), None),
        ));
    }
    for (i, j) in renamed {
        let (x, y) = (&o.items[i], &n.items[j]);
        out.push(finding(
            "B3",
            y.key,
            format!(
                "tool `{}` renamed to `{}` with unchanged content",
                x.key, y.key
            ),
            field_lines(&[(
                "/name".into(),
                Some(Value::String(x.key.into())),
                Some(Value::String(y.key.into())),
            )]),
        ));
    }
    for (i, j) in changed {
        let (x, y) = (&o.items[i], &n.items[j]);
        let (annotations, definition): (Vec<Field>, Vec<Field>) =
            owned(fingerprint::changed_fields(x.value, y.value))
                .into_iter()
                .partition(|(p, _, _)| p == "/annotations" || p.starts_with("/annotations/"));
        if !definition.is_empty() {
            out.push(finding(
                "B4",
                x.key,
                format!("tool `{}`: {} changed", x.key, top_fields(&definition)),
                field_lines(&definition),
            ));
        }
        if !annotations.is_empty() {
            let loosened = loosened(x.value.get("annotations"), y.value.get("annotations"));
            let (rule, message) = if loosened.is_empty() {
                let names: Vec<&str> = annotations
                    .iter()
                    .map(|(p, _, _)| p.strip_prefix("/annotations/").unwrap_or("annotations"))
                    .collect();
                (
                    "B6",
                    format!(
                        "tool `{}`: annotations changed ({})",
                        x.key,
                        names.join(", ")
                    ),
                )
            } else {
                (
                    "B5",
                    format!(
                        "tool `{}`: annotations loosened ({})",
                        x.key,
                        loosened.join(", ")
                    ),
                )
            };
            out.push(finding(rule, x.key, message, field_lines(&annotations)));
        }
    }
}

/// The annotation changes that make a tool look safer than it was: `readOnlyHint` turned on,
/// `destructiveHint` turned off (or dropped where it was `true`), `openWorldHint` turned off.
/// (An absent `destructiveHint` or `openWorldHint` means `true` in MCP, so `false` where it was
/// absent is a loosening too.)
fn loosened(old: Option<&Value>, new: Option<&Value>) -> Vec<&'static str> {
    let hint = |a: Option<&Value>, k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
    let mut out = Vec::new();
    if hint(old, "readOnlyHint") != Some(true) && hint(new, "readOnlyHint") == Some(true) {
        out.push("readOnlyHint turned on");
    }
    match (hint(old, "destructiveHint"), hint(new, "destructiveHint")) {
        (Some(true) | None, Some(false)) => out.push("destructiveHint turned off"),
        (Some(true), None) => out.push("destructiveHint removed"),
        _ => {}
    }
    if hint(old, "openWorldHint") != Some(false) && hint(new, "openWorldHint") == Some(false) {
        out.push("openWorldHint turned off");
    }
    out
}

/// The top-level fields among changes, in order, without repeats: `description, inputSchema`.
fn top_fields(fields: &[Field]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (p, _, _) in fields {
        let top = p
            .strip_prefix('/')
            .and_then(|p| p.split('/').next())
            .filter(|s| !s.is_empty())
            .unwrap_or("definition");
        if names.last() != Some(&top) {
            names.push(top);
        }
    }
    names.join(", ")
}

/// Every field of an entry that was added (old absent) or removed (new absent).
fn whole(old: Option<&Value>, new: Option<&Value>) -> String {
    let empty = Value::Object(Map::new());
    let mut fields = owned(fingerprint::changed_fields(
        old.unwrap_or(&empty),
        new.unwrap_or(&empty),
    ));
    // What a reviewer reads first: the name, the title, the description; then the rest in order.
    let rank = |p: &str| match p {
        "/name" => 0,
        "/title" => 1,
        "/description" => 2,
        _ => 3,
    };
    fields.sort_by_key(|(p, _, _)| rank(p));
    field_lines(&fields)
}

/// The evidence text: one block per field, old and new side by side, values exactly as the
/// server sent them, as JSON (a string is a JSON string literal, so a line break or a quote in it
/// can never pass for the next line of the block). Renderers escape it.
fn field_lines(fields: &[Field]) -> String {
    let show = |v: &Option<Value>| match v {
        None => "(absent)".to_string(),
        Some(other) => fingerprint::canonical(other),
    };
    let mut out = String::new();
    for (i, (pointer, old, new)) in fields.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(if pointer.is_empty() { "/" } else { pointer });
        out.push_str("\n  old: ");
        out.push_str(&show(old));
        out.push_str("\n  new: ");
        out.push_str(&show(new));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn loosening_is_judged_against_the_mcp_defaults() {
        let l = |a: Value, b: Value| loosened(Some(&a), Some(&b));
        assert_eq!(
            l(json!({}), json!({"readOnlyHint": true})),
            ["readOnlyHint turned on"]
        );
        assert_eq!(
            l(json!({"destructiveHint": true}), json!({})),
            ["destructiveHint removed"]
        );
        assert_eq!(
            l(
                json!({}),
                json!({"destructiveHint": false, "openWorldHint": false})
            ),
            ["destructiveHint turned off", "openWorldHint turned off"]
        );
        assert!(
            l(
                json!({"readOnlyHint": true}),
                json!({"readOnlyHint": false})
            )
            .is_empty()
        );
        assert!(l(json!({"openWorldHint": false}), json!({})).is_empty());
        assert_eq!(
            loosened(None, Some(&json!({"readOnlyHint": true}))),
            ["readOnlyHint turned on"]
        );
    }

    #[test]
    fn evidence_shows_values_as_json_literals() {
        let text = field_lines(&[
            (
                "/description".into(),
                Some(json!("a \"b\"\n  new: forged")),
                None,
            ),
            (
                "/annotations/readOnlyHint".into(),
                Some(json!(false)),
                Some(json!(true)),
            ),
        ]);
        assert_eq!(
            text,
            "/description\n  old: \"a \\\"b\\\"\\n  new: forged\"\n  new: (absent)\n\
             /annotations/readOnlyHint\n  old: false\n  new: true"
        );
        // A line break inside a value never starts a line of the block.
        assert_eq!(text.lines().count(), 6);
    }

    #[test]
    fn top_fields_names_each_field_once_in_order() {
        let f = |p: &str| (p.to_string(), None, None);
        assert_eq!(
            top_fields(&[f("/description"), f("/inputSchema/a"), f("/inputSchema/b")]),
            "description, inputSchema"
        );
        assert_eq!(top_fields(&[f("")]), "definition");
    }

    #[test]
    fn pointer_tokens_escape_tilde_and_slash() {
        assert_eq!(token("a/b~c"), "a~1b~0c");
        assert_eq!(token("plain"), "plain");
    }

    #[test]
    fn from_inventory_tolerates_missing_and_odd_keys() {
        let b = Baseline::from_inventory(
            "t",
            DateTime::<Utc>::default(),
            &json!({"tools": "not a list", "instructions": 3}),
        );
        assert!(b.tools.is_empty() && b.prompts.is_empty() && b.instructions.is_none());
        assert_eq!(b.tool_list_sha256, fingerprint::tools_sha256::<Value>(&[]));
        assert_eq!(b.version, BASELINE_VERSION);
    }
}
