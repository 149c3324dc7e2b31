//! AUTH-01: tools/list answers without credentials.
//!
//! Metadata: `checks/passive/AUTH-01.toml`. Without `--token`/`--header`, the inventory itself
//! was read anonymously (no request). With them, a separate client that never carries the
//! credentials asks once more. High when the tools change, delete, send or run; medium otherwise.
//! A 401/403 (or a JSON-RPC refusal with a 4xx) passes; no usable answer (a timeout, a 5xx,
//! a 404/429, a session that did not open) is indeterminate.

use serde_json::{Value, json};

use crate::checks::probe::{self, try_session_2025};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::{Exchange, Severity};
use crate::protocol::rpc::{self, MODERN};
use crate::protocol::session::{Call, post_message};
use crate::rules::capabilities::{Class, profile};
use crate::rules::document::Document;

pub struct Auth01;

pub static CHECK: Auth01 = Auth01;

/// What an anonymous `tools/list` (or the handshake before it) learned: the tools it got, a
/// refusal (`Err(None)`: credentials are required), or no usable answer (`Err(Some(..))`).
fn judge(call: &Call) -> Result<Vec<Value>, Option<String>> {
    if call.result().is_some() {
        return Ok(probe::tools(call));
    }
    match call.status {
        Some(401 | 403) => Err(None),
        // A JSON-RPC error with a 4xx (not 404/429) is a refusal the server means.
        Some(s) if (400..500).contains(&s) && s != 404 && s != 429 && call.reply.is_some() => Err(None),
        _ => Err(Some(probe::answered(call))),
    }
}

impl Check for Auth01 {
    fn id(&self) -> &'static str {
        "AUTH-01"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no authentication".into());
            };
            let unknown = |why: String, x: Option<Exchange>| {
                Outcome::Ran(vec![probe::indeterminate(
                    self,
                    "anonymous",
                    format_args!("the request without credentials got no usable answer ({why}), so whether tools/list answers without them is not known"),
                    x,
                )])
            };
            let (tools, exchange): (Vec<Value>, Exchange) = if !cx.credentialed {
                let Some(call) = cx.inventory.and_then(|i| i.first_tools_call.as_ref()) else {
                    // Every rung answered 401/403: nothing answers without credentials; or the
                    // inventory asked for no tools (the server declares none).
                    if cx.fingerprint.auth_required || cx.inventory.is_some() {
                        return Outcome::Ran(vec![]);
                    }
                    let x = cx.fingerprint.exchanges.last().cloned();
                    return unknown("no inventory could be read".into(), x);
                };
                match judge(call) {
                    Ok(_) => (cx.inventory.map(|i| i.tools().to_vec()).unwrap_or_default(), call.exchange.clone()),
                    Err(None) => return Outcome::Ran(vec![]),
                    Err(Some(why)) => return unknown(why, Some(call.exchange.clone())),
                }
            } else if cx.oauth.as_ref().and_then(|d| d.challenge.as_ref()).is_some_and(|c| c.anonymous) {
                // OAuth discovery's handshake without credentials was already refused (401/403):
                // the same question, answered; nothing more is sent.
                return Outcome::Ran(vec![]);
            } else if cx.fingerprint.eras.iter().any(|e| e == MODERN) {
                let anon = client.without_credentials();
                let tp = anon.network().traceparent();
                let msg = rpc::request(9101, "tools/list", json!({}), rpc::modern_meta(&tp));
                let headers = [("MCP-Protocol-Version", MODERN.to_string()), ("Mcp-Method", "tools/list".to_string())];
                let call = post_message(&anon, url, &msg, 9101, &headers).await;
                match judge(&call) {
                    Ok(tools) => (tools, call.exchange),
                    Err(None) => return Outcome::Ran(vec![]),
                    Err(Some(why)) => return unknown(why, Some(call.exchange)),
                }
            } else {
                let session = match try_session_2025(cx, "mcpprobe-anonymous", true).await {
                    Ok((session, _)) => session,
                    Err(None) => return Outcome::Skipped("no 2025 era to open a session in".into()),
                    Err(Some(call)) => match judge(&call) {
                        Err(Some(why)) => return unknown(format!("the session could not be opened: {why}"), Some(call.exchange)),
                        _ => return Outcome::Ran(vec![]),
                    },
                };
                let call = session.call("tools/list", json!({})).await;
                let _ = session.close().await;
                match judge(&call) {
                    Ok(tools) => (tools, call.exchange),
                    Err(None) => return Outcome::Ran(vec![]),
                    Err(Some(why)) => return unknown(why, Some(call.exchange)),
                }
            };
            // Severity by what the anonymous caller can reach.
            let doc_value = json!({"tools": tools});
            let doc_value = crate::rules::Json::borrow(&doc_value);
            let doc = Document::from_inventory(&doc_value);
            let effects: Vec<String> = doc
                .tools
                .iter()
                .filter(|t| Class::has_effects(profile(t).bits))
                .map(|t| t.label())
                .collect();
            let severity = if effects.is_empty() { Severity::Medium } else { Severity::High };
            let what = if effects.is_empty() {
                "none of them changes, sends or runs anything".to_string()
            } else {
                format!("these change, delete, send or run: {}", effects.join(", "))
            };
            let how = if cx.credentialed { "a client without the given credentials" } else { "mcpprobe, which sent no credentials," };
            Outcome::Ran(vec![
                finding(self, None)
                    .severity(severity)
                    .message(format!("{how} got {} tools; {what}", tools.len()))
                    .exchange(exchange)
                    .build(),
            ])
        })
    }
}
