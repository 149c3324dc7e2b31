//! META-02: hidden or manipulative text (rules P1–P6, SPEC §3.1).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;

use super::document::{Document, Field, Text};
use super::text::{MatchView, Scan, excerpt, is_p1, is_tag, visible, whole_word, words};
use crate::finding::Finding;

const CHECK: &str = "META-02";

/// List A (P2): instruction-like phrases aimed at the model.
pub const LIST_A: &[&str] = &[
    "ignore previous",
    "ignore all previous",
    "ignore the above",
    "disregard previous",
    "disregard all",
    "forget your instructions",
    "do not tell the user",
    "don't tell the user",
    "do not mention",
    "don't mention",
    "without telling the user",
    "without informing the user",
    "do not inform the user",
    "the user must not know",
    "keep this secret",
    "hide this from",
    "before using this tool",
    "before calling this tool",
    "before using any other tool",
    "<important>",
    "</important>",
    "<system>",
    "system prompt",
    "you must always",
    "you must first",
    "always call this tool",
    "this is very important",
    "otherwise the tool will not work",
    "new instructions",
];

/// List B (P3): secrets and sensitive files.
pub const LIST_B: &[&str] = &[
    "~/.ssh",
    ".ssh/",
    "id_rsa",
    "id_ed25519",
    ".env file",
    "/.env",
    "mcp.json",
    "claude_desktop_config",
    ".aws/credentials",
    ".npmrc",
    ".git-credentials",
    "/etc/passwd",
    "/etc/shadow",
    "private key",
    "seed phrase",
    "recovery phrase",
];

/// List C (P4): shadowing phrases.
pub const LIST_C: &[&str] = &[
    "instead of using",
    "do not use the",
    "never use the",
    "rather than using",
    "overrides the",
    "replaces the",
    "use this tool instead",
];

/// Words that, in the same sentence as another tool's name, make it shadowing (P4). SPEC lists
/// "instead"; it counts as "instead of" (this tool *instead of* the other), because a bare
/// trailing "instead" points the model *to* the other tool, as deprecation notices do
/// ("DEPRECATED: use read_text_file instead" in the reference filesystem server).
const SHADOW_WORDS: &[&str] = &[
    "instead of",
    "rather than",
    "never",
    "do not",
    "don't",
    "replace",
    "replaces",
    "replaced",
    "override",
    "overrides",
    "ignore",
];

/// Over this many characters a text gets P6.
pub const LONG_TEXT: usize = 1000;

const CONTEXT: usize = 60;

struct Lists {
    ac: AhoCorasick,
    /// For each pattern, its rule code.
    rule: Vec<&'static str>,
    patterns: Vec<&'static str>,
}

static LISTS: LazyLock<Lists> = LazyLock::new(|| {
    let mut patterns = Vec::new();
    let mut rule = Vec::new();
    // "shadow" words ride along so one pass also tells whether the name part of P4 applies.
    for (code, list) in [
        ("P2", LIST_A),
        ("P3", LIST_B),
        ("P4", LIST_C),
        ("shadow", SHADOW_WORDS),
    ] {
        for p in list {
            patterns.push(*p);
            rule.push(code);
        }
    }
    let ac = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostLongest)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&patterns)
        .unwrap_or_else(|e| panic!("the phrase lists build: {e}"));
    Lists { ac, rule, patterns }
});

static SHADOW: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostLongest)
        .kind(Some(AhoCorasickKind::DFA))
        .build(SHADOW_WORDS)
        .unwrap_or_else(|e| panic!("the shadow words build: {e}"))
});

/// P5: HTML/XML comments, tags that hide text, data: URIs, escaped Unicode, long hex and
/// base64 runs (the last two checked further in [`p5_kind`]).
static MARKUP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?P<comment><!--)",
        r"|(?P<hidden><[a-z][a-z0-9-]*(?-u:\b)[^<>]{0,300}?(?:(?-u:\b)hidden(?-u:\b)|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|em|rem|pt|%)?\s*[;\x22'>]|opacity\s*:\s*0(?:\.0+)?\s*[;\x22'>]))",
        r"|(?P<data>(?-u:\b)data:[a-z]+/[a-z0-9.+-]+[;,])",
        r"|(?P<uescape>\\u\{?[0-9a-f]{4,6}\}?|\\x[0-9a-f]{2})",
        r"|(?P<entity>&#(?:x[0-9a-f]{2,6}|[0-9]{2,7});)",
        r"|(?P<hex>(?-u:\b)[0-9a-f]{32,}(?-u:\b))",
        r"|(?P<b64>[A-Za-z0-9+/]{40,}={0,2})",
    ))
    .unwrap_or_else(|e| panic!("the P5 pattern compiles: {e}"))
});

fn p5_kind(caps: &regex::Captures<'_>) -> Option<(&'static str, String)> {
    if caps.name("comment").is_some() {
        return Some(("an HTML/XML comment", String::new()));
    }
    if caps.name("hidden").is_some() {
        return Some(("markup that hides text", String::new()));
    }
    if caps.name("data").is_some() {
        return Some(("a data: URI", String::new()));
    }
    if caps.name("uescape").is_some() {
        return Some(("escaped Unicode", String::new()));
    }
    if let Some(m) = caps.name("entity") {
        let body = m.as_str().trim_start_matches("&#").trim_end_matches(';');
        let code = match body.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => body.parse().ok(),
        };
        // `&#39;` is an apostrophe; only entities that hide non-ASCII text count.
        return match code {
            Some(c) if c >= 0x80 => Some(("an escaped Unicode character entity", String::new())),
            _ => None,
        };
    }
    if let Some(m) = caps.name("hex") {
        return Some((
            "a long hex run",
            format!(" ({} characters)", m.as_str().len()),
        ));
    }
    if let Some(m) = caps.name("b64") {
        let s = m.as_str();
        let mixed = s.bytes().any(|b| b.is_ascii_uppercase())
            && s.bytes().any(|b| b.is_ascii_lowercase())
            && s.bytes().any(|b| b.is_ascii_digit());
        // A URL path (`org/repo/tree/main/...`) is long and base64-shaped but made of words.
        let longest_segment = s.split('/').map(str::len).max().unwrap_or(0);
        return (mixed && longest_segment >= 24)
            .then(|| ("a long base64 run", format!(" ({} characters)", s.len())));
    }
    None
}

fn finding<'a>(doc: &Document<'a>, text: &Text<'a>, rule: &str) -> crate::finding::FindingBuilder {
    let b = super::finding(CHECK, rule).pointer(doc.pointer(text.path));
    match text.tool.and_then(|i| doc.tools.get(i)) {
        Some(t) => b.tool(t.label()),
        None => b,
    }
}

/// Runs P1–P6 over every text of the document.
pub fn run(doc: &Document<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let names = ToolNames::new(doc);
    for text in &doc.texts {
        let scan = Scan::of(text.text);
        if scan.non_ascii {
            p1(doc, text, &mut out);
        }
        if text.field == Field::PropertyName {
            continue;
        }
        if phrases(doc, text, &scan, &mut out) {
            p4_names(doc, text, &names, &mut out);
        }
        if scan.p5_candidate {
            p5(doc, text, &mut out);
        }
        // A text of at most LONG_TEXT bytes has at most LONG_TEXT characters.
        let chars = if text.text.len() > LONG_TEXT {
            text.text.chars().count()
        } else {
            0
        };
        if chars > LONG_TEXT {
            out.push(
                finding(doc, text, "P6")
                    .message(format!("{chars} characters; read it in full"))
                    .text(excerpt(text.text, 0, 0, 200))
                    .build(),
            );
        }
    }
    out
}

fn p1(doc: &Document<'_>, text: &Text<'_>, out: &mut Vec<Finding>) {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    let mut first = None;
    let mut hidden_runs: Vec<String> = Vec::new();
    let mut run = String::new();
    let chars: Vec<(usize, char)> = text.text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c == '\u{200D}' && emoji_join(&chars, k) {
            continue;
        }
        if is_p1(c) {
            *counts.entry(c as u32).or_default() += 1;
            first.get_or_insert(i);
        }
        if is_tag(c) {
            let ascii = (c as u32) - 0xE0000;
            if (0x20..0x7F).contains(&ascii) {
                run.push(char::from(ascii as u8));
            }
        } else if !run.is_empty() {
            hidden_runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        hidden_runs.push(run);
    }
    let Some(first) = first else { return };
    let tags: usize = counts
        .iter()
        .filter(|(cp, _)| (0xE0000..=0xE007F).contains(*cp))
        .map(|(_, n)| n)
        .sum();
    let mut listed: Vec<String> = counts
        .iter()
        .filter(|(cp, _)| !(0xE0000..=0xE007F).contains(*cp))
        .map(|(cp, n)| {
            if *n > 1 {
                format!("U+{cp:04X} ×{n}")
            } else {
                format!("U+{cp:04X}")
            }
        })
        .collect();
    if tags > 0 {
        listed.push(format!("{tags} Unicode tag characters (U+E0000–U+E007F)"));
    }
    let mut message = format!(
        "invisible or direction-changing characters: {}",
        listed.join(", ")
    );
    for hidden in &hidden_runs {
        message.push_str(&format!(
            "; tag characters hide the text \"{}\"",
            visible(hidden)
        ));
    }
    // The evidence shows where the characters are, and what tag characters spell.
    let mut evidence = excerpt(text.text, first, first, CONTEXT);
    for hidden in &hidden_runs {
        evidence.push_str(&format!(
            " ⟨tag characters decode to \"{}\"⟩",
            visible(hidden)
        ));
    }
    out.push(
        finding(doc, text, "P1")
            .message(message)
            .text(evidence)
            .build(),
    );
    // What the tag characters hide is read by the model: run the phrase lists over it too.
    for hidden in &hidden_runs {
        let decoded = Text {
            text: hidden.as_str(),
            ..text.clone()
        };
        let mut inner = Vec::new();
        let _ = phrases(doc, &decoded, &Scan::of(hidden), &mut inner);
        for mut f in inner {
            f.message = Some(format!(
                "{} (in text hidden as Unicode tag characters)",
                f.message.unwrap_or_default()
            ));
            f.fingerprint = f.compute_fingerprint();
            out.push(f);
        }
    }
}

/// A zero-width joiner between two pictographs is an emoji sequence (👩‍💻), not hidden text.
fn emoji_join(chars: &[(usize, char)], k: usize) -> bool {
    let pictograph = |c: char| {
        let u = c as u32;
        (0x1F000..=0x1FAFF).contains(&u) || (0x2600..=0x27BF).contains(&u) || u == 0xFE0F
    };
    let before = k
        .checked_sub(1)
        .and_then(|j| chars.get(j))
        .is_some_and(|(_, c)| pictograph(*c));
    let after = chars.get(k + 1).is_some_and(|(_, c)| pictograph(*c));
    before && after
}

/// P2, P3 and the list-C part of P4. Returns whether the text holds a shadowing word (for
/// the name part of P4).
fn phrases(doc: &Document<'_>, text: &Text<'_>, scan: &Scan, out: &mut Vec<Finding>) -> bool {
    let mut shadow = false;
    let view = MatchView::with_scan(text.text, scan);
    let lists = &*LISTS;
    let mut by_rule: BTreeMap<&str, (Vec<&str>, usize, usize)> = BTreeMap::new();
    for m in lists.ac.find_iter(view.text.as_ref()) {
        if !whole_word(&view.text, m.start(), m.end()) {
            continue;
        }
        let idx = m.pattern().as_usize();
        let (Some(rule), Some(pattern)) = (lists.rule.get(idx), lists.patterns.get(idx)) else {
            continue;
        };
        if *rule == "shadow" {
            shadow = true;
            continue;
        }
        let (s, e) = view.original_range(m.start(), m.end(), text.text);
        let entry = by_rule.entry(rule).or_insert((Vec::new(), s, e));
        if !entry.0.contains(pattern) {
            entry.0.push(pattern);
        }
    }
    for (rule, (patterns, s, e)) in by_rule {
        let what = match rule {
            "P2" => "instruction aimed at the model",
            "P3" => "names a secret or sensitive file",
            _ => "steers the model away from other tools",
        };
        let quoted: Vec<String> = patterns.iter().map(|p| format!("\"{p}\"")).collect();
        out.push(
            finding(doc, text, rule)
                .message(format!("{what}: {}", quoted.join(", ")))
                .text(excerpt(text.text, s, e, CONTEXT))
                .build(),
        );
    }
    shadow
}

fn p5(doc: &Document<'_>, text: &Text<'_>, out: &mut Vec<Finding>) {
    let t = text.text;
    for whole in MARKUP.find_iter(t) {
        let Some(caps) = MARKUP.captures_at(&t[..whole.end()], whole.start()) else {
            continue;
        };
        if let Some((what, extra)) = p5_kind(&caps) {
            out.push(
                finding(doc, text, "P5")
                    .message(format!("{what}{extra}"))
                    .text(excerpt(t, whole.start(), whole.end(), CONTEXT))
                    .build(),
            );
            return; // one P5 finding per text
        }
    }
}

/// Other tools' names, for the name part of P4.
struct ToolNames {
    ac: Option<AhoCorasick>,
    names: Vec<String>,
}

impl ToolNames {
    fn new(doc: &Document<'_>) -> ToolNames {
        // A name shadows only when it is distinctive: at least 4 characters and an identifier
        // (`send_email`, `sendEmail`), or quoted in the text (checked at the match). A tool
        // called `search` mentioned in "never search twice" is not a reference to it.
        let names: Vec<String> = doc
            .tools
            .iter()
            .filter_map(|t| t.name)
            .filter(|n| n.chars().count() >= 4)
            .map(str::to_string)
            .collect();
        let ac = if names.len() < 2 {
            None
        } else {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostLongest)
                .build(&names)
                .ok()
        };
        ToolNames { ac, names }
    }
}

fn p4_names(doc: &Document<'_>, text: &Text<'_>, names: &ToolNames, out: &mut Vec<Finding>) {
    let Some(ac) = &names.ac else { return };
    if matches!(
        text.field,
        Field::ToolName | Field::ToolTitle | Field::SchemaValue
    ) {
        return;
    }
    let t = text.text;
    let own = text
        .tool
        .and_then(|i| doc.tools.get(i))
        .and_then(|t| t.name);
    for m in ac.find_iter(t) {
        let Some(name) = names.names.get(m.pattern().as_usize()) else {
            continue;
        };
        if Some(name.as_str()) == own || !whole_word(t, m.start(), m.end()) {
            continue;
        }
        let quoted = |b: Option<u8>| matches!(b, Some(b'`' | b'"' | b'\''));
        let is_identifier = words(name).len() > 1;
        let before = m
            .start()
            .checked_sub(1)
            .and_then(|i| t.as_bytes().get(i).copied());
        if !is_identifier && !quoted(before) {
            continue;
        }
        // The sentence around the name.
        let s = t[..m.start()]
            .rfind(['.', '!', '?', '\n'])
            .map(|i| i + 1)
            .unwrap_or(0);
        let e = t[m.end()..]
            .find(['.', '!', '?', '\n'])
            .map(|i| m.end() + i)
            .unwrap_or(t.len());
        let sentence = &t[s..e];
        let word = SHADOW
            .find_iter(sentence)
            .find(|w| whole_word(sentence, w.start(), w.end()))
            .map(|w| &sentence[w.start()..w.end()]);
        if let Some(word) = word {
            out.push(
                finding(doc, text, "P4")
                    .message(format!(
                        "names the tool `{}` together with \"{}\"",
                        visible(name),
                        word.to_lowercase()
                    ))
                    .text(excerpt(t, m.start(), m.end(), CONTEXT))
                    .build(),
            );
            return;
        }
    }
}
