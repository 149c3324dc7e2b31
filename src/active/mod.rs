//! The active stage (SPEC §1.3, §13): only behind the gate, only on tools the [`policy`]
//! allows, each check within its fixed call budget, every call recorded.
//!
//! The gate is in the types: [`run`] needs the gate's [`Authorised`] token, which only the gate
//! mints (after `--active --authorised-by --scope --verify` and this run's ownership proof),
//! and every call is sent inside a [`permit::Permit`] made from it; the HTTP client and the
//! stdio writer refuse any `tools/call` outside one. A check only *plans* calls
//! ([`ActiveCheck::plan`]) and *judges* what came back ([`ActiveCheck::judge`]): the stage
//! makes the calls, so no check can send anything itself.

pub mod canary;
pub mod listener;
pub use crate::permit;
pub mod policy;
pub mod words;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::finding::Exchange;
use crate::model::Outcome;
use crate::permit::Authorised;
use crate::protocol::rpc::Reply;
use crate::protocol::session::Session;
pub use policy::{CallPolicy, CallableSet, NotCalled};

/// The longest one call may take; a slower one is abandoned (its stream closed, or on stdio
/// `notifications/cancelled` sent) and proves nothing.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// A tool the policy lets this run call.
#[derive(Debug, Clone, Copy)]
pub struct Callable<'a> {
    pub name: &'a str,
    pub tool: &'a Value,
    /// Its place in the tool list (findings point at `/tools/{index}/…`).
    pub index: usize,
}

impl Callable<'_> {
    /// The JSON Pointer of one of its parameters in the tool list.
    pub fn param_pointer(&self, param: &str) -> String {
        format!(
            "/tools/{}/inputSchema/properties/{}",
            self.index,
            pointer_token(param)
        )
    }
}

/// How a planned call is sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CallKind {
    /// `tools/call` on the scan's session.
    #[default]
    Tool,
    /// `tools/call` without the user's credentials (ACT-06), on the same session.
    Anonymous,
    /// `resources/read` of this URI (ACT-08); `tool` names the template.
    Resource(String),
}

/// One call a check wants made.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCall {
    pub tool: String,
    pub arguments: Value,
    pub kind: CallKind,
    /// The marker whose presence in the result is the proof (an arithmetic product, say).
    pub canary: Option<String>,
    /// What the call tests ("`host`: arithmetic expansion `$((A*B))`").
    pub purpose: String,
    /// Where a finding from this call points (`/inputSchema/properties/host`).
    pub pointer: Option<String>,
    /// What the check needs to know about the call later (ACT-01: the form, a timing delay).
    pub tag: String,
}

/// What a call came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A `tools/call` result (which may say `isError: true`: that proves nothing either way).
    Result(Value),
    /// A JSON-RPC error.
    Error { code: i64, message: String },
    /// No answer: a timeout, a refusal, a transport failure.
    Failed(String),
}

/// One call as it was made.
#[derive(Debug, Clone)]
pub struct MadeCall {
    pub planned: PlannedCall,
    pub answer: Answer,
    pub exchange: Exchange,
    pub elapsed: Duration,
}

impl MadeCall {
    /// Every text of a final result: its `content` texts and its `structuredContent` as JSON
    /// (never a progress notification).
    pub fn result_text(&self) -> String {
        let Answer::Result(r) = &self.answer else {
            return String::new();
        };
        let mut out = String::new();
        if let Some(items) = r.get("content").and_then(Value::as_array) {
            for item in items {
                if let Some(t) = item.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                    out.push('\n');
                }
                if let Some(t) = item.pointer("/resource/text").and_then(Value::as_str) {
                    out.push_str(t);
                    out.push('\n');
                }
            }
        }
        if let Some(s) = r.get("structuredContent") {
            out.push_str(&s.to_string());
        }
        // A resources/read result.
        if let Some(items) = r.get("contents").and_then(Value::as_array) {
            for item in items {
                if let Some(t) = item.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                    out.push('\n');
                }
            }
        }
        // A result in no shape the spec knows (`{"data": …}`) still reaches the client whole.
        if ["content", "structuredContent", "contents"]
            .iter()
            .all(|k| r.get(k).is_none())
        {
            out.push_str(&r.to_string());
        }
        out
    }
}

/// What the stage offers the checks besides the tools.
#[derive(Debug, Default)]
pub struct StageEnv {
    /// A listener mcpprobe runs on loopback for this scan (out-of-band canaries, ACT-03);
    /// only when the target is local (loopback or stdio): a remote server must never be
    /// pointed at its own loopback.
    pub listener: Option<listener::Listener>,
    /// The server advertises OAuth (protected-resource metadata was found, AUTH-02).
    pub oauth_advertised: bool,
    /// The scan's session can be reused without credentials (HTTP, not legacy SSE).
    pub anonymous_possible: bool,
    /// The resource templates the server lists, with their place (`/resourceTemplates/N`),
    /// already in `--scope` by name.
    pub templates: Vec<(usize, Value)>,
    /// Why there is no listener, for the check that needs one.
    pub no_listener: Option<String>,
}

/// An active check: what it would call, and what the answers prove.
pub trait ActiveCheck: Sync + Send {
    /// The calls to make, at most `budget`, to `tools` (already allowed by the policy).
    fn plan(&self, tools: &[Callable<'_>], budget: usize, env: &StageEnv) -> Vec<PlannedCall>;
    /// The findings the answers prove (each with its calls as evidence).
    fn judge(&self, calls: &[MadeCall], env: &StageEnv) -> Outcome;
    /// Calls planned from the first round's answers (at most `budget`), made before the judge
    /// reads them all; none by default.
    fn follow_up(&self, _made: &[MadeCall], _budget: usize, _env: &StageEnv) -> Vec<PlannedCall> {
        Vec::new()
    }
    /// What [`ActiveCheck::follow_up`] may add, said by a dry run (which cannot know the
    /// answers the follow-up is planned from).
    fn follow_up_note(&self) -> Option<&'static str> {
        None
    }
    /// Why it planned nothing, when it knows better than "no tool has what it tests".
    fn nothing_planned(&self, _env: &StageEnv) -> Option<String> {
        None
    }
}

/// The calls one active check made (for the authorisation record).
#[derive(Debug, Clone, serde::Serialize)]
pub struct CallRecord {
    pub check: String,
    pub tool: String,
    pub arguments: Value,
    pub answered: bool,
}

/// What the stage decided and did.
#[derive(Debug, Default)]
pub struct StageRun {
    /// Outcomes by check id.
    pub outcomes: Vec<(String, Outcome)>,
    pub calls: Vec<CallRecord>,
    /// Tools never called, and why.
    pub not_called: Vec<(String, String)>,
}

/// Neutral arguments for a tool: its required properties only, each filled with one of
/// mcpprobe's own constants for its type ([`neutral_value`]), then `overrides` (a property
/// name and the value to send in it: a check's canary). Never a value the server chose: no
/// `enum`, `const`, `default` or `examples` value is ever sent (a tool whose required
/// parameter only such values can fill is never called: [`policy::NotCalled::ServerChosenOnly`]).
pub fn benign_arguments(tool: &Value, overrides: &[(&str, Value)]) -> Value {
    let schema = tool.get("inputSchema");
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut args = serde_json::Map::new();
    for name in required {
        let prop = props.and_then(|p| p.get(name));
        args.insert(name.to_string(), neutral_value(name, prop));
    }
    for (name, value) in overrides {
        args.insert((*name).to_string(), value.clone());
    }
    Value::Object(args)
}

/// mcpprobe's own filler for a string parameter.
pub const NEUTRAL_TEXT: &str = "mcpprobe";

/// Whether a parameter's name says its false value widens what the call does (`dry_run`,
/// `preview`, `simulate`, `validate_only`): such a parameter is sent `true` as a filler and
/// never touched by a probe.
pub fn widens_when_false(name: &str) -> bool {
    let words = crate::rules::text::words(name);
    let has = |w: &str| words.iter().any(|x| x == w);
    has("dry")
        || has("dryrun")
        || has("preview")
        || has("simulate")
        || has("simulation")
        || has("noop")
        || has("whatif")
        || (has("what") && has("if"))
        || ((has("validate") || has("check") || has("plan")) && has("only"))
        || has("test") && has("mode")
}

/// mcpprobe's own value of a parameter's type: `"mcpprobe"` (or a constant of the declared
/// `format`: an `.invalid` URL, a fixed date, the nil UUID), `1` within the bounds, `false`
/// (`true` for a dry-run switch), `[]`, `{}`. The schema's `enum`, `const`, `default` and
/// `examples` are never read.
pub fn neutral_value(name: &str, schema: Option<&Value>) -> Value {
    let Some(s) = schema else {
        return json!(NEUTRAL_TEXT);
    };
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "integer" | "number" => {
            let lo = s.get("minimum").and_then(Value::as_f64).unwrap_or(1.0);
            let hi = s.get("maximum").and_then(Value::as_f64).unwrap_or(f64::MAX);
            let v = 1f64.max(lo).min(hi).ceil();
            json!(v as i64)
        }
        "boolean" => json!(widens_when_false(name)),
        "array" => json!([]),
        "object" => json!({}),
        "null" => Value::Null,
        _ => match s.get("format").and_then(Value::as_str) {
            Some("uri" | "url" | "iri" | "uri-reference" | "iri-reference") => {
                json!("https://mcpprobe.invalid/")
            }
            Some("email" | "idn-email") => json!("mcpprobe@mcpprobe.invalid"),
            Some("hostname" | "idn-hostname") => json!("mcpprobe.invalid"),
            Some("date") => json!("2000-01-01"),
            Some("date-time") => json!("2000-01-01T00:00:00Z"),
            Some("time") => json!("00:00:00Z"),
            Some("uuid") => json!("00000000-0000-0000-0000-000000000000"),
            Some("ipv4") => json!("192.0.2.1"),
            Some("ipv6") => json!("2001:db8::1"),
            _ => json!(NEUTRAL_TEXT),
        },
    }
}

/// A JSON Pointer token (RFC 6901).
pub fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The free-text parameters of `tool` whose name has one of `words` (`target_path` has `path`),
/// with the pointer a finding about each uses.
pub fn params_named(tool: &Callable<'_>, words: &[&str]) -> Vec<(String, String)> {
    free_text_params(tool.tool)
        .into_iter()
        .filter(|p| {
            crate::rules::text::words(p)
                .iter()
                .any(|w| words.contains(&w.as_str()))
        })
        .map(|p| {
            let pointer = tool.param_pointer(&p);
            (p, pointer)
        })
        .collect()
}

/// The string parameters of `tool` that a check chooses by meaning: those whose `format` is
/// one of `formats`, then those whose name has one of `words`, then those whose description
/// does (any `format`, but never one with an `enum` or `const`: those take the server's
/// values only), each once, with its pointer. Free text is not required: a URL parameter
/// declared `format: uri` is what a URL check is for.
pub fn params_meaning(
    tool: &Callable<'_>,
    formats: &[&str],
    words: &[&str],
) -> Vec<(String, String)> {
    let Some(props) = tool
        .tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let strings: Vec<(&String, &Value)> = props
        .iter()
        .filter(|(n, s)| {
            let ty_string = match s.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some("string")),
                None => true,
                _ => false,
            };
            ty_string
                && s.get("enum").is_none()
                && s.get("const").is_none()
                && !widens_when_false(n)
        })
        .collect();
    let has_word = |text: &str| {
        crate::rules::text::words(text)
            .iter()
            .any(|w| words.contains(&w.as_str()))
    };
    let mut out: Vec<String> = Vec::new();
    let mut push = |n: &String| {
        if !out.contains(n) {
            out.push(n.clone());
        }
    };
    for (n, s) in &strings {
        if s.get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| formats.contains(&f))
        {
            push(n);
        }
    }
    for (n, _) in &strings {
        if has_word(n) {
            push(n);
        }
    }
    for (n, s) in &strings {
        let d = s.get("description").and_then(Value::as_str).unwrap_or("");
        if d.len() <= 4096 && has_word(d) {
            push(n);
        }
    }
    out.into_iter()
        .map(|p| {
            let pointer = tool.param_pointer(&p);
            (p, pointer)
        })
        .collect()
}

/// Free-text parameters of a tool: strings without an enum, a const, a format or a pattern.
pub fn free_text_params(tool: &Value) -> Vec<String> {
    let Some(props) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(n, s)| {
            s.get("type").and_then(Value::as_str) == Some("string")
                && ["enum", "const", "format", "pattern"]
                    .iter()
                    .all(|k| s.get(k).is_none())
                && !widens_when_false(n)
        })
        .map(|(n, _)| n.clone())
        .collect()
}

/// Runs every implemented active check of `checks` against `session`'s `tools`, or with
/// `dry_run` only says what each would call. Needs the gate's token.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    authorised: &Authorised,
    policy: &CallPolicy,
    session: &Session,
    tools: &[Value],
    checks: &[(&'static str, u32, &'static dyn ActiveCheck)],
    env: &StageEnv,
    dry_run: bool,
    cancel: &tokio_util::sync::CancellationToken,
) -> StageRun {
    let mut stage = StageRun::default();
    let (callable, not_called) = callable(policy, tools);
    stage.not_called = not_called;
    let allowed = CallableSet::of(callable.iter().map(|c| c.name.to_string()).collect());
    for (id, budget, check) in checks {
        let planned = check.plan(&callable, *budget as usize, env);
        if dry_run {
            let reason = if planned.is_empty() {
                format!(
                    "dry run (--dry-run): no call planned (budget {budget}){}",
                    not_called_note(&stage.not_called)
                )
            } else {
                let calls: Vec<String> = planned
                    .iter()
                    .map(|p| format!("`{}` {}", p.tool, p.arguments))
                    .collect();
                let then = check
                    .follow_up_note()
                    .map(|n| format!("; {n}, within the same budget"))
                    .unwrap_or_default();
                format!(
                    "dry run (--dry-run): {} of {budget} calls planned: {}{then}",
                    planned.len(),
                    crate::util::escape::escape(&calls.join("; "))
                )
            };
            stage
                .outcomes
                .push(((*id).to_string(), Outcome::Skipped(reason)));
            continue;
        }
        if planned.is_empty() {
            let why = check.nothing_planned(env).unwrap_or_else(|| {
                format!(
                    "no tool this run may call has what this check tests{}",
                    not_called_note(&stage.not_called)
                )
            });
            stage
                .outcomes
                .push(((*id).to_string(), Outcome::Skipped(why)));
            continue;
        }
        let names: BTreeSet<String> = planned
            .iter()
            .filter(|p| !matches!(p.kind, CallKind::Resource(_)))
            .map(|p| p.tool.clone())
            .collect();
        let reads = planned
            .iter()
            .any(|p| matches!(p.kind, CallKind::Resource(_)));
        let permit = permit::Permit::new(authorised, &allowed, id, names, *budget, reads);
        let mut made = Vec::new();
        execute(
            planned,
            *budget as usize,
            &permit,
            session,
            id,
            cancel,
            &mut stage,
            &mut made,
        )
        .await;
        // A second round, planned from what the first proved (ACT-01's timing confirmation).
        let left = (*budget as usize).saturating_sub(made.len());
        if left > 0 && !cancel.is_cancelled() {
            let more = check.follow_up(&made, left, env);
            execute(
                more, left, &permit, session, id, cancel, &mut stage, &mut made,
            )
            .await;
        }
        let outcome = if cancel.is_cancelled() {
            Outcome::Skipped("the scan was interrupted before this check finished".into())
        } else if !made.is_empty() && made.iter().all(|c| matches!(c.answer, Answer::Failed(_))) {
            // Nothing was learned: that is never a clean result.
            let why = match &made[0].answer {
                Answer::Failed(e) => e.clone(),
                _ => String::new(),
            };
            Outcome::Ran(vec![indeterminate(
                id,
                format!(
                    "none of its {} calls got an answer (the first: {why})",
                    made.len()
                ),
                made[0].exchange.clone(),
            )])
        } else {
            check.judge(&made, env)
        };
        stage.outcomes.push(((*id).to_string(), outcome));
    }
    stage
}

/// The tools `policy` lets a run call, and the others with why not. The permit, the server and
/// the client's guard all know tools by name: a name refused for any of the tools listed under it
/// is refused for all of them (a server that lists `notes` twice, once read-only and once
/// destructive, gets neither called).
pub fn callable<'a>(
    policy: &CallPolicy,
    tools: &'a [Value],
) -> (Vec<Callable<'a>>, Vec<(String, String)>) {
    let mut refused: BTreeSet<&str> = BTreeSet::new();
    let mut decided: Vec<(usize, &Value, Result<String, NotCalled>)> = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        let d = policy.decide(tool);
        if d.is_err()
            && let Some(name) = tool.get("name").and_then(Value::as_str)
        {
            refused.insert(name);
        }
        decided.push((index, tool, d));
    }
    let mut callable: Vec<Callable<'_>> = Vec::new();
    let mut not_called = Vec::new();
    for (index, tool, d) in decided {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)");
        match d {
            Ok(_) if refused.contains(name) => not_called.push((
                name.to_string(),
                "another tool of the same name is never called".into(),
            )),
            Ok(_) if callable.iter().any(|c| c.name == name) => {}
            Ok(_) => callable.push(Callable { name, tool, index }),
            Err(why) => not_called.push((name.to_string(), why.to_string())),
        }
    }
    (callable, not_called)
}

/// What `check` would call among `tools` with `--scope '*'` and no other flag, said in a report
/// of a run that did not authorise it: its own plan, not a second description of it.
pub fn describe(check: &dyn ActiveCheck, budget: u32, tools: &[Value]) -> String {
    let policy = CallPolicy {
        scope: vec!["*".into()],
        ..CallPolicy::default()
    };
    let (callable, _) = callable(&policy, tools);
    let env = StageEnv::default();
    let planned = check.plan(&callable, budget as usize, &env);
    if planned.is_empty() {
        return check
            .nothing_planned(&env)
            .unwrap_or_else(|| "no tool it may call has what it tests".into());
    }
    let mut per_tool: Vec<(&str, usize)> = Vec::new();
    for p in &planned {
        match per_tool.iter_mut().find(|(t, _)| *t == p.tool) {
            Some((_, n)) => *n += 1,
            None => per_tool.push((&p.tool, 1)),
        }
    }
    let list: Vec<String> = per_tool
        .iter()
        .map(|(t, n)| format!("`{}` ×{n}", crate::util::escape::escape_trimmed(t, 60)))
        .collect();
    format!(
        "with --scope '*' it would make {} of its {budget} calls: {}",
        planned.len(),
        list.join(", ")
    )
}

/// Makes `planned` calls (at most `limit`) inside `permit`, recording each.
#[allow(clippy::too_many_arguments)]
async fn execute(
    planned: Vec<PlannedCall>,
    limit: usize,
    permit: &std::sync::Arc<permit::Permit>,
    session: &Session,
    id: &str,
    cancel: &tokio_util::sync::CancellationToken,
    stage: &mut StageRun,
    made: &mut Vec<MadeCall>,
) {
    for p in planned.into_iter().take(limit) {
        if cancel.is_cancelled() {
            break;
        }
        let started = tokio::time::Instant::now();
        let call = match &p.kind {
            CallKind::Tool => {
                let params = json!({"name": p.tool, "arguments": p.arguments});
                permit::within(
                    permit.clone(),
                    session.call_within("tools/call", params, CALL_TIMEOUT),
                )
                .await
            }
            CallKind::Anonymous => match session.anonymous_twin() {
                Some(anon) => {
                    let params = json!({"name": p.tool, "arguments": p.arguments});
                    permit::within(
                        permit.clone(),
                        anon.call_within("tools/call", params, CALL_TIMEOUT),
                    )
                    .await
                }
                None => crate::protocol::session::Call {
                    error: Some("this session cannot be used without credentials".into()),
                    ..Default::default()
                },
            },
            CallKind::Resource(uri) => {
                let params = json!({"uri": uri});
                permit::within(
                    permit.clone(),
                    session.call_within("resources/read", params, CALL_TIMEOUT),
                )
                .await
            }
        };
        let answer = match (&call.reply, &call.error) {
            (Some(Reply::Result(r)), _) => Answer::Result(r.clone()),
            (Some(Reply::Error { code, message, .. }), _) => Answer::Error {
                code: *code,
                message: message.clone(),
            },
            (None, Some(e)) => Answer::Failed(e.clone()),
            (None, None) => Answer::Failed("no reply".into()),
        };
        stage.calls.push(CallRecord {
            check: id.to_string(),
            tool: p.tool.clone(),
            arguments: p.arguments.clone(),
            answered: !matches!(answer, Answer::Failed(_)),
        });
        made.push(MadeCall {
            planned: p,
            answer,
            exchange: call.exchange,
            elapsed: started.elapsed(),
        });
    }
}

/// An info finding that says a check learned nothing (SPEC §3: indeterminate, never a pass).
fn indeterminate(id: &str, why: String, exchange: Exchange) -> crate::finding::Finding {
    let meta = crate::catalogue::catalogue().meta(id);
    meta.finding(None)
        .subcode("calls/indeterminate")
        .severity(crate::finding::Severity::Info)
        .confidence(crate::finding::Confidence::Low)
        .message(format!("indeterminate: {why}"))
        .exchange(exchange)
        .build()
}

fn not_called_note(not_called: &[(String, String)]) -> String {
    if not_called.is_empty() {
        return String::new();
    }
    let list: Vec<String> = not_called
        .iter()
        .take(20)
        .map(|(n, why)| format!("`{}`: {why}", crate::util::escape::escape(n)))
        .collect();
    let more = not_called.len().saturating_sub(20);
    format!(
        "; never called: {}{}",
        list.join("; "),
        if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        }
    )
}
