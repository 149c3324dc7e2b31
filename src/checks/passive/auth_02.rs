//! AUTH-02: Protected-resource metadata (RFC 9728) missing or wrong.
//!
//! Metadata: `checks/passive/AUTH-02.toml`. Only for a server that asks for credentials (a
//! 401/403 on some rung, or on the anonymous handshake). Reports on what the OAuth discovery
//! stage ([`crate::checks::oauth`]) found: the `WWW-Authenticate` challenge and the metadata
//! named there or at the well-known paths (same origin only).

use serde_json::Value;
use url::Url;

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::{Confidence, Severity};

pub struct Auth02;

pub static CHECK: Auth02 = Auth02;

fn same_resource(doc: &str, target: &Url) -> bool {
    let strip = |s: &str| s.trim_end_matches('/').to_string();
    Url::parse(doc).is_ok_and(|u| strip(u.as_str()) == strip(target.as_str()))
}

impl Check for Auth02 {
    fn id(&self) -> &'static str {
        "AUTH-02"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(_), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no authentication".into());
            };
            let Some(d) = &cx.oauth else {
                return Outcome::Error("OAuth discovery did not run".into());
            };
            let Some(challenge) = &d.challenge else {
                if let Some((why, x)) = &d.unanswered {
                    return Outcome::Ran(vec![
                        finding(self, None)
                            .subcode("challenge/indeterminate")
                            .severity(Severity::Info)
                            .confidence(Confidence::Low)
                            .message(format!("indeterminate: the handshake without credentials got no usable answer ({why}), so whether the server asks for OAuth credentials is not known"))
                            .exchange(x.clone())
                            .build(),
                    ]);
                }
                return Outcome::Skipped("the server did not answer 401 or 403: it does not ask for OAuth credentials".into());
            };
            let mut findings = Vec::new();
            if challenge.resource_metadata.is_none() {
                let mut b = finding(self, None).subcode("challenge").message(match &challenge.www_authenticate {
                    Some(v) => format!("{} with `WWW-Authenticate: {}` but no `Bearer resource_metadata=…`", challenge.status, v.chars().take(200).collect::<String>()),
                    None => format!("{} without a WWW-Authenticate header", challenge.status),
                });
                if let Some(x) = &challenge.exchange {
                    b = b.exchange(x.clone());
                }
                findings.push(b.build());
            }
            let Some((doc, doc_exchange)) = &d.document else {
                let mut b = if d.document_unanswered {
                    finding(self, None)
                        .subcode("document/indeterminate")
                        .severity(Severity::Info)
                        .confidence(Confidence::Low)
                        .message("indeterminate: the protected-resource metadata could not be fetched (no usable answer at the well-known paths)")
                } else {
                    finding(self, None).subcode("document").message(format!(
                        "no protected-resource metadata document at {}",
                        d.tried.iter().filter_map(|x| x.request.url.clone()).collect::<Vec<_>>().join(" or ")
                    ))
                };
                for x in &d.tried {
                    b = b.exchange(x.clone());
                }
                findings.push(b.build());
                return Outcome::Ran(findings);
            };
            match doc.get("resource").and_then(Value::as_str) {
                Some(r) if same_resource(r, url) => {}
                Some(r) => findings.push(
                    finding(self, None)
                        .subcode("resource")
                        .message(format!("`resource` is {r:?}, not this server ({url})"))
                        .exchange(doc_exchange.clone())
                        .build(),
                ),
                None => findings.push(finding(self, None).subcode("resource").message("the metadata has no `resource`").exchange(doc_exchange.clone()).build()),
            }
            if d.authorization_server.is_none() {
                findings.push(
                    finding(self, None).subcode("authorization-servers").message("the metadata lists no `authorization_servers`").exchange(doc_exchange.clone()).build(),
                );
            }
            Outcome::Ran(findings)
        })
    }
}
