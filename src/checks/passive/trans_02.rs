//! TRANS-02: Plaintext HTTP on a non-loopback endpoint, or TLS problems.
//!
//! Metadata: `checks/passive/TRANS-02.toml`. Sends nothing: reads the target URL, the
//! addresses the gate pinned, and what the ladder's connections reported.

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::net::NetError;

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
                findings.push(finding(self, None).subcode("plaintext").message(format!("{url} is plain http:// on an address that is not loopback")).build());
            }
            if url.scheme() == "https" {
                // By the kind of failure the client saw, never by its wording.
                let tls = cx.fingerprint.rungs.iter().find_map(|r| match &r.failure {
                    Some(NetError::Tls(why)) => Some((r, why)),
                    _ => None,
                });
                if let Some((r, why)) = tls {
                    let mut b = finding(self, None).subcode("tls").message(format!("the TLS handshake failed ({}): {why}", r.step));
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
