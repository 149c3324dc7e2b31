//! ACT-07: Tools that accept unexpected properties or types (schema not enforced).
//!
//! Metadata: `checks/active/ACT-07.toml`. For a tool the policy lets this run call whose schema
//! says `additionalProperties: false`: one call with an extra property; for one with a typed
//! property: one call with the wrong type. A normal result (neither a JSON-RPC error nor
//! `isError: true`) is a finding; an extra property accepted is info only (FastMCP-style
//! servers drop unknown arguments silently).

use serde_json::{Value, json};

use crate::active::{ActiveCheck, Answer, Callable, MadeCall, PlannedCall, benign_arguments};
use crate::checks::{Check, Outcome, finding};
use crate::finding::Severity;

pub struct Act07;

pub static CHECK: Act07 = Act07;

/// The extra property sent.
const EXTRA: &str = "mcpprobe_unexpected";

impl Check for Act07 {
    fn id(&self) -> &'static str {
        "ACT-07"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

/// A property with one JSON type, and a value of another that no lax server reads as true:
/// the integer `0` for a boolean (falsy in JavaScript and Python), `false` for a number, `0`
/// for a string, an array or an object. Never a parameter whose false value widens the effect
/// (`dry_run`, `preview`, `simulate`, `validate_only`).
fn wrong_type(tool: &Value) -> Option<(String, Value)> {
    let props = tool.pointer("/inputSchema/properties")?.as_object()?;
    props.iter().find_map(|(name, s)| {
        if crate::active::widens_when_false(name) {
            return None;
        }
        let wrong = match s.get("type")?.as_str()? {
            "boolean" | "string" | "array" | "object" => json!(0),
            "integer" | "number" => json!(false),
            _ => return None,
        };
        Some((name.clone(), wrong))
    })
}

impl ActiveCheck for Act07 {
    fn plan(
        &self,
        tools: &[Callable<'_>],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        let mut out = Vec::new();
        for t in tools {
            if t.tool.pointer("/inputSchema/additionalProperties") == Some(&Value::Bool(false)) {
                let mut args = benign_arguments(t.tool, &[]);
                if let Some(o) = args.as_object_mut() {
                    o.insert(EXTRA.into(), json!(0));
                }
                out.push(PlannedCall {
                    kind: crate::active::CallKind::Tool,
                    tool: t.name.to_string(),
                    arguments: args,
                    canary: None,
                    purpose: format!("an unexpected property `{EXTRA}` (the schema says additionalProperties: false)"),
                    pointer: Some(format!("/tools/{}/inputSchema/additionalProperties", t.index)),
                    tag: String::new(),
                });
            }
            if let Some((name, value)) = wrong_type(t.tool) {
                let token = crate::active::pointer_token(&name);
                let ty = t
                    .tool
                    .pointer(&format!("/inputSchema/properties/{token}/type"))
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string();
                out.push(PlannedCall {
                    kind: crate::active::CallKind::Tool,
                    tool: t.name.to_string(),
                    arguments: benign_arguments(t.tool, &[(&name, value)]),
                    canary: None,
                    purpose: format!("`{name}` of the wrong type (the schema says {ty})"),
                    pointer: Some(format!("/tools/{}/inputSchema/properties/{token}", t.index)),
                    tag: String::new(),
                });
            }
            if out.len() >= budget {
                break;
            }
        }
        out.truncate(budget);
        out
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut out = Vec::new();
        for c in calls {
            let Answer::Result(r) = &c.answer else {
                continue;
            };
            if r.get("isError") == Some(&Value::Bool(true)) {
                continue;
            }
            let extra = c.planned.purpose.starts_with("an unexpected property");
            let mut b = finding(&CHECK, None)
                .tool(c.planned.tool.clone())
                .subcode(if extra {
                    "extra-property"
                } else {
                    "wrong-type"
                })
                .message(format!(
                    "{} got a normal result, not -32602 or isError{}",
                    c.planned.purpose,
                    if extra {
                        " (the server may drop unknown arguments silently)"
                    } else {
                        ""
                    }
                ))
                .exchange(c.exchange.clone());
            if let Some(p) = &c.planned.pointer {
                b = b.pointer(p.clone());
            }
            if extra {
                b = b.severity(Severity::Info);
            }
            out.push(b.build());
        }
        Outcome::Ran(out)
    }
}
