//! The metadata rules engine (SPEC §3.1). Pure: documents in, findings out; no network, no
//! clock, no terminal.
//!
//! - [`document`]: everything the model reads, each text with its JSON Pointer (bounded walk);
//! - [`poisoning`]: META-02, P1–P6; [`capabilities`]: META-03, C1–C9;
//!   [`definitions`]: META-04, S1–S6 and N1;
//! - [`server_card`]: CARD-01's static rules; [`agent_card`]: CARD-02, A1–A10.

pub mod agent_card;
pub mod automaton;
pub mod capabilities;
pub mod classifier;
mod classifier_data;
pub mod cross;
pub mod definitions;
pub mod document;
pub mod embedded;
pub mod encodings;
pub mod families;
pub mod fingerprint;
pub mod hosts;
pub mod intent;
pub mod json;
pub mod languages;
mod payloads;
pub mod poisoning;
pub mod server_card;
pub mod signals;
pub mod text;

use serde_json::Value;

pub use json::Json;

use crate::catalogue::catalogue;
use crate::finding::FindingBuilder;
pub use document::Document;

/// A finding of a rules check, with the rule's metadata from the catalogue.
pub(crate) fn finding(check: &str, rule: &str) -> FindingBuilder {
    let meta = catalogue().meta(check);
    match meta.rule(rule) {
        Some(r) => meta.finding(Some(r)),
        None => panic!("{check} has no rule {rule} in its catalogue entry"),
    }
}

/// What a document is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case", ascii_case_insensitive)]
pub enum InputKind {
    /// A tools/list response, its result, or a bare tools array.
    Tools,
    /// An MCP server card.
    ServerCard,
    /// An A2A agent card.
    AgentCard,
}

impl InputKind {
    pub fn describe(self) -> &'static str {
        match self {
            InputKind::Tools => "tool list",
            InputKind::ServerCard => "MCP server card",
            InputKind::AgentCard => "A2A agent card",
        }
    }
}

/// A document read offline, normalised: a tool list is always an object with `tools` (and
/// whatever else its result carried: `nextCursor`, `prompts`, `instructions`…), so pointers
/// read `/tools/3/description` whichever shape was pasted.
///
/// Its tree borrows from what it was read from: the bytes of a file (`check`), or a live scan's
/// inventory.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub kind: InputKind,
    pub value: Json<'a>,
    /// Set when a document forced to be a server card is not JSON (SC1).
    pub invalid_json: Option<String>,
    sha256: std::sync::OnceLock<String>,
}

const EXPECTED: &str = "expected a JSON-RPC tools/list response, its result (an object with \
                        `tools`), a bare tools array, an MCP server card or an A2A agent card";

fn keys(v: &Json<'_>) -> String {
    match v.as_object() {
        Some(m) => {
            let mut k: Vec<&str> = m.keys().take(8).collect();
            if m.len() > 8 {
                k.push("…");
            }
            format!("an object with keys [{}]", k.join(", "))
        }
        None => format!("a JSON {}", v.kind()),
    }
}

fn looks_like_agent_card(v: &Json<'_>) -> bool {
    v.get("supportedInterfaces").is_some()
        || (v.get("skills").is_some_and(Json::is_array)
            && (v.get("defaultInputModes").is_some() || v.get("capabilities").is_some()))
}

fn looks_like_server_card(v: &Json<'_>) -> bool {
    v.get("$schema")
        .and_then(Json::as_str)
        .is_some_and(|s| s.contains("server-card"))
        || v.get("remotes").is_some()
        || (v.get("serverInfo").is_some() && v.get("transport").is_some())
}

impl<'a> Input<'a> {
    fn new(kind: InputKind, value: Json<'a>, invalid_json: Option<String>) -> Input<'a> {
        Input {
            kind,
            value,
            invalid_json,
            sha256: std::sync::OnceLock::new(),
        }
    }

    /// The tools of the document (a card's own `tools`, if it lists any).
    pub fn tools(&self) -> &[Json<'a>] {
        self.value
            .get("tools")
            .and_then(Json::as_array)
            .unwrap_or(&[])
    }

    /// The tools of the document, moved out of it.
    pub fn into_tools(self) -> Vec<Json<'a>> {
        match self.value {
            Json::Object(mut m) => match m.remove("tools") {
                Some(Json::Array(items)) => items,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The findings of every rules-stage and card check over this input, as `mcpprobe check`
    /// would report them before its policy (for the rules' own fixture tests, which cannot
    /// reach the checks' floor).
    #[cfg(test)]
    pub(crate) fn offline_findings(&self) -> Vec<crate::finding::Finding> {
        let doc = self.document();
        let mut out = poisoning::run(&doc);
        match self.kind {
            InputKind::Tools => {
                out.extend(capabilities::run(&doc));
                out.extend(definitions::run(&doc));
            }
            InputKind::ServerCard => {
                out.extend(capabilities::run(&doc));
                if self.invalid_json.is_none() {
                    out.extend(server_card::run(&self.value.to_value()));
                }
            }
            InputKind::AgentCard => out.extend(agent_card::run(&self.value.to_value())),
        }
        out
    }

    /// The tool-list fingerprint (SPEC §5), computed once.
    pub fn tools_sha256(&self) -> &str {
        self.sha256
            .get_or_init(|| crate::rules::fingerprint::tools_sha256(self.tools()))
    }

    /// Parses and recognises a document; the error names what was expected. Strings without
    /// escapes stay in `text` (no copy).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        text: &'a T,
        forced: Option<InputKind>,
    ) -> Result<Input<'a>, String> {
        // serde_json validates UTF-8 as it parses: no separate pass over the bytes.
        let value = match Json::parse(text.as_ref()) {
            Ok(v) => v,
            Err(e) if forced == Some(InputKind::ServerCard) => {
                return Ok(Input::new(
                    InputKind::ServerCard,
                    Json::Null,
                    Some(e.to_string()),
                ));
            }
            Err(e) => return Err(format!("not valid JSON: {e}")),
        };
        Input::recognise(value, forced)
    }

    /// A live scan's inventory (`{tools, prompts, …}`), borrowed rather than copied.
    pub fn shared_inventory(value: &'a Value) -> Option<Input<'a>> {
        value
            .get("tools")
            .is_some_and(Value::is_array)
            .then(|| Input::new(InputKind::Tools, Json::borrow(value), None))
    }

    /// [`Input::parse`] of a document already parsed.
    pub fn from_value(value: Value, forced: Option<InputKind>) -> Result<Input<'static>, String> {
        Input::recognise(Json::from_value(value), forced)
    }

    fn recognise(value: Json<'a>, forced: Option<InputKind>) -> Result<Input<'a>, String> {
        // A JSON-RPC envelope: take its result.
        let value = match value {
            Json::Object(mut m) if m.contains_key("jsonrpc") => {
                if let Some(err) = m.get("error") {
                    return Err(format!(
                        "a JSON-RPC error response ({}), not a tool list",
                        err
                    ));
                }
                match m.remove("result") {
                    Some(r) => r,
                    None => return Err(format!("a JSON-RPC message without a result; {EXPECTED}")),
                }
            }
            v => v,
        };
        let tools = |v: Json<'a>| -> Result<Input<'a>, String> {
            match v {
                Json::Array(items) => Ok(Input::new(
                    InputKind::Tools,
                    Json::Object(json::Object::from_members(vec![(
                        "tools".into(),
                        Json::Array(items),
                    )])),
                    None,
                )),
                v if v.get("tools").is_some_and(Json::is_array) => {
                    Ok(Input::new(InputKind::Tools, v, None))
                }
                v => Err(format!("found {}; {EXPECTED}", keys(&v))),
            }
        };
        let card = |kind: InputKind, v: Json<'a>| -> Result<Input<'a>, String> {
            if v.is_object() {
                Ok(Input::new(kind, v, None))
            } else {
                Err(format!(
                    "an {} must be a JSON object; found {}",
                    kind.describe(),
                    keys(&v)
                ))
            }
        };
        match forced {
            Some(InputKind::Tools) => tools(value),
            Some(k) => card(k, value),
            None if looks_like_agent_card(&value) => card(InputKind::AgentCard, value),
            None if looks_like_server_card(&value) => card(InputKind::ServerCard, value),
            None => tools(value),
        }
    }

    /// The document model of this input.
    pub fn document(&self) -> Document<'_> {
        match self.kind {
            InputKind::Tools => Document::from_inventory(&self.value),
            InputKind::ServerCard => Document::from_server_card(&self.value),
            InputKind::AgentCard => Document::from_agent_card(&self.value),
        }
    }
}

/// A count of the bytes the rules' local checks examine beyond the one pass per text (the
/// windows around matches, sentences read for P4, words after a phrase). It exists so that
/// a test can hold the rules to linear work on adversarial inputs by counting, not by timing.
#[doc(hidden)]
pub mod work {
    use std::cell::Cell;

    thread_local! {
        static BYTES: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn add(n: usize) {
        BYTES.with(|b| b.set(b.get().saturating_add(n as u64)));
    }

    /// The bytes examined on this thread since the last [`reset`].
    pub fn examined() -> u64 {
        BYTES.with(Cell::get)
    }

    pub fn reset() {
        BYTES.with(|b| b.set(0));
    }
}

/// The rule fixtures (`fixtures/rules/*/*.json`) that name entries of one table under `key`
/// (`"signals": ["promotion"]`, `"intent": ["conceal"]`), each run through the offline rules:
/// its path, whether it is a `fire-*` fixture, the names, and what the rules found (or why the
/// document could not be read). Shared by the tables' "every entry has fires and near misses"
/// tests.
/// One rule fixture that names entries of a table: its path, whether it is `fire-*`, the names,
/// and what the offline rules found in it (or why its document could not be read).
#[cfg(test)]
pub(crate) type NamingFixture = (
    String,
    bool,
    Vec<String>,
    Result<Vec<crate::finding::Finding>, String>,
);

#[cfg(test)]
pub(crate) fn fixtures_naming(key: &str) -> Vec<NamingFixture> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rules");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten())
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(fx) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let named: Vec<String> = fx[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_string)
            .collect();
        if named.is_empty() {
            continue;
        }
        let fire = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("fire-"));
        let doc = fx["document"].to_string();
        let found = Input::parse(&doc, None)
            .map(|i| i.offline_findings())
            .map_err(|e| e.to_string());
        out.push((path.display().to_string(), fire, named, found));
    }
    out
}
