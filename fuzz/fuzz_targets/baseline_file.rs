//! A baseline file (`--baseline`, committed and maybe edited by hand): parsed, compared with
//! itself and with an empty state, written and read back. A mutated file rarely keeps its
//! `tool_list_sha256` right, so the bytes are also read as an inventory and pinned: the
//! baseline made of it must be written and read back unchanged.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcpprobe::baseline::{self, Baseline};

fn round_trip(b: &Baseline) {
    let path = Path::new("fuzz.json");
    assert!(
        baseline::compare(b, b).is_empty(),
        "a baseline differs from itself"
    );
    let text = b.to_pretty_json().expect("a baseline serialises");
    let again = baseline::parse(text.as_bytes(), path).expect("what was written reads back");
    assert_eq!(&again, b);
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.json");
    if let Ok(b) = baseline::parse(data, path) {
        let empty = Baseline::from_inventory(&b.target, b.written_at, &serde_json::json!({}));
        let _ = baseline::compare(&b, &empty);
        let _ = baseline::compare(&empty, &b);
        round_trip(&b);
    }
    if let Ok(inventory) = serde_json::from_slice::<serde_json::Value>(data) {
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let pinned = Baseline::from_inventory("fuzz", at, &inventory);
        round_trip(&pinned);
    }
});
