//! PROTO-02: Unknown method answered with a result instead of error -32601.
//!
//! Metadata: `checks/passive/PROTO-02.toml`. One request: an unknown method in the
//! inventory's session.

use serde_json::json;

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};

pub struct Proto02;

pub static CHECK: Proto02 = Proto02;

/// A method no MCP version defines.
pub const UNKNOWN_METHOD: &str = "mcpprobe/no-such-method";

impl Check for Proto02 {
    fn id(&self) -> &'static str {
        "PROTO-02"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(session) = cx.sessions.first() else {
                return Outcome::Skipped("no session to ask in".into());
            };
            let call = session.call(UNKNOWN_METHOD, json!({})).await;
            match (&call.reply, &call.error) {
                (Some(r), _) if r.result().is_some() => Outcome::Ran(vec![
                    finding(self, None)
                        .message(format!("`{UNKNOWN_METHOD}` was answered with a result"))
                        .text(String::from_utf8_lossy(&call.body).chars().take(300).collect::<String>())
                        .exchange(call.exchange)
                        .build(),
                ]),
                (Some(_), _) => Outcome::Ran(vec![]),
                (None, Some(e)) => Outcome::Error(format!("the unknown-method request failed: {e}")),
                (None, None) => Outcome::Ran(vec![]),
            }
        })
    }
}
