//! The document walk and every metadata rule on arbitrary bytes: what `mcpprobe check` does
//! with a file (tools list, inventory, server card or agent card, detected or forced).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::rules::{Document, Input, InputKind};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let forced = match pick % 4 {
        0 => None,
        1 => Some(InputKind::Tools),
        2 => Some(InputKind::ServerCard),
        _ => Some(InputKind::AgentCard),
    };
    let Ok(input) = Input::parse(body, forced) else {
        return;
    };
    let doc: Document<'_> = input.document();
    assert!(doc.texts.len() <= mcpprobe::rules::document::MAX_TEXTS);
    for t in doc.texts.iter().take(64) {
        let _ = doc.pointer(t.path);
    }
    let report = mcpprobe::offline::check_document(&input, &doc, "fuzz", Default::default());
    let _ = serde_json::to_string(&report);
});
