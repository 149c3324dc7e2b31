//! An A2A agent card as served: its rules and its texts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::rules::{Document, agent_card};

fuzz_target!(|data: &[u8]| {
    let Ok(card) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = agent_card::run(&card);
    let card = mcpprobe::rules::Json::borrow(&card);
    let doc = Document::from_agent_card(&card);
    for t in doc.texts.iter().take(64) {
        let _ = doc.pointer(t.path);
    }
});
