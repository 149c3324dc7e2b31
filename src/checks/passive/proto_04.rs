//! PROTO-04: Answers depend on who asks (bait-and-switch).
//!
//! Metadata: `checks/passive/PROTO-04.toml`. Compares the first page of tools/list as the
//! inventory saw it with (a) the same list asked as another client (`clientInfo` of a common
//! agent) and (b) the list in every other era the server answered.

use serde_json::{Value, json};

use crate::checks::probe::{self, inventory_first_page, names, session_2025};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::rules::fingerprint::tools_sha256;
use crate::protocol::rpc::MODERN;

pub struct Proto04;

pub static CHECK: Proto04 = Proto04;

/// The client name mcpprobe presents for the comparison.
pub const OTHER_CLIENT: &str = "claude-code";

impl Check for Proto04 {
    fn id(&self) -> &'static str {
        "PROTO-04"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(main) = cx.sessions.first() else {
                return Outcome::Skipped("no session to compare".into());
            };
            let baseline = inventory_first_page(cx);
            let base_sha = tools_sha256(baseline);
            let mut findings = Vec::new();
            let mut compared = 0;
            let mut differs = |label: String, tools: Vec<Value>, exchange| {
                compared += 1;
                if tools_sha256(&tools) != base_sha {
                    findings.push(
                        finding(self, None)
                            .message(format!(
                                "{label}: [{}] instead of [{}] as mcpprobe",
                                names(&tools),
                                names(baseline)
                            ))
                            .exchange(exchange)
                            .build(),
                    );
                }
            };

            // (a) by clientInfo.
            if main.era() == MODERN {
                let meta = json!({"_meta": {"io.modelcontextprotocol/clientInfo": {"name": OTHER_CLIENT, "version": "1.0.0"}}});
                let mut call = main.call("tools/list", meta).await;
                if call.result().is_some() {
                    differs(format!("as client `{OTHER_CLIENT}` the tool list is"), probe::take_tools(&mut call), call.exchange);
                }
            } else if let Some((session, _)) = session_2025(cx, OTHER_CLIENT, false).await {
                let mut call = session.call("tools/list", json!({})).await;
                if call.result().is_some() {
                    differs(format!("as client `{OTHER_CLIENT}` the tool list is"), probe::take_tools(&mut call), call.exchange.clone());
                }
                let _ = session.close().await;
            }

            // (b) by era: every other session the ladder opened.
            for other in cx.sessions.iter().skip(1) {
                let mut call = other.call("tools/list", json!({})).await;
                if call.result().is_some() {
                    differs(format!("in era {} the tool list is", other.era()), probe::take_tools(&mut call), call.exchange);
                }
            }
            if compared == 0 {
                return Outcome::Skipped("no second view of the tool list could be read".into());
            }
            Outcome::Ran(findings)
        })
    }
}
