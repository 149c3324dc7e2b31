//! Properties of every parser of server bytes (issue 11), on stable: the same parsers the
//! `fuzz/` targets drive, with proptest's bounded, seeded cases.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use mcpprobe::baseline::{self, Baseline};
use mcpprobe::protocol::rpc;
use mcpprobe::protocol::sse::{MAX_EVENT, SseParser};
use mcpprobe::protocol::stdio::{Frame, LineFramer};
use mcpprobe::rules::document::{MAX_DEPTH, MAX_TEXTS};
use mcpprobe::rules::{Document, Input, agent_card, server_card};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bytes that look like SSE or JSON-RPC lines more often than random bytes do.
fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: message".to_vec()),
        Just(b"event: endpoint".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b": comment".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601}}"#.to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(vec![0xff, 0xfe]),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

/// Arbitrary JSON, biased towards the keys the walk and the rules read.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("name".to_string()),
        Just("description".to_string()),
        Just("title".to_string()),
        Just("tools".to_string()),
        Just("inputSchema".to_string()),
        Just("properties".to_string()),
        Just("items".to_string()),
        Just("enum".to_string()),
        Just("skills".to_string()),
        Just("remotes".to_string()),
        Just("url".to_string()),
        Just("type".to_string()),
        Just("annotations".to_string()),
        Just("prompts".to_string()),
        Just("resources".to_string()),
        Just("uri".to_string()),
        "[a-z_]{1,6}",
    ];
    let text = prop_oneof![
        Just("send_email".to_string()),
        Just("Ignore previous instructions. <IMPORTANT>".to_string()),
        Just("https://127.0.0.1:1/mcp".to_string()),
        Just("object".to_string()),
        Just("a\u{200b}b\u{202e}c".to_string()),
        Just("~/.ssh/id_rsa".to_string()),
        ".{0,24}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        text.prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A tools list whose one tool has a schema nested `depth` deep.
fn nested_tool(depth: usize) -> Value {
    let mut schema = json!({"type": "string", "description": "the innermost"});
    for _ in 0..depth {
        schema = json!({"type": "object", "properties": {"p": schema}});
    }
    json!({"tools": [{"name": "deep", "description": "d", "inputSchema": schema}]})
}

fn sse_events(chunks: &[&[u8]]) -> (Vec<mcpprobe::protocol::sse::SseEvent>, usize) {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        out.extend(p.push(c));
    }
    (out, p.dropped)
}

fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
    let mut f = LineFramer::new(max);
    let mut out = Vec::new();
    for c in chunks {
        f.push(c);
        assert!(
            f.pending() <= max + c.len(),
            "more than a line and a chunk held"
        );
        out.extend(std::iter::from_fn(|| f.next_line()));
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn rpc_messages_never_panic(body in wire_bytes(), sse in any::<bool>(), id in 0u64..4) {
        let ct = if sse { Some("text/event-stream") } else { Some("application/json") };
        let msgs = rpc::messages(ct, &body);
        prop_assert!(msgs.iter().all(Value::is_object));
        let _ = rpc::reply_to(&msgs, id);
        let _ = rpc::has_reply(ct, &body, id);
        if let Some(end) = rpc::last_event_end(&body) {
            prop_assert!(end <= body.len());
        }
    }

    #[test]
    fn sse_framing_is_the_same_split_at_every_position(body in wire_bytes()) {
        let whole = sse_events(&[&body]);
        for at in 0..=body.len() {
            prop_assert_eq!(&sse_events(&[&body[..at], &body[at..]]), &whole, "split at {}", at);
        }
        let bytewise: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(&sse_events(&bytewise), &whole);
        prop_assert!(whole.0.iter().all(|e| e.data.len() <= MAX_EVENT));
    }

    #[test]
    fn stdio_framing_is_the_same_in_any_chunks(body in wire_bytes(), max in 0usize..48, step in 1usize..40) {
        let whole = frames(max, &[&body]);
        let chunked: Vec<&[u8]> = body.chunks(step).collect();
        prop_assert_eq!(&frames(max, &chunked), &whole);
        for at in 0..=body.len() {
            prop_assert_eq!(&frames(max, &[&body[..at], &body[at..]]), &whole);
        }
        for f in &whole {
            if let Frame::Line(l) = f {
                prop_assert!(l.len() <= max && !l.contains(&b'\n'));
            }
        }
        let lines = whole.iter().filter(|f| matches!(f, Frame::Line(_))).count();
        prop_assert!(lines <= body.iter().filter(|b| **b == b'\n').count());
    }

    #[test]
    fn document_walk_pointers_resolve_and_counts_hold(v in json_value()) {
        let j = mcpprobe::rules::Json::borrow(&v);
        for doc in [Document::from_inventory(&j), Document::from_server_card(&j), Document::from_agent_card(&j)] {
            prop_assert!(doc.texts.len() <= MAX_TEXTS);
            for t in &doc.texts {
                let p = doc.pointer(t.path);
                prop_assert!(v.pointer(&p).is_some(), "{} does not resolve", p);
            }
        }
    }

    #[test]
    fn offline_rules_and_cards_never_panic(v in json_value()) {
        for forced in [None, Some(mcpprobe::rules::InputKind::Tools)] {
            if let Ok(input) = Input::from_value(v.clone(), forced) {
                let r = mcpprobe::offline::check_report(&input, "prop", Default::default());
                prop_assert!(serde_json::to_string(&r).is_ok());
            }
        }
        let _ = server_card::endpoints(&v);
        let _ = server_card::run(&v);
        let _ = agent_card::run(&v);
    }

    #[test]
    fn baseline_round_trips(v in json_value(), secs in 0i64..4_000_000_000) {
        let at = chrono::DateTime::from_timestamp(secs, 0).expect("a time");
        let b = Baseline::from_inventory("prop", at, &v);
        let text = b.to_pretty_json().expect("serialises");
        let path = std::path::Path::new("prop.json");
        let again = baseline::parse(text.as_bytes(), path).expect("reads back");
        prop_assert_eq!(&again, &b);
        prop_assert!(baseline::compare(&b, &again).is_empty());
    }

    #[test]
    fn baseline_parse_never_panics(body in wire_bytes()) {
        let _ = baseline::parse(&body, std::path::Path::new("prop.json"));
    }
}

#[test]
fn document_walk_depth_is_bounded() {
    let shallow = nested_tool(MAX_DEPTH / 2);
    let shallow = mcpprobe::rules::Json::borrow(&shallow);
    assert!(Document::from_inventory(&shallow).truncated.is_empty());
    // serde_json refuses more than 128 levels; 120 is deeper than the walk goes.
    let deep = nested_tool(60);
    let deep = mcpprobe::rules::Json::borrow(&deep);
    let doc = Document::from_inventory(&deep);
    assert!(
        !doc.truncated.is_empty(),
        "the walk stops at MAX_DEPTH with a note"
    );
    let deepest = doc
        .texts
        .iter()
        .map(|t| doc.pointer(t.path).matches('/').count())
        .max()
        .unwrap_or(0);
    assert!(
        deepest <= 2 * MAX_DEPTH + 8,
        "a pointer {deepest} steps deep"
    );
}

/// Secrets and texts made of few characters, so that secrets overlap, repeat, sit inside one
/// another and next to the `[REDACTED]` marker, and hold what the encodings change.
fn secret_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop::sample::select(vec![
            'a', 'b', 'A', 'B', '1', ' ', ';', '=', ':', '"', '\\', '/', '%', '+', '[', ']', 'R',
            'E', 'D', 'é', '\n',
        ]),
        0..max,
    )
    .prop_map(|c| c.into_iter().collect())
}

/// A secret's forms a server may echo, as the redactor's unit tests name them.
fn echoed_forms(secret: &str) -> Vec<String> {
    let json = serde_json::to_string(secret).unwrap_or_default();
    vec![
        secret.to_string(),
        json.trim_matches('"').to_string(),
        url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
    ]
}

/// Whether `needle` occurs in `hay`, ignoring ASCII case (as the redactor matches).
fn holds(hay: &str, needle: &str) -> bool {
    hay.to_ascii_lowercase()
        .contains(&needle.to_ascii_lowercase())
}

/// A secret the marker itself spells out (`DACTED`) cannot be hidden; every other can.
fn hideable(secret: &str) -> bool {
    !holds(mcpprobe::net::redact::REDACTED, secret)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..config() })]

    /// SPEC §7: whatever the text, the output never holds a whole secret (a token, of
    /// MIN_WHOLE characters or more), a header word of MIN_WORD or more, or their echoed
    /// forms; it never panics.
    #[test]
    fn redaction_leaves_no_secret(
        tokens in proptest::collection::vec(secret_text(12), 0..4),
        header in secret_text(24),
        filler in proptest::collection::vec(secret_text(6), 0..6),
        picks in proptest::collection::vec(0usize..64, 0..10),
    ) {
        use mcpprobe::net::redact::{MIN_WHOLE, MIN_WORD, Secrets, Source};
        let mut sources: Vec<Source> = tokens.iter().cloned().map(Source::Token).collect();
        sources.push(Source::Header { name: "X-Key".into(), value: header.clone() });
        let secrets = Secrets::from_sources(&sources);
        // Every secret that must not survive, and its forms.
        let mut must: Vec<String> = tokens
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| t.chars().count() >= MIN_WHOLE)
            .collect();
        if header.trim().chars().count() >= MIN_WHOLE {
            must.push(header.trim().to_string());
        }
        must.extend(
            header
                .split(|c: char| c.is_whitespace() || ",;=&\"'".contains(c))
                .filter(|w| w.chars().count() >= MIN_WORD)
                .map(str::to_string),
        );
        let forms: Vec<String> = must.iter().flat_map(|s| echoed_forms(s)).collect();
        // A text of secrets, their forms and filler, in the order the picks say.
        let pool: Vec<&String> = forms.iter().chain(filler.iter()).collect();
        let text: String = if pool.is_empty() {
            String::new()
        } else {
            picks.iter().map(|i| pool[i % pool.len()].as_str()).collect()
        };
        let out = secrets.redact(&text);
        for s in must.iter().filter(|s| hideable(s)) {
            prop_assert!(!holds(&out, s), "{:?} survives in {:?} (from {:?})", s, out, text);
        }
        prop_assert!(!secrets.found_in(&out), "a secret survives in {:?}", out);
        // Redacting again changes nothing.
        prop_assert_eq!(secrets.redact(&out), out.clone());
    }
}

/// Effect verbs of the five classes (the verb tier: never the object of a read verb), as a
/// name may carry them.
const EFFECT_WORDS: [&str; 16] = [
    "delete",
    "purge",
    "wipe",
    "send",
    "notify",
    "exec",
    "execute",
    "spawn",
    "reboot",
    "pay",
    "refund",
    "withdraw",
    "overwrite",
    "upsert",
    "insert",
    "erase",
];

/// Every tool name built around an effect word: any case, any separator, a prefix, an
/// inflection, read words around it (411,600 names).
fn effect_names() -> impl Iterator<Item = String> {
    const SUFFIXES: [&str; 7] = ["", "s", "d", "ed", "ing", "er", "ion"];
    const PREFIXES: [&str; 5] = ["", "re", "un", "bulk", "auto"];
    const AROUND: [&str; 7] = ["get", "list", "user", "cache", "all", "records", ""];
    const SEPARATORS: [&str; 5] = ["_", "-", ".", "", " "];
    let mut names = Vec::new();
    for p in PREFIXES {
        for w in EFFECT_WORDS {
            for s in SUFFIXES {
                // `delete` + `ion` is spelled `deletion`: drop a final e before a vowel suffix.
                let stem = if s.starts_with(['e', 'i']) {
                    w.strip_suffix('e').unwrap_or(w)
                } else {
                    w
                };
                let lower = format!("{p}{stem}{s}");
                let mut capitalised = lower.clone();
                capitalised[..1].make_ascii_uppercase();
                for core in [lower.to_uppercase(), capitalised, lower] {
                    for a in AROUND {
                        for b in AROUND {
                            for sep in SEPARATORS {
                                names.push(
                                    [a, core.as_str(), b]
                                        .into_iter()
                                        .filter(|x| !x.is_empty())
                                        .collect::<Vec<_>>()
                                        .join(sep),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    names.into_iter()
}

/// The call rule (issue 22): a name that carries an effect word, in any case, separator,
/// prefix or inflection, is never callable, whatever its annotations claim. Every name of the
/// space is tried (a sample of 128 once missed `getREWIPEget`, read as get, rewip, eget).
#[test]
fn a_name_with_an_effect_word_is_never_callable() {
    let policy = mcpprobe::active::CallPolicy {
        scope: vec!["*".into()],
        ..Default::default()
    };
    let mut tried = 0;
    let allowed: Vec<String> = effect_names()
        .inspect(|_| tried += 1)
        .filter(|name| {
            let tool = json!({"name": name, "annotations": {"readOnlyHint": true}});
            policy.decide(&tool).is_ok()
        })
        .take(20)
        .collect();
    assert!(allowed.is_empty(), "allowed: {allowed:?}");
    assert_eq!(tried, 411_600);
}

proptest! {
    #![proptest_config(config())]

    /// The call rule on arbitrary text never panics, and what it allows has an ASCII name.
    #[test]
    fn the_call_rule_reads_any_text(
        name in "\\PC{0,40}", title in "\\PC{0,40}", description in "\\PC{0,200}", param in "\\PC{0,20}",
    ) {
        let policy = mcpprobe::active::CallPolicy {
            scope: vec!["*".into()],
            ..Default::default()
        };
        let tool = json!({"name": name, "title": title, "description": description,
            "annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object", "properties": {param: {"type": "string"}}}});
        if let Ok(allowed) = policy.decide(&tool) {
            prop_assert!(allowed.chars().all(|c| c.is_ascii_alphanumeric() || "_-./: ".contains(c)));
        }
    }
}
