//! Talking MCP in the era a server answered: stateless 2026-07-28 requests (`_meta`,
//! `Mcp-Method`/`Mcp-Name`), 2025 sessions (`Mcp-Session-Id`, `MCP-Protocol-Version`, `DELETE`
//! at the end), the legacy HTTP+SSE transport (POST to the announced endpoint, replies on the
//! stream) and stdio (newline-delimited JSON-RPC to a process mcpprobe started).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use url::Url;

use super::rpc::{self, MODERN, Reply};
use super::sse::SseParser;
use super::stdio::StdioProcess;
use crate::finding::{Exchange, Message};
use crate::net::{Chunk, Client, Request};

/// How long a reply may take on the legacy stream or stdio.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// The result of one call, with everything the report may need.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub reply: Option<Reply>,
    /// HTTP status (none for stdio and for a transport failure).
    pub status: Option<u16>,
    /// The headers as they may be shown (see [`crate::net::Response::headers`]).
    pub headers: Vec<(String, String)>,
    /// The header values as the server sent them, byte for byte.
    pub raw_headers: Vec<(String, Vec<u8>)>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub exchange: Exchange,
    /// A transport failure (timeout, refused connection, no reply).
    pub error: Option<String>,
    /// The network error behind `error`, when the request got no HTTP answer.
    pub failure: Option<crate::net::NetError>,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// A header value exactly as the server sent it (a session id to echo back).
    pub fn header_bytes(&self, name: &str) -> Option<&[u8]> {
        self.raw_headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    /// The `Mcp-Session-Id` the server minted, byte for byte.
    pub fn session_id(&self) -> Option<Vec<u8>> {
        self.header_bytes("mcp-session-id").map(<[u8]>::to_vec)
    }
    pub fn result(&self) -> Option<&Value> {
        self.reply.as_ref().and_then(Reply::result)
    }
    fn failed(exchange: Exchange, error: crate::net::NetError) -> Call {
        Call {
            exchange,
            error: Some(error.to_string()),
            failure: Some(error),
            ..Call::default()
        }
    }
    fn answered(r: crate::net::Response) -> Call {
        let content_type = r.header("content-type").map(str::to_string);
        Call {
            status: Some(r.status),
            headers: r.headers,
            raw_headers: r.raw_headers,
            content_type,
            body: r.body,
            exchange: r.exchange,
            ..Call::default()
        }
    }
}

/// The task that reads a legacy SSE stream; dropping it (a session dropped without `close`,
/// an interrupted scan) stops it.
#[derive(Debug)]
pub struct Reader(tokio::task::JoinHandle<()>);

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Which dialect a session speaks.
#[derive(Debug)]
pub enum Dialect {
    /// 2026-07-28: stateless, `_meta` on every request.
    Modern,
    /// 2025-11-25 or 2025-06-18 Streamable HTTP, after `initialize`.
    Streamable {
        version: String,
        /// As the server sent it: echoed back byte for byte (it need not be UTF-8).
        session_id: Option<Vec<u8>>,
    },
    /// The 2024-11-05 HTTP+SSE transport: POST to `endpoint`, replies on the stream.
    LegacySse {
        endpoint: Url,
        replies: tokio::sync::Mutex<mpsc::Receiver<Value>>,
        task: Reader,
    },
    /// A process mcpprobe started.
    Stdio {
        process: Box<tokio::sync::Mutex<StdioProcess>>,
        version: Mutex<Option<String>>,
    },
}

pub struct Session {
    pub(crate) client: Option<Client>,
    pub url: Option<Url>,
    pub dialect: Dialect,
    next_id: AtomicU64,
}

/// `Mcp-Name` for the methods that name something (2026-07-28).
fn mcp_name(method: &str, params: &Value) -> Option<String> {
    match method {
        "tools/call" | "prompts/get" => params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string),
        "resources/read" => params
            .get("uri")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

impl Session {
    pub fn modern(client: Client, url: Url) -> Session {
        Session {
            client: Some(client),
            url: Some(url),
            dialect: Dialect::Modern,
            next_id: AtomicU64::new(100),
        }
    }

    pub fn streamable(
        client: Client,
        url: Url,
        version: &str,
        session_id: Option<Vec<u8>>,
    ) -> Session {
        Session {
            client: Some(client),
            url: Some(url),
            dialect: Dialect::Streamable {
                version: version.to_string(),
                session_id,
            },
            next_id: AtomicU64::new(100),
        }
    }

    pub fn stdio(process: StdioProcess) -> Session {
        Session {
            client: None,
            url: None,
            dialect: Dialect::Stdio {
                process: Box::new(tokio::sync::Mutex::new(process)),
                version: Mutex::new(None),
            },
            next_id: AtomicU64::new(1),
        }
    }

    pub fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }

    /// The era this session speaks, as the report names it.
    pub fn era(&self) -> String {
        match &self.dialect {
            Dialect::Modern => MODERN.into(),
            Dialect::Streamable { version, .. } => version.clone(),
            Dialect::LegacySse { .. } => rpc::LEGACY_SSE.into(),
            Dialect::Stdio { version, .. } => version
                .lock()
                .ok()
                .and_then(|v| v.clone())
                .unwrap_or_else(|| MODERN.into()),
        }
    }

    /// Sets the negotiated version of a stdio session (after `initialize`), or `None` for modern.
    pub fn set_stdio_version(&self, v: Option<String>) {
        if let Dialect::Stdio { version, .. } = &self.dialect
            && let Ok(mut slot) = version.lock()
        {
            *slot = v;
        }
    }

    fn traceparent(&self) -> String {
        self.client
            .as_ref()
            .map(|c| c.network().traceparent())
            .unwrap_or_else(|| "00-00000000000000000000000000000001-0000000000000001-01".into())
    }

    /// Sends a request in this session's dialect and waits for its reply.
    pub async fn call(&self, method: &str, params: Value) -> Call {
        self.call_within(method, params, REPLY_TIMEOUT).await
    }

    /// [`Session::call`] with another reply timeout on stdio (HTTP keeps the client's caps).
    pub async fn call_within(&self, method: &str, params: Value, timeout: Duration) -> Call {
        let id = self.id();
        let modern = match &self.dialect {
            Dialect::Modern => true,
            Dialect::Stdio { version, .. } => version.lock().map(|v| v.is_none()).unwrap_or(true),
            _ => false,
        };
        let meta = if modern {
            rpc::modern_meta(&self.traceparent())
        } else {
            json!({"traceparent": self.traceparent()})
        };
        let name = mcp_name(method, &params);
        let msg = rpc::request(id, method, params, meta);
        match &self.dialect {
            Dialect::Modern | Dialect::Streamable { .. } => {
                let mut headers = self.headers(method);
                if let (Dialect::Modern, Some(n)) = (&self.dialect, name) {
                    headers.push(("Mcp-Name", n));
                }
                self.post(&msg, id, &headers).await
            }
            Dialect::LegacySse {
                endpoint, replies, ..
            } => self.legacy_call(endpoint, replies, &msg, id).await,
            Dialect::Stdio { process, .. } => {
                let mut p = process.lock().await;
                p.call(&msg, id, timeout).await
            }
        }
    }

    /// The HTTP headers this session sends with every request (era; the session id is
    /// [`Session::session_id`], sent as bytes).
    pub fn headers<'h>(&self, method: &str) -> Vec<(&'h str, String)> {
        match &self.dialect {
            Dialect::Modern => vec![
                ("MCP-Protocol-Version", MODERN.to_string()),
                ("Mcp-Method", method.to_string()),
            ],
            Dialect::Streamable { version, .. } => {
                vec![("MCP-Protocol-Version", version.clone())]
            }
            _ => Vec::new(),
        }
    }

    /// The 2025 session id, as the server sent it.
    pub fn session_id(&self) -> Option<&[u8]> {
        match &self.dialect {
            Dialect::Streamable {
                session_id: Some(sid),
                ..
            } => Some(sid),
            _ => None,
        }
    }

    /// The same session without the user's credentials (ACT-06: does a call need them?):
    /// HTTP eras whose session is a header; `None` for legacy SSE and stdio.
    pub fn anonymous_twin(&self) -> Option<Session> {
        let client = self.client.as_ref()?.without_credentials();
        let url = self.url.clone()?;
        match &self.dialect {
            Dialect::Modern => Some(Session::modern(client, url)),
            Dialect::Streamable {
                version,
                session_id,
            } => Some(Session::streamable(
                client,
                url,
                version,
                session_id.clone(),
            )),
            _ => None,
        }
    }

    pub fn client(&self) -> Option<&Client> {
        self.client.as_ref()
    }

    pub fn is_http_streamable(&self) -> bool {
        matches!(self.dialect, Dialect::Modern | Dialect::Streamable { .. })
    }

    /// POSTs raw bytes (a malformed request) with this session's headers; HTTP sessions only.
    pub async fn post_raw(
        &self,
        body: Vec<u8>,
        method_header: &str,
        extra: &[(&str, &str)],
    ) -> Option<Call> {
        let (client, url) = (self.client.as_ref()?, self.url.as_ref()?);
        if !self.is_http_streamable() {
            return None;
        }
        let mut req = Request::post_json(url.clone(), &Value::Null);
        req.body = Some(body);
        for (n, v) in self.headers(method_header) {
            req = req.header(n, &v);
        }
        if let Some(sid) = self.session_id() {
            req = req.header_bytes("Mcp-Session-Id", sid);
        }
        for (n, v) in extra {
            req = req.header(n, v);
        }
        Some(match client.send(req).await {
            Ok(r) => {
                let truncated = r.truncated;
                let mut call = Call::answered(r);
                // A body cut at a cap is not parsed (see `post_message_with`).
                if !truncated {
                    let msgs = rpc::messages(call.content_type.as_deref(), &call.body);
                    call.reply = msgs.into_iter().next().and_then(Reply::from_owned);
                }
                call
            }
            Err((e, ex)) => Call::failed(ex, e),
        })
    }

    /// A request with extra HTTP headers (a forged `Origin` or `Host`), in this session's
    /// dialect; Streamable HTTP sessions only.
    pub async fn call_with_headers(
        &self,
        method: &str,
        params: Value,
        extra: &[(&str, String)],
    ) -> Option<Call> {
        if !self.is_http_streamable() {
            return None;
        }
        let id = self.id();
        let modern = matches!(self.dialect, Dialect::Modern);
        let meta = if modern {
            rpc::modern_meta(&self.traceparent())
        } else {
            json!({"traceparent": self.traceparent()})
        };
        let msg = rpc::request(id, method, params, meta);
        let mut headers = self.headers(method);
        headers.extend(extra.iter().map(|(n, v)| (*n, v.clone())));
        Some(self.post(&msg, id, &headers).await)
    }

    /// Sends a notification (no reply expected).
    pub async fn notify(&self, method: &str) -> Call {
        let msg = rpc::notification(method);
        match &self.dialect {
            Dialect::Streamable { .. } => self.post(&msg, 0, &self.headers(method)).await,
            Dialect::Stdio { process, .. } => {
                let mut p = process.lock().await;
                p.send(&msg).await
            }
            Dialect::LegacySse { endpoint, .. } => {
                let Some(client) = &self.client else {
                    return Call::default();
                };
                match client
                    .send(Request::post_json(endpoint.clone(), &msg))
                    .await
                {
                    Ok(r) => Call {
                        status: Some(r.status),
                        exchange: r.exchange,
                        ..Call::default()
                    },
                    Err((e, ex)) => Call::failed(ex, e),
                }
            }
            Dialect::Modern => Call::default(),
        }
    }

    /// POSTs a message to the endpoint; reads the reply from JSON or SSE.
    pub async fn post(&self, msg: &Value, id: u64, headers: &[(&str, String)]) -> Call {
        let (Some(client), Some(url)) = (&self.client, &self.url) else {
            return Call::failed(
                Exchange::default(),
                crate::net::NetError::Other("no HTTP endpoint".into()),
            );
        };
        let sid = self.session_id().map(|s| ("Mcp-Session-Id", s));
        post_message_with(client, url, msg, id, headers, sid.as_slice()).await
    }

    async fn legacy_call(
        &self,
        endpoint: &Url,
        replies: &tokio::sync::Mutex<mpsc::Receiver<Value>>,
        msg: &Value,
        id: u64,
    ) -> Call {
        let Some(client) = &self.client else {
            return Call::default();
        };
        let mut rx = replies.lock().await;
        let resp = match client.send(Request::post_json(endpoint.clone(), msg)).await {
            Ok(r) => r,
            Err((e, ex)) => return Call::failed(ex, e),
        };
        let mut call = Call::answered(resp);
        let status = call.status.unwrap_or_default();
        call.body = Vec::new();
        call.content_type = None;
        if !(200..300).contains(&status) {
            call.error = Some(format!("the message endpoint answered {status}"));
            return call;
        }
        // The wait for the reply on the stream counts against the slow-server budget too.
        let net = client.network();
        let probe = format!(
            "{} (reply on the SSE stream)",
            msg.get("method").and_then(Value::as_str).unwrap_or("?")
        );
        let Some(window) = net.slow_window(REPLY_TIMEOUT) else {
            call.error = Some(format!(
                "not waited for: {}",
                net.slow_stop().unwrap_or_default()
            ));
            return call;
        };
        let started = std::time::Instant::now();
        let deadline = tokio::time::Instant::now() + window;
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(m)) if m.get("id").and_then(Value::as_u64) == Some(id) => {
                    net.record_slow(&probe, started.elapsed(), false);
                    call.reply = Reply::from_message(&m);
                    let text = m.to_string();
                    call.exchange.note = Some(format!(
                        "reply read from the SSE stream: {}",
                        text.chars().take(2000).collect::<String>()
                    ));
                    call.body = text.into_bytes();
                    return call;
                }
                Ok(Some(_)) => continue,
                Ok(None) => {
                    call.error = Some("the SSE stream ended before the reply".into());
                    return call;
                }
                Err(_) => {
                    net.record_slow(&probe, started.elapsed(), true);
                    call.error = Some(format!(
                        "no reply on the SSE stream within {:.1} s",
                        window.as_secs_f64()
                    ));
                    return call;
                }
            }
        }
    }

    /// For a stdio session: the messages written so far and the server's stderr (capped).
    pub async fn stdio_stats(&self) -> Option<(u64, String)> {
        match &self.dialect {
            Dialect::Stdio { process, .. } => {
                let p = process.lock().await;
                Some((p.sent, p.stderr()))
            }
            _ => None,
        }
    }

    /// Ends the session: `DELETE` with the session id (2025), closes the legacy stream, stops
    /// the stdio process. Returns the DELETE exchange when one was sent.
    pub async fn close(self) -> Option<Call> {
        match self.dialect {
            Dialect::Streamable {
                session_id: Some(sid),
                version,
            } => {
                let (client, url) = (self.client?, self.url?);
                let req = Request {
                    method: reqwest::Method::DELETE,
                    closing: true,
                    ..Request::get(url)
                }
                .header_bytes("Mcp-Session-Id", &sid)
                .header("MCP-Protocol-Version", &version);
                Some(match client.send(req).await {
                    Ok(r) => Call::answered(r),
                    Err((e, ex)) => Call::failed(ex, e),
                })
            }
            Dialect::LegacySse { task, .. } => {
                drop(task);
                None
            }
            Dialect::Stdio { process, .. } => {
                process.into_inner().stop().await;
                None
            }
            _ => None,
        }
    }
}

/// POSTs one JSON-RPC message and reads the reply to `id` from a JSON or SSE body.
pub async fn post_message(
    client: &Client,
    url: &Url,
    msg: &Value,
    id: u64,
    headers: &[(&str, String)],
) -> Call {
    post_message_with(client, url, msg, id, headers, &[]).await
}

/// [`post_message`] with headers whose values are sent as these exact bytes (a session id).
pub async fn post_message_with(
    client: &Client,
    url: &Url,
    msg: &Value,
    id: u64,
    headers: &[(&str, String)],
    raw: &[(&str, &[u8])],
) -> Call {
    let mut req = Request::post_json(url.clone(), msg);
    for (n, v) in headers {
        req = req.header(n, v);
    }
    for (n, v) in raw {
        req = req.header_bytes(n, v);
    }
    // Parse each SSE event once: only what arrived since the last complete event is read again.
    let parsed = std::sync::atomic::AtomicUsize::new(0);
    let looked = std::sync::atomic::AtomicUsize::new(0);
    let until = move |ct: Option<&str>, body: &[u8]| {
        let from = parsed.load(Ordering::Relaxed).min(body.len());
        // Only the bytes that arrived since the last look (and the 3 before) can end an event.
        let start = looked
            .swap(body.len(), Ordering::Relaxed)
            .saturating_sub(3)
            .max(from)
            .min(body.len());
        let Some(end) = rpc::last_event_end(&body[start..]).map(|e| start + e) else {
            return false;
        };
        parsed.store(end, Ordering::Relaxed);
        rpc::has_reply(ct, &body[from..end], id)
    };
    let resp = match client.send_until(req, Some(&until)).await {
        Ok(r) => r,
        Err((e, ex)) => return Call::failed(ex, e),
    };
    // A body cut at a cap holds no reply: JSON cut short does not parse (and parsing 8 MiB of
    // it would build most of a tree first), and an SSE reply in a complete event would have
    // ended the read before the cap.
    let truncated = resp.truncated;
    let mut call = Call::answered(resp);
    if truncated {
        call.error = Some(format!(
            "no reply: the answer was cut at a cap ({})",
            call.exchange.note.clone().unwrap_or_default()
        ));
        return call;
    }
    let mut msgs = rpc::messages(call.content_type.as_deref(), &call.body);
    let reply = if id == 0 {
        None
    } else {
        rpc::take_reply(&mut msgs, id).or_else(|| {
            // An error without an id (a transport-level rejection) still says something.
            msgs.iter()
                .find(|m| m.get("id").is_none_or(Value::is_null) && m.get("error").is_some())
                .and_then(Reply::from_message)
        })
    };
    call.reply = reply;
    call
}

/// Opens the legacy HTTP+SSE stream at `url` and waits for its first event. `Some(session)`
/// when that event is `endpoint` (and the endpoint is on the same origin); the call records what
/// was seen either way.
pub async fn open_legacy(
    client: &Client,
    url: &Url,
    first_event_wait: Duration,
) -> (Call, Option<Session>) {
    let req = Request::get(url.clone()).header("Accept", "text/event-stream");
    let mut stream = match client.open_stream(req, Duration::from_secs(120)).await {
        Ok(s) => s,
        Err((e, ex)) => return (Call::failed(ex, e), None),
    };
    let content_type = stream
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone());
    let mut call = Call {
        status: Some(stream.status),
        headers: stream.headers.clone(),
        content_type: content_type.clone(),
        exchange: stream.exchange.clone(),
        ..Call::default()
    };
    let is_sse = content_type
        .as_deref()
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    let mut parser = SseParser::new();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + first_event_wait;
    let first = loop {
        if !(200..300).contains(&stream.status) && seen.len() > 2048 {
            break None;
        }
        let chunk = tokio::time::timeout_at(deadline, stream.body.next_chunk()).await;
        match chunk {
            Err(_) => break None,
            Ok(Chunk::Data(bytes)) => {
                if seen.len() < 4096 {
                    seen.extend_from_slice(&bytes[..bytes.len().min(4096 - seen.len())]);
                }
                if is_sse && let Some(e) = parser.push(&bytes).into_iter().next() {
                    break Some(e);
                }
            }
            Ok(_) => break None,
        }
    };
    call.body = seen.clone();
    if let Some(resp) = call.exchange.response.as_mut() {
        resp.body = client
            .network()
            .secrets()
            .redact(&String::from_utf8_lossy(&seen));
    }
    let Some(first) = first.filter(|e| e.event.as_deref() == Some("endpoint")) else {
        return (call, None);
    };
    let Ok(endpoint) = url.join(first.data.trim()) else {
        call.error = Some(format!(
            "the endpoint event names an unusable URL: {}",
            first.data.chars().take(200).collect::<String>()
        ));
        return (call, None);
    };
    if crate::net::Origin::of(&endpoint).as_ref() != Some(client.origin()) {
        call.error = Some(format!(
            "the endpoint event names another origin ({endpoint}); not followed"
        ));
        return (call, None);
    }
    // A task reads the rest of the stream and hands over each JSON-RPC message.
    let (tx, rx) = mpsc::channel(64);
    let mut body = stream.body;
    let task = tokio::spawn(async move {
        loop {
            match body.next_chunk().await {
                Chunk::Data(bytes) => {
                    for e in parser.push(&bytes) {
                        if e.event.as_deref().is_none_or(|t| t == "message")
                            && let Ok(v) = serde_json::from_str::<Value>(&e.data)
                            && tx.send(v).await.is_err()
                        {
                            return;
                        }
                    }
                }
                _ => return,
            }
        }
    });
    let session = Session {
        client: Some(client.clone()),
        url: Some(url.clone()),
        dialect: Dialect::LegacySse {
            endpoint,
            replies: tokio::sync::Mutex::new(rx),
            task: Reader(task),
        },
        next_id: AtomicU64::new(100),
    };
    (call, Some(session))
}

/// A message exchange over stdio, shown like an HTTP one.
pub fn stdio_exchange(sent: &Value, received: Option<&Value>, note: Option<String>) -> Exchange {
    let cap = |v: &Value| {
        v.to_string()
            .chars()
            .take(crate::net::EVIDENCE_BODY)
            .collect::<String>()
    };
    Exchange {
        request: Message {
            method: Some("STDIN".into()),
            body: cap(sent),
            ..Message::default()
        },
        response: received.map(|r| Message {
            body: cap(r),
            ..Message::default()
        }),
        note,
    }
}
