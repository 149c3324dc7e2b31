//! The one outbound path. Every request mcpprobe sends goes through [`Network`] and the
//! [`Client`] it hands out, which enforce the scope (the target's origin, plus at most one GET
//! to an advertised authorization server), the rate limit, timeouts and size caps, count the
//! requests, stamp `User-Agent` and `traceparent`, redact secrets, and write the trace file.
//!
//! A [`Client`] that can reach the target is only obtainable from a [`crate::gate::Owned`]:
//! the opt-out check and the ownership proof come first by construction.

pub mod dns;
pub mod politeness;
pub mod redact;
pub mod scope;
pub mod trace;

pub use politeness::{Lease, Politeness};

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::finding::{Exchange, Message};
use redact::Secrets;

/// The highest `--rate` accepted (SPEC §7).
pub const MAX_RATE: u32 = 10;
/// The default `--rate`.
pub const DEFAULT_RATE: u32 = 5;
/// Bytes of a body kept as evidence in a finding (the caller gets up to [`Limits::max_body`]).
pub const EVIDENCE_BODY: usize = 4096;
/// Same-origin redirects followed before giving up (loops are never followed).
pub const MAX_REDIRECTS: usize = 3;
/// Bytes read of the authorization server's metadata (an RFC 8414 document is small).
pub const AS_MAX_BODY: usize = 64 * 1024;
/// What a request may take for free: beyond it, its time counts against the scan's
/// slow-server budget (a request stopped at a time cap counts whole).
pub const SLOW_REQUEST: Duration = Duration::from_secs(1);

pub fn user_agent() -> String {
    format!("mcpprobe/{}", env!("CARGO_PKG_VERSION"))
}

/// Caps on time and size for everything a server sends.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// From sending a request to the end of its body (or of the time we read an open stream).
    pub response_timeout: Duration,
    pub max_body: usize,
    /// The scan-wide slow-server budget (SPEC §10): the time slow requests may take together
    /// (what each took beyond [`SLOW_REQUEST`]; all of it when it hit a time cap or timed
    /// out). No request
    /// is given more than what is left of it; once it is spent, requests fail fast.
    pub slow_budget: Duration,
    /// Requests stopped at a time cap (or timed out) before the budget counts as spent.
    pub max_capped: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(10),
            max_body: 8 * 1024 * 1024,
            slow_budget: Duration::from_secs(15),
            max_capped: 3,
        }
    }
}

/// Settings of one scan's network. Its `Debug` never shows the token or header values.
#[derive(Clone)]
pub struct Settings {
    pub rate: u32,
    pub limits: Limits,
    /// `--token` / `MCPPROBE_TOKEN`: sent as `Authorization: Bearer …` by credentialed clients.
    pub token: Option<String>,
    /// `--header NAME: VALUE`, sent by credentialed clients.
    pub headers: Vec<(String, String)>,
    pub trace_file: Option<std::path::PathBuf>,
    /// Every other secret of the scan (SPEC §7): with `token` and `headers`, the one
    /// redaction set of every exchange, trace line and report.
    pub secrets: Vec<redact::Source>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("rate", &self.rate)
            .field("limits", &self.limits)
            .field("token", &self.token.as_ref().map(|_| "redacted"))
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("trace_file", &self.trace_file)
            .field("secrets", &self.secrets)
            .finish()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rate: DEFAULT_RATE,
            limits: Limits::default(),
            token: None,
            headers: Vec::new(),
            trace_file: None,
            secrets: Vec::new(),
        }
    }
}

/// A header the user gave (`--header`, `--token`): its name, and its value held as a secret.
type Credential = (String, SecretString);

/// An early stop for a streamed body: `until(content_type, body_so_far)`.
pub type Until = dyn Fn(Option<&str>, &[u8]) -> bool + Sync;

/// Why a request was not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    #[error("refused by mcpprobe: {0} is outside this scan's scope")]
    OutOfScope(String),
    #[error("refused by mcpprobe: {0}")]
    Refused(String),
    #[error("timed out after {} s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("could not connect: {0}")]
    Connect(String),
    /// The TLS handshake failed (a rustls error in the source chain): a certificate the
    /// platform does not trust, a protocol mismatch, or no TLS at all on the port.
    #[error("the TLS handshake failed: {0}")]
    Tls(String),
    #[error("not sent: the scan was interrupted")]
    Interrupted,
    #[error("refused by mcpprobe: {check} already sent its budget of {budget} requests")]
    OverBudget { check: &'static str, budget: u32 },
    /// The advertised authorization server is outside what mcpprobe may reach (SPEC §7).
    #[error("refused by mcpprobe: {url} is not fetched: {why}")]
    AuthorizationServer { url: String, why: scope::AsRefusal },
    /// The scan's slow-server budget is spent: nothing more is sent to this server.
    #[error("not sent: the server is too slow ({0})")]
    SlowServer(String),
    #[error("{0}")]
    Other(String),
}

/// A request to send.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: reqwest::Method,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    /// Headers whose values are sent byte for byte (a session id echoed back as the server
    /// sent it, which need not be UTF-8).
    pub raw_headers: Vec<(String, Vec<u8>)>,
    pub body: Option<Vec<u8>>,
    /// A request that ends a session (a 2025 `DELETE`): still sent after the scan was
    /// interrupted, within [`CLOSING_TIMEOUT`], so that an interrupted scan leaves no session open.
    pub closing: bool,
}

/// How long a session-ending request may take once the scan was interrupted.
pub const CLOSING_TIMEOUT: Duration = Duration::from_secs(2);

impl Request {
    pub fn get(url: Url) -> Request {
        Request {
            method: reqwest::Method::GET,
            url,
            headers: Vec::new(),
            raw_headers: Vec::new(),
            body: None,
            closing: false,
        }
    }
    pub fn post_json(url: Url, body: &serde_json::Value) -> Request {
        Request {
            method: reqwest::Method::POST,
            url,
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                (
                    "Accept".into(),
                    "application/json, text/event-stream".into(),
                ),
            ],
            raw_headers: Vec::new(),
            body: Some(body.to_string().into_bytes()),
            closing: false,
        }
    }
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.raw_headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    /// [`Request::header`] with a value sent exactly as these bytes.
    pub fn header_bytes(mut self, name: &str, value: &[u8]) -> Request {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.raw_headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.raw_headers.push((name.to_string(), value.to_vec()));
        self
    }
}

/// What came back, with its evidence already redacted.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// The headers as they may be shown: bytes outside printable ASCII escaped as `\xNN`.
    pub headers: Vec<(String, String)>,
    /// The header values exactly as the server sent them (a session id is echoed back so).
    pub raw_headers: Vec<(String, Vec<u8>)>,
    /// The body, up to [`Limits::max_body`] (as the server sent it: callers parse it).
    pub body: Vec<u8>,
    /// The body was cut at the size cap or the time cap.
    pub truncated: bool,
    /// The request and response as they may be shown (redacted, capped).
    pub exchange: Exchange,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn header_bytes(&self, name: &str) -> Option<&[u8]> {
        self.raw_headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON. A body cut at a cap is never parsed: it cannot be whole, and parsing
    /// megabytes of it would build most of a tree before failing.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        if self.truncated {
            return Err("the body was cut at a cap".into());
        }
        serde_json::from_slice(&self.body).map_err(|e| e.to_string())
    }
}

/// The scheme, host and port a scan may talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

impl Origin {
    pub fn of(url: &Url) -> Option<Origin> {
        Some(Origin {
            scheme: url.scheme().to_string(),
            host: url.host_str()?.trim_end_matches('.').to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// A rate outside 1..=[`MAX_RATE`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a rate of {0} requests per second is refused: mcpprobe sends 1 to {MAX_RATE} per second")]
pub struct RateError(pub u32);

fn quota(rate: u32) -> Result<Quota, RateError> {
    let r = NonZeroU32::new(rate)
        .filter(|r| r.get() <= MAX_RATE)
        .ok_or(RateError(rate))?;
    // governor's default burst equals the rate; SPEC §7 wants requests spaced evenly.
    Ok(Quota::per_second(r).allow_burst(NonZeroU32::MIN))
}

tokio::task_local! {
    /// The request budget of the check that is running (SPEC §3: each check's budget, from its
    /// catalogue entry, is enforced here for every client and session it uses).
    static BUDGET: Arc<Budget>;
}

tokio::task_local! {
    /// A lower body cap for the requests of one future (the inventory's byte budget: a page
    /// that would pass it is never read whole).
    static BODY_LIMIT: usize;
}

/// Runs `f` with response bodies capped at `limit` bytes (never above [`Limits::max_body`]).
pub async fn with_body_limit<F: std::future::Future>(limit: usize, f: F) -> F::Output {
    BODY_LIMIT.scope(limit, f).await
}

/// What a check may send, and what it sent.
#[derive(Debug)]
pub struct Budget {
    check: &'static str,
    limit: u32,
    used: std::sync::atomic::AtomicU32,
    refused: AtomicBool,
}

impl Budget {
    fn take(&self) -> Result<(), NetError> {
        let used = self.used.fetch_add(1, Ordering::SeqCst) + 1;
        if used > self.limit {
            self.used.fetch_sub(1, Ordering::SeqCst);
            self.refused.store(true, Ordering::SeqCst);
            return Err(NetError::OverBudget {
                check: self.check,
                budget: self.limit,
            });
        }
        Ok(())
    }
}

/// What a budgeted future sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetUse {
    pub sent: u32,
    /// A request was refused because the budget was spent.
    pub exceeded: bool,
}

/// Runs `f` with a budget of `limit` requests for `check`: a request beyond it is refused.
pub async fn with_budget<F: std::future::Future>(
    check: &'static str,
    limit: u32,
    f: F,
) -> (F::Output, BudgetUse) {
    let budget = Arc::new(Budget {
        check,
        limit,
        used: std::sync::atomic::AtomicU32::new(0),
        refused: AtomicBool::new(false),
    });
    let out = BUDGET.scope(budget.clone(), f).await;
    let used = BudgetUse {
        sent: budget.used.load(Ordering::SeqCst),
        exceeded: budget.refused.load(Ordering::SeqCst),
    };
    (out, used)
}

/// The keys of the per-host limiter for a request to `host` pinned to `addrs`.
fn limiter_keys(host: &str, addrs: &[IpAddr]) -> Vec<String> {
    let mut keys = vec![format!(
        "name:{}",
        host.trim_end_matches('.').to_ascii_lowercase()
    )];
    keys.extend(addrs.iter().map(|a| format!("addr:{a}")));
    keys.sort();
    keys.dedup();
    keys
}

/// What every client of one scan shares: the rate limiters, the request counter, the trace,
/// the cancellation.
struct Shared {
    settings: Settings,
    /// This scan's own rate (it may be lower than the process's per-host rate).
    limiter: DefaultDirectRateLimiter,
    /// This scan's hold on the process's per-host limiter (its rate counts for its hosts).
    politeness: Lease,
    cancel: CancellationToken,
    sent: AtomicU64,
    trace_id: String,
    secrets: Secrets,
    trace: Option<trace::Trace>,
    /// The one GET to an authorization server this scan may send.
    as_permit: AtomicBool,
    slow: Slow,
}

/// The scan-wide slow-server budget: what slow requests spent, and the probe that spent it.
#[derive(Debug, Default)]
struct Slow {
    spent_ms: AtomicU64,
    capped: AtomicU32,
    exhausted: AtomicBool,
    /// The slow probes, in order (the first few), for the report.
    probes: Mutex<Vec<String>>,
}

/// One scan's network: settings, limiter, counter, trace. Cheap to clone.
#[derive(Clone)]
pub struct Network {
    shared: Arc<Shared>,
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // getrandom failing means the OS has no entropy source; a trace id is not a secret, so a
    // clock-derived fallback keeps the scan going.
    if getrandom::fill(&mut buf).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (nanos >> ((i % 16) * 8)) as u8 ^ (i as u8);
        }
    }
    hex::encode(buf)
}

/// Why a scan's network could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error(transparent)]
    Rate(#[from] RateError),
    #[error("cannot write the trace file {path}: {source}")]
    TraceFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl Network {
    /// Validates the settings (`rate` 1..=10) and opens the trace file. Every request also
    /// waits on `politeness` (the process's per-host limiter) and fails fast once `cancel` fires.
    pub fn new(
        settings: Settings,
        politeness: Arc<Politeness>,
        cancel: CancellationToken,
    ) -> Result<Network, NetworkError> {
        let quota = quota(settings.rate)?;
        let trace = match &settings.trace_file {
            Some(path) => {
                Some(
                    trace::Trace::create(path).map_err(|source| NetworkError::TraceFile {
                        path: path.clone(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        let mut sources = settings.secrets.clone();
        sources.extend(
            settings
                .token
                .iter()
                .map(|t| redact::Source::Token(t.clone())),
        );
        sources.extend(
            settings
                .headers
                .iter()
                .map(|(name, value)| redact::Source::Header {
                    name: name.clone(),
                    value: value.clone(),
                }),
        );
        let secrets = Secrets::from_sources(&sources);
        Ok(Network {
            shared: Arc::new(Shared {
                limiter: RateLimiter::direct(quota),
                politeness: politeness.lease(settings.rate)?,
                cancel,
                sent: AtomicU64::new(0),
                trace_id: random_hex(16),
                secrets,
                trace,
                as_permit: AtomicBool::new(true),
                slow: Slow::default(),
                settings,
            }),
        })
    }

    /// Charges one request to the budget of the check that is running (a logical request: its
    /// redirect hops are not charged again; a session end is never refused for budget).
    #[allow(clippy::result_large_err)] // the error type of every send, as the callers return it
    fn charge(&self, req: &Request) -> Result<(), (NetError, Exchange)> {
        if req.closing {
            return Ok(());
        }
        match BUDGET.try_with(|b| b.take()) {
            Ok(Err(e)) => Err((
                e,
                Exchange {
                    request: Message {
                        method: Some(req.method.to_string()),
                        url: Some(self.shown_url(&req.url)),
                        ..Message::default()
                    },
                    response: None,
                    note: Some("not sent: over the check's request budget".into()),
                },
            )),
            _ => Ok(()),
        }
    }

    /// The scan was interrupted: requests (but session ends) are no longer sent.
    pub fn cancelled(&self) -> &CancellationToken {
        &self.shared.cancel
    }

    /// Writes a line to the trace file (a stdio server's stderr, say).
    /// The line is redacted first (stderr is the server's own text).
    pub fn trace_line(&self, line: &serde_json::Value) {
        if let Some(file) = &self.shared.trace {
            let mut line = line.clone();
            let secrets = &self.shared.secrets;
            redact::redact_value(&mut line, &|s| secrets.redact(s));
            file.line(line.to_string());
        }
    }

    /// Waits until the trace file holds every line queued so far; the first error writing it,
    /// if any (a host says it once: the engine puts it in the report's warnings).
    pub async fn sync_trace(&self) -> Option<String> {
        match &self.shared.trace {
            Some(t) => t.sync().await,
            None => None,
        }
    }

    pub fn requests_sent(&self) -> u64 {
        self.shared.sent.load(Ordering::SeqCst)
    }

    pub fn trace_id(&self) -> &str {
        &self.shared.trace_id
    }

    pub fn secrets(&self) -> &Secrets {
        &self.shared.secrets
    }

    /// A W3C `traceparent`: this scan's trace id and a fresh span id.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.shared.trace_id, random_hex(8))
    }

    /// A reqwest client that connects `host` only to `addrs`, never follows a redirect and
    /// refuses to resolve any other name.
    fn http(&self, host: &str, addrs: &[IpAddr]) -> Result<reqwest::Client, NetError> {
        let limits = self.shared.settings.limits;
        let pinned: Vec<SocketAddr> = addrs.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
        reqwest::Client::builder()
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
        let mut credentials: Vec<Credential> = settings
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), SecretString::from(v.as_str())))
            .collect();
        if let Some(t) = &settings.token {
            credentials.push(("Authorization".into(), format!("Bearer {t}").into()));
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
    async fn execute(
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

    /// The body cap of a request sent now: [`Limits::max_body`], or less within
    /// [`with_body_limit`].
    fn body_limit(&self) -> usize {
        let max = self.shared.settings.limits.max_body;
        BODY_LIMIT.try_with(|l| (*l).min(max)).unwrap_or(max)
    }

    /// A URL as evidence and traces show it: userinfo and the user's secrets redacted.
    pub fn shown_url(&self, url: &Url) -> String {
        self.shared.secrets.redact(&scope::shown_url(url))
    }

    /// What is left of the slow-server budget for one wait of at most `want`; `None` once the
    /// budget is spent (nothing more should wait on this server).
    pub fn slow_window(&self, want: Duration) -> Option<Duration> {
        let s = &self.shared;
        if s.slow.exhausted.load(Ordering::SeqCst) {
            return None;
        }
        let spent = Duration::from_millis(s.slow.spent_ms.load(Ordering::SeqCst));
        let left = s.settings.limits.slow_budget.saturating_sub(spent);
        if left.is_zero() {
            return None;
        }
        Some(want.min(left))
    }

    /// Counts a wait of `elapsed` for `probe` against the slow-server budget (`capped`: it was
    /// stopped at its time cap or timed out, and counts whole). Otherwise only what it took
    /// beyond [`SLOW_REQUEST`] counts: a server that answers in 1.2 s is not dripping.
    pub fn record_slow(&self, probe: &str, elapsed: Duration, capped: bool) {
        if !capped && elapsed <= SLOW_REQUEST {
            return;
        }
        let s = &self.shared;
        let counted = if capped {
            elapsed
        } else {
            elapsed - SLOW_REQUEST
        };
        let ms = u64::try_from(counted.as_millis()).unwrap_or(u64::MAX);
        let spent = s
            .slow
            .spent_ms
            .fetch_add(ms, Ordering::SeqCst)
            .saturating_add(ms);
        let capped_n = if capped {
            s.slow.capped.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            s.slow.capped.load(Ordering::SeqCst)
        };
        if let Ok(mut probes) = s.slow.probes.lock()
            && probes.len() < 4
        {
            probes.push(format!(
                "{probe}: {:.1} s{}",
                elapsed.as_secs_f64(),
                if capped {
                    ", stopped at the time cap"
                } else {
                    ""
                }
            ));
        }
        let budget_ms =
            u64::try_from(s.settings.limits.slow_budget.as_millis()).unwrap_or(u64::MAX);
        if capped_n >= s.settings.limits.max_capped || spent >= budget_ms {
            s.slow.exhausted.store(true, Ordering::SeqCst);
        }
    }

    fn slow_spent(&self) -> bool {
        self.shared.slow.exhausted.load(Ordering::SeqCst)
    }

    fn slow_summary(&self) -> String {
        let s = &self.shared.slow;
        let probes = s.probes.lock().map(|p| p.join("; ")).unwrap_or_default();
        format!(
            "{} slow requests took {:.1} s of the scan's {} s slow-server budget; slow probes: {probes}",
            s.capped.load(Ordering::SeqCst),
            s.spent_ms.load(Ordering::SeqCst) as f64 / 1000.0,
            self.shared.settings.limits.slow_budget.as_secs()
        )
    }

    /// Why the scan stopped sending to this server, once its slow-server budget is spent
    /// (the scan is then incomplete).
    pub fn slow_stop(&self) -> Option<String> {
        self.slow_spent().then(|| {
            format!(
                "the server is too slow: {}; the requests after that were not sent",
                self.slow_summary()
            )
        })
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

/// How the slow-server budget names a request: its JSON-RPC method, HTTP method and path, and
/// the check that sent it.
fn probe_name(req: &Request) -> String {
    let rpc = req
        .body
        .as_deref()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string));
    let check = BUDGET.try_with(|b| b.check).ok();
    let mut name = format!("{} {}", req.method, req.url.path());
    if let Some(m) = rpc {
        name = format!("{m} ({name})");
    }
    if let Some(c) = check {
        name = format!("{c}: {name}");
    }
    name
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
    net: Network,
    http: reqwest::Client,
    /// The per-host limiter keys of the target (its name and pinned addresses).
    keys: Arc<Vec<String>>,
    origin: Origin,
    addrs: Vec<IpAddr>,
    /// The user's `--header`s and `--token` (as `Authorization: Bearer …`), sent as they are.
    credentials: Arc<Vec<Credential>>,
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
    /// [`MAX_REDIRECTS`]); a redirect to another origin is never followed: the 3xx response is
    /// returned with a note saying so.
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
