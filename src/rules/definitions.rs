//! META-04: tool definition rules (S1–S6, N1; SPEC §3.1).

use std::collections::HashMap;

use serde_json::Value;

use super::json::Json;

use super::capabilities::Class;
use super::document::{Document, Tool};
use super::text::visible;
use crate::finding::{Finding, FindingBuilder};

const CHECK: &str = "META-04";

fn valid_name(name: &str) -> bool {
    let n = name.chars().count();
    (1..=128).contains(&n)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The S-rule problems of one tool: (rule, pointer, message). Shared with the server-card
/// rules, which report them as SC10.
pub fn tool_problems(tool: &Tool<'_>) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    let p = &tool.pointer;
    match tool.value.get("name") {
        Some(Json::String(name)) if !name.is_empty() => {
            if !valid_name(name) {
                out.push((
                    "S1",
                    format!("{p}/name"),
                    format!(
                        "name \"{}\" ({} characters) is not 1–128 characters of A–Z a–z 0–9 _ - .",
                        visible(name),
                        name.chars().count()
                    ),
                ));
            }
        }
        _ => out.push((
            "S5",
            p.clone(),
            "the tool has no name (or not a non-empty string)".into(),
        )),
    }
    match tool.value.get("inputSchema") {
        None => out.push(("S3", p.clone(), "no inputSchema".into())),
        Some(Json::Object(schema)) => {
            if schema.get("type").and_then(Json::as_str) != Some("object") {
                out.push((
                    "S3",
                    format!("{p}/inputSchema"),
                    "inputSchema does not say `\"type\": \"object\"`".into(),
                ));
            } else {
                let prof = tool.profile();
                let closed = [
                    schema.get("additionalProperties"),
                    schema.get("unevaluatedProperties"),
                ]
                .contains(&Some(&Json::Bool(false)));
                let effects = prof.named_effects();
                if Class::has_effects(prof.bits)
                    && !closed
                    && let Some(c) = effects.first()
                {
                    out.push((
                            "S4",
                            format!("{p}/inputSchema"),
                            format!(
                                "the tool {} ({}) and its schema accepts any extra property (no `additionalProperties: false`)",
                                c.describe(),
                                prof.reason(*c)
                            ),
                        ));
                }
            }
        }
        Some(other) => out.push((
            "S3",
            format!("{p}/inputSchema"),
            format!("inputSchema is a JSON {}, not an object", other.kind()),
        )),
    }
    let described = tool
        .value
        .get("description")
        .and_then(Json::as_str)
        .is_some_and(|d| !d.trim().is_empty());
    if !described {
        out.push(("S6", p.clone(), "the tool has no description".into()));
    }
    out
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn tool_finding(tool: &Tool<'_>, rule: &str) -> FindingBuilder {
    let b = super::finding(CHECK, rule);
    match tool.name {
        Some(n) => b.tool(n),
        None => b,
    }
}

/// Runs S1–S6 and N1.
pub fn run(doc: &Document<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for tool in &doc.tools {
        if doc.stopped() {
            break;
        }
        for (rule, pointer, message) in tool_problems(tool) {
            out.push(
                tool_finding(tool, rule)
                    .pointer(pointer)
                    .message(message)
                    .build(),
            );
        }
        if let Some(name) = tool.name {
            if let Some(first) = seen.get(name) {
                out.push(
                    tool_finding(tool, "S2")
                        .pointer(format!("{}/name", tool.pointer))
                        .message(format!("the name is also used by the tool at {first}"))
                        .build(),
                );
            } else {
                seen.insert(name, &tool.pointer);
            }
        }
    }
    out.extend(notes(doc));
    out
}

/// N1: where the list (or the walk) stopped before the end.
pub fn notes(doc: &Document<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(cursor) = doc.next_cursor {
        out.push(
            super::finding(CHECK, "N1")
                .pointer("/nextCursor")
                .message(format!(
                    "this is one page of a paginated list (nextCursor \"{}\"); the other pages were not read",
                    visible(&cursor.chars().take(64).collect::<String>())
                ))
                .build(),
        );
    }
    for t in &doc.truncated {
        out.push(
            super::finding(CHECK, "N1")
                .pointer(t.pointer.clone())
                .message(t.why.clone())
                .build(),
        );
    }
    out
}
