//! PROTO-01: Deprecated HTTP+SSE transport still served.
//!
//! Metadata: `checks/passive/PROTO-01.toml`. Reads the ladder's last rung; sends nothing.

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::protocol::rpc::LEGACY_SSE;

pub struct Proto01;

pub static CHECK: Proto01 = Proto01;

impl Check for Proto01 {
    fn id(&self) -> &'static str {
        "PROTO-01"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if cx.client.is_none() {
                return Outcome::Skipped("stdio has no HTTP transport".into());
            }
            if !cx.fingerprint.eras.iter().any(|e| e == LEGACY_SSE) {
                return Outcome::Ran(vec![]);
            }
            let rung = cx.fingerprint.rungs.iter().find(|r| r.verdict.starts_with("answers the legacy"));
            let mut b = finding(self, None).message(format!(
                "the server answers the 2024-11-05 HTTP+SSE transport ({}){}",
                rung.map(|r| r.step.as_str()).unwrap_or("GET"),
                if cx.fingerprint.eras.len() > 1 { " beside Streamable HTTP" } else { "" }
            ));
            if let Some(x) = rung.and_then(|r| r.exchange.clone()) {
                b = b.exchange(x);
            }
            Outcome::Ran(vec![b.build()])
        })
    }
}
