//! The per-target [`Client`] and its send path: the [`ToolGuard`], what a request must pass
//! before it is sent (the target's origin, the permit, the guard), and the one way a request
//! goes out ([`Network`]'s pinned HTTP client, the limiter, the caps, the recorded and traced
//! exchange).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use secrecy::ExposeSecret as _;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::limits::{limiter_keys, probe_name};
use super::{
    CLOSING_TIMEOUT, Credential, EVIDENCE_BODY, NetError, Network, Origin, Request, Response,
    Until, redact, user_agent,
};
use crate::finding::{Exchange, Message};

/// Tools that may never be called: `--exclude-tool`, and every tool annotated
/// `destructiveHint: true`. Enforced here, for every check.
#[derive(Debug, Default)]
pub struct ToolGuard {
    excluded: Mutex<std::collections::BTreeSet<String>>,
}

impl ToolGuard {
    pub fn exclude(&self, name: &str) {
        if let Ok(mut set) = self.excluded.lock() {
            set.insert(name.to_string());
        }
    }
    /// Whether `name` may be called: no exclusion (a name or a `--exclude-tool` glob) names it.
    pub fn allows(&self, name: &str) -> bool {
        self.excluded
            .lock()
            .map(|set| !set.contains(name) && !set.iter().any(|p| crate::permit::glob(p, name)))
            .unwrap_or(false)
    }
}

/// The scan's client for the target origin. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    pub(super) net: Network,
    pub(super) http: reqwest::Client,
    /// The per-host limiter keys of the target (its name and pinned addresses).
    pub(super) keys: Arc<Vec<String>>,
    pub(super) origin: Origin,
    pub(super) addrs: Vec<IpAddr>,
    /// The user's `--header`s and `--token` (as `Authorization: Bearer …`), sent as they are.
    pub(super) credentials: Arc<Vec<Credential>>,
    guard: Arc<ToolGuard>,
}

impl Client {
    pub fn network(&self) -> &Network {
        &self.net
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    pub fn guard(&self) -> &ToolGuard {
        &self.guard
    }

    /// The same client without the user's credentials (AUTH-01's anonymous view).
    pub fn without_credentials(&self) -> Client {
        Client {
            credentials: Arc::new(Vec::new()),
            ..self.clone()
        }
    }

    /// Refuses what this scan may not send: another origin, or a `tools/call` of a guarded tool.
    fn admit(&self, req: &Request) -> Result<(), NetError> {
        if Origin::of(&req.url).as_ref() != Some(&self.origin) {
            return Err(NetError::OutOfScope(req.url.to_string()));
        }
        if let Some(body) = &req.body {
            // SPEC §13: a tools/call only inside an active check's permit (the gate's token)…
            crate::permit::admit_body(body).map_err(|e| NetError::Refused(e.to_string()))?;
            // …and never of an excluded or destructive-annotated tool, whatever the permit says.
            if let Ok(msg) = serde_json::from_slice::<serde_json::Value>(body) {
                let calls = match &msg {
                    serde_json::Value::Array(batch) => batch.iter().collect(),
                    one => vec![one],
                };
                for m in calls {
                    if m.get("method").and_then(|v| v.as_str()) == Some("tools/call") {
                        let name = m
                            .pointer("/params/name")
                            .and_then(|v| v.as_str())
                            .unwrap_or("");
                        if !self.guard.allows(name) {
                            return Err(NetError::Refused(format!(
                                "tools/call of `{name}` (excluded, or annotated destructiveHint: true)"
                            )));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Sends a request to the target. Same-origin redirects are followed (at most
    /// [`MAX_REDIRECTS`](super::MAX_REDIRECTS)); a redirect to another origin is never
    /// followed: the 3xx response is returned with a note saying so.
    pub async fn send(&self, req: Request) -> Result<Response, (NetError, Exchange)> {
        self.send_until(req, None).await
    }

    /// [`Client::send`], reading the body only until `until(content_type, body_so_far)` holds
    /// (an SSE response whose stream stays open after the reply).
    pub async fn send_until(
        &self,
        req: Request,
        until: Option<&Until>,
    ) -> Result<Response, (NetError, Exchange)> {
        self.admit(&req).map_err(|e| (e, Exchange::default()))?;
        self.net.charge(&req)?;
        self.follow(req, until).await
    }

    /// Opens a long-lived GET (an SSE stream) and returns its head; the body is read by the
    /// caller within `duration`. No redirect is followed.
    pub async fn open_stream(
        &self,
        req: Request,
        duration: Duration,
    ) -> Result<OpenStream, (NetError, Exchange)> {
        self.admit(&req).map_err(|e| (e, Exchange::default()))?;
        self.net.charge(&req)?;
        let Started {
            resp,
            shown,
            started,
            ..
        } = self
            .net
            .start(&self.http, &self.keys, req, &self.credentials)
            .await?;
        let status = resp.status().as_u16();
        let headers = headers_of(&resp);
        let exchange = self.net.record(
            shown,
            status,
            &headers,
            b"",
            false,
            Some("event stream: body read separately".into()),
            started,
        );
        let body = BodyStream {
            inner: Box::pin(resp.bytes_stream()),
            deadline: Instant::now() + duration,
            limit: self.net.shared.settings.limits.max_body,
            read: 0,
            cancel: self.net.shared.cancel.clone(),
            hit_time_cap: false,
        };
        Ok(OpenStream {
            status,
            headers,
            exchange,
            body,
        })
    }

    /// The addresses this client is pinned to.
    pub fn addresses(&self) -> &[IpAddr] {
        &self.addrs
    }
}

/// The TLS configuration every client of the process shares: what reqwest builds for each
/// client by default (the platform's verifier, TLS 1.2 and 1.3, SNI, ALPN h2 then
/// http/1.1), built once. Each scan builds its clients, and building the verifier each time
/// cost 24 ms of CPU in a debug build (3 in release): a daemon starting a few hundred scans
/// spent seconds on it while the requests other scans had been let through waited behind that
/// work. `None` when it cannot be built: each client then builds its own and says why.
pub(crate) fn tls_config() -> Option<&'static rustls::ClientConfig> {
    static TLS: std::sync::LazyLock<Option<rustls::ClientConfig>> =
        std::sync::LazyLock::new(|| {
            let provider = rustls::crypto::CryptoProvider::get_default()
                .cloned()
                .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
            let verifier = rustls_platform_verifier::Verifier::new(provider.clone()).ok()?;
            let mut tls = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .ok()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth();
            tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Some(tls)
        });
    TLS.as_ref()
}

impl Network {
    /// A reqwest client that connects `host` only to `addrs`, never follows a redirect and
    /// refuses to resolve any other name.
    pub(super) fn http(&self, host: &str, addrs: &[IpAddr]) -> Result<reqwest::Client, NetError> {
        let limits = self.shared.settings.limits;
        let pinned: Vec<SocketAddr> = addrs.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
        let builder = match tls_config() {
            Some(tls) => {
                // The verifier is shared, TLS sessions are not: a client resuming another
                // scan's session would skip the certificate check this scan reports on.
                let mut tls = tls.clone();
                tls.resumption = rustls::client::Resumption::default();
                reqwest::Client::builder().tls_backend_preconfigured(tls)
            }
            None => reqwest::Client::builder(),
        };
        builder
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(limits.connect_timeout)
            .user_agent(user_agent())
            .dns_resolver(Arc::new(NoResolve))
            .resolve_to_addrs(host, &pinned)
            .pool_max_idle_per_host(4)
            .build()
            .map_err(|e| NetError::Other(format!("cannot build the HTTP client: {e}")))
    }

    /// The opt-out check's one GET (`<origin>/.well-known/mcpprobe-opt-out`), before ownership is
    /// known. Only the gate calls this; it can send nothing else.
    pub(crate) async fn opt_out_get(
        &self,
        origin_url: &Url,
        addrs: &[IpAddr],
    ) -> Result<Response, (NetError, Exchange)> {
        let origin = Origin::of(origin_url).ok_or_else(|| {
            (
                NetError::Other("the target has no host".into()),
                Exchange::default(),
            )
        })?;
        let mut url = origin_url.clone();
        url.set_path("/.well-known/mcpprobe-opt-out");
        url.set_query(None);
        url.set_fragment(None);
        let http = self
            .http(&origin.host, addrs)
            .map_err(|e| (e, Exchange::default()))?;
        let keys = limiter_keys(&origin.host, addrs);
        let limit = self.shared.settings.limits.max_body;
        self.execute(&http, &keys, Request::get(url), &[], None, limit)
            .await
    }

    /// The scan's client for the target: only for a target that passed the gate.
    pub(crate) fn client_for(
        &self,
        admission: &crate::permit::Admission,
    ) -> Result<Client, NetError> {
        let (url, addrs) = (admission.url(), admission.addresses());
        let origin =
            Origin::of(url).ok_or_else(|| NetError::Other("the target URL has no host".into()))?;
        let http = self.http(&origin.host, addrs)?;
        let settings = &self.shared.settings;
        let mut credentials: Vec<Credential> = settings.headers.clone();
        if let Some(t) = &settings.token {
            credentials.push((
                "Authorization".into(),
                format!("Bearer {}", t.expose_secret()).into(),
            ));
        }
        let keys = Arc::new(limiter_keys(&origin.host, addrs));
        Ok(Client {
            net: self.clone(),
            http,
            keys,
            origin,
            addrs: addrs.to_vec(),
            credentials: Arc::new(credentials),
            guard: Arc::new(ToolGuard::default()),
        })
    }

    /// Sends one request on `http`: waits for the rate limiter, counts it, reads the body within
    /// the caps (stopping early once `until` says the body holds what the caller waits for),
    /// records and traces the exchange (redacted).
    pub(super) async fn execute(
        &self,
        http: &reqwest::Client,
        keys: &[String],
        req: Request,
        credentials: &[Credential],
        until: Option<&Until>,
        limit: usize,
    ) -> Result<Response, (NetError, Exchange)> {
        let Started {
            resp,
            shown: shown_request,
            started,
            cap,
            probe,
        } = self.start(http, keys, req, credentials).await?;
        let deadline = started + cap;
        let status = resp.status().as_u16();
        let resp_headers = headers_of(&resp);
        let raw_headers = raw_headers_of(&resp);
        let content_type = resp_headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.clone());
        let mut body = Vec::new();
        let mut truncated = false;
        let mut note = None;
        let mut stream = BodyStream {
            inner: Box::pin(resp.bytes_stream()),
            deadline,
            limit,
            read: 0,
            cancel: self.shared.cancel.clone(),
            hit_time_cap: false,
        };
        loop {
            match stream.next_chunk().await {
                Chunk::Data(chunk) => {
                    body.extend_from_slice(&chunk);
                    if until.is_some_and(|u| u(content_type.as_deref(), &body)) {
                        break;
                    }
                }
                Chunk::End => break,
                Chunk::Stopped(why) => {
                    truncated = true;
                    note = Some(why);
                    break;
                }
                Chunk::Failed(why) => {
                    note = Some(why);
                    break;
                }
            }
        }
        if let Some(p) = &probe {
            self.record_slow(p, started.elapsed(), stream.hit_time_cap);
        }
        let exchange = self.record(
            shown_request,
            status,
            &resp_headers,
            &body,
            truncated,
            note,
            started,
        );
        Ok(Response {
            status,
            headers: resp_headers,
            raw_headers,
            body,
            truncated,
            exchange,
        })
    }

    /// Waits for the limiter, counts and sends the request; returns the response head.
    async fn start(
        &self,
        http: &reqwest::Client,
        keys: &[String],
        req: Request,
        credentials: &[Credential],
    ) -> Result<Started, (NetError, Exchange)> {
        let s = &self.shared;
        let limits = s.settings.limits;
        // A session end is still sent after an interruption or once the server proved too slow
        // (briefly); nothing else is.
        let closing = req.closing && (s.cancel.is_cancelled() || self.slow_spent());
        let not_sent = |err: NetError| {
            let exchange = Exchange {
                request: Message {
                    method: Some(req.method.to_string()),
                    url: Some(self.shown_url(&req.url)),
                    ..Message::default()
                },
                response: None,
                note: Some(err.to_string()),
            };
            (err, exchange)
        };
        if !closing && s.cancel.is_cancelled() {
            return Err(not_sent(NetError::Interrupted));
        }
        // No request gets more time than what is left of the slow-server budget.
        let time_cap = if closing {
            CLOSING_TIMEOUT
        } else {
            match self.slow_window(limits.response_timeout) {
                Some(cap) => cap,
                None => return Err(not_sent(NetError::SlowServer(self.slow_summary()))),
            }
        };
        let probe = (!closing).then(|| probe_name(&req));
        let wait = async {
            s.limiter.until_ready().await;
            s.politeness.wait(keys).await;
        };
        if closing {
            if tokio::time::timeout(CLOSING_TIMEOUT, wait).await.is_err() {
                return Err(not_sent(NetError::Timeout(CLOSING_TIMEOUT)));
            }
        } else {
            tokio::select! {
                () = wait => {}
                () = s.cancel.cancelled() => return Err(not_sent(NetError::Interrupted)),
            }
        }
        s.sent.fetch_add(1, Ordering::SeqCst);
        let mut headers = req.headers.clone();
        headers.push(("traceparent".into(), self.traceparent()));
        let mut builder = http.request(req.method.clone(), req.url.clone());
        for (n, v) in &headers {
            builder = builder.header(n.as_str(), v.as_str());
        }
        // What is shown of the request: every header through the redaction set, in the order
        // sent; the credentials are exposed only to be sent and redacted.
        let mut shown: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| s.secrets.header(n, v))
            .collect();
        for (n, v) in credentials {
            builder = builder.header(n.as_str(), v.expose_secret());
            shown.push(s.secrets.header(n, v.expose_secret()));
        }
        for (n, v) in &req.raw_headers {
            match reqwest::header::HeaderValue::from_bytes(v) {
                Ok(value) => builder = builder.header(n.as_str(), value),
                Err(_) => {
                    return Err(not_sent(NetError::Refused(format!(
                        "the {n} value {} cannot be sent as an HTTP header",
                        escape_header(v)
                    ))));
                }
            }
            shown.push(s.secrets.header(n, &escape_header(v)));
        }
        if let Some(body) = &req.body {
            builder = builder.body(body.clone());
        }
        let shown_request = Message {
            method: Some(req.method.to_string()),
            url: Some(self.shown_url(&req.url)),
            status: None,
            headers: shown,
            body: cap(&s.secrets.redact(&String::from_utf8_lossy(
                req.body.as_deref().unwrap_or_default(),
            )))
            .0,
            truncated: req.body.as_ref().is_some_and(|b| b.len() > EVIDENCE_BODY),
        };
        let started = Instant::now();
        let sent = tokio::select! {
            r = tokio::time::timeout(time_cap, builder.send()) => Some(r),
            () = s.cancel.cancelled(), if !closing => None,
        };
        let err = match sent {
            None => NetError::Interrupted,
            Some(Ok(Ok(r))) => {
                return Ok(Started {
                    resp: r,
                    shown: shown_request,
                    started,
                    cap: time_cap,
                    probe,
                });
            }
            Some(Err(_)) => NetError::Timeout(time_cap),
            Some(Ok(Err(e))) if is_tls(&e) => NetError::Tls(root_cause(&e)),
            Some(Ok(Err(e))) if e.is_connect() => NetError::Connect(root_cause(&e)),
            Some(Ok(Err(e))) if e.is_timeout() => NetError::Timeout(limits.connect_timeout),
            Some(Ok(Err(e))) => NetError::Other(root_cause(&e)),
        };
        if let Some(p) = &probe {
            let capped = matches!(err, NetError::Timeout(_));
            self.record_slow(p, started.elapsed(), capped);
        }
        let exchange = Exchange {
            request: shown_request,
            response: None,
            note: Some(err.to_string()),
        };
        self.trace(&exchange, started);
        Err((err, exchange))
    }
    /// The shown (redacted, capped) exchange of a response, also written to the trace.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        request: Message,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
        truncated: bool,
        note: Option<String>,
        started: Instant,
    ) -> Exchange {
        let s = &self.shared;
        // Only the start of the body is shown: redact just that (plus room for a secret that
        // straddles the cut), never a copy of a whole 8 MiB body.
        let room = EVIDENCE_BODY + s.secrets.longest() + 4;
        let (shown_body, cut) = cap(&s
            .secrets
            .redact(&String::from_utf8_lossy(&body[..body.len().min(room)])));
        let cut = cut || body.len() > room;
        let exchange = Exchange {
            request,
            response: Some(Message {
                method: None,
                url: None,
                status: Some(status),
                headers: headers
                    .iter()
                    .map(|(n, v)| s.secrets.header(n, v))
                    .collect(),
                body: shown_body,
                truncated: truncated || cut,
            }),
            note,
        };
        self.trace(&exchange, started);
        exchange
    }

    fn trace(&self, exchange: &Exchange, started: Instant) {
        if let Some(file) = &self.shared.trace {
            let line = json!({
                "trace_id": self.shared.trace_id,
                "elapsed_ms": started.elapsed().as_millis() as u64,
                "request": exchange.request,
                "response": exchange.response,
                "note": exchange.note,
            });
            // The exchange is redacted already; the note and URL may quote the server too.
            let mut line = line;
            let secrets = &self.shared.secrets;
            redact::redact_value(&mut line, &|s| secrets.redact(s));
            file.line(line.to_string());
        }
    }
}

/// A request whose response head arrived.
struct Started {
    resp: reqwest::Response,
    shown: Message,
    started: Instant,
    /// The time this request may take in all (the response timeout, or less of the
    /// slow-server budget).
    cap: Duration,
    /// How the slow-server budget names this request (none for a session end).
    probe: Option<String>,
}

fn headers_of(resp: &reqwest::Response) -> Vec<(String, String)> {
    resp.headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), escape_header(v.as_bytes())))
        .collect()
}

fn raw_headers_of(resp: &reqwest::Response) -> Vec<(String, Vec<u8>)> {
    resp.headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
        .collect()
}

/// A header value as it may be shown: printable ASCII as is, every other byte (and the
/// backslash, so that a literal `\x41` cannot pass for an escape) as `\xNN`.
pub fn escape_header(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// A rustls error somewhere in the source chain (tokio-rustls hands it over inside an
/// `io::Error`, itself inside another; `io::Error::source()` skips what it wraps, so each
/// wrapper is opened).
fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        cur = match err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}

/// One step of reading a body.
pub enum Chunk {
    Data(bytes::Bytes),
    End,
    /// Stopped at a cap (time or bytes); the reason.
    Stopped(String),
    Failed(String),
}

/// A response body read within a deadline and a byte budget.
pub struct BodyStream {
    inner:
        std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    deadline: Instant,
    limit: usize,
    read: usize,
    cancel: CancellationToken,
    /// The read stopped at the time cap.
    pub hit_time_cap: bool,
}

impl BodyStream {
    pub async fn next_chunk(&mut self) -> Chunk {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        let next = tokio::select! {
            n = tokio::time::timeout(remaining, self.inner.next()) => n,
            () = self.cancel.cancelled() => {
                return Chunk::Stopped("stopped reading: the scan was interrupted".into());
            }
        };
        match next {
            Err(_) => {
                self.hit_time_cap = true;
                Chunk::Stopped("stopped reading at the time cap".into())
            }
            Ok(None) => Chunk::End,
            Ok(Some(Err(e))) => Chunk::Failed(format!("body read failed: {}", root_cause(&e))),
            Ok(Some(Ok(chunk))) => {
                let room = self.limit.saturating_sub(self.read);
                if chunk.len() > room {
                    self.read = self.limit;
                    if room == 0 {
                        return Chunk::Stopped(format!("body cut at the {} byte cap", self.limit));
                    }
                    return Chunk::Data(chunk.slice(..room));
                }
                self.read += chunk.len();
                Chunk::Data(chunk)
            }
        }
    }
}

/// An open event stream (the legacy HTTP+SSE transport's GET): its head, its evidence, and the
/// body to read on, bounded by `duration` and the body cap.
pub struct OpenStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub exchange: Exchange,
    pub body: BodyStream,
}

fn cap(s: &str) -> (String, bool) {
    if s.len() <= EVIDENCE_BODY {
        return (s.to_string(), false);
    }
    let mut end = EVIDENCE_BODY;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (s[..end].to_string(), true)
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cur: &dyn std::error::Error = e;
    let mut msg = e.to_string();
    while let Some(next) = cur.source() {
        msg = next.to_string();
        cur = next;
    }
    msg
}

/// reqwest's resolver for anything not pinned: refuses. mcpprobe never lets the HTTP stack
/// look up a name on its own (DNS rebinding of the scanner is not possible).
struct NoResolve;

impl reqwest::dns::Resolve for NoResolve {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        Box::pin(async move {
            Err(format!("mcpprobe resolves names itself; {name} is not pinned").into())
        })
    }
}
