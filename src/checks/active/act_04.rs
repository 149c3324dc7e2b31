//! ACT-04: SQL injection through query-like parameters.
//!
//! Metadata: `checks/active/ACT-04.toml`. Boolean pairs only (SPEC §13): for each query-like
//! parameter, a baseline call with a benign value, then twice a pair that appends a true and a
//! false `AND` condition to it (`v' AND '7'='7` / `v' AND '7'='8`, with fresh numbers). An
//! injectable parameter answers the true condition exactly as the baseline and the false one
//! differently, both times; a safe one answers both like any other unknown value. Never `OR`,
//! stacked or `UNION` queries, never a heavy function as a delay; no sleep probes yet (the dialect
//! is unknown, and SQLite has none).

use serde_json::Value;

use crate::active::canary::Product;
use crate::active::{
    ActiveCheck, Answer, Callable, MadeCall, PlannedCall, benign_arguments,
    pointer_token,
};
use crate::checks::{Check, Outcome, finding};

pub struct Act04;

pub static CHECK: Act04 = Act04;

/// Parameter-name words that say it goes into a query.
const QUERY_WORDS: [&str; 12] = [
    "sql", "query", "q", "search", "filter", "where", "name", "id", "key", "term", "customer", "user",
];

impl Check for Act04 {
    fn id(&self) -> &'static str {
        "ACT-04"
    }



    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

/// The baseline value of a parameter: its schema's first example, default or enum value, else
/// `a`.
fn baseline_value(tool: &Value, param: &str) -> String {
    let s = tool.pointer(&format!("/inputSchema/properties/{}", pointer_token(param)));
    s.and_then(|s| {
        s.get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
            .or_else(|| s.get("default"))
            .and_then(Value::as_str)
            .map(String::from)
    })
    .unwrap_or_else(|| "a".into())
}

impl ActiveCheck for Act04 {
    fn plan(
        &self,
        tools: &[Callable<'_>],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        let mut out = Vec::new();
        for t in tools {
            for (param, pointer) in crate::active::params_named(t, &QUERY_WORDS) {
                if out.len() + 5 > budget {
                    return out;
                }
                let v = baseline_value(t.tool, &param);
                let mut push = |value: String, role: &str| {
                    out.push(PlannedCall {
                        kind: crate::active::CallKind::Tool,
                        tool: t.name.to_string(),
                        arguments: benign_arguments(t.tool, &[(&param, Value::String(value))]),
                        // The role, for the judge: baseline, true, false.
                        canary: Some(role.to_string()),
                        purpose: format!("`{param}`: {role}"),
                        pointer: Some(pointer.clone()),
                        tag: String::new(),
                    });
                };
                push(v.clone(), "baseline");
                for _ in 0..2 {
                    let n = Product::random().a;
                    push(format!("{v}' AND '{n}'='{n}"), "true");
                    push(format!("{v}' AND '{n}'='{}", n + 1), "false");
                }
            }
        }
        out
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut out = Vec::new();
        // One parameter's calls are consecutive: baseline, true, false, true, false.
        for group in calls.chunks(5) {
            let [base, t1, f1, t2, f2] = group else {
                continue;
            };
            let answer = |c: &MadeCall| match &c.answer {
                Answer::Result(r) if r.get("isError") != Some(&Value::Bool(true)) => Some(c.result_text()),
                _ => None,
            };
            let (Some(b), Some(t1a), Some(f1a), Some(t2a), Some(f2a)) =
                (answer(base), answer(t1), answer(f1), answer(t2), answer(f2))
            else {
                continue;
            };
            // A baseline, true and false that all answer alike could not differ: nothing learned.
            if t1a == b && t2a == b && f1a == b && f2a == b {
                out.push(crate::checks::probe::indeterminate(
                    &CHECK,
                    "pairs",
                    format!(
                        "{}: the baseline and both conditions answered alike (a value that matches nothing, say), so the pairs could not differ; give the parameter an example in its schema",
                        base.planned.purpose.trim_end_matches(": baseline")
                    ),
                    Some(base.exchange.clone()),
                ));
                continue;
            }
            // The baseline must say something for the pair to be able to differ from it.
            if b.trim().is_empty() || t1a != b || t2a != b || f1a == b || f2a == b {
                continue;
            }
            let mut f = finding(&CHECK, None)
                .tool(base.planned.tool.clone())
                .message(format!(
                    "{}: a true AND condition appended to the baseline value answered exactly as the baseline, a false one differently, twice: the value is spliced into SQL",
                    base.planned.purpose.trim_end_matches(": baseline")
                ));
            if let Some(p) = &base.planned.pointer {
                f = f.pointer(p.clone());
            }
            for c in group {
                f = f.exchange(c.exchange.clone());
            }
            out.push(f.build());
        }
        Outcome::Ran(out)
    }
}
