//! ACT-02: Path traversal through path-like parameters.
//!
//! Metadata: `checks/active/ACT-02.toml`. Echo canary (SPEC §13): each path-like parameter of a
//! tool this run may call is asked, relative to wherever its root is, for `/proc/version` — a
//! file every Linux host has, that holds no secret, and whose text starts `Linux version` —
//! plainly, URL-encoded, with doubled dots (`....//`), and absolutely. The marker in a final
//! result is the proof, unless an in-root control call (a name that exists nowhere) shows the
//! marker too: then the tool says it whatever it is asked.

use serde_json::Value;

use crate::active::{ActiveCheck, Answer, Callable, MadeCall, PlannedCall, benign_arguments};
use crate::checks::{Check, Outcome, finding};

pub struct Act02;

pub static CHECK: Act02 = Act02;

/// What `/proc/version` starts with (the finding quotes it).
pub const MARKER: &str = "Linux version";

/// The shape of `/proc/version` (`Linux version 6.1.0-18-amd64 (debian-kernel@…) (gcc …) #1 SMP
/// …`), not just its first words: a document that merely says "Linux version" is no proof.
pub fn holds_proc_version(text: &str) -> bool {
    static SHAPE: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"Linux version [0-9][^\s]* \([^)\n]{1,200}\)[^\n]{0,400}#[0-9]").ok()
    });
    SHAPE.as_ref().is_some_and(|r| r.is_match(text))
}

/// Parameter-name words that say it takes a path.
const PATH_WORDS: [&str; 10] = [
    "path",
    "file",
    "filename",
    "filepath",
    "dir",
    "directory",
    "folder",
    "name",
    "document",
    "note",
];

/// The traversal forms, deep enough for any root: (payload, what it tests).
fn payloads() -> Vec<(String, &'static str)> {
    vec![
        (
            format!("{}proc/version", "../".repeat(12)),
            "relative traversal ../",
        ),
        (
            format!("{}proc%2Fversion", "..%2F".repeat(12)),
            "URL-encoded traversal ..%2F",
        ),
        (
            format!("{}proc/version", "....//".repeat(12)),
            "doubled traversal ....// (a filter that strips ../ once)",
        ),
        ("/proc/version".to_string(), "an absolute path"),
    ]
}

impl Check for Act02 {
    fn id(&self) -> &'static str {
        "ACT-02"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

impl ActiveCheck for Act02 {
    fn plan(
        &self,
        tools: &[Callable<'_>],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        let mut out = Vec::new();
        for t in tools {
            for (param, pointer) in crate::active::params_meaning(t, &[], &PATH_WORDS) {
                let per_param = payloads().len() + 1;
                if out.len() + per_param > budget {
                    return out;
                }
                // The control first: the same words without the traversal (a search tool that
                // finds "proc/version" anywhere shows it here too).
                let control = "proc/version".to_string();
                out.push(PlannedCall {
                    kind: crate::active::CallKind::Tool,
                    tool: t.name.to_string(),
                    arguments: benign_arguments(t.tool, &[(&param, Value::String(control))]),
                    canary: None,
                    purpose: format!("`{param}`: in-root control"),
                    pointer: Some(pointer.clone()),
                    tag: String::new(),
                });
                for (payload, form) in payloads() {
                    out.push(PlannedCall {
                        kind: crate::active::CallKind::Tool,
                        tool: t.name.to_string(),
                        arguments: benign_arguments(t.tool, &[(&param, Value::String(payload))]),
                        canary: Some(MARKER.into()),
                        purpose: format!("`{param}`: {form} to /proc/version"),
                        pointer: Some(pointer.clone()),
                        tag: String::new(),
                    });
                }
            }
        }
        out
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut out: Vec<crate::finding::Finding> = Vec::new();
        for c in calls {
            let Some(marker) = &c.planned.canary else {
                continue;
            };
            if !matches!(c.answer, Answer::Result(_)) || !holds_proc_version(&c.result_text()) {
                continue;
            }
            // The control of the same parameter must have answered, without the marker.
            let control_clean = calls.iter().any(|k| {
                k.planned.canary.is_none()
                    && k.planned.tool == c.planned.tool
                    && k.planned.pointer == c.planned.pointer
                    && !matches!(k.answer, Answer::Failed(_))
                    && !holds_proc_version(&k.result_text())
            });
            if !control_clean {
                continue;
            }
            let place = c.planned.pointer.clone().unwrap_or_default();
            if let Some(f) = out.iter_mut().find(|f| {
                f.location.tool.as_deref() == Some(c.planned.tool.as_str())
                    && f.location.pointer.as_deref() == Some(place.as_str())
            }) {
                f.evidence.exchanges.push(c.exchange.clone());
                continue;
            }
            let text = c.result_text();
            let at = text.find(marker.as_str()).unwrap_or(0);
            out.push(
                finding(&CHECK, None)
                    .tool(c.planned.tool.clone())
                    .pointer(place)
                    .message(format!(
                        "{}: the result holds `{marker}`, the start of /proc/version, which an in-root control did not show: the path escaped the tool's root",
                        c.planned.purpose
                    ))
                    .text(crate::rules::text::excerpt(&text, at, at + marker.len(), 60))
                    .exchange(c.exchange.clone())
                    .build(),
            );
        }
        Outcome::Ran(out)
    }
}
