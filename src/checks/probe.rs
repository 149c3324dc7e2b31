//! Helpers the live checks share: the era's handshake with extra headers, a fresh 2025
//! session, the tools of a reply.

use serde_json::{Value, json};

use super::{Check, Live, finding};
use crate::finding::{Confidence, Exchange, Finding, Severity};
use crate::protocol::rpc::{self, MODERN, V2025_06, V2025_11};
use crate::protocol::session::{Call, Session, post_message};

/// The newest 2025 era the server answered.
pub fn era_2025(cx: &Live<'_>) -> Option<&'static str> {
    [V2025_11, V2025_06]
        .into_iter()
        .find(|v| cx.fingerprint.eras.iter().any(|e| e == v))
}

/// Sends the handshake of the newest era answered (`server/discover`, else `initialize`) with
/// extra headers, ends a session it opened, and returns the call. `None` without HTTP or era.
pub async fn handshake(cx: &Live<'_>, extra: &[(&str, &str)], anonymous: bool) -> Option<Call> {
    let (client, url) = (cx.client?, cx.url?);
    let client = if anonymous {
        client.without_credentials()
    } else {
        client.clone()
    };
    let modern = cx.fingerprint.eras.iter().any(|e| e == MODERN);
    let tp = client.network().traceparent();
    let (msg, mut headers) = if modern {
        (
            rpc::request(9001, "server/discover", json!({}), rpc::modern_meta(&tp)),
            vec![
                ("MCP-Protocol-Version", MODERN.to_string()),
                ("Mcp-Method", "server/discover".to_string()),
            ],
        )
    } else {
        // No era known (every rung answered 401, say): a 2025 handshake is still a handshake.
        let v = era_2025(cx).unwrap_or(V2025_11);
        let params =
            json!({"protocolVersion": v, "capabilities": {}, "clientInfo": rpc::client_info()});
        (
            rpc::request(9001, "initialize", params, json!({"traceparent": tp})),
            Vec::new(),
        )
    };
    for (n, v) in extra {
        headers.push((n, v.to_string()));
    }
    let call = post_message(&client, url, &msg, 9001, &headers).await;
    if let (Some(sid), false) = (call.session_id(), modern) {
        let v = era_2025(cx).unwrap_or(V2025_11);
        let _ = Session::streamable(client.clone(), url.clone(), v, Some(sid))
            .close()
            .await;
    }
    Some(call)
}

/// A new 2025 session with the given clientInfo name (`initialize`, and
/// `notifications/initialized` unless `bare`).
pub async fn session_2025(
    cx: &Live<'_>,
    client_name: &str,
    anonymous: bool,
) -> Option<(Session, Call)> {
    open_2025(cx, client_name, anonymous, false).await.ok()
}

/// [`session_2025`], or the `initialize` call that did not open one (`Err(None)`: no HTTP
/// or no 2025 era, nothing was sent).
pub async fn try_session_2025(
    cx: &Live<'_>,
    client_name: &str,
    anonymous: bool,
) -> Result<(Session, Call), Option<Call>> {
    open_2025(cx, client_name, anonymous, false).await
}

/// [`try_session_2025`] without the `notifications/initialized` (a session only opened to be
/// ended).
pub async fn bare_session_2025(
    cx: &Live<'_>,
    client_name: &str,
) -> Result<(Session, Call), Option<Call>> {
    open_2025(cx, client_name, false, true).await
}

async fn open_2025(
    cx: &Live<'_>,
    client_name: &str,
    anonymous: bool,
    bare: bool,
) -> Result<(Session, Call), Option<Call>> {
    let (Some(client), Some(url)) = (cx.client, cx.url) else {
        return Err(None);
    };
    let client = if anonymous {
        client.without_credentials()
    } else {
        client.clone()
    };
    let Some(v) = era_2025(cx) else {
        return Err(None);
    };
    let params = json!({"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": client_name, "version": "1.0.0"}});
    let msg = rpc::request(
        9002,
        "initialize",
        params,
        json!({"traceparent": client.network().traceparent()}),
    );
    let call = post_message(&client, url, &msg, 9002, &[]).await;
    if call.result().is_none() {
        // A session id minted with an error is still ended.
        if let Some(sid) = call.session_id() {
            let _ = Session::streamable(client, url.clone(), v, Some(sid))
                .close()
                .await;
        }
        return Err(Some(call));
    }
    let session = Session::streamable(client, url.clone(), v, call.session_id());
    if !bare {
        let _ = session.notify("notifications/initialized").await;
    }
    Ok((session, call))
}

/// What a call got, for a message: `answered 404`, `no answer (timed out after 10 s)`.
pub fn answered(call: &Call) -> String {
    match (call.status, &call.error) {
        (Some(s), _) => format!("answered {s}"),
        (None, Some(e)) => format!("no answer ({e})"),
        (None, None) => "no answer".to_string(),
    }
}

/// No usable answer: 5xx, 429, or no HTTP answer at all (a timeout, a reset, a refused
/// connection).
pub fn unusable(call: &Call) -> bool {
    match call.status {
        None => true,
        Some(s) => s >= 500 || s == 429,
    }
}

/// The finding of a probe that got no usable answer: info, confidence low, the message starts
/// with "indeterminate:", and the exchange is the evidence. `subcode` names the probe.
pub fn indeterminate(
    check: &dyn Check,
    subcode: &str,
    message: impl std::fmt::Display,
    exchange: Option<Exchange>,
) -> Finding {
    let mut b = finding(check, None)
        .subcode(format!("{subcode}/indeterminate"))
        .severity(Severity::Info)
        .confidence(Confidence::Low)
        .message(format!("indeterminate: {message}"));
    if let Some(x) = exchange {
        b = b.exchange(x);
    }
    b.build()
}

/// The tools of a `tools/list` reply.
pub fn tools(call: &Call) -> Vec<Value> {
    call.result()
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The first page of tools the inventory read.
pub fn inventory_first_page<'a>(cx: &Live<'a>) -> &'a [Value] {
    cx.inventory.map(|i| i.first_page()).unwrap_or_default()
}

/// The tools of a reply, moved out of it (the call keeps its exchange; its body is dropped).
pub fn take_tools(call: &mut crate::protocol::session::Call) -> Vec<Value> {
    call.body = Vec::new();
    match call.reply.as_mut().and_then(|r| match r {
        crate::protocol::rpc::Reply::Result(v) => v.get_mut("tools"),
        _ => None,
    }) {
        Some(Value::Array(a)) => std::mem::take(a),
        _ => Vec::new(),
    }
}

/// Tool names, sorted, for messages.
pub fn names(tools: &[Value]) -> String {
    let mut n: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    n.sort();
    n.join(", ")
}

/// The foreign origin TRANS-01 and TRANS-03 present.
pub const FORGED_ORIGIN: &str = "https://evil.example";
