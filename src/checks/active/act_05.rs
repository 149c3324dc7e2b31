//! ACT-05: Tool results that carry instructions aimed at the model.
//!
//! Metadata: `checks/active/ACT-05.toml`. Each tool the policy lets this run call is called once
//! with benign arguments built from its schema; the P rules (META-02) read its final result
//! (content texts and structuredContent) as they read a description.

use serde_json::json;

use crate::active::{ActiveCheck, Callable, MadeCall, PlannedCall, benign_arguments};
use crate::checks::{Check, Outcome, finding};

pub struct Act05;

pub static CHECK: Act05 = Act05;

impl Check for Act05 {
    fn id(&self) -> &'static str {
        "ACT-05"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

impl ActiveCheck for Act05 {
    fn plan(
        &self,
        tools: &[Callable<'_>],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        tools
            .iter()
            .take(budget)
            .map(|t| PlannedCall {
                kind: crate::active::CallKind::Tool,
                tool: t.name.to_string(),
                arguments: benign_arguments(t.tool, &[]),
                canary: None,
                purpose: "one call with benign arguments; its result read by the P rules".into(),
                pointer: Some(format!("/tools/{}", t.index)),
                tag: String::new(),
            })
            .collect()
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut out = Vec::new();
        for c in calls {
            let text = c.result_text();
            if text.trim().is_empty() {
                continue;
            }
            // The result, read as the description of a tool of its own name.
            let doc = json!({"tools": [{"name": c.planned.tool, "description": text}]});
            let Ok(input) =
                crate::rules::Input::from_value(doc, Some(crate::rules::InputKind::Tools))
            else {
                continue;
            };
            let document = input.document();
            let Outcome::Ran(found) =
                crate::checks::passive_meta_02::CHECK.offline(&input, &document)
            else {
                continue;
            };
            for f in found
                .into_iter()
                .filter(|f| f.rule.as_deref().is_some_and(|r| r.starts_with('P')))
            {
                let mut b = finding(&CHECK, None)
                    .tool(c.planned.tool.clone())
                    .pointer(c.planned.pointer.clone().unwrap_or_default())
                    .subcode(f.rule.clone().unwrap_or_default())
                    .message(format!(
                        "the result of one call with benign arguments ({}) carries what {} flags in descriptions: {}",
                        c.planned.arguments,
                        f.rule.as_deref().unwrap_or("META-02"),
                        f.message.as_deref().unwrap_or(&f.title)
                    ))
                    .exchange(c.exchange.clone());
                if let Some(t) = f.evidence.text {
                    b = b.text(t);
                }
                out.push(b.build());
            }
        }
        Outcome::Ran(out)
    }
}
