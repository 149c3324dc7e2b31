//! A server card (`/.well-known/mcp.json`) as served: its endpoints, its rules, its texts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::rules::{Document, server_card};

fuzz_target!(|data: &[u8]| {
    let card: serde_json::Value = match serde_json::from_slice(data) {
        Ok(v) => v,
        Err(e) => {
            let _ = server_card::not_json(&e.to_string());
            return;
        }
    };
    let _ = server_card::endpoints(&card);
    let _ = server_card::run(&card);
    let card = mcpprobe::rules::Json::borrow(&card);
    let doc = Document::from_server_card(&card);
    for t in doc.texts.iter().take(64) {
        let _ = doc.pointer(t.path);
    }
});
