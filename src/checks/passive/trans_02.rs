//! TRANS-02: Plaintext HTTP on a non-loopback endpoint, or TLS problems.
//!
//! Metadata: `checks/passive/TRANS-02.toml`. Sends nothing: reads the target URL, the
//! addresses the gate pinned, and what the ladder's connections reported.

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};

pub struct Trans02;

pub static CHECK: Trans02 = Trans02;

impl Check for Trans02 {
    fn id(&self) -> &'static str {
        "TRANS-02"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(url) = cx.url else {
                return Outcome::Skipped("a stdio server has no network transport".into());
            };
            let mut findings = Vec::new();
            if url.scheme() == "http" && !cx.loopback {
                findings.push(finding(self, None).message(format!("{url} is plain http:// on an address that is not loopback")).build());
            }
            if url.scheme() == "https" {
                let tls = cx.fingerprint.rungs.iter().find(|r| {
                    r.status.is_none() && ["certificate", "tls", "handshake", "UnknownIssuer"].iter().any(|w| r.verdict.to_lowercase().contains(&w.to_lowercase()))
                });
                if let Some(r) = tls {
                    let mut b = finding(self, None).message(format!("the TLS handshake failed: {}", r.verdict));
                    if let Some(x) = r.exchange.clone() {
                        b = b.exchange(x);
                    }
                    findings.push(b.build());
                }
            }
            Outcome::Ran(findings)
        })
    }
}
