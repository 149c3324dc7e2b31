//! CARD-01: MCP server card problems (rules SC1–SC11).
//!
//! Metadata: `checks/passive/CARD-01.toml`. Static rules: `src/rules/server_card.rs`; SC3, SC4,
//! SC8 and SC11 need the live endpoints.

use serde_json::{Value, json};
use url::Url;

use crate::checks::probe::names;
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::Exchange;
use crate::net::Request;
use crate::protocol::rpc;
use crate::protocol::session::post_message;
use crate::rules::{Document, Input, InputKind, server_card};

/// Where server cards have been put by the drafts (protocol-notes §1.13), newest first.
pub fn locations(mcp_url: &Url) -> Vec<Url> {
    let mut out = Vec::new();
    if let Ok(u) = Url::parse(&format!("{}/server-card", mcp_url.as_str().trim_end_matches('/'))) {
        out.push(u);
    }
    for p in ["/.well-known/mcp/server-card.json", "/.well-known/mcp.json"] {
        if let Ok(u) = mcp_url.join(p) {
            out.push(u);
        }
    }
    out
}

/// SC3/SC4/SC8: what the advertised endpoints answer to a handshake (on this origin only,
/// at most two).
async fn probe_endpoints(check: &Card01, cx: &Live<'_>, card: &Value, card_exchange: &Exchange) -> Vec<crate::finding::Finding> {
    let (Some(client), Some(url)) = (cx.client, cx.url) else { return vec![] };
    let mut answers: Vec<(String, Option<u16>, bool, Exchange)> = Vec::new();
    for ep in server_card::endpoints(card).into_iter().take(2) {
        let Ok(target) = url.join(ep.url) else { continue };
        if crate::net::Origin::of(&target).as_ref() != Some(client.origin()) {
            continue; // outside this scan's scope: never contacted
        }
        let params = json!({"protocolVersion": rpc::V2025_11, "capabilities": {}, "clientInfo": rpc::client_info()});
        let msg = rpc::request(9301, "initialize", params, json!({}));
        let call = post_message(client, &target, &msg, 9301, &[]).await;
        let is_mcp = call.reply.is_some();
        if let Some(sid) = call.session_id() {
            let s = crate::protocol::session::Session::streamable(client.clone(), target.clone(), rpc::V2025_11, Some(sid));
            let _ = s.close().await;
        }
        answers.push((ep.url.to_string(), call.status, is_mcp, call.exchange));
    }
    let mut out = Vec::new();
    for (u, status, is_mcp, x) in &answers {
        if status.is_some_and(|s| (200..300).contains(&s)) && !is_mcp {
            let status = status.map(|s| s.to_string()).unwrap_or_default();
            out.push(finding(check, Some("SC3")).subcode(Url::parse(u).map(|x| x.path().to_string()).unwrap_or_else(|_| u.clone())).message(format!("{u} answered the handshake with {status} without JSON-RPC")).exchange(x.clone()).build());
        }
    }
    if !answers.is_empty() && answers.iter().all(|(_, s, _, _)| matches!(s, Some(404 | 410))) {
        out.push(finding(check, Some("SC4")).message("every advertised endpoint answers 404/410").exchange(card_exchange.clone()).build());
    }
    if answers.len() > 1 && answers.iter().any(|a| a.2) && answers.iter().any(|a| !a.2) {
        out.push(finding(check, Some("SC8")).message("the card advertises several endpoints, and some do not answer MCP").build());
    }
    out
}

pub struct Card01;

pub static CHECK: Card01 = Card01;

impl Check for Card01 {
    fn id(&self) -> &'static str {
        "CARD-01"
    }

    fn offline(&self, input: &Input, _doc: &Document<'_>) -> Outcome {
        match (input.kind, &input.invalid_json) {
            (InputKind::ServerCard, Some(error)) => Outcome::Ran(vec![server_card::not_json(error)]),
            (InputKind::ServerCard, None) => Outcome::Ran(server_card::run(&input.value.to_value())),
            _ => Outcome::Skipped("the input is not an MCP server card".into()),
        }
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no server card".into());
            };
            let mut tried = Vec::new();
            // Locations that gave no usable answer (a transport error, a 5xx, a 429).
            let mut unanswered: Vec<(String, Exchange)> = Vec::new();
            for loc in locations(url) {
                let req = Request::get(loc.clone()).header("Accept", "application/mcp-server-card+json, application/json");
                let resp = match client.send(req).await {
                    Ok(r) => r,
                    Err((e, x)) => {
                        unanswered.push((format!("{} got no answer ({e})", loc.path()), x));
                        continue;
                    }
                };
                if resp.status >= 500 || resp.status == 429 {
                    unanswered.push((format!("{} answered {}", loc.path(), resp.status), resp.exchange.clone()));
                    continue;
                }
                if resp.status != 200 {
                    tried.push(format!("{} answered {}", loc.path(), resp.status));
                    continue;
                }
                let json_type = resp.header("content-type").is_some_and(|c| c.contains("json"));
                let card: Value = match resp.json() {
                    Ok(v) => v,
                    Err(e) if json_type => {
                        return Outcome::Ran(vec![server_card::not_json(&e)].into_iter().map(|mut f| {
                            f.evidence.exchanges.push(resp.exchange.clone());
                            f
                        }).collect());
                    }
                    Err(_) => {
                        tried.push(format!("{} answered 200 but not JSON", loc.path()));
                        continue;
                    }
                };
                let mut findings = server_card::run(&card);
                for f in &mut findings {
                    f.evidence.exchanges.push(resp.exchange.clone());
                }
                findings.extend(probe_endpoints(self, cx, &card, &resp.exchange).await);
                // SC11: the card's tools against tools/list, only against a list read completely.
                let complete = cx.inventory.filter(|i| i.first_tools_call.is_some() && i.notes.is_empty());
                if let (Some(card_tools), Some(inv)) = (card.get("tools").and_then(Value::as_array).filter(|t| t.iter().all(Value::is_object)), complete) {
                    let live = inv.tools();
                    if names(card_tools) != names(live) {
                        findings.push(
                            finding(self, Some("SC11"))
                                .message(format!("the card lists [{}], tools/list returns [{}]", names(card_tools), names(live)))
                                .exchange(resp.exchange.clone())
                                .build(),
                        );
                    }
                }
                return Outcome::Ran(findings);
            }
            if !unanswered.is_empty() {
                let why: Vec<&str> = unanswered.iter().map(|(w, _)| w.as_str()).chain(tried.iter().map(String::as_str)).collect();
                let mut f = crate::checks::probe::indeterminate(
                    self,
                    "location",
                    format_args!("no server card found, but not every known location gave a usable answer ({})", why.join("; ")),
                    None,
                );
                f.evidence.exchanges.extend(unanswered.into_iter().map(|(_, x)| x));
                return Outcome::Ran(vec![f]);
            }
            Outcome::Skipped(format!("no server card at the known draft locations ({})", tried.join("; ")))
        })
    }
}
