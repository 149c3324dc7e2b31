//! TRANS-03: Permissive CORS on the MCP endpoint.
//!
//! Metadata: `checks/passive/TRANS-03.toml`. One CORS preflight from a foreign origin, plus the
//! `Access-Control-Allow-Origin` the ladder's answers already carried. Medium; high when a
//! wildcard or reflected origin comes with `Access-Control-Allow-Credentials: true`.

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::Severity;
use crate::net::Request;

use crate::checks::probe::FORGED_ORIGIN;

pub struct Trans03;

/// An answer to look at: what it was, its headers, its exchange.
type Seen = (String, Vec<(String, String)>, Option<crate::finding::Exchange>);

pub static CHECK: Trans03 = Trans03;

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

impl Check for Trans03 {
    fn id(&self) -> &'static str {
        "TRANS-03"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no CORS".into());
            };
            let req = Request { method: reqwest::Method::OPTIONS, ..Request::get(url.clone()) }
                .header("Origin", FORGED_ORIGIN)
                .header("Access-Control-Request-Method", "POST")
                .header("Access-Control-Request-Headers", "content-type, mcp-session-id, authorization");
            let preflight = client.send(req).await;
            let mut seen: Vec<Seen> = Vec::new();
            // The preflight got no usable answer: unless an answer already seen is permissive,
            // the check is indeterminate.
            let unanswered = match &preflight {
                Ok(r) if r.status >= 500 || r.status == 429 => Some((format!("answered {}", r.status), r.exchange.clone())),
                Ok(r) => {
                    seen.push(("the preflight (OPTIONS) answer".into(), r.headers.clone(), Some(r.exchange.clone())));
                    None
                }
                Err((e, x)) => Some((format!("got no answer ({e})"), x.clone())),
            };
            for rung in &cx.fingerprint.rungs {
                seen.push((format!("the {} answer", rung.step), rung.headers.clone(), rung.exchange.clone()));
            }
            for (what, headers, exchange) in seen {
                let Some(allow) = header(&headers, "access-control-allow-origin") else { continue };
                let broad = allow == "*" || allow == FORGED_ORIGIN || allow == "null";
                if !broad {
                    continue;
                }
                let credentials = header(&headers, "access-control-allow-credentials").is_some_and(|v| v.eq_ignore_ascii_case("true"));
                let mut b = finding(self, None).message(format!(
                    "{what} carries Access-Control-Allow-Origin: {allow}{}{}",
                    if allow == FORGED_ORIGIN { " (the foreign origin, reflected)" } else { "" },
                    if credentials { " with Access-Control-Allow-Credentials: true" } else { "" }
                ));
                if credentials {
                    b = b.severity(Severity::High);
                }
                if let Some(x) = exchange {
                    b = b.exchange(x);
                }
                return Outcome::Ran(vec![b.build()]);
            }
            if let Some((why, x)) = unanswered {
                return Outcome::Ran(vec![crate::checks::probe::indeterminate(
                    self,
                    "preflight",
                    format_args!("the CORS preflight (OPTIONS from {FORGED_ORIGIN}) {why}, so what the endpoint allows cross-origin is not known"),
                    Some(x),
                )]);
            }
            Outcome::Ran(vec![])
        })
    }
}
