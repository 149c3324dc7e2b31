//! The inventory: tools (every page of `nextCursor`, capped, cycles detected), prompts,
//! resources, resource templates and server instructions — the input of every later check.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::ladder::Fingerprint;
use super::session::{Call, Session};

/// Pages read per list before stopping (N1).
pub const MAX_PAGES: usize = 20;
/// Items kept per list before stopping (N1).
pub const MAX_ITEMS: usize = 10_000;
/// Bytes of list pages (as the server sent them) read across every list of one scan before
/// stopping (SPEC §10: a scan stays under 100 MB): N1, and the scan is incomplete.
pub const MAX_BYTES: usize = 12 * 1024 * 1024;
/// Bytes of the first `tools/list` answer's body kept with its call (for messages).
const KEPT_BODY: usize = 4096;

#[derive(Debug, Default)]
pub struct Inventory {
    /// `{tools, prompts, resources, resourceTemplates, instructions}`: the shape the rules read
    /// (shared with them, never copied).
    pub value: std::sync::Arc<Value>,
    /// Where a list could not be read completely (reported as N1).
    pub notes: Vec<String>,
    /// The first `tools/list` call (its exchange is the evidence of the inventory). Its
    /// result's `tools` were moved into [`Inventory::value`]: the first page is
    /// [`Inventory::first_page`].
    pub first_tools_call: Option<Call>,
    /// Tools on the first `tools/list` page.
    pub first_page_len: usize,
    /// Requests the inventory sent.
    pub calls: usize,
    /// Bytes of list pages read (against [`MAX_BYTES`]).
    pub bytes: usize,
    /// The byte budget stopped the inventory (why): the scan is incomplete.
    pub truncated: Option<String>,
}

impl Inventory {
    pub fn tools(&self) -> &[Value] {
        self.value
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The tools of the first `tools/list` page.
    pub fn first_page(&self) -> &[Value] {
        let tools = self.tools();
        &tools[..self.first_page_len.min(tools.len())]
    }
}

/// Whether a capability is advertised; `None` when the server said nothing about capabilities.
fn has(fp: &Fingerprint, cap: &str) -> Option<bool> {
    fp.capabilities.as_ref().map(|c| c.get(cap).is_some())
}

/// Reads every list the server offers through `session`.
pub async fn read(session: &Session, fp: &Fingerprint) -> Inventory {
    let mut inv = Inventory::default();
    let mut value = Map::new();
    let lists = [
        ("tools/list", "tools", "tools"),
        ("prompts/list", "prompts", "prompts"),
        ("resources/list", "resources", "resources"),
        ("resources/templates/list", "resourceTemplates", "resources"),
    ];
    for (method, key, cap) in lists {
        if method != "tools/list" && has(fp, cap) == Some(false) {
            continue;
        }
        let items = list(session, method, key, has(fp, cap), &mut inv).await;
        value.insert(key.to_string(), Value::Array(items));
    }
    if let Some(i) = &fp.instructions {
        value.insert("instructions".into(), json!(i));
    }
    inv.value = std::sync::Arc::new(Value::Object(value));
    inv
}

/// Why an answer that holds no JSON-RPC reply could not be used: the transport's note (a body
/// cut short by a reset), bytes that are not UTF-8, or JSON that does not parse (nested too
/// deep, cut short). `None` for a well-formed body. The body is whole (a body cut at a cap
/// never gets here) and was parsed once already, the same way, by `rpc::messages`, which
/// keeps no error: this costs no more than that did.
fn unusable(call: &Call) -> Option<String> {
    if let Some(note) = &call.exchange.note {
        return Some(note.clone());
    }
    let sse = call
        .content_type
        .as_deref()
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    if sse || call.body.is_empty() {
        return None;
    }
    if let Err(e) = std::str::from_utf8(&call.body) {
        return Some(format!(
            "the body is not UTF-8 (byte {} is invalid)",
            e.valid_up_to()
        ));
    }
    serde_json::from_slice::<Value>(&call.body)
        .err()
        .map(|e| format!("not JSON: {e}"))
}

async fn list(
    session: &Session,
    method: &str,
    key: &str,
    declared: Option<bool>,
    inv: &mut Inventory,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursors: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    for page in 1..=MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        // The byte budget caps the read itself: a page that would pass it is never whole in
        // memory.
        let room = MAX_BYTES.saturating_sub(inv.bytes);
        if room == 0 {
            let why = format!(
                "{method} page {page} was not read: the inventory's budget of {MAX_BYTES} bytes was spent; only what was read was checked"
            );
            inv.notes.push(why.clone());
            inv.truncated.get_or_insert(why);
            return items;
        }
        let mut call = crate::net::with_body_limit(room, session.call(method, params)).await;
        inv.calls += 1;
        let page_bytes = call.body.len();
        if call.result().is_none() && page_bytes >= room {
            let why = format!(
                "{method} page {page} would pass the inventory's budget of {MAX_BYTES} bytes ({} read before it); it and the rest were not read, only what was read was checked",
                inv.bytes
            );
            if method == "tools/list" && inv.first_tools_call.is_none() {
                call.body.truncate(KEPT_BODY);
                call.body.shrink_to_fit();
                inv.first_tools_call = Some(call);
            }
            inv.notes.push(why.clone());
            inv.truncated.get_or_insert(why);
            return items;
        }
        // The page's items are moved out of the reply, never cloned; the raw body is dropped.
        let mut result = match call.reply.as_mut() {
            Some(super::rpc::Reply::Result(v)) => Some(std::mem::take(v)),
            _ => None,
        };
        let page_items = match result.as_mut().and_then(|r| r.get_mut(key)) {
            Some(Value::Array(a)) => std::mem::take(a),
            _ => Vec::new(),
        };
        let next = result
            .as_ref()
            .and_then(|r| r.get("nextCursor"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let first_tools = method == "tools/list" && inv.first_tools_call.is_none();
        if first_tools {
            inv.first_page_len = page_items.len().min(MAX_ITEMS);
        }
        // Why an answer without a reply is unusable, found while its body is still whole.
        let unusable = (result.is_none() && call.reply.is_none() && call.error.is_none())
            .then(|| unusable(&call))
            .flatten();
        if first_tools || result.is_none() {
            // What the checks read of the first call: status, headers, exchange, the result
            // without its items, and the start of the body.
            if let (Some(super::rpc::Reply::Result(v)), Some(r)) = (call.reply.as_mut(), &result) {
                *v = r.clone();
            }
            call.body.truncate(KEPT_BODY);
            call.body.shrink_to_fit();
        } else {
            call.body = Vec::new();
        }
        if first_tools {
            inv.first_tools_call = Some(call.clone());
        }
        let Some(_) = result else {
            // A server without prompts or resources may say so with a JSON-RPC error (-32601, or
            // any error when it did not declare the capability). Anything else — a failure after
            // the first page, on tools, a declared list that errs, no usable answer — is a gap in
            // what was checked (and a baseline must not read it as "everything was removed").
            let clear_refusal = match &call.reply {
                Some(super::rpc::Reply::Error { code, .. }) => {
                    *code == -32601 || declared != Some(true)
                }
                _ => false,
            };
            if page > 1 || method == "tools/list" || !clear_refusal {
                let why = call.error.clone().unwrap_or_else(|| match &call.reply {
                    Some(super::rpc::Reply::Error { code, message, .. }) => {
                        format!("error {code}: {message}")
                    }
                    _ => match call.status {
                        Some(s) => match &unusable {
                            Some(u) => format!("answered {s} without a JSON-RPC result: {u}"),
                            None => format!("answered {s} without a JSON-RPC result"),
                        },
                        None => "no answer".to_string(),
                    },
                });
                inv.notes.push(format!(
                    "{method} page {page} could not be read ({why}); only what was read was checked"
                ));
            }
            return items;
        };
        // The scan-wide byte budget: a page that would pass it is not kept.
        if inv.bytes.saturating_add(page_bytes) > MAX_BYTES {
            let why = format!(
                "{method} page {page} ({page_bytes} bytes) would pass the inventory's budget of {MAX_BYTES} bytes ({} read before it); it and the rest were not read, only what was read was checked",
                inv.bytes
            );
            if first_tools {
                inv.first_page_len = 0;
            }
            inv.notes.push(why.clone());
            inv.truncated.get_or_insert(why);
            return items;
        }
        inv.bytes += page_bytes;
        for item in page_items {
            if items.len() >= MAX_ITEMS {
                inv.notes.push(format!(
                    "{method} holds more than {MAX_ITEMS} items; the rest was not read"
                ));
                return items;
            }
            items.push(item);
        }
        match next {
            None => return items,
            Some(next) => {
                if !cursors.insert(next.clone()) {
                    inv.notes.push(format!("{method} returned a nextCursor it had returned before (a cycle); stopped after page {page}"));
                    return items;
                }
                cursor = Some(next);
            }
        }
    }
    inv.notes.push(format!(
        "{method} has more than {MAX_PAGES} pages; the rest was not read"
    ));
    items
}
