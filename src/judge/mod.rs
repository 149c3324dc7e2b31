//! The META-01 judge (SPEC §12): a reviewer the user plugs in — a Python callable through the
//! Python package, or an external command (`--judge-command`, [`command::CommandJudge`]) — that
//! reads one tool at a time and answers with verdicts. mcpprobe never calls a model itself.
//!
//! The engine owns what a judge cannot change: which tools it sees (only name, title,
//! description, schemas and annotations; never a credential), the time it may take (per tool
//! and in total), how its answers are validated, and that any failure is a META-01 *error*,
//! never a clean result. The judge runs after the scan's sessions are closed and after the
//! gate decided: it cannot make a scan send anything.

pub mod command;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::finding::{Confidence, Finding, Severity};
use crate::model::Outcome;
use crate::util::BoxFuture;

/// The rule code of a verdict that names none.
pub const DEFAULT_RULE: &str = "J1";
/// The tool keys a judge sees (SPEC §12); anything else a server sent is left out.
pub const TOOL_KEYS: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];
/// Verdicts one tool may get; more is an answer that cannot be right.
pub const MAX_VERDICTS: usize = 32;
/// The longest reason kept (characters); longer ones are cut, saying so.
pub const MAX_REASON_CHARS: usize = 2000;
/// The longest line a judge may answer with.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// One judgement about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `J1` unless the judge names its own (letters, digits, `-`, `_`; at most 16).
    pub rule: String,
    pub severity: Severity,
    pub confidence: Confidence,
    pub reason: String,
    /// Where in the tool (a JSON Pointer into what the judge was shown), when the judge says.
    pub pointer: Option<String>,
}

/// Why a judge gave no usable answer. Every one of these makes META-01 an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JudgeError {
    #[error("the judge could not be started: {0}")]
    Start(String),
    #[error("the judge raised an exception: {0}")]
    Raised(String),
    #[error("the judge did not answer within its {}-second budget per tool", .0.as_secs_f64())]
    ToolTimeout(Duration),
    #[error("the judge used up its {}-second total budget", .0.as_secs_f64())]
    TotalBudget(Duration),
    #[error("the judge's answer is not a list of verdicts: {0}")]
    Garbage(String),
    #[error("the judge stopped answering: {0}")]
    Gone(String),
    #[error("the judge's answers are out of step with its tools: {0}")]
    OutOfStep(String),
    #[error(
        "the tool's definition is {0} bytes as JSON, more than a judge is shown ({MAX_TOOL_BYTES})"
    )]
    TooLarge(usize),
}

/// The largest tool (as the judge sees it, serialised) a judge is shown.
pub const MAX_TOOL_BYTES: usize = 1024 * 1024;

/// One scan's (or one check's) conversation with a judge: [`Judge::start`] makes it, the
/// engine asks it about each tool in order, then [`Reviewer::finish`] ends it. Dropping the
/// review future (a timeout, an interruption) abandons that answer.
pub trait Reviewer: Send {
    /// The verdicts on `tool`, a JSON object with the [`TOOL_KEYS`] only.
    fn review<'a>(&'a mut self, tool: &'a Value)
    -> BoxFuture<'a, Result<Vec<Verdict>, JudgeError>>;

    /// Ends the conversation (the external command gets end of input and is stopped); `Err`
    /// when the end shows an answer was wrong (lines left over: answers out of step).
    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<(), JudgeError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A judge the user configured.
pub trait Judge: Send + Sync {
    /// How findings name it (a Python function's `__name__`, the command's file name).
    fn name(&self) -> String;

    /// Starts one scan's reviews (the external command is started here, once per scan).
    fn start(&self) -> Result<Box<dyn Reviewer>, JudgeError>;
}

/// The time a judge may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JudgeLimits {
    pub per_tool: Duration,
    pub total: Duration,
}

impl Default for JudgeLimits {
    fn default() -> Self {
        JudgeLimits {
            per_tool: Duration::from_secs(30),
            total: Duration::from_secs(300),
        }
    }
}

impl JudgeLimits {
    /// Both budgets between 1 ms and 1 hour, the one per tool within the total.
    pub fn validate(&self) -> Result<(), String> {
        let hour = Duration::from_secs(3600);
        if self.per_tool.is_zero() || self.per_tool > hour {
            return Err("the judge's budget per tool must be between 1 ms and 1 hour".into());
        }
        if self.total.is_zero() || self.total > hour {
            return Err("the judge's total budget must be between 1 ms and 1 hour".into());
        }
        Ok(())
    }
}

/// A judge and its budgets, as a request carries it.
#[derive(Clone)]
pub struct JudgeConfig {
    pub judge: Arc<dyn Judge>,
    pub limits: JudgeLimits,
}

impl std::fmt::Debug for JudgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeConfig")
            .field("judge", &self.judge.name())
            .field("limits", &self.limits)
            .finish()
    }
}

/// What a judge is shown of one tool: the [`TOOL_KEYS`] it has, nothing else (a server's
/// extra keys, `_meta`, never a header or a token).
pub fn tool_view(tool: &Value) -> Value {
    let mut view = Map::new();
    for key in TOOL_KEYS {
        if let Some(v) = tool.get(key) {
            view.insert(key.to_string(), v.clone());
        }
    }
    Value::Object(view)
}

/// The name a finding gives a judge: printable, at most 64 characters, never empty.
pub fn clean_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect::<String>()
        .trim()
        .to_string();
    if name.is_empty() {
        "judge".into()
    } else {
        name
    }
}

/// Reads one answer: a JSON array of verdicts (`[]` for none). The Python package and the
/// external command both answer in this form, so one parser validates both.
pub fn parse_answer(answer: &[u8], tool: &Value) -> Result<Vec<Verdict>, JudgeError> {
    let bad = |why: String| Err(JudgeError::Garbage(why));
    if answer.len() > MAX_ANSWER_BYTES {
        return bad(format!("longer than {MAX_ANSWER_BYTES} bytes"));
    }
    let value: Value = match serde_json::from_slice(answer) {
        Ok(v) => v,
        Err(e) => return bad(format!("not JSON ({e})")),
    };
    let Value::Array(items) = value else {
        return bad(format!(
            "a JSON {}, not an array",
            crate::rules::Json::borrow(&value).kind()
        ));
    };
    if items.len() > MAX_VERDICTS {
        return bad(format!(
            "{} verdicts for one tool (at most {MAX_VERDICTS})",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            parse_verdict(item, tool)
                .map_err(|why| JudgeError::Garbage(format!("verdict {i}: {why}")))
        })
        .collect()
}

/// At most 40 characters of what a judge wrote, escaped, for an error message.
fn short(s: &str) -> String {
    crate::util::escape::escape_trimmed(s, 40)
}

fn parse_verdict(item: &Value, tool: &Value) -> Result<Verdict, String> {
    let Value::Object(o) = item else {
        return Err("not an object".into());
    };
    let text = |key: &str| -> Result<Option<&str>, String> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(format!("{key} is not a string")),
        }
    };
    let rule = text("rule")?.unwrap_or(DEFAULT_RULE);
    let rule_ok = rule.len() <= 16
        && rule.starts_with(|c: char| c.is_ascii_alphabetic())
        && rule
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !rule_ok {
        return Err(format!(
            "rule {:?} is not a rule code (a letter, then letters, digits, - or _; at most 16)",
            crate::util::escape::escape(&rule.chars().take(40).collect::<String>())
        ));
    }
    let severity = match text("severity")? {
        Some(s) => Severity::parse(s).ok_or_else(|| {
            format!("severity {s:?} is not one of info, low, medium, high, critical")
        })?,
        None => return Err("no severity".into()),
    };
    let confidence = match text("confidence")? {
        Some(s) => Confidence::parse(s)
            .ok_or_else(|| format!("confidence {:?} is not one of low, medium, high", short(s)))?,
        None => Confidence::Low,
    };
    let reason = match text("reason")? {
        Some(r) if !r.trim().is_empty() => r.trim(),
        _ => return Err("no reason".into()),
    };
    let reason = if reason.chars().count() > MAX_REASON_CHARS {
        let mut cut: String = reason.chars().take(MAX_REASON_CHARS).collect();
        cut.push_str(" … (cut)");
        cut
    } else {
        reason.to_string()
    };
    let pointer = match text("pointer")? {
        None => None,
        Some(p) if tool.pointer(p).is_some() && !p.is_empty() => Some(p.to_string()),
        Some(p) => {
            return Err(format!(
                "pointer {:?} names nothing in the tool it was shown",
                crate::util::escape::escape(&p.chars().take(80).collect::<String>())
            ));
        }
    };
    Ok(Verdict {
        rule: rule.to_string(),
        severity,
        confidence,
        reason,
        pointer,
    })
}

/// What a judge's run over a tool list came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeRun {
    pub findings: Vec<Finding>,
    /// Tools the judge answered for.
    pub reviewed: usize,
    pub tools: usize,
    /// Why it stopped before the end; the findings of the tools before are kept.
    pub error: Option<String>,
}

impl JudgeRun {
    /// Records META-01 in `report`: its findings, and an error when the judge failed (the
    /// findings it made before are kept and count).
    pub fn record(self, report: &mut crate::model::Report) {
        match self.error {
            None => report.record("META-01", Outcome::Ran(self.findings)),
            Some(why) => report.record_error_with("META-01", why, self.findings),
        }
    }
}

/// The most META-01 findings one run keeps, and the most rule codes of its own a judge may use:
/// beyond either the judge's answers stop counting and META-01 is an error (a judge that echoes
/// a hostile server's text must not grow the report without bound).
pub const MAX_FINDINGS: usize = 1000;
pub const MAX_RULE_CODES: usize = 16;
/// The per-tool errors an error message lists (the count is always given).
const LISTED_ERRORS: usize = 5;

/// Asks `config`'s judge about each tool of `tools` (as the server sent them; `redact` applied
/// to every string first, so a secret the server echoed never reaches the judge), within its
/// budgets, stopping when `cancel` fires. A tool the judge cannot be shown or answers garbage
/// for is an error of that tool and the review goes on; a judge that stops answering, runs past
/// a budget or is interrupted ends it. Never fails: everything that went wrong is
/// [`JudgeRun::error`], and the findings made are kept.
pub async fn review(
    config: &JudgeConfig,
    tools: &[Value],
    redact: &(dyn Fn(&str) -> String + Sync),
    cancel: &CancellationToken,
) -> JudgeRun {
    let name = clean_name(&config.judge.name());
    let mut run = JudgeRun {
        findings: Vec::new(),
        reviewed: 0,
        tools: tools.len(),
        error: None,
    };
    if tools.is_empty() {
        return run;
    }
    let limits = config.limits;
    let deadline = tokio::time::Instant::now() + limits.total;
    let mut reviewer = match config.judge.start() {
        Ok(r) => r,
        Err(e) => {
            run.error = Some(format!("judge {name}: {e}"));
            return run;
        }
    };
    let mut errors: Vec<String> = Vec::new();
    let mut stopped: Option<String> = None;
    for (index, tool) in tools.iter().enumerate() {
        let mut view = tool_view(tool);
        crate::net::redact::redact_value(&mut view, redact);
        let tool_name = crate::util::escape::escape_trimmed(
            tool.get("name")
                .and_then(Value::as_str)
                .unwrap_or("(unnamed)"),
            80,
        );
        let size = serde_json::to_vec(&view).map(|v| v.len()).unwrap_or(0);
        if size > MAX_TOOL_BYTES {
            errors.push(format!(
                "tool `{tool_name}`: {}",
                JudgeError::TooLarge(size)
            ));
            continue;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            stopped = Some(format!(
                "at tool `{tool_name}`: {}",
                JudgeError::TotalBudget(limits.total)
            ));
            break;
        }
        let (wait, over) = if deadline - now < limits.per_tool {
            (deadline - now, JudgeError::TotalBudget(limits.total))
        } else {
            (limits.per_tool, JudgeError::ToolTimeout(limits.per_tool))
        };
        let answer = tokio::select! {
            a = tokio::time::timeout(wait, reviewer.review(&view)) => a,
            () = cancel.cancelled() => {
                stopped = Some("the scan was interrupted".into());
                break;
            }
        };
        match answer {
            Err(_) => {
                stopped = Some(format!("at tool `{tool_name}`: {over}"));
                break;
            }
            Ok(Err(
                e @ (JudgeError::Gone(_) | JudgeError::Start(_) | JudgeError::OutOfStep(_)),
            )) => {
                stopped = Some(format!("at tool `{tool_name}`: {e}"));
                break;
            }
            Ok(Err(e)) => errors.push(format!("tool `{tool_name}`: {e}")),
            Ok(Ok(verdicts)) => {
                run.reviewed += 1;
                if let Err(e) =
                    push_findings(&mut run.findings, &name, &tool_name, index, &view, verdicts)
                {
                    stopped = Some(e);
                    break;
                }
            }
        }
    }
    if let Err(e) = reviewer.finish().await
        && stopped.is_none()
    {
        errors.push(e.to_string());
    }
    if stopped.is_some() || !errors.is_empty() {
        let mut why = format!(
            "judge {name}: {} of {} tools reviewed",
            run.reviewed, run.tools
        );
        if let Some(s) = &stopped {
            why.push_str(&format!("; stopped {s}"));
        }
        if !errors.is_empty() {
            let listed: Vec<&str> = errors
                .iter()
                .take(LISTED_ERRORS)
                .map(String::as_str)
                .collect();
            why.push_str(&format!(
                "; {} error{}: {}{}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                listed.join("; "),
                if errors.len() > LISTED_ERRORS {
                    "; …"
                } else {
                    ""
                }
            ));
        }
        run.error = Some(why);
    }
    tracing::info!(target: "mcpprobe::progress", "judge {name}: {} of {} tools reviewed", run.reviewed, run.tools);
    run
}

/// Turns one tool's verdicts into META-01 findings, at `/tools/{index}` (and the verdict's
/// pointer under it), as every check places a tool. Two verdicts of one rule on one place are
/// one finding with both reasons (a finding's fingerprint is check, rule and place). `Err` when
/// the run's caps are reached.
fn push_findings(
    out: &mut Vec<Finding>,
    judge: &str,
    tool: &str,
    index: usize,
    view: &Value,
    verdicts: Vec<Verdict>,
) -> Result<(), String> {
    let check = crate::catalogue::catalogue().meta("META-01");
    let first = out.len();
    for v in verdicts {
        let pointer = format!("/tools/{index}{}", v.pointer.as_deref().unwrap_or(""));
        if let Some(same) = out[first..].iter_mut().find(|f| {
            f.rule.as_deref() == Some(v.rule.as_str())
                && f.location.pointer.as_deref() == Some(pointer.as_str())
        }) {
            if let Some(m) = same.message.as_mut()
                && m.chars().count() < 2 * MAX_REASON_CHARS
            {
                m.push_str("; ");
                m.push_str(&v.reason);
            }
            same.severity = same.severity.max(v.severity);
            same.confidence = same.confidence.max(v.confidence);
            continue;
        }
        if out.len() >= MAX_FINDINGS {
            return Err(format!(
                "after {MAX_FINDINGS} findings, the most one run keeps"
            ));
        }
        let mut codes: Vec<&str> = out.iter().filter_map(|f| f.rule.as_deref()).collect();
        codes.sort_unstable();
        codes.dedup();
        if !codes.contains(&v.rule.as_str()) && codes.len() >= MAX_RULE_CODES {
            return Err(format!(
                "at a {}th rule code, more than a judge may use ({MAX_RULE_CODES})",
                MAX_RULE_CODES + 1
            ));
        }
        let mut b = check
            .finding(None)
            .subcode(judge)
            .tool(tool)
            .pointer(pointer)
            .severity(v.severity)
            .confidence(v.confidence)
            .message(format!("judge {judge}: {}", v.reason));
        if let Some(text) = v
            .pointer
            .as_deref()
            .and_then(|p| view.pointer(p))
            .and_then(Value::as_str)
        {
            b = b.text(crate::rules::text::excerpt(text, 0, text.len(), 120));
        }
        let mut f = b.build();
        f.rule = Some(v.rule);
        f.title = format!("Judge {judge} flagged this tool");
        f.fingerprint = f.compute_fingerprint();
        out.push(f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> Value {
        json!({"name": "t", "description": "Reads a file.", "inputSchema": {"type": "object"}})
    }

    #[test]
    fn answers_parse_with_defaults_and_refuse_garbage() {
        let v = parse_answer(
            br#"[{"severity": "high", "reason": "steers the model"}]"#,
            &tool(),
        )
        .expect("a verdict");
        assert_eq!(v[0].rule, "J1");
        assert_eq!(v[0].confidence, Confidence::Low);
        assert_eq!(v[0].severity, Severity::High);
        assert!(parse_answer(b"[]", &tool()).expect("none").is_empty());
        for bad in [
            &b"not json"[..],
            br#"{"severity": "high"}"#,
            br#"[{"severity": "severe", "reason": "x"}]"#,
            br#"[{"severity": "low"}]"#,
            br#"[{"severity": "low", "reason": "x", "rule": "J 1"}]"#,
            br#"[{"severity": "low", "reason": "x", "pointer": "/nowhere"}]"#,
            br#"[{"severity": "low", "reason": "x", "confidence": 3}]"#,
        ] {
            assert!(
                matches!(parse_answer(bad, &tool()), Err(JudgeError::Garbage(_))),
                "accepted {}",
                String::from_utf8_lossy(bad)
            );
        }
        let many = format!(
            "[{}]",
            vec![r#"{"severity":"low","reason":"x"}"#; 33].join(",")
        );
        assert!(parse_answer(many.as_bytes(), &tool()).is_err());
    }

    #[test]
    fn a_judge_sees_only_the_tool_keys() {
        let v = tool_view(
            &json!({"name": "t", "_meta": {"token": "s3cret"}, "x": 1, "annotations": {}}),
        );
        assert_eq!(v, json!({"name": "t", "annotations": {}}));
    }

    #[test]
    fn two_verdicts_of_one_rule_and_place_are_one_finding() {
        let mut out = Vec::new();
        let verdict = |reason: &str, severity| Verdict {
            rule: "J1".into(),
            severity,
            confidence: Confidence::Medium,
            reason: reason.into(),
            pointer: Some("/description".into()),
        };
        push_findings(
            &mut out,
            "kw",
            "t",
            3,
            &tool(),
            vec![verdict("a", Severity::Low), verdict("b", Severity::High)],
        )
        .expect("within the caps");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].severity, Severity::High);
        assert_eq!(out[0].message.as_deref(), Some("judge kw: a; b"));
        assert_eq!(out[0].evidence.text.as_deref(), Some("Reads a file."));
        assert_eq!(out[0].rule.as_deref(), Some("J1"));
        assert_eq!(
            out[0].location.pointer.as_deref(),
            Some("/tools/3/description")
        );
    }

    #[test]
    fn a_judge_cannot_grow_the_report_without_bound() {
        let mut out = Vec::new();
        let many = |n: usize, prefix: &str| -> Vec<Verdict> {
            (0..n)
                .map(|i| Verdict {
                    rule: format!("{prefix}{i}"),
                    severity: Severity::Low,
                    confidence: Confidence::Low,
                    reason: "r".into(),
                    pointer: None,
                })
                .collect()
        };
        assert!(push_findings(&mut out, "j", "t", 0, &tool(), many(16, "R")).is_ok());
        let e = push_findings(&mut out, "j", "t", 1, &tool(), many(1, "X")).expect_err("17th code");
        assert!(e.contains("rule code"), "{e}");
        let mut out = Vec::new();
        for i in 0..(MAX_FINDINGS / 10) {
            let ten = (0..10)
                .map(|k| Verdict {
                    pointer: Some(format!("/x{k}")),
                    ..many(1, "J").remove(0)
                })
                .collect();
            push_findings(&mut out, "j", "t", i, &tool(), ten).expect("under the cap");
        }
        assert_eq!(out.len(), MAX_FINDINGS);
        assert!(push_findings(&mut out, "j", "t", 9999, &tool(), many(1, "J")).is_err());
    }
}
