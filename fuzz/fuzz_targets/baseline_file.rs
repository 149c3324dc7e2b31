//! A baseline file (`--baseline`, committed and maybe edited by hand): parsed, compared with
//! itself and with an empty state, written and read back.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcpprobe::baseline::{self, Baseline};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.json");
    let Ok(b) = baseline::parse(data, path) else {
        return;
    };
    assert!(
        baseline::compare(&b, &b).is_empty(),
        "a baseline differs from itself"
    );
    let empty = Baseline::from_inventory(&b.target, b.written_at, &serde_json::json!({}));
    let _ = baseline::compare(&b, &empty);
    let _ = baseline::compare(&empty, &b);
    let text = b.to_pretty_json().expect("a parsed baseline serialises");
    let again = baseline::parse(text.as_bytes(), path).expect("what was written reads back");
    assert_eq!(again, b);
});
