//! ACT-01: Command injection through free-text parameters.
//!
//! Metadata: `checks/active/ACT-01.toml`. Echo canaries (SPEC §13): each free-text parameter of
//! a tool the policy lets this run call gets the shell forms of [`shell_payloads`], each with
//! fresh random factors; the product in the final result, and not in the request, is the proof
//! (a server that reflects its input shows the factors only).

use serde_json::Value;

use crate::active::canary::{Product, shell_payloads};
use crate::active::{
    ActiveCheck, Callable, MadeCall, PlannedCall, benign_arguments, free_text_params, pointer_token,
};
use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome, finding};
use crate::finding::Finding;
use crate::rules::{Document, Input};

pub struct Act01;

pub static CHECK: Act01 = Act01;

impl Check for Act01 {
    fn id(&self) -> &'static str {
        "ACT-01"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::Skipped("an active check needs a live target behind the gate".into())
    }

    fn plan(&self, tools: &[Value]) -> Option<String> {
        let _ = ACTIVE_NOT_IMPLEMENTED;
        Some(crate::checks::probe::plan_for(tools, &["command", "cmd", "shell", "script", "exec", "args", "argv", "host", "query", "name", "path"], "arithmetic echo canaries ($((A*B)) and its quoted and chained forms)"))
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

impl ActiveCheck for Act01 {
    fn plan(
        &self,
        tools: &[Callable<'_>],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        // Every free-text parameter gets the first form before any gets the second: a budget
        // too small for all of them still reaches every parameter.
        let params: Vec<(&Callable<'_>, String)> = tools
            .iter()
            .flat_map(|t| free_text_params(t.tool).into_iter().map(move |p| (t, p)))
            .collect();
        let forms = shell_payloads(&Product::random()).len();
        let mut out = Vec::new();
        for form in 0..forms {
            for (t, param) in &params {
                if out.len() >= budget {
                    return out;
                }
                // Fresh factors for every call: a product names the one call that made it.
                let product = Product::random();
                let (payload, form) = shell_payloads(&product).swap_remove(form);
                out.push(PlannedCall {
                    kind: crate::active::CallKind::Tool,
                    tool: t.name.to_string(),
                    arguments: benign_arguments(t.tool, &[(param, Value::String(payload))]),
                    canary: Some(product.marker()),
                    purpose: format!("`{param}`: {form}"),
                    pointer: Some(format!(
                        "/tools/{}/inputSchema/properties/{}",
                        t.index,
                        pointer_token(param)
                    )),
                });
            }
        }
        out
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut findings: Vec<Finding> = Vec::new();
        for c in calls {
            let Some(marker) = &c.planned.canary else {
                continue;
            };
            let sent = c.planned.arguments.to_string();
            if sent.contains(marker.as_str()) || !c.result_text().contains(marker.as_str()) {
                continue;
            }
            let place = c.planned.pointer.clone().unwrap_or_default();
            if let Some(f) = findings.iter_mut().find(|f| {
                f.location.tool.as_deref() == Some(c.planned.tool.as_str())
                    && f.location.pointer.as_deref() == Some(place.as_str())
            }) {
                f.evidence.exchanges.push(c.exchange.clone());
                continue;
            }
            findings.push(
                finding(&CHECK, None)
                    .tool(c.planned.tool.clone())
                    .pointer(place)
                    .message(format!(
                        "{}: the result holds {marker}, the product of the two factors sent, which only a shell evaluating the input computes (the request holds the factors, not the product)",
                        c.planned.purpose
                    ))
                    .text(crate::rules::text::excerpt(&c.result_text(), 0, 0, 120))
                    .exchange(c.exchange.clone())
                    .build(),
            );
        }
        Outcome::Ran(findings)
    }
}

