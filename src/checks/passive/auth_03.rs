//! AUTH-03: Authorization-server metadata weak (no S256 PKCE, issuer mismatch, non-https
//! endpoints).
//!
//! Metadata: `checks/passive/AUTH-03.toml`. At most ONE GET, to the RFC 8414 metadata of the
//! authorization server OAuth discovery found; none with `--no-follow-as`.

use serde_json::Value;
use url::Url;

use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::rules::hosts::is_loopback;

pub struct Auth03;

pub static CHECK: Auth03 = Auth03;

/// RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path.
pub fn metadata_url(issuer: &Url) -> Option<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut u = issuer.clone();
    u.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    u.set_query(None);
    u.set_fragment(None);
    Some(u)
}

impl Check for Auth03 {
    fn id(&self) -> &'static str {
        "AUTH-03"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if cx.client.is_none() {
                return Outcome::Skipped("a stdio server has no authentication".into());
            }
            if !cx.follow_authorization_server {
                return Outcome::Skipped("--no-follow-as: no request to the authorization server".into());
            }
            let Some(oauth) = &cx.oauth else {
                return Outcome::Error("OAuth discovery did not run".into());
            };
            let Some(issuer) = oauth.authorization_server.clone() else {
                return Outcome::Skipped("no authorization server advertised (see AUTH-02)".into());
            };
            let (Some(client), Some(dns), Some(meta_url)) = (cx.client, cx.dns, metadata_url(&issuer)) else {
                return Outcome::Skipped("no HTTP client".into());
            };
            let resp = match client.network().authorization_server_get(dns, &meta_url).await {
                Ok(r) => r,
                Err((e, x)) => {
                    return Outcome::Ran(vec![
                        crate::checks::probe::indeterminate(self, "metadata", format_args!("the one GET to {meta_url} failed ({e})"), Some(x)),
                    ]);
                }
            };
            let ex = resp.exchange.clone();
            let doc: Value = match (resp.status, serde_json::from_slice::<Value>(&resp.body)) {
                (200, Ok(v)) if v.is_object() => v,
                (status, _) if status >= 500 || status == 429 => {
                    return Outcome::Ran(vec![crate::checks::probe::indeterminate(
                        self,
                        "metadata",
                        format_args!("the one GET to {meta_url} answered {status}; mcpprobe sends no second one"),
                        Some(ex),
                    )]);
                }
                (status, _) => {
                    return Outcome::Ran(vec![
                        finding(self, None)
                            .subcode("metadata")
                            .confidence(crate::finding::Confidence::Low)
                            .message(format!("no RFC 8414 metadata at {meta_url} (answered {status}); mcpprobe sends only this one GET to the authorization server"))
                            .exchange(ex)
                            .build(),
                    ]);
                }
            };
            let mut findings = Vec::new();
            let methods: Vec<&str> = doc.get("code_challenge_methods_supported").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            if !methods.contains(&"S256") {
                findings.push(finding(self, None).subcode("pkce").message(format!("code_challenge_methods_supported is [{}]: no S256 (PKCE)", methods.join(", "))).exchange(ex.clone()).build());
            }
            let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
            match doc.get("issuer").and_then(Value::as_str) {
                Some(i) if same(i, issuer.as_str()) => {}
                other => findings.push(
                    finding(self, None)
                        .subcode("issuer")
                        .message(match other {
                            // `{:?}` quotes the server's string as an escaped literal.
                            Some(i) => format!("issuer is {i:?}, but the metadata was fetched for {issuer}: clients must not use it"),
                            None => format!("the metadata has no issuer, but was fetched for {issuer}: clients must not use it"),
                        })
                        .exchange(ex.clone())
                        .build(),
                ),
            }
            let mut plain = Vec::new();
            if let Some(m) = doc.as_object() {
                for (k, v) in m {
                    if (k.ends_with("_endpoint") || k == "jwks_uri" || k == "issuer")
                        && let Some(s) = v.as_str()
                        && let Ok(u) = Url::parse(s)
                        && u.scheme() != "https"
                        && !is_loopback(&u)
                    {
                        plain.push(format!("{k} = {s}"));
                    }
                }
            }
            if !plain.is_empty() {
                findings.push(finding(self, None).subcode("plaintext").message(format!("endpoints not on https: {}", plain.join("; "))).exchange(ex).build());
            }
            Outcome::Ran(findings)
        })
    }
}
