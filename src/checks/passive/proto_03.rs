//! PROTO-03: Malformed request not answered with a clean JSON-RPC error.
//!
//! Metadata: `checks/passive/PROTO-03.toml`. Three requests: bad JSON, `params` of the wrong
//! type, and a request without its `jsonrpc` version (and without the 2026 `_meta`). Each answer must be a JSON-RPC error, with nothing that leaks a stack trace, a path or
//! a version.

use std::sync::LazyLock;

use regex::Regex;

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::Severity;
use crate::protocol::session::Call;

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

fn judge(call: &Call) -> Option<(Severity, String)> {
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
        return Some((Severity::Medium, format!("the error leaks {what}: {:?}", m.chars().take(120).collect::<String>())));
    }
    if let Some(p) = powered {
        return Some((Severity::Medium, format!("the answer names its software version (X-Powered-By: {p})")));
    }
    if call.reply.as_ref().is_none_or(|r| r.error_code().is_none()) && call.error.is_none() {
        return Some((Severity::Low, format!("the answer ({:?}) is not a JSON-RPC error", call.status)));
    }
    None
}

impl Check for Proto03 {
    fn id(&self) -> &'static str {
        "PROTO-03"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(session) = cx.sessions.first().filter(|s| s.is_http_streamable()) else {
                return Outcome::Skipped("malformed requests are sent to a Streamable HTTP endpoint only".into());
            };
            let probes: [(&str, &[u8]); 3] = [
                ("bad JSON", br#"{"jsonrpc": "2.0", "id": 7001, "method": "tools/list", "params": {"#),
                ("params of the wrong type", br#"{"jsonrpc": "2.0", "id": 7002, "method": "tools/list", "params": "not-an-object"}"#),
                ("no `jsonrpc` version and no `_meta`", br#"{"id": 7003, "method": "tools/list", "params": {}}"#),
            ];
            let mut findings = Vec::new();
            for (what, body) in probes {
                let Some(call) = session.post_raw(body.to_vec(), "tools/list", &[]).await else {
                    return Outcome::Skipped("no HTTP session".into());
                };
                if let Some((severity, message)) = judge(&call) {
                    let text: String = String::from_utf8_lossy(&call.body).chars().take(600).collect();
                    findings.push(
                        finding(self, None)
                            .severity(severity)
                            .message(format!("{what}: {message}"))
                            .text(text)
                            .exchange(call.exchange)
                            .build(),
                    );
                }
            }
            Outcome::Ran(findings)
        })
    }
}
