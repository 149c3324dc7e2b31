//! TRANS-01: Forged Origin (or Host, for loopback) accepted instead of 403.
//!
//! Metadata: `checks/passive/TRANS-01.toml`. The era's handshake with `Origin:
//! https://evil.example`; for a loopback target also with `Host: evil.example`. A 2xx fails, a
//! 4xx other than 401 passes, a 401 (or no answer) is indeterminate: an info finding with the
//! evidence, never a pass or a fail.

use serde_json::json;

use crate::checks::probe::handshake;
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::{Confidence, Finding, Severity};
use crate::net::Request;
use crate::protocol::rpc::LEGACY_SSE;
use crate::protocol::session::Call;

pub struct Trans01;

pub static CHECK: Trans01 = Trans01;

pub use crate::checks::probe::FORGED_ORIGIN;
pub const FORGED_HOST: &str = "evil.example";

fn judge(check: &Trans01, header: &str, value: &str, call: Call) -> Option<Finding> {
    let tested = format!("tested header: {header}: {value}");
    match call.status {
        Some(s) if (200..300).contains(&s) => Some(
            finding(check, None)
                .message(format!("a request with a forged {header} was accepted ({s}) instead of 403; {tested}"))
                .exchange(call.exchange)
                .build(),
        ),
        Some(401) | None => Some(
            finding(check, None)
                .severity(Severity::Info)
                .confidence(Confidence::Low)
                .message(format!(
                    "indeterminate: {} before the {header} test could be judged; {tested}",
                    match call.status {
                        Some(_) => "401 (authentication is checked first)".to_string(),
                        None => format!("no answer ({})", call.error.unwrap_or_default()),
                    }
                ))
                .exchange(call.exchange)
                .build(),
        ),
        Some(_) => None,
    }
}

/// Opens the legacy SSE stream with a forged header; only its status matters.
async fn legacy_open(cx: &Live<'_>, url: &url::Url, header: &str, value: &str) -> Option<Call> {
    let client = cx.client?;
    let req = Request::get(url.clone()).header("Accept", "text/event-stream").header(header, value);
    Some(match client.open_stream(req, std::time::Duration::from_millis(1)).await {
        Ok(open) => Call { status: Some(open.status), headers: open.headers, exchange: open.exchange, ..Call::default() },
        Err((e, x)) => Call { exchange: x, error: Some(e.to_string()), ..Call::default() },
    })
}

impl Check for Trans01 {
    fn id(&self) -> &'static str {
        "TRANS-01"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if cx.client.is_none() {
                return Outcome::Skipped("a stdio server has no HTTP Origin".into());
            }
            // In the inventory's session (a harmless tools/list), else a fresh handshake.
            let send = |header: &'static str, value: String| async move {
                match cx.sessions.first() {
                    Some(s) if s.is_http_streamable() => s.call_with_headers("tools/list", json!({}), &[(header, value)]).await,
                    // The legacy transport: open its event stream with the forged header.
                    Some(s) if s.era() == LEGACY_SSE => legacy_open(cx, s.url.as_ref()?, header, &value).await,
                    _ => handshake(cx, &[(header, &value)], false).await,
                }
            };
            let Some(call) = send("Origin", FORGED_ORIGIN.to_string()).await else {
                return Outcome::Skipped("no era to send a request in (see INFO-01)".into());
            };
            let mut findings: Vec<Finding> = judge(self, "Origin", FORGED_ORIGIN, call).into_iter().collect();
            if cx.loopback {
                let port = cx.url.and_then(|u| u.port_or_known_default()).unwrap_or(80);
                let host = format!("{FORGED_HOST}:{port}");
                if let Some(call) = send("Host", host.clone()).await {
                    findings.extend(judge(self, "Host", &host, call));
                }
            }
            Outcome::Ran(findings)
        })
    }
}
