//! The active call rule on arbitrary text: a tool's name, title, description and one
//! parameter's name, description and offered value cut from the input at NUL bytes. Never
//! panics, and a tool it allows has a name whose NFKC form (what the rule reads: fullwidth
//! `ｇｅｔ` is `get`, `ǌ` is `nj`) is ASCII letters, digits and separators only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::active::{CallPolicy, words};
use serde_json::json;
use unicode_normalization::UnicodeNormalization;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let mut next = || parts.next().unwrap_or("").to_string();
    let (name, title, description, param, param_desc, value) =
        (next(), next(), next(), next(), next(), next());
    let tool = json!({
        "name": name, "title": title, "description": description,
        "annotations": {"readOnlyHint": true},
        "inputSchema": {"type": "object", "properties": {
            param.clone(): {"type": "string", "description": param_desc, "default": value}}},
    });
    let policy = CallPolicy {
        scope: vec!["*".into()],
        ..CallPolicy::default()
    };
    if let Ok(allowed) = policy.decide(&tool) {
        assert!(
            allowed
                .nfkc()
                .all(|c| c.is_ascii_alphanumeric() || "_-./: ".contains(c)),
            "{allowed:?}"
        );
    }
    let _ = words::split_text(&description);
    let _ = words::normalise(&title);
});
