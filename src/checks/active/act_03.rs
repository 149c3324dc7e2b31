//! ACT-03: Server-side request forgery through URL parameters.
//!
//! Metadata: `checks/active/ACT-03.toml`. Out-of-band canary (SPEC §13): each URL-like parameter
//! gets the URL of a listener mcpprobe runs on loopback for this scan, with a random token per
//! call; a request to the listener carrying that token is the proof. The listener answers a
//! random body: when it comes back in the result, the server also returns what it fetched.
//! Only for a local target (loopback or stdio): a remote server is never pointed at its own
//! loopback.

use serde_json::Value;

use crate::active::{ActiveCheck, Callable, MadeCall, PlannedCall, StageEnv, benign_arguments};
use crate::checks::{Check, Outcome, finding};

pub struct Act03;

pub static CHECK: Act03 = Act03;

/// The `format`s of a URL parameter (pydantic's `AnyUrl` and zod's `.url()` say `uri`): a
/// parameter declared so is ACT-03's first target.
const URL_FORMATS: [&str; 6] = [
    "uri",
    "url",
    "iri",
    "uri-reference",
    "iri-reference",
    "uri-template",
];

const URL_WORDS: [&str; 11] = [
    "url", "uri", "link", "href", "endpoint", "webhook", "address", "source", "feed", "site",
    "page",
];

impl Check for Act03 {
    fn id(&self) -> &'static str {
        "ACT-03"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

impl ActiveCheck for Act03 {
    fn plan(&self, tools: &[Callable<'_>], budget: usize, env: &StageEnv) -> Vec<PlannedCall> {
        let Some(listener) = &env.listener else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in tools {
            for (param, pointer) in crate::active::params_meaning(t, &URL_FORMATS, &URL_WORDS) {
                if out.len() >= budget {
                    continue;
                }
                let token = crate::gate::state::new_token()
                    .unwrap_or_else(|_| crate::active::canary::Product::random().marker());
                out.push(PlannedCall {
                    kind: crate::active::CallKind::Tool,
                    tool: t.name.to_string(),
                    arguments: benign_arguments(
                        t.tool,
                        &[(&param, Value::String(listener.url(&token)))],
                    ),
                    canary: Some(token),
                    purpose: format!("`{param}`: a URL on mcpprobe's loopback listener"),
                    pointer: Some(pointer),
                    tag: String::new(),
                });
            }
        }
        out
    }

    fn nothing_planned(&self, env: &StageEnv) -> Option<String> {
        env.no_listener.clone()
    }

    fn judge(&self, calls: &[MadeCall], env: &StageEnv) -> Outcome {
        let Some(listener) = &env.listener else {
            return Outcome::Skipped(env.no_listener.clone().unwrap_or_default());
        };
        let mut out = Vec::new();
        for c in calls {
            let Some(token) = &c.planned.canary else {
                continue;
            };
            let hits = listener.hits(token);
            if hits.is_empty() {
                continue;
            }
            let returned = c.result_text().contains(listener.body());
            let mut b = finding(&CHECK, None)
                .tool(c.planned.tool.clone())
                .message(format!(
                    "{}: the server requested it ({}){}",
                    c.planned.purpose,
                    crate::util::escape::escape_trimmed(&hits[0], 120),
                    if returned {
                        ", and returned what it fetched to the caller (the listener's random body is in the result)"
                    } else {
                        ""
                    }
                ))
                .exchange(c.exchange.clone());
            if let Some(p) = &c.planned.pointer {
                b = b.pointer(p.clone());
            }
            out.push(b.build());
        }
        Outcome::Ran(out)
    }
}
