//! AUTH-02: Protected-resource metadata (RFC 9728) missing or wrong.
//!
//! Metadata: `checks/passive/AUTH-02.toml`. Only for a server that asks for credentials (a
//! 401/403 on some rung, or on the anonymous handshake). Reads `WWW-Authenticate`, then GETs the
//! metadata named there or at the well-known paths (same origin only).

use serde_json::Value;
use url::Url;

use crate::checks::probe::handshake;
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::Exchange;
use crate::net::Request;

pub struct Auth02;

pub static CHECK: Auth02 = Auth02;

/// `resource_metadata="…"` from a `WWW-Authenticate: Bearer …` header.
fn resource_metadata(header: &str) -> Option<String> {
    let lower = header.to_ascii_lowercase();
    let i = lower.find("resource_metadata=")? + "resource_metadata=".len();
    let rest = &header[i..];
    let value = match rest.strip_prefix('"') {
        Some(q) => q.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_string())
}

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
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio server has no authentication".into());
            };
            // A 401 the ladder saw, or one an anonymous handshake gets.
            let seen = cx.fingerprint.rungs.iter().find(|r| r.status == Some(401)).map(|r| (r.headers.clone(), r.exchange.clone()));
            let challenge = match seen {
                Some(c) => Some(c),
                None if cx.credentialed => handshake(cx, &[], true)
                    .await
                    .filter(|c| c.status == Some(401))
                    .map(|c| (c.headers.clone(), Some(c.exchange.clone()))),
                None => None,
            };
            let Some((headers, exchange)) = challenge else {
                return Outcome::Skipped("the server did not answer 401: it does not ask for OAuth credentials".into());
            };
            let mut findings = Vec::new();
            let www = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("www-authenticate")).map(|(_, v)| v.clone());
            let named = www.as_deref().and_then(resource_metadata);
            if named.is_none() {
                let mut b = finding(self, None).message(match &www {
                    Some(v) => format!("401 with `WWW-Authenticate: {}` but no `Bearer resource_metadata=…`", v.chars().take(200).collect::<String>()),
                    None => "401 without a WWW-Authenticate header".to_string(),
                });
                if let Some(x) = exchange {
                    b = b.exchange(x);
                }
                findings.push(b.build());
            }
            // Where to look: the URL named in the challenge (on this origin), else the two
            // well-known paths of RFC 9728.
            let mut candidates: Vec<Url> = Vec::new();
            if let Some(n) = named.as_deref().and_then(|n| url.join(n).ok())
                && crate::net::Origin::of(&n).as_ref() == Some(client.origin()) {
                    candidates.push(n);
                }
            let path = url.path().trim_end_matches('/');
            for p in [format!("/.well-known/oauth-protected-resource{path}"), "/.well-known/oauth-protected-resource".to_string()] {
                if let Ok(u) = url.join(&p)
                    && !candidates.contains(&u) {
                        candidates.push(u);
                    }
            }
            let mut document: Option<(Value, Exchange)> = None;
            let mut tried: Vec<Exchange> = Vec::new();
            for u in candidates.into_iter().take(2) {
                match client.without_credentials().send(Request::get(u)).await {
                    Ok(r) if r.status == 200 => {
                        if let Ok(v) = serde_json::from_slice::<Value>(&r.body) {
                            document = Some((v, r.exchange));
                            break;
                        }
                        tried.push(r.exchange);
                    }
                    Ok(r) => tried.push(r.exchange),
                    Err((_, x)) => tried.push(x),
                }
            }
            let Some((doc, doc_exchange)) = document else {
                let mut b = finding(self, None).message("no protected-resource metadata document at the well-known paths");
                for x in tried {
                    b = b.exchange(x);
                }
                findings.push(b.build());
                return Outcome::Ran(findings);
            };
            match doc.get("resource").and_then(Value::as_str) {
                Some(r) if same_resource(r, url) => {}
                Some(r) => findings.push(
                    finding(self, None)
                        .message(format!("`resource` is {r:?}, not this server ({url})"))
                        .exchange(doc_exchange.clone())
                        .build(),
                ),
                None => findings.push(finding(self, None).message("the metadata has no `resource`").exchange(doc_exchange.clone()).build()),
            }
            let servers: Vec<String> = doc
                .get("authorization_servers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            match servers.first().and_then(|s| Url::parse(s).ok()) {
                Some(a) => cx.memo.borrow_mut().authorization_server = Some(a),
                None => findings.push(
                    finding(self, None).message("the metadata lists no `authorization_servers`").exchange(doc_exchange).build(),
                ),
            }
            Outcome::Ran(findings)
        })
    }
}
