//! TRANS-01: Forged Origin (or Host, for loopback) accepted instead of 403.
//!
//! Metadata: `checks/passive/TRANS-01.toml`. The era's handshake, in a session of its own
//! (ended at once), with `Origin: https://evil.example`; for a loopback target whose forged
//! Origin was not accepted, also with `Host: evil.example:<port>`. A 2xx fails (Origin high;
//! Host medium, since POSTs from a rebinding page carry an Origin and are stopped). A 403, or a
//! 4xx that says it refuses the origin or host, passes. A 401 first, or no usable answer (a
//! 404/429/5xx/3xx, a timeout), is indeterminate: an info finding with the evidence.

use crate::checks::probe::{self, handshake};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::{Finding, Severity};
use crate::net::Request;
use crate::protocol::rpc::LEGACY_SSE;
use crate::protocol::session::Call;

pub struct Trans01;

pub static CHECK: Trans01 = Trans01;

pub use crate::checks::probe::FORGED_ORIGIN;
pub const FORGED_HOST: &str = "evil.example";

/// What the answer to a forged header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accepted,
    Refused,
    Unknown,
}

/// A 4xx whose body says it is about the tested header (`Invalid Origin header`, a JSON-RPC
/// error naming the host): a documented refusal, even without 403.
fn refusal_about(call: &Call, header: &str) -> bool {
    let head = &call.body[..call.body.len().min(4096)];
    let body = String::from_utf8_lossy(head).to_ascii_lowercase();
    let header = header.to_ascii_lowercase();
    // The header as a word ("original" is not "origin", "localhost" is not "host"), and a word
    // that says it was refused.
    let names_header = crate::rules::text::words(&body).contains(&header);
    let refused = ["invalid", "not allowed", "forbidden", "disallowed", "rejected", "untrusted", "mismatch", "denied", "unknown", "bad"]
        .iter()
        .any(|w| body.contains(w));
    names_header && refused
}

fn verdict(call: &Call, header: &str) -> Verdict {
    match call.status {
        Some(s) if (200..300).contains(&s) => Verdict::Accepted,
        Some(403) => Verdict::Refused,
        // PY-SDK answers a bad Host with 421; any other 4xx must say what it refuses.
        Some(421) if header == "Host" => Verdict::Refused,
        Some(s) if (400..500).contains(&s) && ![401, 404, 429].contains(&s) && refusal_about(call, header) => Verdict::Refused,
        _ => Verdict::Unknown,
    }
}

/// Opens the legacy SSE stream with a forged header; only its status matters.
async fn legacy_open(cx: &Live<'_>, url: &url::Url, header: &str, value: &str) -> Option<Call> {
    let client = cx.client?;
    let req = Request::get(url.clone()).header("Accept", "text/event-stream").header(header, value);
    Some(match client.open_stream(req, std::time::Duration::from_millis(1)).await {
        Ok(open) => Call { status: Some(open.status), headers: open.headers, exchange: open.exchange, ..Call::default() },
        Err((e, x)) => Call { exchange: x, error: Some(e.to_string()), failure: Some(e), ..Call::default() },
    })
}

impl Trans01 {
    fn judge(&self, header: &str, value: &str, call: Call, origin_refused: bool) -> (Verdict, Option<Finding>) {
        let sub = header.to_ascii_lowercase();
        let tested = format!("tested header: {header}: {value}");
        let v = verdict(&call, header);
        let f = match v {
            Verdict::Accepted if header == "Origin" => Some(
                finding(self, None)
                    .subcode(sub)
                    .message(format!("a handshake with a forged Origin was {} instead of 403: a web page the user visits can drive this server; {tested}", probe::answered(&call)))
                    .exchange(call.exchange)
                    .build(),
            ),
            Verdict::Accepted => Some(
                finding(self, None)
                    .subcode(sub)
                    .severity(Severity::Medium)
                    .message(format!(
                        "a handshake with a forged Host was {} instead of 403 on a loopback server{}; {tested}",
                        probe::answered(&call),
                        if origin_refused {
                            ", while the forged Origin was refused: POSTs from a DNS-rebinding page carry an Origin and are stopped, but Origin-less requests such as the GET event stream remain exposed"
                        } else {
                            ": a DNS-rebinding page can reach it under its own host name"
                        }
                    ))
                    .exchange(call.exchange)
                    .build(),
            ),
            Verdict::Refused => None,
            Verdict::Unknown => {
                let why = match call.status {
                    Some(401) => "the server answered 401 (authentication is checked first)".to_string(),
                    Some(s) => format!("the server answered {s}, which is not a refusal of the {header} (403 is)"),
                    None => format!("no answer ({})", call.error.as_deref().unwrap_or("no reply")),
                };
                Some(probe::indeterminate(self, &sub, format_args!("{why}, so the {header} test could not be judged; {tested}"), Some(call.exchange)))
            }
        };
        (v, f)
    }
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
            // A handshake of its own for each forged header (its session, if any, ended at
            // once), so that no other check's session is judged after a forged request.
            let legacy_only = cx.fingerprint.eras.iter().all(|e| e == LEGACY_SSE);
            let send = |header: &'static str, value: String| async move {
                match cx.sessions.first() {
                    // The legacy transport: open its event stream with the forged header.
                    Some(s) if legacy_only && s.era() == LEGACY_SSE => legacy_open(cx, s.url.as_ref()?, header, &value).await,
                    _ => handshake(cx, &[(header, &value)], false).await,
                }
            };
            let Some(call) = send("Origin", FORGED_ORIGIN.to_string()).await else {
                return Outcome::Skipped("no era to send a request in (see INFO-01)".into());
            };
            let (origin, f) = self.judge("Origin", FORGED_ORIGIN, call, false);
            let mut findings: Vec<Finding> = f.into_iter().collect();
            // With the forged Origin accepted, a rebinding page needs no more: the Host test
            // is for a server that refuses the Origin (or whose answer said nothing).
            if cx.loopback && origin != Verdict::Accepted {
                let port = cx.url.and_then(|u| u.port_or_known_default()).unwrap_or(80);
                let host = format!("{FORGED_HOST}:{port}");
                if let Some(call) = send("Host", host.clone()).await {
                    findings.extend(self.judge("Host", &host, call, origin == Verdict::Refused).1);
                }
            }
            Outcome::Ran(findings)
        })
    }
}
