//! ACT-01: Command injection through free-text parameters.
//!
//! Metadata: `checks/active/ACT-01.toml`. Echo canaries (SPEC §13): each free-text parameter of
//! a tool the policy lets this run call gets the shell forms of [`shell_payloads`], each with
//! fresh random factors; the product in the final result, and not in the request, is the proof
//! (a server that reflects its input shows the factors only).

use serde_json::Value;

use crate::active::canary::{Product, TIMING, shell_payloads, timing_verdict};
use crate::active::{
    ActiveCheck, Callable, MadeCall, PlannedCall, benign_arguments, free_text_params,
};
use crate::checks::{Check, Outcome, finding};
use crate::finding::Finding;

pub struct Act01;

pub static CHECK: Act01 = Act01;

impl Check for Act01 {
    fn id(&self) -> &'static str {
        "ACT-01"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

/// A call that sends `payload` in `param` (the tool's other parameters benign) and looks for
/// `product` in the result.
fn probe(
    t: &Callable<'_>,
    param: &str,
    payload: String,
    product: &Product,
    what: &str,
    tag: String,
) -> PlannedCall {
    PlannedCall {
        kind: crate::active::CallKind::Tool,
        tool: t.name.to_string(),
        arguments: benign_arguments(t.tool, &[(param, Value::String(payload))]),
        canary: Some(product.marker()),
        purpose: format!("`{param}`: {what}"),
        pointer: Some(t.param_pointer(param)),
        tag,
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
        // Room is kept for one timing confirmation.
        let budget = budget.saturating_sub(TIMING.len()).max(1);
        let mut out = Vec::new();
        // First a control per parameter: a bare `A*B` no shell evaluates. A parameter that
        // answers its product evaluates arithmetic itself (a calculator, a model): the shell
        // forms would prove nothing there.
        let controlled = params.len().min(budget / (forms + 1));
        for (t, param) in params.iter().take(controlled) {
            let product = Product::random();
            let payload = format!("{}*{}", product.a, product.b);
            out.push(probe(
                t,
                param,
                payload,
                &product,
                "control (a bare A*B, which no shell evaluates)",
                format!("control {param}"),
            ));
        }
        let params = &params[..controlled];
        for form in 0..forms {
            for (t, param) in params {
                if out.len() >= budget {
                    return out;
                }
                // Fresh factors for every call: a product names the one call that made it.
                let product = Product::random();
                let (payload, what) = shell_payloads(&product).swap_remove(form);
                out.push(probe(
                    t,
                    param,
                    payload,
                    &product,
                    what,
                    format!("echo {form} {param}"),
                ));
            }
        }
        out
    }

    /// For each parameter an echo canary proved, a timing confirmation in the same form: a
    /// control with no delay, then delays of 2, 1, 2 and 1 s.
    fn follow_up(
        &self,
        made: &[MadeCall],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        let mut out = Vec::new();
        let mut confirmed: Vec<&str> = Vec::new();
        let evaluated: Vec<&Option<String>> = made
            .iter()
            .filter(|c| c.planned.tag.starts_with("control ") && proves(c))
            .map(|c| &c.planned.pointer)
            .collect();
        for c in made
            .iter()
            .filter(|c| c.planned.tag.starts_with("echo ") && proves(c))
            .filter(|c| !evaluated.contains(&&c.planned.pointer))
        {
            let pointer = c.planned.pointer.as_deref().unwrap_or("");
            if confirmed.contains(&pointer) || out.len() + TIMING.len() > budget {
                continue;
            }
            // `echo FORM PARAM`, the parameter's name itself may hold spaces.
            let mut tag = c.planned.tag.splitn(3, ' ').skip(1);
            let (Some(form), Some(param)) =
                (tag.next().and_then(|f| f.parse::<usize>().ok()), tag.next())
            else {
                continue;
            };
            confirmed.push(pointer);
            for delay in TIMING {
                let Some(payload) = sleep_payloads(delay).into_iter().nth(form) else {
                    continue;
                };
                let mut arguments = c.planned.arguments.clone();
                if let Some(o) = arguments.as_object_mut() {
                    o.insert(param.to_string(), Value::String(payload));
                }
                out.push(PlannedCall {
                    kind: crate::active::CallKind::Tool,
                    tool: c.planned.tool.clone(),
                    arguments,
                    canary: None,
                    purpose: format!("timing confirmation: sleep {delay}"),
                    pointer: c.planned.pointer.clone(),
                    tag: format!("sleep {delay}"),
                });
            }
        }
        out
    }

    fn follow_up_note(&self) -> Option<&'static str> {
        Some(
            "then, for each parameter an echo canary proves, 5 timing calls in the form that proved it (sleep 0, 2, 1, 2, 1 s)",
        )
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut findings: Vec<Finding> = Vec::new();
        // Parameters whose control came back evaluated: an evaluator, not a shell.
        let evaluators: Vec<&MadeCall> = calls
            .iter()
            .filter(|c| c.planned.tag.starts_with("control ") && proves(c))
            .collect();
        for e in &evaluators {
            findings.push(crate::checks::probe::indeterminate(
                &CHECK,
                "evaluator",
                format!(
                    "{}: its answer holds the product of a bare A*B, so the parameter evaluates arithmetic itself (a calculator, a model); shell canaries prove nothing here",
                    e.planned.purpose.split(':').next().unwrap_or_default()
                ),
                Some(e.exchange.clone()),
            ));
        }
        for c in calls {
            if !c.planned.tag.starts_with("echo ")
                || !proves(c)
                || evaluators
                    .iter()
                    .any(|e| e.planned.pointer == c.planned.pointer)
            {
                continue;
            }
            let Some(marker) = &c.planned.canary else {
                continue;
            };
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
        // The timing confirmation of each finding, when it was made.
        for f in &mut findings {
            let timed: Vec<(u64, f64)> = calls
                .iter()
                .filter(|c| {
                    c.planned.pointer == f.location.pointer && c.planned.tag.starts_with("sleep ")
                })
                // A call that got no answer says nothing about how long a sleep took.
                .filter(|c| !matches!(c.answer, crate::active::Answer::Failed(_)))
                .filter_map(|c| {
                    let d = c.planned.tag.strip_prefix("sleep ")?.parse().ok()?;
                    Some((d, c.elapsed.as_secs_f64()))
                })
                .collect();
            if timed.len() < TIMING.len() {
                continue;
            }
            let t = timing_verdict(&timed);
            let note = if t.confirmed {
                format!("confirmed by timing ({})", t.note)
            } else {
                format!(
                    "the timing confirmation did not hold ({}): the echo alone is the proof",
                    t.note
                )
            };
            if let Some(m) = f.message.as_mut() {
                m.push_str("; ");
                m.push_str(&note);
            }
        }
        Outcome::Ran(findings)
    }
}

/// The sleeping twins of [`shell_payloads`], form for form.
fn sleep_payloads(n: u64) -> Vec<String> {
    vec![
        format!("$(sleep {n})"),
        format!("`sleep {n}`"),
        format!("x;sleep {n}"),
        format!("x';sleep {n};'"),
        format!("x\";sleep {n};\""),
        format!("x|sleep {n}"),
    ]
}

/// Whether an echo call is proof: the product in the result, not in the request.
fn proves(c: &MadeCall) -> bool {
    let Some(marker) = &c.planned.canary else {
        return false;
    };
    !c.planned.arguments.to_string().contains(marker.as_str())
        && c.result_text().contains(marker.as_str())
}
