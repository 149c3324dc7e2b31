//! INFO-01: Protocol fingerprint.
//!
//! Metadata: `checks/other/INFO-01.toml`. The ladder itself: `src/protocol/ladder.rs`.

use serde_json::Value;

use crate::checks::{BoxFuture, Check, Live, Outcome};

pub struct Info01;

pub static CHECK: Info01 = Info01;

impl Check for Info01 {
    fn id(&self) -> &'static str {
        "INFO-01"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let fp = cx.fingerprint;
            let eras = if fp.eras.is_empty() { "none".to_string() } else { fp.eras.join(", ") };
            let server = fp
                .server_info
                .as_ref()
                .map(|i| {
                    let s = |k: &str| i.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
                    format!("{} {}", s("name"), s("version"))
                })
                .unwrap_or_else(|| "unknown".into());
            let caps = fp
                .capabilities
                .as_ref()
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_else(|| "unknown".into());
            let mut message = format!(
                "eras answered: {eras}; transport: {}; server: {server}; capabilities: {caps}",
                fp.transport.as_deref().unwrap_or("unknown")
            );
            if fp.auth_required {
                message.push_str("; some rungs answered 401/403 (needs authentication)");
            }
            let ladder: Vec<String> = fp.rungs.iter().map(|r| format!("{}: {}", r.step, r.verdict)).collect();
            let mut b = self.meta().finding(None).message(message).text(ladder.join("\n"));
            for x in &fp.exchanges {
                b = b.exchange(x.clone());
            }
            Outcome::Ran(vec![b.build()])
        })
    }
}
