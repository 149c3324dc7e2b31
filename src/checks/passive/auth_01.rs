//! AUTH-01: tools/list answers without credentials.
//!
//! Metadata: `checks/passive/AUTH-01.toml`. Without `--token`/`--header`, the inventory itself
//! was read anonymously (no request). With them, a separate client that never carries the
//! credentials asks once more. High when the tools change, delete, send or run; medium otherwise.

use serde_json::{Value, json};

use crate::checks::probe::{self, session_2025};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::{Exchange, Severity};
use crate::protocol::rpc::{self, MODERN};
use crate::protocol::session::post_message;
use crate::rules::capabilities::{Class, profile};
use crate::rules::document::Document;

pub struct Auth01;

pub static CHECK: Auth01 = Auth01;

impl Check for Auth01 {
    fn id(&self) -> &'static str {
        "AUTH-01"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no authentication".into());
            };
            let (tools, exchange): (Vec<Value>, Exchange) = if !cx.credentialed {
                let Some(call) = cx.inventory.and_then(|i| i.first_tools_call.as_ref()) else {
                    return Outcome::Ran(vec![]);
                };
                if call.result().is_none() {
                    return Outcome::Ran(vec![]);
                }
                (cx.inventory.map(|i| i.tools().to_vec()).unwrap_or_default(), call.exchange.clone())
            } else if cx.fingerprint.eras.iter().any(|e| e == MODERN) {
                let anon = client.without_credentials();
                let tp = anon.network().traceparent();
                let msg = rpc::request(9101, "tools/list", json!({}), rpc::modern_meta(&tp));
                let headers = [("MCP-Protocol-Version", MODERN.to_string()), ("Mcp-Method", "tools/list".to_string())];
                let call = post_message(&anon, url, &msg, 9101, &headers).await;
                if call.result().is_none() {
                    return Outcome::Ran(vec![]);
                }
                (probe::tools(&call), call.exchange)
            } else {
                let Some((session, _)) = session_2025(cx, "mcpprobe-anonymous", true).await else {
                    return Outcome::Ran(vec![]);
                };
                let call = session.call("tools/list", json!({})).await;
                let _ = session.close().await;
                if call.result().is_none() {
                    return Outcome::Ran(vec![]);
                }
                (probe::tools(&call), call.exchange)
            };
            // Severity by what the anonymous caller can reach.
            let doc_value = json!({"tools": tools});
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
            let how = if cx.credentialed { "a client without the given credentials" } else { "mcpprobe, which sent no credentials" };
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
