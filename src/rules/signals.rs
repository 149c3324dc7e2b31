//! META-02's tool-level signals (issue 23), from the tables in `src/rules/signals.toml`
//! (compiled in): preference manipulation as advertising (several kinds of sales pitch in one
//! tool), and the settling of directives that stand alone — workflow guidance about a server's
//! own tools, and a sensitive file that is the tool's own purpose — into informational notes.
//!
//! Both run after the phrase rules, over a tool's name, title, description and findings, so one
//! tool's signals are judged together (co-signals), not one phrase at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use aho_corasick::{AhoCorasickBuilder, MatchKind};
use regex::Regex;
use serde::Deserialize;

use super::Json;
use super::automaton::Automaton;
use super::document::{Document, Tool};
use super::text::{excerpt, visible, whole_word, word_parts};
use crate::finding::{Confidence, Finding};

const CHECK: &str = "META-02";
const DATA: &str = include_str!("signals.toml");

#[derive(Debug, Deserialize)]
struct Data {
    promotion: PromotionData,
    guidance: GuidanceData,
    purpose: PurposeData,
    markers: MarkerData,
}

#[derive(Debug, Deserialize)]
struct MarkerData {
    labels: Vec<String>,
    openers: Vec<String>,
    closers: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct PromotionData {
    min_categories: usize,
    high_categories: usize,
    category: Vec<Category>,
    /// Phrases that hold a category's word but are no pitch ("best practice").
    #[serde(default)]
    not_pitch: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Category {
    id: String,
    describe: String,
    #[serde(default)]
    r#where: Option<String>,
    shapes: Vec<String>,
    phrases: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct GuidanceData {
    workflow_phrases: Vec<String>,
    families: Vec<String>,
    keep_with_families: Vec<String>,
    keep_with_rules: Vec<String>,
    claim_phrases: Vec<String>,
    foreign_nouns: Vec<String>,
    not_names: Vec<String>,
    tamper_verbs: Vec<String>,
    tamper_objects: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct PurposeData {
    domain: Vec<Domain>,
}

#[derive(Debug, Deserialize)]
struct Domain {
    words: Vec<String>,
    phrases: Vec<String>,
}

/// The shapes a category may name (anything else in the data is refused by [`load`]).
const SHAPES: &[&str] = &[
    "hype-emoji",
    "grade-compound",
    "statistic",
    "disparagement",
    "choice",
];

struct Tables {
    data: Data,
    /// The concealment labels of [markers].
    labels: Automaton,
    /// Every description phrase of every category (not the name-only ones), with its category.
    ac: Automaton,
    owner: Vec<usize>,
}

/// The tables, parsed and checked once. The data is compiled in and held to its shape by the
/// tests, so `None` (a broken table) only disables these signals; it never panics a scan.
static TABLES: LazyLock<Option<Tables>> = LazyLock::new(|| load(DATA).ok());

/// Parses and checks the tables: unknown shapes, empty categories, a `where` other than
/// `name`, and thresholds out of order are errors naming the entry.
fn load(text: &str) -> Result<Tables, String> {
    let data: Data = toml::from_str(text).map_err(|e| format!("src/rules/signals.toml: {e}"))?;
    let p = &data.promotion;
    if p.min_categories < 2 || p.high_categories < p.min_categories {
        return Err("signals.toml: promotion needs 2 <= min_categories <= high_categories".into());
    }
    let mut patterns = Vec::new();
    let mut owner = Vec::new();
    for (i, c) in p.category.iter().enumerate() {
        if let Some(s) = c.shapes.iter().find(|s| !SHAPES.contains(&s.as_str())) {
            return Err(format!(
                "signals.toml: category {}: unknown shape {s}",
                c.id
            ));
        }
        if c.shapes.is_empty() && c.phrases.is_empty() {
            return Err(format!(
                "signals.toml: category {} has nothing to match",
                c.id
            ));
        }
        match c.r#where.as_deref() {
            None => {
                for ph in &c.phrases {
                    patterns.push(ph.as_str());
                    owner.push(i);
                }
            }
            Some("name") => {}
            Some(w) => return Err(format!("signals.toml: category {}: where = {w}", c.id)),
        }
    }
    // The longer phrases that are no pitch win over the words inside them, and count for none.
    for ph in &p.not_pitch {
        patterns.push(ph.as_str());
        owner.push(usize::MAX);
    }
    let mut builder = AhoCorasickBuilder::new();
    builder
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostLongest);
    let ac = Automaton::new(&builder, &patterns).map_err(|e| format!("signals.toml: {e}"))?;
    let labels = Automaton::new(&builder, &data.markers.labels)
        .map_err(|e| format!("signals.toml: markers: {e}"))?;
    if data
        .markers
        .openers
        .iter()
        .chain(&data.markers.closers)
        .any(|o| o.chars().count() != 1)
    {
        return Err("signals.toml: markers: openers and closers are single characters".into());
    }
    Ok(Tables {
        data,
        labels,
        ac,
        owner,
    })
}

const HYPE: &[char] = &[
    '🚀', '🌟', '⭐', '✨', '🔥', '⚡', '💎', '🏆', '👑', '🥇', '💯', '🎯',
];

static STATISTIC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b\d{1,3}(?:\.\d+)?\s?%\s+(?:more\s+|better\s+|higher\s+)?(?:accura\w*|faster|better|uptime|success\w*|precis\w*|satisf\w*|reliab\w*|of\s+(?:users|developers|experts|companies|teams|agents|assistants))|\b\d{1,3}(?:\.\d+)?\s?%\s+(?:[a-z]+\s+){0,2}(?:versus|vs\.?|compared|of\s+cases|of\s+the\s+time|of\s+queries|of\s+requests)|\b\d{1,4}\s?x\s+(?:faster|better|more\s+accurate)|\b\d{1,4}\s+times\s+(?:faster|better|more\s+accurate)",
    )
    .ok()
});

/// A word ending in "-grade" (enterprise-grade, clinical-grade), its start and end.
fn grade_compound(t: &str) -> Option<(usize, usize)> {
    let b = t.as_bytes();
    t.match_indices("-grade").find_map(|(i, m)| {
        let end = i + m.len();
        let word_after = b.get(end).is_some_and(|c| c.is_ascii_alphanumeric());
        let letter_before = i > 0 && b.get(i - 1).is_some_and(|c| c.is_ascii_alphabetic());
        (!word_after && letter_before).then(|| {
            let start = t[..i]
                .rfind(|c: char| !(c.is_alphanumeric() || c == '-'))
                .map_or(0, |s| s + 1);
            (start, end)
        })
    })
}

/// Preference manipulation as advertising: for each tool, the kinds of sales pitch in its name,
/// title and description; `min_categories` different kinds make a P2/preference finding.
pub fn promotion(doc: &Document<'_>, pitches: &super::intent::Pitches, out: &mut Vec<Finding>) {
    let Some(tables) = &*TABLES else { return };
    let cats = &tables.data.promotion.category;
    // The texts the phrase rules already found preference manipulation in (looked up per tool).
    let preferred: BTreeSet<String> = out
        .iter()
        .filter(|f| f.check == CHECK && f.subcode.as_deref() == Some("preference"))
        .filter_map(|f| f.location.pointer.clone())
        .collect();
    for (index, tool) in doc.tools.iter().enumerate() {
        if doc.stopped() {
            break;
        }
        // category -> the first words that showed it
        let mut found: BTreeMap<usize, String> = BTreeMap::new();
        let names: Vec<&str> = tool.name.into_iter().chain(tool.title()).collect();
        for (i, c) in cats.iter().enumerate() {
            if c.r#where.as_deref() != Some("name") {
                continue;
            }
            for n in &names {
                let w = word_parts(n);
                if let Some(x) = w.iter().find(|x| c.phrases.iter().any(|p| p == x.as_ref())) {
                    found.entry(i).or_insert_with(|| x.to_string());
                }
            }
        }
        let desc = tool.description().map(|(d, _)| d);
        let mut first_at: Option<(usize, usize)> = None;
        // The description, then the title: both are prose the model reads.
        let title = tool.title();
        let mut in_title = false;
        for (k, d) in [desc, title].into_iter().enumerate() {
            let Some(d) = d else { continue };
            let before = first_at;
            // Where the phrase categories matched (a choice inside one counts once).
            let mut spans: Vec<(usize, usize)> = Vec::new();
            for m in tables.ac.get(d).find_iter(d) {
                if !whole_word(d, m.start(), m.end()) {
                    continue;
                }
                if let Some(&i) = tables.owner.get(m.pattern().as_usize())
                    && i < cats.len()
                {
                    spans.push((m.start(), m.end()));
                    found
                        .entry(i)
                        .or_insert_with(|| d[m.start()..m.end()].to_string());
                    first_at.get_or_insert((m.start(), m.end()));
                }
            }
            // Read by the sentence reading's pass over the same text (intent::run).
            let (down, choice) = pitches.get(index, k == 1);
            for (i, c) in cats.iter().enumerate() {
                for s in &c.shapes {
                    let hit = match s.as_str() {
                        "disparagement" => down,
                        "choice" => {
                            choice.filter(|&(s, e)| !spans.iter().any(|&(a, b)| a < e && s < b))
                        }
                        "hype-emoji" => d
                            .char_indices()
                            .find(|(_, ch)| HYPE.contains(ch))
                            .map(|(at, ch)| (at, at + ch.len_utf8())),
                        "grade-compound" => grade_compound(d),
                        "statistic" => STATISTIC
                            .as_ref()
                            .and_then(|r| r.find(d))
                            .map(|m| (m.start(), m.end())),
                        _ => None,
                    };
                    if let Some((s, e)) = hit {
                        found
                            .entry(i)
                            .or_insert_with(|| d.get(s..e).unwrap_or_default().to_string());
                        first_at.get_or_insert((s, e));
                    }
                }
            }
            if k == 1 && before.is_none() && first_at.is_some() {
                in_title = true;
            }
        }
        let n = found.len();
        let p = &tables.data.promotion;
        // At least one kind in what the model reads as prose: a name alone is a name.
        if n < p.min_categories || first_at.is_none() {
            continue;
        }
        let confidence = if n >= p.high_categories {
            Confidence::High
        } else {
            Confidence::Medium
        };
        let kinds: Vec<String> = found
            .iter()
            .filter_map(|(i, w)| {
                cats.get(*i)
                    .map(|c| format!("{} (\"{}\")", c.describe, visible(w)))
            })
            .collect();
        let (s, e) = first_at.unwrap_or((0, 0));
        let (pointer, shown) = if in_title {
            let at = if tool.value.get("title").and_then(Json::as_str).is_some() {
                "title"
            } else {
                "annotations/title"
            };
            (format!("{}/{at}", tool.pointer), title.unwrap_or_default())
        } else {
            (
                format!("{}/description", tool.pointer),
                desc.unwrap_or_default(),
            )
        };
        let n = found.len();
        // The phrase rules' preference finding on the same text, when there is one, stands.
        if preferred.contains(&pointer) {
            continue;
        }
        out.push(
            super::finding(CHECK, "P2")
                .subcode("preference")
                .tool(tool.label())
                .pointer(pointer)
                .confidence(confidence)
                .message(format!(
                    "preference manipulation: advertising aimed at the model, {n} kinds of pitch: {}",
                    kinds.join(", ")
                ))
                .text(excerpt(shown, s, e, 60))
                .build(),
        );
    }
}

/// A concealment marker in `t` (see `[markers]` in signals.toml): where it is. A label counts
/// when a marker character opens it (spaces aside, at most two of them) and one closes it or a
/// colon follows, or when it leads its clause (the text's start, a line's, after ". ") and a
/// colon follows.
pub fn concealment_marker(t: &str) -> Option<(usize, usize)> {
    let tables = TABLES.as_ref()?;
    let m = &tables.data.markers;
    let is = |c: char, set: &[String]| set.iter().any(|x| x.starts_with(c));
    for hit in tables.labels.get(t).find_iter(t).take(64) {
        let (s, e) = (hit.start(), hit.end());
        if !whole_word(t, s, e) {
            continue;
        }
        // A label joined into a compound by hyphens, underscores or slashes (`X-Api-Secret-Token`,
        // `show_hidden_files`) is read with the whole compound: the opener and closer are the
        // characters around the compound (`{{hidden_prompt}}` is a marker, a header name is not).
        let (left, right) = compound(t, s, e);
        let alone = (left, right) == (s, e);
        // Around a compound only brackets and the like mark it: a joiner there continues a path
        // or a name (`/srv/hidden-share/`).
        let marks = |c: char, set: &[String]| is(c, set) && (alone || !is_joiner(c));
        let before: Vec<char> = t[..left].chars().rev().take(3).collect();
        let opened = before
            .iter()
            .find(|c| **c != ' ')
            .is_some_and(|c| marks(*c, &m.openers));
        let after = t[right..].trim_start_matches([' ', '\'']);
        let first = after.chars().next();
        // "Label:" leading its clause, for a label standing alone (not `X-Api-Secret:`).
        let colon = first == Some(':') && alone;
        let closed = first.is_some_and(|c| marks(c, &m.closers));
        let head = t[..left].trim_end_matches(' ');
        let leads = head.is_empty() || head.ends_with(['\n', '.', '!', '?', ';']);
        if (opened && closed) || (leads && colon) {
            return Some((s, e));
        }
    }
    None
}

/// The compound around `s..e`: extended over `-`, `_` or `/` joined to word characters on both
/// sides (`X-Api-Secret-Token`), at most [`COMPOUND`] bytes each way (bounded work on a hostile
/// text; a longer compound ends there).
fn compound(t: &str, s: usize, e: usize) -> (usize, usize) {
    let mut left = s;
    let floor = t.floor_char_boundary(s.saturating_sub(COMPOUND));
    loop {
        let mut back = t[floor..left].char_indices().rev();
        match (back.next(), back.next()) {
            (Some((j, jc)), Some((_, wc))) if is_joiner(jc) && wc.is_alphanumeric() => {
                let word_start = t[floor..floor + j]
                    .char_indices()
                    .rev()
                    .take_while(|(_, c)| c.is_alphanumeric())
                    .last()
                    .map_or(floor + j, |(i, _)| floor + i);
                left = word_start;
            }
            _ => break,
        }
    }
    let mut right = e;
    let ceil = t.floor_char_boundary(e.saturating_add(COMPOUND).min(t.len()));
    loop {
        let mut ahead = t[right..ceil].char_indices();
        match (ahead.next(), ahead.next()) {
            (Some((_, jc)), Some((w, wc))) if is_joiner(jc) && wc.is_alphanumeric() => {
                let word_end = t[right + w..ceil]
                    .char_indices()
                    .find(|(_, c)| !c.is_alphanumeric())
                    .map_or(ceil, |(i, _)| right + w + i);
                right = word_end;
            }
            _ => break,
        }
    }
    (left, right)
}

/// The characters that join words into a compound (`X-Api-Secret-Token`, `a_b`, `a/b`).
fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '_' | '/')
}

/// How far [`compound`] extends a label each way.
const COMPOUND: usize = 128;

/// The quoted phrases of a phrase-rule finding's message (`…: "a", "b"`, written by
/// poisoning.rs from its own lists).
fn quoted(message: &str) -> Vec<&str> {
    let Some((_, list)) = message.split_once(": ") else {
        return Vec::new();
    };
    // A name read as a sentence adds where it was read (poisoning.rs `name_phrases`).
    let list = list.split(" (in the name ").next().unwrap_or(list);
    list.split(", ")
        .map(|q| q.trim_matches('"'))
        .filter(|q| !q.is_empty())
        .collect()
}

/// What a finding is to the settling: a directive that may be guidance, a secret that may be
/// the purpose, or a signal that keeps everything in its tool as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Guidance,
    Purpose,
    Keep,
    Other,
}

/// Settles the directives that stand alone in their tool: workflow guidance (P2 list-A
/// workflow phrases, P2/order, P2/preference below high confidence) and a sensitive file named
/// as the tool's or the server's purpose (P3) become informational notes, P6/guidance and
/// P6/purpose, when nothing in the same tool conceals, exfiltrates, claims a role, names a
/// secret to move, names another server's tool or hides markup.
pub fn settle(doc: &Document<'_>, out: &mut Vec<Finding>) {
    let Some(tables) = &*TABLES else { return };
    let g = &tables.data.guidance;
    // Words of every tool name on the server: what the server is for.
    let server: BTreeSet<String> = doc
        .tools
        .iter()
        .filter_map(|t| t.name)
        .flat_map(name_words)
        .collect();
    let lower_names: BTreeSet<String> = doc
        .tools
        .iter()
        .filter_map(|t| t.name)
        .map(str::to_ascii_lowercase)
        .collect();
    let by_label: BTreeMap<String, &Tool<'_>> = doc.tools.iter().map(|t| (t.label(), t)).collect();
    let kind = |f: &Finding| -> Kind {
        if f.check != CHECK {
            return Kind::Other;
        }
        let rule = f.rule.as_deref().unwrap_or("");
        let sub = f.subcode.as_deref();
        match (rule, sub) {
            ("P6", _) => Kind::Other,
            ("P2", None) => {
                let q = quoted(f.message.as_deref().unwrap_or(""));
                if !q.is_empty() && q.iter().all(|p| g.workflow_phrases.iter().any(|w| w == p)) {
                    Kind::Guidance
                } else {
                    Kind::Keep
                }
            }
            ("P2", Some(s)) if g.families.iter().any(|x| x == s) => {
                let claims = s == "preference"
                    && quoted(f.message.as_deref().unwrap_or(""))
                        .iter()
                        .any(|q| g.claim_phrases.iter().any(|c| c.eq_ignore_ascii_case(q)));
                let tool = f.location.tool.as_deref().and_then(|l| by_label.get(l));
                let text = tool.and_then(|t| t.description()).map(|(d, _)| d);
                let foreign = text.is_some_and(|d| names_foreign(g, d, &server) || tampers(g, d));
                let own_step = tool
                    .zip(text)
                    .is_some_and(|(t, d)| names_own_tool(&lower_names, t, d));
                if f.confidence == Confidence::High || claims || foreign || !own_step {
                    Kind::Keep
                } else {
                    Kind::Guidance
                }
            }
            ("P2" | "P4", Some(s)) if g.keep_with_families.iter().any(|x| x == s) => Kind::Keep,
            ("P3", None) => {
                let tool = f.location.tool.as_deref().and_then(|l| by_label.get(l));
                if purpose(tables, f, tool.copied(), &server) {
                    Kind::Purpose
                } else {
                    Kind::Keep
                }
            }
            (r, _) if g.keep_with_rules.iter().any(|x| x == r) => Kind::Keep,
            _ => Kind::Other,
        }
    };
    let kinds: Vec<Kind> = out.iter().map(kind).collect();
    // Tools (by label; None for server-level texts) with a signal that keeps their directives.
    let mut kept: BTreeSet<Option<&str>> = BTreeSet::new();
    for (f, k) in out.iter().zip(&kinds) {
        if *k == Kind::Keep {
            kept.insert(f.location.tool.as_deref());
        }
    }
    let kept: BTreeSet<Option<String>> = kept.into_iter().map(|t| t.map(str::to_string)).collect();
    // (pointer, sub-code) -> the note, so two directives in one text make one note.
    let mut notes: BTreeMap<(String, &'static str), (Finding, Vec<String>)> = BTreeMap::new();
    let mut rest = Vec::with_capacity(out.len());
    for (f, k) in std::mem::take(out).into_iter().zip(kinds) {
        let sub = match k {
            Kind::Guidance => "guidance",
            Kind::Purpose => "purpose",
            _ => {
                rest.push(f);
                continue;
            }
        };
        if kept.contains(&f.location.tool) {
            rest.push(f);
            continue;
        }
        let key = (f.location.pointer.clone().unwrap_or_default(), sub);
        let said = f.message.clone().unwrap_or_default();
        match notes.get_mut(&key) {
            Some((_, msgs)) => msgs.push(said),
            None => {
                notes.insert(key, (f, vec![said]));
            }
        }
    }
    for ((pointer, sub), (f, msgs)) in notes {
        let what = if sub == "guidance" {
            "workflow guidance to the model about this server's own tools, with nothing hidden, \
             sensitive or foreign beside it (a note to read, not an attack on its own)"
        } else {
            "a sensitive file or secret named as the tool's own purpose, with nothing that moves \
             it elsewhere (a note to read)"
        };
        let mut b = super::finding(CHECK, "P6")
            .subcode(sub)
            .pointer(pointer)
            .message(format!("{what}: {}", msgs.join("; ")));
        if let Some(t) = &f.location.tool {
            b = b.tool(t.clone());
        }
        if let Some(t) = &f.evidence.text {
            b = b.text(t.clone());
        }
        rest.push(b.build());
    }
    *out = rest;
}

/// The words of a name: its parts (snake, kebab, camelCase, digits apart) and its pieces
/// between separators, lower case (`list-k8s-contexts` holds `k8s` as well as `k`, `8`, `s`).
fn name_words(name: &str) -> Vec<String> {
    let mut w: Vec<String> = word_parts(name)
        .into_iter()
        .map(|w| w.into_owned())
        .collect();
    w.extend(
        name.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|p| !p.is_empty())
            .map(str::to_ascii_lowercase),
    );
    w
}

/// Whether a tool's text names another of this server's tools (`names`: every tool name in
/// ASCII lower case), whole word, ASCII case aside: one pass over the text's identifier-like
/// words (at most 2,000), one set lookup each, however many tools the server has.
fn names_own_tool(names: &BTreeSet<String>, tool: &Tool<'_>, text: &str) -> bool {
    let own = tool.name.map(str::to_ascii_lowercase);
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|w| w.trim_matches('.'))
        .filter(|w| w.len() >= 3)
        .take(2000)
        .any(|w| {
            let w = w.to_ascii_lowercase();
            names.contains(&w) && own.as_deref() != Some(w.as_str())
        })
}

/// Whether a text names an operation, tool or function ("the minus operation", "the
/// send_email tool") whose name is no word of this server's tool names.
fn names_foreign(g: &GuidanceData, text: &str, server: &BTreeSet<String>) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .take(400)
        .map(|w| {
            w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .to_ascii_lowercase()
        })
        .collect();
    words.windows(2).any(|w| {
        g.foreign_nouns.iter().any(|n| *n == w[1])
            && !w[0].is_empty()
            && w[0]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && !g.not_names.iter().any(|x| *x == w[0])
            && !g.foreign_nouns.iter().any(|x| *x == w[0])
            && !word_parts(&w[0])
                .iter()
                .any(|p| server.contains(p.as_ref()))
    })
}

/// Whether a text tells the model to change the values, arguments or result of a step.
fn tampers(g: &GuidanceData, text: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .take(400)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_ascii_lowercase()
        })
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        g.tamper_verbs.iter().any(|v| v == w)
            && words
                .iter()
                .skip(i + 1)
                .take(3)
                .any(|o| g.tamper_objects.iter().any(|x| x == o))
    })
}

/// Whether every phrase of a P3 finding belongs to a domain that the tool's name or title, or
/// the server's tool names, make its purpose.
fn purpose(
    tables: &Tables,
    f: &Finding,
    tool: Option<&Tool<'_>>,
    server: &BTreeSet<String>,
) -> bool {
    purpose_of(
        tables,
        &quoted(f.message.as_deref().unwrap_or("")),
        tool,
        server,
    )
}

/// Whether the sensitive phrases `q` (P3's) are the tool's own purpose by its name or title
/// alone (the server's other tools are not read): for a rule that reads one text at a time.
pub(super) fn own_purpose(q: &[&str], tool: &Tool<'_>) -> bool {
    TABLES
        .as_ref()
        .is_some_and(|tables| purpose_of(tables, q, Some(tool), &BTreeSet::new()))
}

fn purpose_of(
    tables: &Tables,
    q: &[&str],
    tool: Option<&Tool<'_>>,
    server: &BTreeSet<String>,
) -> bool {
    let mut own: BTreeSet<String> = BTreeSet::new();
    if let Some(t) = tool {
        for n in t.name.into_iter().chain(t.title()) {
            own.extend(name_words(n));
        }
    }
    !q.is_empty()
        && q.iter().all(|phrase| {
            // The phrase is the tool's name (`wallet_get_private_key`, `create_private_key`).
            let named = word_parts(phrase);
            if !named.is_empty() && named.iter().all(|w| own.contains(w.as_ref())) {
                return true;
            }
            tables.data.purpose.domain.iter().any(|d| {
                d.phrases.iter().any(|p| p == phrase)
                    && d.words
                        .iter()
                        .any(|w| own.contains(w) || server.contains(w))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_load_and_every_category_is_described() {
        let t = load(DATA).expect("signals.toml loads");
        assert!(t.data.promotion.category.len() >= 8);
        for c in &t.data.promotion.category {
            assert!(!c.describe.is_empty(), "{}", c.id);
        }
        // The workflow phrases are list A's (the P2 finding quotes them).
        for p in &t.data.guidance.workflow_phrases {
            assert!(super::super::poisoning::LIST_A.contains(&p.as_str()), "{p}");
        }
        // Purpose phrases are P3's words (list B or the stores beyond it).
        for d in &t.data.purpose.domain {
            for p in &d.phrases {
                assert!(
                    super::super::poisoning::LIST_B.contains(&p.as_str())
                        || super::super::poisoning::STORES.contains(&p.as_str()),
                    "{p}"
                );
            }
        }
    }

    #[test]
    fn broken_tables_are_refused_with_the_entry_named() {
        let bad = DATA.replace("shapes = [\"hype-emoji\"]", "shapes = [\"sparkles\"]");
        let e = load(&bad).err().unwrap_or_default();
        assert!(e.contains("hype") && e.contains("sparkles"), "{e}");
        assert!(load("promotion = 1").is_err());
    }

    /// What a fixture naming a table must show (fire-*) or must not (quiet-*).
    fn shows(table: &str, f: &crate::finding::Finding) -> bool {
        let (rule, sub) = (f.rule.as_deref(), f.subcode.as_deref());
        let msg = f.message.as_deref().unwrap_or("");
        f.check == CHECK
            && match table {
                "promotion" => rule == Some("P2") && msg.contains("advertising aimed at the model"),
                "guidance" => rule == Some("P6") && sub == Some("guidance"),
                "purpose" => rule == Some("P6") && sub == Some("purpose"),
                "markers" => rule == Some("P2") && msg.contains("a marker labels text as hidden"),
                _ => false,
            }
    }

    /// Every table of signals.toml has three firing and three near-miss fixtures that name it
    /// (`"signals": ["promotion"]`), each doing what its name says, and every promotion
    /// category shows in a firing fixture's finding.
    #[test]
    fn every_table_has_fires_and_near_misses_that_name_it() {
        let tables = ["promotion", "guidance", "purpose", "markers"];
        let mut counts: BTreeMap<(&str, bool), usize> = BTreeMap::new();
        let mut categories: BTreeSet<String> = BTreeSet::new();
        let mut problems = Vec::new();
        for (name, fire, named, found) in super::super::fixtures_naming("signals") {
            let found = match found {
                Ok(f) => f,
                Err(e) => {
                    problems.push(format!("{name}: {e}"));
                    continue;
                }
            };
            for t in &named {
                let Some(&t) = tables.iter().find(|x| **x == t) else {
                    problems.push(format!("{name}: names {t:?}, no table of signals.toml"));
                    continue;
                };
                let shown: Vec<_> = found.iter().filter(|f| shows(t, f)).collect();
                if fire == shown.is_empty() {
                    problems.push(format!(
                        "{name}: {} {t}",
                        if fire { "does not show" } else { "shows" }
                    ));
                    continue;
                }
                *counts.entry((t, fire)).or_default() += 1;
                for f in shown {
                    categories.insert(f.message.clone().unwrap_or_default());
                }
            }
        }
        for t in tables {
            for fire in [true, false] {
                let n = counts.get(&(t, fire)).copied().unwrap_or(0);
                if n < 3 {
                    problems.push(format!(
                        "{t}: {n} {} fixtures name it (3 needed)",
                        if fire { "fire-*" } else { "quiet-*" }
                    ));
                }
            }
        }
        let all = categories.into_iter().collect::<Vec<_>>().join("\n");
        if let Some(t) = &*TABLES {
            for c in &t.data.promotion.category {
                if !all.contains(&format!("{} (", c.describe)) {
                    problems.push(format!(
                        "promotion category {}: no firing fixture shows it",
                        c.id
                    ));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn shapes() {
        assert_eq!(grade_compound("An enterprise-grade engine"), Some((3, 19)));
        assert_eq!(grade_compound("upgrade the package"), None);
        assert_eq!(grade_compound("-grade"), None);
        let r = STATISTIC.as_ref().expect("the statistic pattern builds");
        assert!(r.is_match("99.9% accurate answers"));
        assert!(r.is_match("10x faster than the rest"));
        assert!(!r.is_match("returns 20% of the rows"));
    }
}
