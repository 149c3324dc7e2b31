//! The one outbound path. Every request mcpprobe sends goes through [`Network`] and the
//! [`Client`] it hands out, which enforce the scope (the target's origin, plus at most one GET
//! to an advertised authorization server), the rate limit, timeouts and size caps, count the
//! requests, stamp `User-Agent` and `traceparent`, redact secrets, and write the trace file.
//!
//! A [`Client`] that can reach the target is only obtainable from a [`crate::gate::Owned`]:
//! the opt-out check and the ownership proof come first by construction.

mod client;
pub(crate) use client::tls_config;
pub mod dns;
mod limits;
pub mod politeness;
pub mod redact;
mod redirect;
pub mod scope;
pub mod trace;

pub use client::{BodyStream, Chunk, Client, OpenStream, ToolGuard, escape_header};
pub use limits::{
    Budget, BudgetUse, DEFAULT_RATE, Limits, MAX_RATE, RateError, SLOW_REQUEST, with_body_limit,
    with_budget,
};
pub use politeness::{Lease, Politeness};
pub use redirect::{AS_MAX_BODY, MAX_REDIRECTS};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, RateLimiter};
use secrecy::{ExposeSecret as _, SecretString};
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::finding::Exchange;
use limits::Slow;
use redact::Secrets;

/// Bytes of a body kept as evidence in a finding (the caller gets up to [`Limits::max_body`]).
pub const EVIDENCE_BODY: usize = 4096;

pub fn user_agent() -> String {
    format!("mcpprobe/{}", env!("CARGO_PKG_VERSION"))
}

/// Settings of one scan's network. Its `Debug` never shows the token or header values.
#[derive(Clone)]
pub struct Settings {
    pub rate: u32,
    pub limits: Limits,
    /// `--token` / `MCPPROBE_TOKEN`: sent as `Authorization: Bearer …` by credentialed clients.
    pub token: Option<SecretString>,
    /// `--header NAME: VALUE`, sent by credentialed clients.
    pub headers: Vec<(String, SecretString)>,
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
        let quota = limits::quota(settings.rate)?;
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
                .map(|t| redact::Source::Token(t.expose_secret().to_string())),
        );
        sources.extend(
            settings
                .headers
                .iter()
                .map(|(name, value)| redact::Source::Header {
                    name: name.clone(),
                    value: value.expose_secret().to_string(),
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

    /// A URL as evidence and traces show it: userinfo and the user's secrets redacted.
    pub fn shown_url(&self, url: &Url) -> String {
        self.shared.secrets.redact(&scope::shown_url(url))
    }
}
