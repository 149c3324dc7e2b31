//! CARD-02: A2A agent card problems (rules A1–A10).
//!
//! Metadata: `checks/passive/CARD-02.toml`. Rules: `src/rules/agent_card.rs`.

use crate::checks::{BoxFuture, Check, Live, Outcome};
use crate::net::Request;
use crate::rules::{Document, Input, InputKind, agent_card};

pub struct Card02;

pub static CHECK: Card02 = Card02;

impl Check for Card02 {
    fn id(&self) -> &'static str {
        "CARD-02"
    }

    fn offline(&self, input: &Input, _doc: &Document<'_>) -> Outcome {
        match input.kind {
            InputKind::AgentCard => Outcome::Ran(agent_card::run(&input.value.to_value())),
            _ => Outcome::Skipped("the input is not an A2A agent card".into()),
        }
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no agent card".into());
            };
            let Ok(loc) = url.join("/.well-known/agent-card.json") else {
                return Outcome::Skipped("no agent-card URL".into());
            };
            let resp = match client.send(Request::get(loc.clone()).header("Accept", "application/json")).await {
                Ok(r) => r,
                Err((e, _)) => return Outcome::Skipped(format!("no A2A agent card: GET {} failed ({e})", loc.path())),
            };
            let card = match (resp.status, resp.json()) {
                (200, Ok(v)) if v.is_object() => v,
                (status, _) => return Outcome::Skipped(format!("no A2A agent card: GET {} answered {status}", loc.path())),
            };
            let mut findings = agent_card::run(&card);
            for f in &mut findings {
                f.evidence.exchanges.push(resp.exchange.clone());
            }
            Outcome::Ran(findings)
        })
    }
}
