//! ACT-08: Resource templates that resolve outside their intended root.
//!
//! Metadata: `checks/active/ACT-08.toml`. For each `file://` resource template in `--scope` (by
//! its name), `resources/read` of the template with its first variable set to a traversal to
//! `/proc/version` (as ACT-02), beside an in-root control; `Linux version` in the contents, and
//! not in the control's, is the proof.

use serde_json::Value;

use crate::active::{ActiveCheck, Answer, CallKind, Callable, MadeCall, PlannedCall, StageEnv};
use crate::checks::{Check, Outcome, finding};

pub struct Act08;

pub static CHECK: Act08 = Act08;

impl Check for Act08 {
    fn id(&self) -> &'static str {
        "ACT-08"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

/// `template` with its first `{var}` (or `{+var}`) set to `value`.
fn instantiate(template: &str, value: &str) -> Option<String> {
    let start = template.find('{')?;
    let end = start + template[start..].find('}')?;
    Some(format!(
        "{}{value}{}",
        &template[..start],
        &template[end + 1..]
    ))
}

impl ActiveCheck for Act08 {
    fn plan(&self, _tools: &[Callable<'_>], budget: usize, env: &StageEnv) -> Vec<PlannedCall> {
        let mut out = Vec::new();
        for (index, t) in &env.templates {
            let Some(template) = t.get("uriTemplate").and_then(Value::as_str) else {
                continue;
            };
            if !template.starts_with("file://") || out.len() + 2 > budget {
                continue;
            }
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or(template)
                .to_string();
            let control = "proc/version".to_string();
            let escape = format!("{}proc/version", "../".repeat(12));
            let (Some(control_uri), Some(escape_uri)) = (
                instantiate(template, &control),
                instantiate(template, &escape),
            ) else {
                continue;
            };
            let pointer = Some(format!("/resourceTemplates/{index}/uriTemplate"));
            out.push(PlannedCall {
                kind: CallKind::Resource(control_uri),
                tool: name.clone(),
                arguments: Value::Null,
                canary: None,
                purpose: format!("template `{name}`: in-root control"),
                pointer: pointer.clone(),
                tag: String::new(),
            });
            out.push(PlannedCall {
                kind: CallKind::Resource(escape_uri),
                tool: name.clone(),
                arguments: Value::Null,
                canary: Some(crate::checks::active_act_02::MARKER.into()),
                purpose: format!("template `{name}`: a traversal to /proc/version"),
                pointer,
                tag: String::new(),
            });
        }
        out
    }

    fn nothing_planned(&self, env: &StageEnv) -> Option<String> {
        Some(if env.templates.is_empty() {
            "no resource template in --scope (by name)".into()
        } else {
            "no file:// resource template in --scope".into()
        })
    }

    fn judge(&self, calls: &[MadeCall], _env: &StageEnv) -> Outcome {
        let mut out = Vec::new();
        for pair in calls.chunks(2) {
            let [control, escape] = pair else {
                continue;
            };
            let Some(marker) = &escape.planned.canary else {
                continue;
            };
            if !matches!(escape.answer, Answer::Result(_))
                || matches!(control.answer, Answer::Failed(_))
                || !crate::checks::active_act_02::holds_proc_version(&escape.result_text())
                || crate::checks::active_act_02::holds_proc_version(&control.result_text())
            {
                continue;
            }
            let mut b = finding(&CHECK, None)
                .message(format!(
                    "{}: resources/read returned `{marker}`, the start of /proc/version, which the in-root control did not",
                    escape.planned.purpose
                ))
                .exchange(control.exchange.clone())
                .exchange(escape.exchange.clone());
            if let Some(p) = &escape.planned.pointer {
                b = b.pointer(p.clone());
            }
            out.push(b.build());
        }
        Outcome::Ran(out)
    }
}
