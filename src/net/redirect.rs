//! The redirect policy: same-origin redirects followed (at most [`MAX_REDIRECTS`]), never one
//! to another origin, never a loop, never the replay of a `tools/call` or `resources/read`;
//! and the one GET a scan may send outside the target's origin, to the authorization server
//! the target advertises.

use std::net::IpAddr;
use std::sync::atomic::Ordering;

use url::Url;

use super::limits::limiter_keys;
use super::{Client, NetError, Origin, Request, Response, Until, dns, scope};
use crate::finding::{Exchange, Message};

/// Same-origin redirects followed before giving up (loops are never followed).
pub const MAX_REDIRECTS: usize = 3;
/// Bytes read of the authorization server's metadata (an RFC 8414 document is small).
pub const AS_MAX_BODY: usize = 64 * 1024;

impl Client {
    /// Sends `req` (admitted and charged already), following its same-origin redirects. A
    /// redirect to another origin, a loop, or the redirect of a `tools/call` or
    /// `resources/read` is not followed (the 3xx response is returned with a note saying so);
    /// more than [`MAX_REDIRECTS`] hops fail.
    pub(super) async fn follow(
        &self,
        req: Request,
        until: Option<&Until>,
    ) -> Result<Response, (NetError, Exchange)> {
        let mut req = req;
        let mut visited = vec![req.url.clone()];
        for _ in 0..=MAX_REDIRECTS {
            let mut resp = self
                .net
                .execute(
                    &self.http,
                    &self.keys,
                    req.clone(),
                    &self.credentials,
                    until,
                    self.net.body_limit(),
                )
                .await?;
            if !(300..400).contains(&resp.status) {
                return Ok(resp);
            }
            let Some(location) = resp.header("location").and_then(|l| req.url.join(l).ok()) else {
                return Ok(resp);
            };
            if Origin::of(&location).as_ref() != Some(&self.origin) {
                resp.exchange.note = Some(format!(
                    "redirect to another origin not followed: {}",
                    self.net.shown_url(&location)
                ));
                return Ok(resp);
            }
            // A loop (a URL already visited) is not followed either: each hop is a request.
            if visited.contains(&location) {
                resp.exchange.note = Some(format!(
                    "redirect loop not followed: {}",
                    self.net.shown_url(&location)
                ));
                return Ok(resp);
            }
            // A tool call (or a resource read) is sent once: its permit admitted and counted
            // one request, and a redirect must not replay it elsewhere.
            if req.body.as_deref().is_some_and(crate::permit::names_a_call) {
                resp.exchange.note = Some(format!(
                    "redirect of a tools/call or resources/read not followed: {}",
                    self.net.shown_url(&location)
                ));
                return Ok(resp);
            }
            visited.push(location.clone());
            // 303, and 301/302 after POST, become GET without a body (as browsers do).
            if resp.status == 303
                || (req.method == reqwest::Method::POST && matches!(resp.status, 301 | 302))
            {
                req.method = reqwest::Method::GET;
                req.body = None;
            }
            req.url = location;
        }
        Err((
            NetError::Other(format!("more than {MAX_REDIRECTS} redirects")),
            Exchange::default(),
        ))
    }

    /// The one GET this scan may send outside the target's origin: to the authorization server
    /// the target advertises (AUTH-03). Only a client that passed the gate has it. https only
    /// (http when the target itself is loopback); the addresses the name resolves to (and the
    /// request is pinned to) must be public ([`scope::classify`], the gate's rule) or the
    /// target's own host (a private target's authorization server may be that same host, no
    /// other address of its network). A refused URL is
    /// [`NetError::AuthorizationServer`], and nothing is sent. Userinfo in the URL is never
    /// sent nor shown; no redirect is followed; the body is read up to [`AS_MAX_BODY`]. A
    /// second call is refused.
    pub async fn authorization_server_get(
        &self,
        dns: &dns::Dns,
        url: &Url,
    ) -> Result<Response, (NetError, Exchange)> {
        let shown = self.net.shown_url(url);
        let not_sent = |err: NetError| {
            let exchange = Exchange {
                request: Message {
                    method: Some("GET".into()),
                    url: Some(shown.clone()),
                    ..Message::default()
                },
                response: None,
                note: Some(format!("not sent: {err}")),
            };
            (err, exchange)
        };
        let refused = |why: scope::AsRefusal| {
            not_sent(NetError::AuthorizationServer {
                url: shown.clone(),
                why,
            })
        };
        if !self.net.shared.as_permit.swap(false, Ordering::SeqCst) {
            return Err(not_sent(NetError::Refused(
                "the one authorization-server GET of this scan was already sent".into(),
            )));
        }
        // The scheme first: a plain-http URL of a remote target needs no lookup to be refused.
        scope::judge(url, &[], &self.addrs).map_err(refused)?;
        let host = url.host_str().unwrap_or_default().to_string();
        let addrs = match url.host() {
            Some(url::Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
            Some(url::Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
            _ => dns.addresses(&host).await.map_err(|e| {
                not_sent(NetError::Connect(format!(
                    "cannot resolve {}: {e}",
                    self.net.secrets().redact(&host)
                )))
            })?,
        };
        scope::judge(url, &addrs, &self.addrs).map_err(refused)?;
        let mut clean = url.clone();
        let _ = clean.set_password(None);
        let _ = clean.set_username("");
        let http = self.net.http(&host, &addrs).map_err(not_sent)?;
        let req = Request::get(clean);
        self.net.charge(&req)?;
        let keys = limiter_keys(&host, &addrs);
        self.net
            .execute(&http, &keys, req, &[], None, AS_MAX_BODY)
            .await
    }
}
