//! JSON-RPC 2.0 messages as MCP sends them: requests with the era's `_meta`, and replies read
//! from a JSON body or an SSE stream.

use serde_json::{Value, json};

use super::sse::SseParser;

/// The protocol versions mcpprobe speaks.
pub const MODERN: &str = "2026-07-28";
pub const V2025_11: &str = "2025-11-25";
pub const V2025_06: &str = "2025-06-18";
/// The era name of the deprecated HTTP+SSE transport.
pub const LEGACY_SSE: &str = "2024-11-05";

pub fn client_info() -> Value {
    json!({"name": "mcpprobe", "version": env!("CARGO_PKG_VERSION")})
}

/// `params._meta` for a 2026-07-28 request (SPEC §2; protocol-notes §1.2).
pub fn modern_meta(traceparent: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": client_info(),
        "traceparent": traceparent,
    })
}

/// A request message. `params` gets `_meta` merged in.
pub fn request(id: u64, method: &str, params: Value, meta: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    // The era's `_meta` first; what the caller put in `params._meta` wins (PROTO-04 sends
    // another clientInfo).
    let mut merged = match meta {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    if let Some(Value::Object(m)) = params.remove("_meta") {
        merged.extend(m);
    }
    if !merged.is_empty() {
        params.insert("_meta".into(), Value::Object(merged));
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

/// What a request got back.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Result(Value),
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

impl Reply {
    pub fn from_message(msg: &Value) -> Option<Reply> {
        if let Some(r) = msg.get("result") {
            return Some(Reply::Result(r.clone()));
        }
        let e = msg.get("error")?;
        Some(Reply::Error {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(500)
                .collect(),
            data: e.get("data").cloned(),
        })
    }

    pub fn result(&self) -> Option<&Value> {
        match self {
            Reply::Result(v) => Some(v),
            Reply::Error { .. } => None,
        }
    }

    pub fn error_code(&self) -> Option<i64> {
        match self {
            Reply::Error { code, .. } => Some(*code),
            Reply::Result(_) => None,
        }
    }
}

/// Every JSON-RPC message in a body: a JSON object, a JSON array (batch), or SSE events whose
/// data is JSON. Anything else gives none.
pub fn messages(content_type: Option<&str>, body: &[u8]) -> Vec<Value> {
    let is_sse =
        content_type.is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    if is_sse {
        let mut p = SseParser::new();
        let mut events = p.push(body);
        events.extend(p.push(b"\n\n"));
        return events
            .iter()
            .filter(|e| e.event.as_deref().is_none_or(|t| t == "message"))
            .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .flat_map(flatten)
            .collect();
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => flatten(v),
        Err(_) => Vec::new(),
    }
}

fn flatten(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.into_iter().filter(Value::is_object).collect(),
        v @ Value::Object(_) => vec![v],
        _ => Vec::new(),
    }
}

impl Reply {
    /// [`Reply::from_message`] that moves the result out instead of cloning it (a page of
    /// tools may be megabytes).
    pub fn from_owned(msg: Value) -> Option<Reply> {
        match msg {
            Value::Object(mut m) if m.contains_key("result") => {
                m.remove("result").map(Reply::Result)
            }
            other => Reply::from_message(&other),
        }
    }
}

/// Removes the reply to request `id` from `msgs` and returns it (moved, not cloned).
pub fn take_reply(msgs: &mut Vec<Value>, id: u64) -> Option<Reply> {
    let i = msgs
        .iter()
        .position(|m| m.get("id").and_then(Value::as_u64) == Some(id))?;
    Reply::from_owned(msgs.swap_remove(i))
}

/// The reply to request `id` among `msgs`.
pub fn reply_to(msgs: &[Value], id: u64) -> Option<Reply> {
    msgs.iter()
        .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
        .and_then(Reply::from_message)
}

/// The end (exclusive) of the last complete SSE event in `bytes`: just after its blank line.
pub fn last_event_end(bytes: &[u8]) -> Option<usize> {
    let n = bytes.len();
    (1..n).rev().find_map(|i| {
        let pair = (bytes[i - 1], bytes[i]);
        matches!(pair, (b'\n', b'\n') | (b'\r', b'\r'))
            .then_some(i + 1)
            .or_else(|| (i >= 3 && &bytes[i - 3..=i] == b"\r\n\r\n").then_some(i + 1))
    })
}

/// An early-stop test for a streamed body: true once the reply to `id` is complete.
pub fn has_reply(content_type: Option<&str>, body: &[u8], id: u64) -> bool {
    let is_sse =
        content_type.is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    is_sse && reply_to(&messages(content_type, body), id).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_end_of_the_last_complete_event() {
        assert_eq!(last_event_end(b"data: 1\n\ndata: 2"), Some(9));
        assert_eq!(last_event_end(b"data: 1\r\n\r\ndata: 2\r\n\r\n"), Some(22));
        assert_eq!(last_event_end(b"data: 1\n"), None);
    }

    #[test]
    fn reads_replies_from_json_and_sse() {
        let sse =
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}\n\n";
        assert!(has_reply(Some("text/event-stream"), sse, 3));
        let msgs = messages(
            Some("application/json"),
            br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"nope"}}"#,
        );
        assert_eq!(
            reply_to(&msgs, 4).and_then(|r| r.error_code()),
            Some(-32601)
        );
    }
}
