//! A hostile MCP server on 127.0.0.1:0, one behaviour per scenario (SPEC §10): raw HTTP/1.1
//! over tokio, so that it can drip, stall, reset, send what no HTTP library would. It records
//! every request it receives ("METHOD /path rpc-method"); a redirect to another origin points
//! at a second listener that counts its connections (it must get none).
//!
//! Shared by the integration tests (`support::hostile`) and `examples/hostile.rs`, which
//! `scripts/hostile.sh` runs to measure each scenario against the release binary.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// One hostile behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Every POST and GET answers an SSE stream that never ends and never holds the reply.
    EndlessSse,
    /// `tools/list` answers a 200 MB JSON body.
    HugeJson,
    /// `tools/list` answers JSON nested 100,000 deep.
    DeepJson,
    /// Every answer, head included, drips one byte a second.
    Drip,
    /// Every POST redirects in a loop (`/loop1` → `/loop2` → `/loop1`).
    RedirectLoop,
    /// Every POST redirects to another origin (a second listener, which must get no hit).
    RedirectOtherOrigin,
    /// `tools/list` pages whose `nextCursor` cycles (a → b → a).
    CyclicCursor,
    /// 100,000 tools over 100 pages.
    ManyTools,
    /// A valid inventory of 20 pages of nearly 8 MiB each.
    BigPages,
    /// `tools/list` holds bytes that are not UTF-8.
    InvalidUtf8,
    /// ANSI, OSC and C1 sequences in descriptions, a tool name, instructions and serverInfo.
    ControlChars,
    /// Every POST answers `Content-Encoding: gzip` with a bomb (200 MB of zeros inflated).
    GzipBomb,
    /// Every POST answers with a 1 MB header.
    HugeHeader,
    /// `tools/list` resets the connection in the middle of its body.
    ResetMidBody,
    /// Every POST answers an SSE stream without a single line break.
    SseNoLineBreaks,
}

impl Scenario {
    pub const ALL: [Scenario; 15] = [
        Scenario::EndlessSse,
        Scenario::HugeJson,
        Scenario::DeepJson,
        Scenario::Drip,
        Scenario::RedirectLoop,
        Scenario::RedirectOtherOrigin,
        Scenario::CyclicCursor,
        Scenario::ManyTools,
        Scenario::BigPages,
        Scenario::InvalidUtf8,
        Scenario::ControlChars,
        Scenario::GzipBomb,
        Scenario::HugeHeader,
        Scenario::ResetMidBody,
        Scenario::SseNoLineBreaks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::EndlessSse => "endless-sse",
            Scenario::HugeJson => "huge-json",
            Scenario::DeepJson => "deep-json",
            Scenario::Drip => "drip",
            Scenario::RedirectLoop => "redirect-loop",
            Scenario::RedirectOtherOrigin => "redirect-other-origin",
            Scenario::CyclicCursor => "cyclic-cursor",
            Scenario::ManyTools => "many-tools",
            Scenario::BigPages => "big-pages",
            Scenario::InvalidUtf8 => "invalid-utf8",
            Scenario::ControlChars => "control-chars",
            Scenario::GzipBomb => "gzip-bomb",
            Scenario::HugeHeader => "huge-header",
            Scenario::ResetMidBody => "reset-mid-body",
            Scenario::SseNoLineBreaks => "sse-no-line-breaks",
        }
    }

    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A running hostile server. Its tasks run until the runtime is dropped.
pub struct Hostile {
    pub addr: SocketAddr,
    pub scenario: Scenario,
    seen: Arc<Mutex<Vec<String>>>,
    /// The other origin's address and the connections it accepted.
    pub other: SocketAddr,
    other_hits: Arc<AtomicUsize>,
}

impl Hostile {
    /// Starts `scenario` on 127.0.0.1:0 (inside a runtime).
    pub async fn spawn(scenario: Scenario) -> std::io::Result<Hostile> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let other_listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let other = other_listener.local_addr()?;
        let other_hits = Arc::new(AtomicUsize::new(0));
        let hits = other_hits.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = other_listener.accept().await {
                hits.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let _ = serve(conn, scenario, other, log).await;
                });
            }
        });
        Ok(Hostile {
            addr,
            scenario,
            seen,
            other,
            other_hits,
        })
    }

    /// [`Hostile::spawn`] on a test's runtime.
    pub fn start(rt: &tokio::runtime::Runtime, scenario: Scenario) -> Hostile {
        rt.block_on(Hostile::spawn(scenario))
            .expect("the hostile server starts")
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received, as "METHOD /path rpc-method".
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Connections the other origin accepted.
    pub fn other_hits(&self) -> usize {
        self.other_hits.load(Ordering::SeqCst)
    }
}

struct Req {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Reads one request (head up to 64 KiB, body by Content-Length up to 1 MiB).
async fn read_request(conn: &mut TcpStream) -> std::io::Result<Option<Req>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return Ok(None);
        }
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    let length = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(1 << 20);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(Req { method, path, body }))
}

fn head(status: &str, headers: &[(&str, String)], length: Option<usize>) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (n, v) in headers {
        h.push_str(&format!("{n}: {v}\r\n"));
    }
    if let Some(l) = length {
        h.push_str(&format!("Content-Length: {l}\r\n"));
    }
    h.push_str("\r\n");
    h.into_bytes()
}

async fn respond(conn: &mut TcpStream, status: &str, ct: &str, body: &[u8]) -> std::io::Result<()> {
    let mut out = head(
        status,
        &[("Content-Type", ct.to_string())],
        Some(body.len()),
    );
    out.extend_from_slice(body);
    conn.write_all(&out).await?;
    conn.shutdown().await
}

async fn json(conn: &mut TcpStream, body: &Value) -> std::io::Result<()> {
    respond(
        conn,
        "200 OK",
        "application/json",
        body.to_string().as_bytes(),
    )
    .await
}

const BAD: &str = "\u{1b}[31mred\u{1b}[0m \u{1b}]8;;https://evil.example\u{7}link\u{1b}]8;;\u{7} \u{9b}2J C1 \u{85}NEL \u{1b}]0;pwned\u{7} \u{1b}P+q\u{1b}\\ \u{8}\u{8}\u{8}";

fn server_info(scenario: Scenario) -> Value {
    if scenario == Scenario::ControlChars {
        json!({"name": format!("evil{BAD}server"), "version": format!("1.0{BAD}")})
    } else {
        json!({"name": "hostile", "version": "1.0.0"})
    }
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object", "additionalProperties": false}})
}

/// The `tools/list` page for `cursor` in the valid scenarios: (tools, nextCursor).
fn page(scenario: Scenario, cursor: Option<&str>) -> (Vec<Value>, Option<String>) {
    match scenario {
        Scenario::CyclicCursor => {
            let next = match cursor {
                None => "a",
                Some("a") => "b",
                _ => "a",
            };
            (
                vec![tool(
                    &format!("tool_{}", cursor.unwrap_or("first")),
                    "Reads a row.",
                )],
                Some(next.to_string()),
            )
        }
        Scenario::ManyTools => {
            const PER_PAGE: usize = 1000;
            const TOTAL: usize = 100_000;
            let start: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
            let tools = (start..(start + PER_PAGE).min(TOTAL))
                .map(|i| {
                    tool(
                        &format!("tool_{i}"),
                        &format!("Returns row {i} of the table."),
                    )
                })
                .collect();
            let next = (start + PER_PAGE < TOTAL).then(|| (start + PER_PAGE).to_string());
            (tools, next)
        }
        Scenario::BigPages => {
            // 8 tools of just under 1 MiB each: a page of nearly 8 MiB, under the body cap.
            let n: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
            let words = "Returns the weather for a city as plain text. ";
            let text: String = words.repeat((1024 * 1024 - 4096) / words.len());
            let tools = (0..8)
                .map(|i| tool(&format!("weather_{n}_{i}"), &text))
                .collect();
            let next = (n + 1 < 20).then(|| (n + 1).to_string());
            (tools, next)
        }
        Scenario::ControlChars => (
            vec![
                tool("read_note", &format!("Reads a note. {BAD}")),
                tool(&format!("name{BAD}"), "A tool with escapes in its name."),
            ],
            None,
        ),
        _ => (vec![tool("read_note", "Reads a note.")], None),
    }
}

/// What every valid request gets: a stateless 2025 server (no session id).
async fn mcp(conn: &mut TcpStream, scenario: Scenario, msg: &Value) -> std::io::Result<()> {
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let result = match method {
        "initialize" => {
            let v = msg
                .pointer("/params/protocolVersion")
                .cloned()
                .unwrap_or(json!("2025-11-25"));
            let mut r = json!({"protocolVersion": v, "capabilities": {"tools": {}}, "serverInfo": server_info(scenario)});
            if scenario == Scenario::ControlChars {
                r["instructions"] = json!(format!("Use these tools. {BAD}"));
            }
            r
        }
        "tools/list" => {
            let cursor = msg.pointer("/params/cursor").and_then(Value::as_str);
            let (tools, next) = page(scenario, cursor);
            let mut r = json!({"tools": tools});
            if let Some(n) = next {
                r["nextCursor"] = json!(n);
            }
            r
        }
        m if m.starts_with("notifications/") => {
            return respond(conn, "202 Accepted", "application/json", b"").await;
        }
        _ => {
            return json(
                conn,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
            )
            .await;
        }
    };
    json(conn, &json!({"jsonrpc": "2.0", "id": id, "result": result})).await
}

/// Streams `total` bytes made by `fill` in chunks; stops when the reader goes away.
async fn stream(conn: &mut TcpStream, mut total: usize, chunk: &[u8]) -> std::io::Result<()> {
    while total > 0 {
        let n = total.min(chunk.len());
        conn.write_all(&chunk[..n]).await?;
        total -= n;
    }
    conn.shutdown().await
}

async fn endless_sse(conn: &mut TcpStream) -> std::io::Result<()> {
    conn.write_all(&head(
        "200 OK",
        &[("Content-Type", "text/event-stream".into())],
        None,
    ))
    .await?;
    let event = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"tick\"}}\n\n";
    loop {
        conn.write_all(event).await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A gzip member whose deflate stream inflates to `len` zero bytes: a literal 0, then matches
/// of length 258 at distance 1 (fixed Huffman codes, 13 bits per 258 bytes).
fn gzip_bomb(len: usize) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        n: u32,
    }
    impl Bits {
        fn put(&mut self, value: u64, bits: u32) {
            self.acc |= value << self.n;
            self.n += bits;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        /// A Huffman code, most significant bit first.
        fn code(&mut self, code: u64, bits: u32) {
            let mut rev = 0;
            for i in 0..bits {
                rev |= ((code >> i) & 1) << (bits - 1 - i);
            }
            self.put(rev, bits);
        }
    }
    let mut b = Bits {
        out: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255],
        acc: 0,
        n: 0,
    };
    b.put(1, 1); // final block
    b.put(1, 2); // fixed Huffman
    b.code(0x30, 8); // literal 0
    let mut left = len.saturating_sub(1);
    while left >= 258 {
        b.code(0b1100_0101, 8); // length 258 (code 285)
        b.code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        b.code(0x30, 8);
    }
    b.code(0, 7); // end of block (256)
    if b.n > 0 {
        b.out.push(b.acc as u8);
    }
    // CRC-32 of `len` zeros, then the length.
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *t = c;
    }
    let mut crc = 0xffff_ffffu32;
    for _ in 0..len {
        crc = table[(crc & 0xff) as usize] ^ (crc >> 8);
    }
    b.out.extend_from_slice(&(!crc).to_le_bytes());
    b.out.extend_from_slice(&(len as u32).to_le_bytes());
    b.out
}

async fn hostile_answer(
    conn: &mut TcpStream,
    scenario: Scenario,
    req: &Req,
    msg: &Value,
    other: SocketAddr,
) -> std::io::Result<()> {
    let id = msg.get("id").cloned().unwrap_or(Value::Null).to_string();
    match scenario {
        Scenario::EndlessSse => endless_sse(conn).await,
        Scenario::HugeJson => {
            const TOTAL: usize = 200 * 1024 * 1024;
            let start = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[");
            let item = tool("t", "Reads a row.").to_string() + ",";
            let chunk: Vec<u8> = item.repeat(64 * 1024 / item.len()).into_bytes();
            conn.write_all(&head(
                "200 OK",
                &[("Content-Type", "application/json".into())],
                Some(TOTAL),
            ))
            .await?;
            conn.write_all(start.as_bytes()).await?;
            stream(conn, TOTAL - start.len(), &chunk).await
        }
        Scenario::DeepJson => {
            let depth = 100_000;
            let mut body = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":");
            body.push_str(&"[".repeat(depth));
            body.push_str(&"]".repeat(depth));
            body.push_str("}}");
            respond(conn, "200 OK", "application/json", body.as_bytes()).await
        }
        Scenario::Drip => {
            let body = json!({"jsonrpc": "2.0", "id": msg.get("id"), "result": {}}).to_string();
            let mut out = head(
                "200 OK",
                &[("Content-Type", "application/json".into())],
                Some(body.len()),
            );
            out.extend_from_slice(body.as_bytes());
            for b in out {
                conn.write_all(&[b]).await?;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Ok(())
        }
        Scenario::RedirectLoop => {
            let next = if req.path == "/loop1" {
                "/loop2"
            } else {
                "/loop1"
            };
            let out = head(
                "307 Temporary Redirect",
                &[("Location", next.into())],
                Some(0),
            );
            conn.write_all(&out).await?;
            conn.shutdown().await
        }
        Scenario::RedirectOtherOrigin => {
            let out = head(
                "307 Temporary Redirect",
                &[("Location", format!("http://{other}/mcp"))],
                Some(0),
            );
            conn.write_all(&out).await?;
            conn.shutdown().await
        }
        Scenario::InvalidUtf8 => {
            let mut body =
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[{{\"name\":\"read\",\"description\":\"bad ")
                    .into_bytes();
            body.extend_from_slice(b"\xff\xfe\xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80");
            body.extend_from_slice(b"\",\"inputSchema\":{\"type\":\"object\"}}]}}");
            respond(conn, "200 OK", "application/json", &body).await
        }
        Scenario::GzipBomb => {
            static BOMB: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
            let bomb = BOMB.get_or_init(|| gzip_bomb(200 * 1024 * 1024));
            let mut out = head(
                "200 OK",
                &[
                    ("Content-Type", "application/json".into()),
                    ("Content-Encoding", "gzip".into()),
                ],
                Some(bomb.len()),
            );
            out.extend_from_slice(bomb);
            conn.write_all(&out).await?;
            conn.shutdown().await
        }
        Scenario::HugeHeader => {
            let filler = "a".repeat(1024 * 1024);
            let body = b"{}";
            let mut out = head(
                "200 OK",
                &[
                    ("Content-Type", "application/json".into()),
                    ("X-Filler", filler),
                ],
                Some(body.len()),
            );
            out.extend_from_slice(body);
            conn.write_all(&out).await?;
            conn.shutdown().await
        }
        Scenario::ResetMidBody => {
            let start = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[");
            let mut out = head(
                "200 OK",
                &[("Content-Type", "application/json".into())],
                Some(100_000),
            );
            out.extend_from_slice(start.as_bytes());
            out.extend_from_slice(tool("t", "Reads a row.").to_string().as_bytes());
            conn.write_all(&out).await?;
            conn.flush().await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
            // RST instead of FIN.
            conn.set_zero_linger()?;
            Ok(())
        }
        Scenario::SseNoLineBreaks => {
            conn.write_all(&head(
                "200 OK",
                &[("Content-Type", "text/event-stream".into())],
                None,
            ))
            .await?;
            conn.write_all(b"data: ").await?;
            let chunk = vec![b'x'; 64 * 1024];
            loop {
                conn.write_all(&chunk).await?;
            }
        }
        _ => mcp(conn, scenario, msg).await,
    }
}

/// Which requests get the hostile behaviour: every MCP request, or only `tools/list` (so that
/// the handshakes succeed and the inventory meets it).
fn is_hostile(scenario: Scenario, req: &Req, rpc: &str) -> bool {
    match scenario {
        Scenario::HugeJson
        | Scenario::DeepJson
        | Scenario::InvalidUtf8
        | Scenario::ResetMidBody => rpc == "tools/list",
        Scenario::CyclicCursor
        | Scenario::ManyTools
        | Scenario::BigPages
        | Scenario::ControlChars => false,
        Scenario::EndlessSse | Scenario::Drip => true,
        _ => req.method == "POST",
    }
}

async fn serve(
    mut conn: TcpStream,
    scenario: Scenario,
    other: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let Some(req) = read_request(&mut conn).await? else {
        return Ok(());
    };
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let rpc = msg
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Ok(mut l) = log.lock() {
        l.push(
            format!("{} {} {rpc}", req.method, req.path)
                .trim_end()
                .to_string(),
        );
    }
    // The gate's opt-out GET and every well-known document: a plain 404.
    if req.path.starts_with("/.well-known/") {
        return respond(&mut conn, "404 Not Found", "text/plain", b"not found").await;
    }
    if is_hostile(scenario, &req, &rpc) {
        return hostile_answer(&mut conn, scenario, &req, &msg, other).await;
    }
    match req.method.as_str() {
        "POST" => mcp(&mut conn, scenario, &msg).await,
        "DELETE" => respond(&mut conn, "200 OK", "text/plain", b"").await,
        _ => respond(&mut conn, "405 Method Not Allowed", "text/plain", b"").await,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bomb_is_small() {
        assert!(super::gzip_bomb(200 * 1024 * 1024).len() < 2 * 1024 * 1024);
    }
}
