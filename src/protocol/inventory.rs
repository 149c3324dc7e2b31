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

#[derive(Debug, Default)]
pub struct Inventory {
    /// `{tools, prompts, resources, resourceTemplates, instructions}`: the shape the rules read.
    pub value: Value,
    /// Where a list could not be read completely (reported as N1).
    pub notes: Vec<String>,
    /// The first `tools/list` call (its exchange is the evidence of the inventory).
    pub first_tools_call: Option<Call>,
    /// Requests the inventory sent.
    pub calls: usize,
}

impl Inventory {
    pub fn tools(&self) -> &[Value] {
        self.value
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
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
    inv.value = Value::Object(value);
    inv
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
        let call = session.call(method, params).await;
        inv.calls += 1;
        let result = call.result().cloned();
        if method == "tools/list" && inv.first_tools_call.is_none() {
            inv.first_tools_call = Some(call.clone());
        }
        let Some(result) = result else {
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
                        Some(s) => format!("answered {s} without a JSON-RPC result"),
                        None => "no answer".to_string(),
                    },
                });
                inv.notes.push(format!(
                    "{method} page {page} could not be read ({why}); only what was read was checked"
                ));
            }
            return items;
        };
        if let Some(Value::Array(page_items)) = result.get(key) {
            for item in page_items {
                if items.len() >= MAX_ITEMS {
                    inv.notes.push(format!(
                        "{method} holds more than {MAX_ITEMS} items; the rest was not read"
                    ));
                    return items;
                }
                items.push(item.clone());
            }
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            None => return items,
            Some(next) => {
                if !cursors.insert(next.to_string()) {
                    inv.notes.push(format!("{method} returned a nextCursor it had returned before (a cycle); stopped after page {page}"));
                    return items;
                }
                cursor = Some(next.to_string());
            }
        }
    }
    inv.notes.push(format!(
        "{method} has more than {MAX_PAGES} pages; the rest was not read"
    ));
    items
}
