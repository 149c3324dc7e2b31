//! The redactor (SPEC §7, "Secrets never leave"): any secrets, any text. The output never
//! holds a secret of the length the rules redact (a whole value of MIN_WHOLE characters or
//! more, a header word of MIN_WORD or more), nor any form of one; it never panics; redacting
//! twice changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::net::redact::{MIN_WHOLE, MIN_WORD, NOT_SECRET_WORDS, REDACTED, Secrets, Source};

/// Whether `needle` occurs in `hay`, ignoring ASCII case (as the redactor matches).
fn holds(hay: &str, needle: &str) -> bool {
    hay.to_ascii_lowercase()
        .contains(&needle.to_ascii_lowercase())
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    // NUL-separated: the first 1..=4 parts are secrets (the last of them a header value),
    // the rest is the text.
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.split('\0');
    let count = usize::from(n % 4) + 1;
    let secrets: Vec<String> = parts.by_ref().take(count).map(str::to_string).collect();
    let haystack: String = parts.collect::<Vec<_>>().join("");
    let mut sources: Vec<Source> = secrets.iter().cloned().map(Source::Token).collect();
    if let Some(h) = secrets.last() {
        sources.push(Source::Header {
            name: "X-Key".into(),
            value: h.clone(),
        });
    }
    let set = Secrets::from_sources(&sources);
    let out = set.redact(&haystack);
    let hideable = |s: &str| !holds(REDACTED, s);
    for s in &secrets {
        let whole = s.trim();
        if whole.chars().count() >= MIN_WHOLE && hideable(whole) {
            assert!(!holds(&out, whole), "{whole:?} survives in {out:?}");
        }
        for w in s.split(|c: char| c.is_whitespace() || ",;=&\"'".contains(c)) {
            let syntax = NOT_SECRET_WORDS.iter().any(|x| x.eq_ignore_ascii_case(w));
            if w.chars().count() >= MIN_WORD && hideable(w) && !syntax {
                assert!(!holds(&out, w), "{w:?} survives in {out:?}");
            }
        }
    }
    assert!(!set.found_in(&out));
    assert_eq!(set.redact(&out), out);
});
