//! AUTH-03: Authorization-server metadata weak (no S256 PKCE, issuer mismatch, non-https
//! endpoints).
//!
//! Metadata: `checks/passive/AUTH-03.toml`. At most ONE GET, to the RFC 8414 metadata of the
//! authorization server OAuth discovery found; none with `--no-follow-as`. Where that GET may
//! go is the gate's address rule ([`crate::net::scope::judge`], [`crate::net::scope::classify`]):
//! public addresses, or the target's own host; anything else is a `refused` finding and nothing
//! is sent.

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

/// The fields of the metadata AUTH-03 reads; the rest of the answer is not kept.
fn kept(key: &str) -> bool {
    key == "issuer"
        || key == "code_challenge_methods_supported"
        || key == "jwks_uri"
        || key.ends_with("_endpoint")
}

/// The exchange with its response body reduced to what the findings need: the fields AUTH-03
/// reads (their URL values without userinfo), or, for an answer that is not a JSON object,
/// its first 256 bytes.
fn reduced(mut ex: crate::finding::Exchange, body: &[u8]) -> crate::finding::Exchange {
    let Some(resp) = ex.response.as_mut() else {
        return ex;
    };
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => {
            let small: serde_json::Map<String, Value> = m
                .into_iter()
                .filter(|(k, _)| kept(k))
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => Value::String(crate::net::scope::shown_url_str(&s)),
                        other => other,
                    };
                    (k, v)
                })
                .collect();
            let text = Value::Object(small).to_string();
            resp.truncated = resp.truncated || text.len() < body.len();
            resp.body = text.chars().take(crate::net::EVIDENCE_BODY).collect();
        }
        _ => {
            let mut end = resp.body.len().min(256);
            while !resp.body.is_char_boundary(end) {
                end -= 1;
            }
            resp.truncated = resp.truncated || end < resp.body.len();
            resp.body.truncate(end);
        }
    }
    if resp.truncated {
        ex.note = Some("response body reduced to the fields AUTH-03 reads".into());
    }
    ex
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
            let shown = client.network().shown_url(&meta_url);
            let shown_issuer = client.network().shown_url(&issuer);
            let resp = match client.authorization_server_get(dns, &meta_url).await {
                Ok(r) => r,
                // Outside what mcpprobe may reach: a finding, and nothing was sent.
                Err((crate::net::NetError::AuthorizationServer { url, why }, x)) => {
                    return Outcome::Ran(vec![
                        finding(self, None)
                            .subcode("refused")
                            .message(format!("the advertised authorization server {url} was not fetched: {why}; a client that follows it could be sent there, and mcpprobe sends nothing"))
                            .exchange(x)
                            .build(),
                    ]);
                }
                Err((e, x)) => {
                    return Outcome::Ran(vec![
                        crate::checks::probe::indeterminate(self, "metadata", format_args!("the one GET to {shown} failed ({e})"), Some(x)),
                    ]);
                }
            };
            let parsed = resp.json();
            let ex = reduced(resp.exchange, &resp.body);
            let doc: Value = match (resp.status, parsed) {
                (200, Ok(v)) if v.is_object() => v,
                (status, _) if status >= 500 || status == 429 => {
                    return Outcome::Ran(vec![crate::checks::probe::indeterminate(
                        self,
                        "metadata",
                        format_args!("the one GET to {shown} answered {status}; mcpprobe sends no second one"),
                        Some(ex),
                    )]);
                }
                (status, _) => {
                    return Outcome::Ran(vec![
                        finding(self, None)
                            .subcode("metadata")
                            .confidence(crate::finding::Confidence::Low)
                            .message(format!("no RFC 8414 metadata at {shown} (answered {status}); mcpprobe sends only this one GET to the authorization server"))
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
                            Some(i) => format!("issuer is {:?}, but the metadata was fetched for {shown_issuer}: clients must not use it", crate::net::scope::shown_url_str(i)),
                            None => format!("the metadata has no issuer, but was fetched for {shown_issuer}: clients must not use it"),
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
                        plain.push(format!("{k} = {}", crate::net::scope::shown_url(&u)));
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
