//! PROTO-02: Unknown method answered with a result instead of error -32601.
//!
//! Metadata: `checks/passive/PROTO-02.toml`. One request: an unknown method in the
//! inventory's session (harmless: it cannot break the session). No JSON-RPC answer (a
//! timeout, a reset, an HTML error page) is indeterminate.

use serde_json::json;

use crate::checks::probe;
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
            match &call.reply {
                Some(r) if r.result().is_some() => Outcome::Ran(vec![
                    finding(self, None)
                        .message(format!("`{UNKNOWN_METHOD}` was answered with a result"))
                        .text(String::from_utf8_lossy(&call.body).chars().take(300).collect::<String>())
                        .exchange(call.exchange)
                        .build(),
                ]),
                Some(_) => Outcome::Ran(vec![]),
                // A timeout, a reset, or an answer that is not JSON-RPC: nothing learned.
                None => Outcome::Ran(vec![probe::indeterminate(
                    self,
                    "unknown-method",
                    format_args!("the unknown-method request got no JSON-RPC answer ({}), so how the server handles unknown methods is not known", probe::answered(&call)),
                    Some(call.exchange),
                )]),
            }
        })
    }
}
