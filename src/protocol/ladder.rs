//! The fingerprint ladder (SPEC §2; protocol-notes §9): `server/discover` (2026-07-28), then
//! `initialize` at 2025-11-25 and 2025-06-18, then the legacy HTTP+SSE `endpoint` event at the
//! URL and at `/sse`. Every rung is tried and kept as evidence; a server may answer several.
//! 401/403 means "needs auth, era unknown", never an era.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use url::Url;

use super::rpc::{self, LEGACY_SSE, MODERN, Reply, V2025_06, V2025_11};
use super::session::{Call, Session, open_legacy, post_message};
use super::stdio::StdioProcess;
use crate::finding::Exchange;
use crate::net::Client;

/// How long to wait for the first event of a legacy SSE stream.
pub const SSE_FIRST_EVENT: Duration = Duration::from_secs(3);
/// The same wait once a Streamable HTTP era answered: a 2025 server opens a silent GET stream
/// at its URL, which is no reason to wait seconds (SPEC §10); a legacy server sends its
/// `endpoint` event at once.
pub const SSE_FIRST_EVENT_KNOWN: Duration = Duration::from_millis(150);
/// How long a stdio server gets to answer `server/discover` before it counts as legacy.
pub const STDIO_DISCOVER: Duration = Duration::from_secs(5);

/// One rung of the ladder as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Rung {
    pub step: String,
    pub status: Option<u16>,
    pub verdict: String,
    #[serde(skip)]
    pub exchange: Option<Exchange>,
    /// The response headers (for checks that read them: CORS, WWW-Authenticate, session ids).
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
    /// Why the request got no HTTP answer (TRANS-02 reads TLS failures here, by kind).
    #[serde(skip)]
    pub failure: Option<crate::net::NetError>,
}

/// What the ladder learned.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fingerprint {
    /// The protocol versions the server answered, newest first.
    pub eras: Vec<String>,
    pub transport: Option<String>,
    pub server_info: Option<Value>,
    pub capabilities: Option<Value>,
    /// `supportedVersions` from `server/discover`.
    pub supported_versions: Vec<String>,
    pub instructions: Option<String>,
    /// A 401/403 was seen on a rung: the server needs credentials (era unknown if nothing else
    /// answered).
    pub auth_required: bool,
    pub rungs: Vec<Rung>,
    #[serde(skip)]
    pub exchanges: Vec<Exchange>,
    /// Session ids minted by the 2025 handshakes (samples for SESS-01), byte for byte.
    #[serde(skip)]
    pub session_ids: Vec<Vec<u8>>,
    /// Why the endpoint is not MCP (no rung answered and no 401/403).
    pub not_mcp: Option<String>,
    /// The target could not be reached at all.
    pub unreachable: Option<String>,
}

fn describe(call: &Call) -> String {
    if let Some(e) = &call.error {
        return e.clone();
    }
    let status = call
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "no status".into());
    match &call.reply {
        Some(Reply::Error { code, message, .. }) => format!(
            "{status}, JSON-RPC error {code}: {}",
            message.chars().take(160).collect::<String>()
        ),
        Some(Reply::Result(_)) => format!("{status}, a JSON-RPC result"),
        None => {
            let mut ct = call
                .content_type
                .clone()
                .unwrap_or_else(|| "no content type".into());
            // mcpprobe decodes no content coding (a gzip bomb is never inflated): say so rather
            // than leave compressed bytes to pass for a body that is not JSON-RPC.
            if let Some(c) = call
                .header("content-encoding")
                .filter(|c| !c.trim().eq_ignore_ascii_case("identity"))
            {
                let c: String = c.chars().take(40).collect();
                ct = format!("{ct}; Content-Encoding {c}, not decoded");
            }
            let body: String = String::from_utf8_lossy(&call.body)
                .chars()
                .take(80)
                .collect();
            format!("{status} ({ct}), not JSON-RPC: {body:?}")
        }
    }
}

fn auth(call: &Call) -> bool {
    matches!(call.status, Some(401 | 403))
}

impl Fingerprint {
    fn rung(&mut self, step: &str, call: &Call, verdict: String) {
        let exchange = call
            .exchange
            .request
            .method
            .is_some()
            .then(|| call.exchange.clone());
        self.rungs.push(Rung {
            step: step.to_string(),
            status: call.status,
            verdict,
            exchange,
            headers: call.headers.clone(),
            failure: call.failure.clone(),
        });
        if call.exchange.request.method.is_some() {
            self.exchanges.push(call.exchange.clone());
        }
        if auth(call) {
            self.auth_required = true;
        }
    }

    fn era(&mut self, era: &str) {
        if !self.eras.iter().any(|e| e == era) {
            self.eras.push(era.to_string());
        }
        let order = [MODERN, V2025_11, V2025_06, LEGACY_SSE];
        self.eras
            .sort_by_key(|e| order.iter().position(|o| o == e).unwrap_or(order.len()));
    }

    /// Server info, capabilities and instructions from the first rung that has them.
    fn learn(&mut self, result: &Value, modern: bool) {
        let info = if modern {
            result
                .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                .cloned()
        } else {
            result.get("serverInfo").cloned()
        };
        if self.server_info.is_none() {
            self.server_info = info;
        }
        if self.capabilities.is_none() {
            self.capabilities = result.get("capabilities").cloned();
        }
        if self.instructions.is_none() {
            self.instructions = result
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }

    /// Reads a `server/discover` answer: a result with `supportedVersions`, or -32022 naming
    /// 2026-07-28 among the versions it supports, means the server speaks it.
    fn discovered(&mut self, call: &Call) -> bool {
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        match &call.reply {
            Some(Reply::Result(r)) if r.get("supportedVersions").is_some_and(Value::is_array) => {
                self.supported_versions = strings(r.get("supportedVersions"));
                self.learn(r, true);
                true
            }
            Some(Reply::Error {
                code: -32022, data, ..
            }) => {
                let supported = strings(data.as_ref().and_then(|d| d.get("supported")));
                // A bare -32022 is still a 2026 answer (stdio rule); with a list, trust the list.
                let modern = supported.is_empty() || supported.iter().any(|v| v == MODERN);
                self.supported_versions = supported;
                modern
            }
            _ => false,
        }
    }

    fn conclude(&mut self, first: &Call) {
        let streamable = self.eras.iter().any(|e| e != LEGACY_SSE);
        self.transport = if streamable {
            Some("streamable-http".into())
        } else if !self.eras.is_empty() {
            Some("http+sse".into())
        } else {
            None
        };
        if self.eras.is_empty() && !self.auth_required {
            if first.status.is_none() {
                self.unreachable = Some(describe(first));
            } else {
                self.not_mcp = Some(format!(
                    "no rung of the ladder answered as MCP (server/discover: {})",
                    describe(first)
                ));
            }
        }
    }
}

/// The `initialize` request of a 2025 era.
fn initialize_params(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": rpc::client_info()})
}

/// Runs the ladder against an HTTP endpoint. Returns the fingerprint and the sessions it
/// opened, the one to use for the inventory first (modern, then the newest 2025 era, then
/// legacy SSE). Every returned session must be closed.
pub async fn http(client: &Client, url: &Url) -> (Fingerprint, Vec<Session>) {
    let mut fp = Fingerprint::default();
    let mut sessions = Vec::new();
    let discover = discover_rung(client, url, &mut fp, &mut sessions).await;
    initialize_rungs(client, url, &mut fp, &mut sessions).await;
    legacy_rungs(client, url, &mut fp, &mut sessions).await;
    fp.conclude(&discover);
    (fp, sessions)
}

/// Rung 1, `server/discover` (2026-07-28): a server that speaks it gets its era and a modern
/// session. Returns the call (the ladder's conclusion quotes it when nothing answered).
async fn discover_rung(
    client: &Client,
    url: &Url,
    fp: &mut Fingerprint,
    sessions: &mut Vec<Session>,
) -> Call {
    let tp = client.network().traceparent();
    let msg = rpc::request(1, "server/discover", json!({}), rpc::modern_meta(&tp));
    let headers = [
        ("MCP-Protocol-Version", MODERN.to_string()),
        ("Mcp-Method", "server/discover".to_string()),
    ];
    let discover = post_message(client, url, &msg, 1, &headers).await;
    let modern = fp.discovered(&discover);
    let verdict = if modern {
        format!("answers {MODERN}: {}", describe(&discover))
    } else if auth(&discover) {
        "needs authentication: era unknown".to_string()
    } else {
        format!("not {MODERN}: {}", describe(&discover))
    };
    fp.rung("server/discover", &discover, verdict);
    if modern {
        fp.era(MODERN);
        sessions.push(Session::modern(client.clone(), url.clone()));
    }
    discover
}

/// Rung 2, `initialize` at 2025-11-25, then at 2025-06-18 (when the first answered 2025-11-25,
/// or gave no 2025 answer without asking for authentication): each known era answered for the
/// first time gets a session (initialized); an extra session in an era already seen is ended.
async fn initialize_rungs(
    client: &Client,
    url: &Url,
    fp: &mut Fingerprint,
    sessions: &mut Vec<Session>,
) {
    let mut asked = vec![V2025_11];
    let mut i = 0;
    while i < asked.len() {
        let version = asked[i];
        i += 1;
        let msg = rpc::request(
            2 + i as u64,
            "initialize",
            initialize_params(version),
            json!({"traceparent": client.network().traceparent()}),
        );
        let call = post_message(client, url, &msg, 2 + i as u64, &[]).await;
        let answered = call
            .result()
            .and_then(|r| r.get("protocolVersion"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let step = format!("initialize {version}");
        match &answered {
            Some(v) => {
                if let Some(r) = call.result() {
                    fp.learn(r, false);
                }
                let sid = call.session_id();
                if let Some(s) = &sid {
                    fp.session_ids.push(s.clone());
                }
                fp.rung(
                    &step,
                    &call,
                    format!(
                        "answers {v}{}",
                        if sid.is_some() {
                            " with a session id"
                        } else {
                            ""
                        }
                    ),
                );
                let known = [V2025_11, V2025_06].contains(&v.as_str());
                if known && !fp.eras.contains(v) {
                    fp.era(v);
                    let session = Session::streamable(client.clone(), url.clone(), v, sid);
                    let _ = session.notify("notifications/initialized").await;
                    sessions.push(session);
                } else if let Some(s) = sid {
                    // An answer in an era already seen (or unknown): end that extra session.
                    let _ = Session::streamable(client.clone(), url.clone(), v, Some(s))
                        .close()
                        .await;
                }
                if version == V2025_11 && v == V2025_11 {
                    asked.push(V2025_06);
                }
            }
            None => {
                let verdict = if auth(&call) {
                    "needs authentication: era unknown".to_string()
                } else {
                    format!("no 2025 answer: {}", describe(&call))
                };
                fp.rung(&step, &call, verdict);
                if version == V2025_11 && !auth(&call) {
                    asked.push(V2025_06);
                }
            }
        }
    }
}

/// Rung 3, the legacy HTTP+SSE transport: the `endpoint` event at the URL, then at
/// `<origin>/sse` (waiting briefly once a Streamable HTTP era answered). The first stream that
/// sends it becomes the legacy session, after its handshake.
async fn legacy_rungs(
    client: &Client,
    url: &Url,
    fp: &mut Fingerprint,
    sessions: &mut Vec<Session>,
) {
    let mut candidates = vec![url.clone()];
    if url.path() != "/sse"
        && let Ok(sse) = url.join("/sse")
    {
        candidates.push(sse);
    }
    for candidate in candidates {
        let wait = if fp.eras.is_empty() {
            SSE_FIRST_EVENT
        } else {
            SSE_FIRST_EVENT_KNOWN
        };
        let (call, legacy) = open_legacy(client, &candidate, wait).await;
        let step = format!("GET {} (text/event-stream)", candidate.path());
        match legacy {
            Some(session) => {
                fp.rung(
                    &step,
                    &call,
                    format!(
                        "answers the legacy HTTP+SSE transport ({LEGACY_SSE}): an endpoint event"
                    ),
                );
                fp.era(LEGACY_SSE);
                legacy_handshake(&session, fp).await;
                sessions.push(session);
                break;
            }
            None => {
                let verdict = call
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("no endpoint event: {}", describe(&call)));
                fp.rung(&step, &call, verdict);
            }
        }
    }
}

/// The legacy transport's `initialize` (2024-11-05) over its SSE stream, kept as a rung, and
/// `notifications/initialized` when it was answered.
async fn legacy_handshake(session: &Session, fp: &mut Fingerprint) {
    // The legacy transport still has the 2024-11-05 handshake.
    let init = session
        .call("initialize", initialize_params(LEGACY_SSE))
        .await;
    match init.result() {
        Some(r) => {
            fp.learn(r, false);
            let v = r
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            fp.rung(
                &format!("initialize {LEGACY_SSE} (over the SSE stream)"),
                &init,
                format!("answers {v}"),
            );
            let _ = session.notify("notifications/initialized").await;
        }
        None => fp.rung(
            &format!("initialize {LEGACY_SSE} (over the SSE stream)"),
            &init,
            format!("no answer: {}", describe(&init)),
        ),
    }
}

/// The ladder over stdio: `server/discover` first (a reply or -32022 means modern; any other
/// error, or silence, means legacy), then `initialize` (which a dual-era server also answers).
pub async fn stdio(process: StdioProcess) -> (Fingerprint, Session) {
    let mut fp = Fingerprint {
        transport: Some("stdio".into()),
        ..Fingerprint::default()
    };
    let session = Session::stdio(process);
    let discover = session
        .call_within("server/discover", json!({}), STDIO_DISCOVER)
        .await;
    let modern = fp.discovered(&discover);
    fp.rung(
        "server/discover",
        &discover,
        if modern {
            format!("answers {MODERN}")
        } else {
            format!("not {MODERN}: {}", describe(&discover))
        },
    );
    if modern {
        fp.era(MODERN);
    }
    session.set_stdio_version(Some(V2025_11.into()));
    let init = session
        .call("initialize", initialize_params(V2025_11))
        .await;
    match init
        .result()
        .and_then(|r| r.get("protocolVersion"))
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        Some(v) => {
            if let Some(r) = init.result() {
                fp.learn(r, false);
            }
            fp.rung(
                &format!("initialize {V2025_11}"),
                &init,
                format!("answers {v}"),
            );
            fp.era(&v);
            let _ = session.notify("notifications/initialized").await;
            session.set_stdio_version(if modern { None } else { Some(v) });
        }
        None => {
            fp.rung(
                &format!("initialize {V2025_11}"),
                &init,
                format!("no 2025 answer: {}", describe(&init)),
            );
            session.set_stdio_version(None);
        }
    }
    if fp.eras.is_empty() {
        fp.not_mcp = Some(format!(
            "the process answered neither server/discover nor initialize ({})",
            describe(&init)
        ));
    }
    (fp, session)
}
