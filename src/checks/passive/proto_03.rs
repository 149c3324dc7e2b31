//! PROTO-03: Malformed request not answered with a clean JSON-RPC error.
//!
//! Metadata: `checks/passive/PROTO-03.toml`. Three requests: bad JSON, `params` of the wrong
//! type, and a request without its `jsonrpc` version (and without the 2026 `_meta`), in a 2025
//! session of their own (ended after), since a malformed body may break a session; a
//! 2026-only server is stateless and is asked directly. Each answer must be a JSON-RPC error,
//! with nothing that leaks a stack trace, a path or a version. Wrong-typed params answered
//! with a normal result are lenient, not a hole (info). A probe without an answer (a timeout,
//! a reset) is indeterminate.

use std::sync::LazyLock;

use regex::Regex;

use crate::checks::probe::{self, try_session_2025};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::Severity;
use crate::protocol::rpc::MODERN;
use crate::protocol::session::{Call, Session};

pub struct Proto03;

pub static CHECK: Proto03 = Proto03;

/// What a clean error never contains.
static LEAK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?m)(?P<trace>^\s+at [\w.$<>\[\] ]+ ?\(|Traceback \(most recent call last\)|File .[^\n]+\.py., line \d+|panicked at|\.rs:\d+:\d+|java\.lang\.\w+|Exception in thread)",
        r"|(?P<path>(?:/home/|/srv/|/usr/|/var/|/opt/|/app/|node_modules/|site-packages/|[A-Z]:\\\\)[\w./\\-]+)",
        r"|(?P<version>(?:Express|Werkzeug|Node\.js|Python|uvicorn|gunicorn|nginx|Apache|Jetty|Kestrel|PHP)[/ ]v?\d+\.\d+)"
    ))
    .unwrap_or_else(|e| panic!("the leak pattern compiles: {e}"))
});

fn judge(call: &Call, lenient_is_info: bool) -> Option<(Severity, String)> {
    let body = String::from_utf8_lossy(&call.body);
    let powered = call.header("x-powered-by").filter(|v| v.chars().any(|c| c.is_ascii_digit()));
    if let Some(c) = LEAK.captures(&body) {
        let what = if c.name("trace").is_some() {
            "a stack trace"
        } else if c.name("path").is_some() {
            "a file path"
        } else {
            "a software version"
        };
        let m = c.get(0).map(|m| m.as_str()).unwrap_or_default();
        // `{:?}` quotes the server's text as an escaped literal.
        return Some((Severity::Medium, format!("the error leaks {what}: {:?}", m.chars().take(120).collect::<String>())));
    }
    if let Some(p) = powered {
        return Some((Severity::Medium, format!("the answer names its software version (X-Powered-By: {p})")));
    }
    if call.reply.as_ref().is_none_or(|r| r.error_code().is_none()) && call.error.is_none() {
        let status = call.status.map(|s| s.to_string()).unwrap_or_else(|| "no status".into());
        if lenient_is_info && call.result().is_some() {
            return Some((Severity::Info, format!("the answer ({status}) is a normal result: the server is lenient with the type (robustness, not a hole)")));
        }
        return Some((Severity::Low, format!("the answer ({status}) is not a JSON-RPC error")));
    }
    None
}

impl Check for Proto03 {
    fn id(&self) -> &'static str {
        "PROTO-03"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            // A session of its own for the 2025 eras; the stateless 2026 session otherwise.
            let own: Option<Session> = if probe::era_2025(cx).is_some() {
                match try_session_2025(cx, "mcpprobe", false).await {
                    Ok((s, _)) => Some(s),
                    Err(call) => {
                        let why = call.as_ref().map(probe::answered).unwrap_or_else(|| "nothing sent".into());
                        return Outcome::Ran(vec![probe::indeterminate(
                            self,
                            "session",
                            format_args!("a session for the malformed requests could not be opened ({why})"),
                            call.map(|c| c.exchange),
                        )]);
                    }
                }
            } else {
                None
            };
            let stateless = cx.sessions.first().filter(|s| s.is_http_streamable() && s.era() == MODERN);
            let Some(session) = own.as_ref().or(stateless) else {
                return Outcome::Skipped("malformed requests are sent to a Streamable HTTP endpoint only".into());
            };
            let probes: [(&str, &str, &[u8]); 3] = [
                ("bad-json", "bad JSON", br#"{"jsonrpc": "2.0", "id": 7001, "method": "tools/list", "params": {"#),
                ("wrong-params", "params of the wrong type", br#"{"jsonrpc": "2.0", "id": 7002, "method": "tools/list", "params": "not-an-object"}"#),
                ("no-version", "no `jsonrpc` version and no `_meta`", br#"{"id": 7003, "method": "tools/list", "params": {}}"#),
            ];
            let mut findings = Vec::new();
            for (sub, what, body) in probes {
                let Some(call) = session.post_raw(body.to_vec(), "tools/list", &[]).await else {
                    continue;
                };
                if call.status.is_none() {
                    findings.push(probe::indeterminate(self, sub, format_args!("{what}: {}", probe::answered(&call)), Some(call.exchange)));
                    continue;
                }
                let judged = judge(&call, sub == "wrong-params");
                // A 5xx or 429 is no usable answer to "is this a clean JSON-RPC error?" (SPEC §3),
                // unless the answer leaks something all the same.
                if probe::unusable(&call) && judged.as_ref().is_none_or(|(sev, _)| *sev < Severity::Medium) {
                    findings.push(probe::indeterminate(self, sub, format_args!("{what}: {}", probe::answered(&call)), Some(call.exchange)));
                    continue;
                }
                if let Some((severity, message)) = judged {
                    let text: String = String::from_utf8_lossy(&call.body).chars().take(600).collect();
                    findings.push(
                        finding(self, None)
                            .subcode(sub)
                            .severity(severity)
                            .message(format!("{what}: {message}"))
                            .text(text)
                            .exchange(call.exchange)
                            .build(),
                    );
                }
            }
            if let Some(s) = own {
                let _ = s.close().await;
            }
            Outcome::Ran(findings)
        })
    }
}
