//! The tool-list fingerprint (SPEC §5) and the field-by-field tool-list diff.
//!
//! Canonical JSON: object keys sorted, no insignificant whitespace, tools sorted by name, each
//! tool's top-level `_meta` and `icons` left out. Formatting and order never change the hash.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::rules::json::Json;

/// Top-level tool fields that do not count (they change without changing what the model reads).
const IGNORED: [&str; 2] = ["_meta", "icons"];

/// A JSON tree the canonical form is written from: a `Value` (live inventories, baselines) or
/// the rules' borrowed [`Json`] (`check`), one writer for both so that both hash alike.
pub trait Tree {
    fn as_str(&self) -> Option<&str>;
    /// An object's members, in key order.
    fn members(&self) -> Option<impl Iterator<Item = (&str, &Self)> + Clone>;
    fn items(&self) -> Option<impl Iterator<Item = &Self>>;
    /// Appends a null, boolean or number as JSON.
    fn push_scalar(&self, out: &mut String);
    fn member(&self, key: &str) -> Option<&Self>;
    /// Whether [`Tree::members`] always come in key order (no need to look).
    const SORTED: bool = false;
}

impl Tree for Value {
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn members(&self) -> Option<impl Iterator<Item = (&str, &Self)> + Clone> {
        self.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }
    fn items(&self) -> Option<impl Iterator<Item = &Self>> {
        self.as_array().map(|a| a.iter())
    }
    fn push_scalar(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
    fn member(&self, key: &str) -> Option<&Self> {
        self.get(key)
    }
}

impl Tree for Json<'_> {
    const SORTED: bool = true;

    fn as_str(&self) -> Option<&str> {
        Json::as_str(self)
    }
    fn members(&self) -> Option<impl Iterator<Item = (&str, &Self)> + Clone> {
        self.as_object().map(|m| m.iter())
    }
    fn items(&self) -> Option<impl Iterator<Item = &Self>> {
        self.as_array().map(|a| a.iter())
    }
    fn push_scalar(&self, out: &mut String) {
        // As `Value`'s `Display` writes them.
        match self {
            Json::Bool(true) => out.push_str("true"),
            Json::Bool(false) => out.push_str("false"),
            Json::Number(n) => {
                let _ = write!(out, "{n}");
            }
            _ => out.push_str("null"),
        }
    }
    fn member(&self, key: &str) -> Option<&Self> {
        self.get(key)
    }
}

/// Canonical JSON of a value: keys sorted, compact.
pub fn canonical(v: &impl Tree) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical<T: Tree>(v: &T, out: &mut String) {
    if let Some(members) = v.members() {
        out.push('{');
        push_members(members, out);
        out.push('}');
    } else if let Some(items) = v.items() {
        out.push('[');
        for (i, x) in items.enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_canonical(x, out);
        }
        out.push(']');
    } else if let Some(s) = v.as_str() {
        push_json_string(s, out);
    } else {
        v.push_scalar(out);
    }
}

/// Appends `"key":value` members in key order. serde_json's map is usually already ordered by
/// key (a BTreeMap), and [`Json`]'s always is; when a feature makes `Value`'s map keep
/// insertion order, the members are sorted here.
fn push_members<'v, T: Tree + 'v>(
    members: impl Iterator<Item = (&'v str, &'v T)> + Clone,
    out: &mut String,
) {
    let push = |(i, (k, x)): (usize, (&str, &T)), out: &mut String| {
        if i > 0 {
            out.push(',');
        }
        push_json_string(k, out);
        out.push(':');
        write_canonical(x, out);
    };
    if T::SORTED || members.clone().map(|(k, _)| k).is_sorted() {
        members.enumerate().for_each(|m| push(m, out));
    } else {
        let mut sorted: Vec<_> = members.collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        sorted.into_iter().enumerate().for_each(|m| push(m, out));
    }
}

/// Appends `s` as a JSON string (RFC 8259 escapes: `"`, `\\`, and control characters).
fn push_json_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    // Most strings need no escape: one pass without branches (it vectorises) tells.
    let plain = !bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if plain {
        out.push_str(s);
        out.push('"');
        return;
    }
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

fn name<T: Tree>(tool: &T) -> &str {
    tool.member("name").and_then(T::as_str).unwrap_or("")
}

/// Appends the canonical JSON of one tool, without the fields that do not count.
fn push_canonical_tool<T: Tree>(tool: &T, out: &mut String) {
    match tool.members() {
        Some(m) => {
            out.push('{');
            push_members(m.filter(|(k, _)| !IGNORED.contains(k)), out);
            out.push('}');
        }
        None => write_canonical(tool, out),
    }
}

/// Canonical JSON of one tool without the fields that do not count.
fn canonical_tool<T: Tree>(tool: &T) -> String {
    let mut s = String::new();
    push_canonical_tool(tool, &mut s);
    s
}

/// The tools' indices in canonical order (by name, then by canonical content), holding the
/// canonical forms only of tools that share a name.
fn order<T: Tree>(tools: &[T]) -> Vec<usize> {
    let names: Vec<&str> = tools.iter().map(name).collect();
    let mut idx: Vec<usize> = (0..tools.len()).collect();
    idx.sort_by(|&a, &b| names[a].cmp(names[b]));
    let mut i = 0;
    while i < idx.len() {
        let n = names[idx[i]];
        let mut j = i + 1;
        while j < idx.len() && names[idx[j]] == n {
            j += 1;
        }
        if j - i > 1 {
            let mut group: Vec<(usize, String)> = idx[i..j]
                .iter()
                .map(|&k| (k, canonical_tool(&tools[k])))
                .collect();
            group.sort_by(|a, b| a.1.cmp(&b.1));
            for (slot, (k, _)) in idx[i..j].iter_mut().zip(group) {
                *slot = k;
            }
        }
        i = j;
    }
    idx
}

/// The canonical JSON of a tool list (tools sorted by name, then by content).
pub fn canonical_tools<T: Tree>(tools: &[T]) -> String {
    let mut out = String::from("[");
    for (n, k) in order(tools).into_iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        push_canonical_tool(&tools[k], &mut out);
    }
    out.push(']');
    out
}

/// SHA-256 (hex) of the canonical tool list (the same bytes as [`canonical_tools`], hashed
/// tool by tool).
pub fn tools_sha256<T: Tree>(tools: &[T]) -> String {
    // One tool's canonical form at a time, in one reused buffer: the list is never held twice.
    let mut h = Sha256::new();
    let mut buf = String::new();
    h.update(b"[");
    let order = order(tools);
    let mut touched = 0;
    for (n, &k) in order.iter().enumerate() {
        // Canonical order is not the list's order: each tool's nodes and text are far from
        // the previous one's, and the walk that writes it waits on one cache miss after
        // another. A light read of the next tool first (independent loads, many in flight)
        // brings it in: 50 ms instead of 80 on a 10,000-tool list, nothing held.
        if let Some(next) = order.get(n + 1).and_then(|&j| tools.get(j)) {
            touched += touch(next);
        }
        if n > 0 {
            h.update(b",");
        }
        buf.clear();
        push_canonical_tool(&tools[k], &mut buf);
        h.update(buf.as_bytes());
    }
    std::hint::black_box(touched);
    h.update(b"]");
    hex::encode(h.finalize())
}

/// Reads every node of a tree and a byte of every cache line of its strings (see
/// [`tools_sha256`]); the sum only keeps the reads from being optimised away.
fn touch<T: Tree>(v: &T) -> usize {
    if let Some(members) = v.members() {
        members.map(|(k, x)| k.len() + touch(x)).sum()
    } else if let Some(items) = v.items() {
        items.map(touch).sum()
    } else if let Some(s) = v.as_str() {
        s.as_bytes()
            .iter()
            .step_by(64)
            .map(|&b| usize::from(b))
            .sum()
    } else {
        0
    }
}

/// SHA-256 (hex) of `[c1,c2,…]` for canonical forms already in canonical order.
fn sha256_of_sorted<S: AsRef<[u8]>>(canonicals: impl Iterator<Item = S>) -> String {
    let mut h = Sha256::new();
    h.update(b"[");
    for (n, c) in canonicals.enumerate() {
        if n > 0 {
            h.update(b",");
        }
        h.update(c.as_ref());
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

/// One entry of a list (a tool, prompt, resource or resource template), hashed once.
#[derive(Debug, Clone)]
pub struct Item<'a> {
    /// Its key: a tool's or prompt's `name`, a resource's `uri`, a template's `uriTemplate`
    /// (empty when absent or not a string).
    pub key: &'a str,
    /// The entry as the server sent it (`_meta` and `icons` included).
    pub value: &'a Value,
    /// Canonical JSON without `_meta` and `icons`.
    pub canonical: String,
    /// SHA-256 of the canonical JSON without `_meta`, `icons` and the key field: equal for
    /// entries that differ only by their key (a rename).
    content: [u8; 32],
}

/// A list indexed for diffing: entries in canonical order (by key, then canonical content).
#[derive(Debug, Clone)]
pub struct Indexed<'a> {
    pub items: Vec<Item<'a>>,
}

impl<'a> Indexed<'a> {
    /// Indexes `list` by the string field `key_field`: every entry is canonicalised and hashed
    /// exactly once.
    pub fn new(list: &'a [Value], key_field: &str) -> Indexed<'a> {
        let mut items: Vec<Item<'a>> = list
            .iter()
            .map(|v| {
                let key = v.get(key_field).and_then(Value::as_str).unwrap_or("");
                let canonical = canonical_tool(v);
                let mut rest = String::new();
                match v {
                    Value::Object(m) => {
                        rest.push('{');
                        push_members(
                            m.iter()
                                .map(|(k, v)| (k.as_str(), v))
                                .filter(|(k, _)| *k != key_field && !IGNORED.contains(k)),
                            &mut rest,
                        );
                        rest.push('}');
                    }
                    other => write_canonical(other, &mut rest),
                }
                Item {
                    key,
                    value: v,
                    canonical,
                    content: Sha256::digest(rest.as_bytes()).into(),
                }
            })
            .collect();
        items.sort_by(|a, b| a.key.cmp(b.key).then_with(|| a.canonical.cmp(&b.canonical)));
        Indexed { items }
    }

    /// SHA-256 (hex) of the list in canonical order; for tools this is [`tools_sha256`].
    pub fn sha256(&self) -> String {
        sha256_of_sorted(self.items.iter().map(|i| i.canonical.as_str()))
    }
}

/// How two indexed lists differ, as indices into their `items` (old, new). Every vector is in
/// canonical order of its first index. Entries that are equal (by canonical JSON) under the
/// same key are not mentioned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListDiff {
    pub added: Vec<usize>,
    pub removed: Vec<usize>,
    /// (old, new): a different key, the same content.
    pub renamed: Vec<(usize, usize)>,
    /// (old, new): the same key, different content.
    pub changed: Vec<(usize, usize)>,
}

/// Indices of the entries under each key, in canonical order.
fn group<'a>(ix: &Indexed<'a>) -> BTreeMap<&'a str, Vec<usize>> {
    let mut m: BTreeMap<&'a str, Vec<usize>> = BTreeMap::new();
    for (i, it) in ix.items.iter().enumerate() {
        m.entry(it.key).or_default().push(i);
    }
    m
}

/// Compares two indexed lists in linear time (after the sort of [`Indexed::new`]).
///
/// Entries are matched by key. Under a key held by several entries (a duplicate name), equal
/// entries match first, the rest pair in canonical order, and what is left over is added or
/// removed. With `renames`, a removed and an added entry of equal content (everything but the
/// key) are a rename; when several share a content, they pair in key order.
pub fn diff_indexed(old: &Indexed<'_>, new: &Indexed<'_>, renames: bool) -> ListDiff {
    let (go, gn) = (group(old), group(new));
    let mut d = ListDiff::default();
    for (key, os) in &go {
        let Some(ns) = gn.get(key) else {
            d.removed.extend(os);
            continue;
        };
        if let ([o], [n]) = (os.as_slice(), ns.as_slice()) {
            if old.items[*o].canonical != new.items[*n].canonical {
                d.changed.push((*o, *n));
            }
            continue;
        }
        // A duplicate key: drop the exact matches (a merge: both runs are in canonical order),
        // pair the rest in order.
        let (mut left_old, mut left_new) = (Vec::new(), Vec::new());
        let (mut i, mut j) = (0, 0);
        while i < os.len() || j < ns.len() {
            let ord = match (os.get(i), ns.get(j)) {
                (Some(&a), Some(&b)) => old.items[a].canonical.cmp(&new.items[b].canonical),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match ord {
                std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
                std::cmp::Ordering::Less => {
                    left_old.push(os[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    left_new.push(ns[j]);
                    j += 1;
                }
            }
        }
        let paired = left_old.len().min(left_new.len());
        d.changed
            .extend(left_old.iter().copied().zip(left_new.iter().copied()));
        d.removed.extend(&left_old[paired..]);
        d.added.extend(&left_new[paired..]);
    }
    for (key, ns) in &gn {
        if !go.contains_key(key) {
            d.added.extend(ns);
        }
    }
    d.added.sort_unstable();
    if renames && !d.removed.is_empty() && !d.added.is_empty() {
        // Content hash → added entries with it, in key order (popped from the front).
        let mut by_content: HashMap<[u8; 32], VecDeque<usize>> = HashMap::new();
        for &n in &d.added {
            by_content
                .entry(new.items[n].content)
                .or_default()
                .push_back(n);
        }
        let mut taken: BTreeSet<usize> = BTreeSet::new();
        let mut still_removed = Vec::with_capacity(d.removed.len());
        for &o in &d.removed {
            match by_content
                .get_mut(&old.items[o].content)
                .and_then(VecDeque::pop_front)
            {
                Some(n) => {
                    taken.insert(n);
                    d.renamed.push((o, n));
                }
                None => still_removed.push(o),
            }
        }
        d.removed = still_removed;
        d.added.retain(|n| !taken.contains(n));
    }
    d
}

/// Leaves of a value by pointer (an empty object or array is a leaf of its own).
pub fn flatten<'v>(v: &'v Value, ptr: String, out: &mut BTreeMap<String, &'v Value>) {
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
        other => {
            out.insert(ptr, other);
        }
    }
}

/// The fields that differ between two entries, by pointer inside the entry (`_meta` and
/// `icons` left out): `(pointer, old, new)`, `None` when absent.
pub fn changed_fields<'v>(
    old: &'v Value,
    new: &'v Value,
) -> Vec<(String, Option<&'v Value>, Option<&'v Value>)> {
    let leaves = |v: &'v Value| {
        let mut m = BTreeMap::new();
        match v {
            Value::Object(o) => {
                for (k, x) in o.iter().filter(|(k, _)| !IGNORED.contains(&k.as_str())) {
                    flatten(x, format!("/{}", crate::rules::document::token(k)), &mut m);
                }
            }
            other => {
                m.insert(String::new(), other);
            }
        }
        m
    };
    let (a, b) = (leaves(old), leaves(new));
    let pointers: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    pointers
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| (p.clone(), a.get(p).copied(), b.get(p).copied()))
        .collect()
}

/// A leaf as text: a string as it is, anything else as canonical JSON.
fn leaf_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => canonical(other),
    }
}

/// Compares two tool lists by name: added, removed, renamed (same content, new name) and
/// changed field by field. Linear in the number of tools: each tool is canonicalised and hashed
/// once ([`Indexed`]), renames are found through a map from content hash to names.
pub fn diff(old: &[Value], new: &[Value]) -> ToolDiff {
    let (o, n) = (Indexed::new(old, "name"), Indexed::new(new, "name"));
    tool_diff(&o, &n, &diff_indexed(&o, &n, true))
}

/// The [`ToolDiff`] of a [`ListDiff`] of two indexed tool lists.
pub fn tool_diff(o: &Indexed<'_>, n: &Indexed<'_>, d: &ListDiff) -> ToolDiff {
    let key = |ix: &Indexed<'_>, i: usize| ix.items[i].key.to_string();
    let (old_sha256, new_sha256) = (o.sha256(), n.sha256());
    ToolDiff {
        identical: old_sha256 == new_sha256,
        old_sha256,
        new_sha256,
        added: d.added.iter().map(|&i| key(n, i)).collect(),
        removed: d.removed.iter().map(|&i| key(o, i)).collect(),
        renamed: d
            .renamed
            .iter()
            .map(|&(a, b)| Renamed {
                from: key(o, a),
                to: key(n, b),
            })
            .collect(),
        changed: d
            .changed
            .iter()
            .map(|&(a, b)| ChangedTool {
                tool: key(o, a),
                fields: changed_fields(o.items[a].value, n.items[b].value)
                    .into_iter()
                    .map(|(pointer, x, y)| FieldChange {
                        pointer,
                        old: x.map(leaf_text),
                        new: y.map(leaf_text),
                    })
                    .collect(),
            })
            .collect(),
    }
}
