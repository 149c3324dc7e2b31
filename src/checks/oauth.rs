//! OAuth discovery, a pipeline stage: the challenge a server answers without credentials
//! (401 or 403, `WWW-Authenticate`), its protected-resource metadata (RFC 9728) and the
//! authorization server that document names. AUTH-02 reports on what was found, AUTH-03 follows
//! the authorization server; neither depends on the other having run.

use serde_json::Value;
use url::Url;

use super::Live;
use super::probe::handshake;
use crate::finding::Exchange;
use crate::net::Request;

/// A 401/403 answer to a request without credentials.
#[derive(Debug, Clone)]
pub struct Challenge {
    pub status: u16,
    /// The refused request carried no credentials (so it also answers AUTH-01's question).
    pub anonymous: bool,
    pub www_authenticate: Option<String>,
    /// `resource_metadata="…"` of a `Bearer` challenge.
    pub resource_metadata: Option<String>,
    pub exchange: Option<Exchange>,
}

/// What OAuth discovery learned.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// The challenge, when the server asks for credentials.
    pub challenge: Option<Challenge>,
    /// The anonymous handshake got no usable answer: whether the server asks for credentials is
    /// not known (AUTH-02 is then indeterminate, not a pass).
    pub unanswered: Option<(String, Exchange)>,
    /// The protected-resource metadata document and the exchange that fetched it.
    pub document: Option<(Value, Exchange)>,
    /// The metadata URLs tried without a usable document.
    pub tried: Vec<Exchange>,
    /// Whether every metadata fetch failed in transport or with 5xx/429 (no usable answer),
    /// rather than a clear 404.
    pub document_unanswered: bool,
    /// The first authorization server the document names.
    pub authorization_server: Option<Url>,
}

impl Discovery {
    /// The server advertises OAuth: its protected-resource metadata was found (RFC 9728).
    pub fn advertised(&self) -> bool {
        self.document.is_some()
    }
}

/// `resource_metadata="…"` from a `WWW-Authenticate: Bearer …` header.
pub fn resource_metadata(header: &str) -> Option<String> {
    let lower = header.to_ascii_lowercase();
    let i = lower.find("resource_metadata=")? + "resource_metadata=".len();
    let rest = header.get(i..)?;
    let value = match rest.strip_prefix('"') {
        Some(q) => q.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_string())
}

fn challenge_of(
    status: u16,
    anonymous: bool,
    headers: &[(String, String)],
    exchange: Option<Exchange>,
) -> Challenge {
    let www = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, v)| v.clone());
    Challenge {
        status,
        anonymous,
        resource_metadata: www.as_deref().and_then(resource_metadata),
        www_authenticate: www,
        exchange,
    }
}

/// Runs discovery: the 401/403 a rung of the ladder saw, else (when the user passed
/// credentials) one anonymous handshake; then the metadata named in the challenge or at the two
/// well-known paths (same origin only, at most two GETs).
pub async fn discover(cx: &Live<'_>) -> Discovery {
    let mut d = Discovery::default();
    let (Some(client), Some(url)) = (cx.client, cx.url) else {
        return d;
    };
    // A challenge is a 401, or a 403 that says it is one (`WWW-Authenticate`), to a POST rung
    // of the ladder (a refused legacy GET says nothing about OAuth).
    let is_challenge = |status: Option<u16>, headers: &[(String, String)]| match status {
        Some(401) => true,
        Some(403) => headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("www-authenticate")),
        _ => false,
    };
    let seen = cx
        .fingerprint
        .rungs
        .iter()
        .filter(|r| !r.step.starts_with("GET "))
        .find(|r| is_challenge(r.status, &r.headers))
        .map(|r| {
            // The ladder sends the user's credentials when there are any.
            challenge_of(
                r.status.unwrap_or(401),
                !cx.credentialed,
                &r.headers,
                r.exchange.clone(),
            )
        });
    d.challenge = match seen {
        Some(c) => Some(c),
        None if cx.credentialed => match handshake(cx, &[], true).await {
            Some(c) if is_challenge(c.status, &c.headers) => Some(challenge_of(
                c.status.unwrap_or(401),
                true,
                &c.headers,
                Some(c.exchange.clone()),
            )),
            Some(c) if c.error.is_some() || c.status.is_some_and(|s| s >= 500 || s == 429) => {
                let why = c
                    .error
                    .clone()
                    .or(c.status.map(|s| format!("answered {s}")))
                    .unwrap_or_default();
                d.unanswered = Some((why, c.exchange.clone()));
                None
            }
            _ => None,
        },
        None => None,
    };
    let Some(challenge) = &d.challenge else {
        return d;
    };
    let mut candidates: Vec<Url> = Vec::new();
    if let Some(n) = challenge
        .resource_metadata
        .as_deref()
        .and_then(|n| url.join(n).ok())
        && crate::net::Origin::of(&n).as_ref() == Some(client.origin())
    {
        candidates.push(n);
    }
    let path = url.path().trim_end_matches('/');
    for p in [
        format!("/.well-known/oauth-protected-resource{path}"),
        "/.well-known/oauth-protected-resource".to_string(),
    ] {
        if let Ok(u) = url.join(&p)
            && !candidates.contains(&u)
        {
            candidates.push(u);
        }
    }
    let mut clear_answers = 0;
    for u in candidates.into_iter().take(2) {
        match client.without_credentials().send(Request::get(u)).await {
            Ok(r) if r.status == 200 => {
                if let Ok(v) = r.json() {
                    d.document = Some((v, r.exchange));
                    break;
                }
                clear_answers += 1;
                d.tried.push(r.exchange);
            }
            Ok(r) => {
                if r.status < 500 && r.status != 429 {
                    clear_answers += 1;
                }
                d.tried.push(r.exchange);
            }
            Err((_, x)) => d.tried.push(x),
        }
    }
    d.document_unanswered = d.document.is_none() && clear_answers == 0;
    if let Some((doc, _)) = &d.document {
        d.authorization_server = doc
            .get("authorization_servers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|s| Url::parse(s).ok());
    }
    d
}
