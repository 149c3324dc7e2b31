//! The tool-list fingerprint (SPEC §5) and the field-by-field tool-list diff.
//!
//! Canonical JSON: object keys sorted, no insignificant whitespace, tools sorted by name, each
//! tool's top-level `_meta` and `icons` left out. Formatting and order never change the hash.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Top-level tool fields that do not count (they change without changing what the model reads).
const IGNORED: [&str; 2] = ["_meta", "icons"];

/// Canonical JSON of a value: keys sorted, compact.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            out.push('{');
            push_members(map.iter(), out);
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        Value::String(s) => push_json_string(s, out),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// Appends `"key":value` members in key order. serde_json's map is usually already ordered by
/// key (a BTreeMap); when a feature makes it keep insertion order, the members are sorted here.
fn push_members<'v>(
    members: impl Iterator<Item = (&'v String, &'v Value)> + Clone,
    out: &mut String,
) {
    let push = |(i, (k, x)): (usize, (&String, &Value)), out: &mut String| {
        if i > 0 {
            out.push(',');
        }
        push_json_string(k, out);
        out.push(':');
        write_canonical(x, out);
    };
    if members.clone().map(|(k, _)| k).is_sorted() {
        members.enumerate().for_each(|m| push(m, out));
    } else {
        let mut sorted: Vec<_> = members.collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        sorted.into_iter().enumerate().for_each(|m| push(m, out));
    }
}

/// Appends `s` as a JSON string (RFC 8259 escapes: `"`, `\\`, and control characters).
fn push_json_string(s: &str, out: &mut String) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(off) = bytes[start..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
    {
        let i = start + off;
        out.push_str(&s[start..i]);
        match bytes[i] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A tool without the fields that do not count.
pub fn strip(tool: &Value) -> Value {
    match tool {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !IGNORED.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        v => v.clone(),
    }
}

fn name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("")
}

/// Appends the canonical JSON of one tool, without the fields that do not count.
fn push_canonical_tool(tool: &Value, out: &mut String) {
    match tool {
        Value::Object(m) => {
            out.push('{');
            push_members(
                m.iter().filter(|(k, _)| !IGNORED.contains(&k.as_str())),
                out,
            );
            out.push('}');
        }
        v => write_canonical(v, out),
    }
}

/// The tools in canonical order: by name, ties (duplicate names) by canonical content.
fn ordered(tools: &[Value]) -> Vec<usize> {
    let names: Vec<&str> = tools.iter().map(name).collect();
    let mut idx: Vec<usize> = (0..tools.len()).collect();
    let content = |i: usize| {
        let mut s = String::new();
        push_canonical_tool(&tools[i], &mut s);
        s
    };
    idx.sort_by(|a, b| {
        names[*a]
            .cmp(names[*b])
            .then_with(|| content(*a).cmp(&content(*b)))
    });
    idx
}

/// The canonical JSON of a tool list (tools sorted by name, then by content).
pub fn canonical_tools(tools: &[Value]) -> String {
    let mut out = String::from("[");
    for (n, i) in ordered(tools).into_iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        push_canonical_tool(&tools[i], &mut out);
    }
    out.push(']');
    out
}

/// SHA-256 (hex) of the canonical tool list, hashed tool by tool (the same bytes as
/// [`canonical_tools`], without holding them all).
pub fn tools_sha256(tools: &[Value]) -> String {
    let mut h = Sha256::new();
    h.update(b"[");
    let mut buf = String::with_capacity(4096);
    for (n, i) in ordered(tools).into_iter().enumerate() {
        if n > 0 {
            h.update(b",");
        }
        buf.clear();
        push_canonical_tool(&tools[i], &mut buf);
        h.update(buf.as_bytes());
    }
    h.update(b"]");
    hex::encode(h.finalize())
}

/// One changed field of a tool: its pointer inside the tool, and the old and new values
/// (strings as they are, other values as canonical JSON; `None` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub pointer: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedTool {
    pub tool: String,
    pub fields: Vec<FieldChange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Renamed {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolDiff {
    pub old_sha256: String,
    pub new_sha256: String,
    pub identical: bool,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub renamed: Vec<Renamed>,
    pub changed: Vec<ChangedTool>,
}

/// Leaves of a value by pointer.
fn flatten(v: &Value, ptr: String, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                flatten(
                    x,
                    format!("{ptr}/{}", crate::rules::document::token(k)),
                    out,
                );
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, x) in items.iter().enumerate() {
                flatten(x, format!("{ptr}/{i}"), out);
            }
        }
        Value::String(s) => {
            out.insert(ptr, s.clone());
        }
        other => {
            out.insert(ptr, canonical(other));
        }
    }
}

/// Compares two tool lists by name: added, removed, renamed (same content, new name) and
/// changed field by field.
pub fn diff(old: &[Value], new: &[Value]) -> ToolDiff {
    let by_name = |tools: &[Value]| -> BTreeMap<String, Value> {
        tools
            .iter()
            .map(|t| (name(t).to_string(), strip(t)))
            .collect()
    };
    let (o, n) = (by_name(old), by_name(new));
    let mut removed: BTreeSet<String> = o.keys().filter(|k| !n.contains_key(*k)).cloned().collect();
    let mut added: BTreeSet<String> = n.keys().filter(|k| !o.contains_key(*k)).cloned().collect();
    let without_name = |t: &Value| -> String {
        let mut t = t.clone();
        if let Value::Object(m) = &mut t {
            m.remove("name");
        }
        canonical(&t)
    };
    let mut renamed = Vec::new();
    for r in removed.clone() {
        let Some(rv) = o.get(&r) else { continue };
        let content = without_name(rv);
        let hit = added
            .iter()
            .find(|a| n.get(*a).is_some_and(|av| without_name(av) == content))
            .cloned();
        if let Some(a) = hit {
            removed.remove(&r);
            added.remove(&a);
            renamed.push(Renamed { from: r, to: a });
        }
    }
    let mut changed = Vec::new();
    for (k, ov) in &o {
        let Some(nv) = n.get(k) else { continue };
        if canonical(ov) == canonical(nv) {
            continue;
        }
        let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
        flatten(ov, String::new(), &mut a);
        flatten(nv, String::new(), &mut b);
        let pointers: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        let fields = pointers
            .into_iter()
            .filter(|p| a.get(*p) != b.get(*p))
            .map(|p| FieldChange {
                pointer: p.clone(),
                old: a.get(p).cloned(),
                new: b.get(p).cloned(),
            })
            .collect();
        changed.push(ChangedTool {
            tool: k.clone(),
            fields,
        });
    }
    let (old_sha256, new_sha256) = (tools_sha256(old), tools_sha256(new));
    ToolDiff {
        identical: old_sha256 == new_sha256,
        old_sha256,
        new_sha256,
        added: added.into_iter().collect(),
        removed: removed.into_iter().collect(),
        renamed,
        changed,
    }
}
