//! META-03: what the tools can do (capability classes; rules C1–C11, SPEC §3.1; C10 and C11
//! go beyond the SPEC's table: a tool that hands out secrets, a tool that reads any URL).
//!
//! Classes come from the words of a tool's name and title. Descriptions and parameter names
//! count only for the "reads" classes (reads untrusted content, reads private data, file
//! system), and parameter names also for credentials. Words match whole words, also inside
//! snake_case, camelCase and kebab-case identifiers, never inside other words.

use rustc_hash::FxHashMap;
use std::sync::LazyLock;

use super::json::{Json, Object};

use super::automaton::Automaton;
use super::document::{Document, Tool, token};
use aho_corasick::{AhoCorasickBuilder, MatchKind};

use super::text::{MatchView, visible, whole_word, word_parts, words};
use crate::finding::Finding;

const CHECK: &str = "META-03";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    ReadsUntrusted,
    ReadsPrivate,
    Changes,
    Deletes,
    Sends,
    Runs,
    FileSystem,
    Payments,
    Credentials,
}

impl Class {
    pub const ALL: [Class; 9] = [
        Class::ReadsUntrusted,
        Class::ReadsPrivate,
        Class::Changes,
        Class::Deletes,
        Class::Sends,
        Class::Runs,
        Class::FileSystem,
        Class::Payments,
        Class::Credentials,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Class::ReadsUntrusted => "reads untrusted content",
            Class::ReadsPrivate => "reads private data",
            Class::Changes => "changes data",
            Class::Deletes => "deletes data",
            Class::Sends => "sends data out",
            Class::Runs => "runs code or commands",
            Class::FileSystem => "file system",
            Class::Payments => "payments",
            Class::Credentials => "handles credentials",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// Classes that make a tool one with effects (C3, C4, S4).
    pub fn has_effects(set: u16) -> bool {
        [Class::Changes, Class::Deletes, Class::Sends, Class::Runs]
            .iter()
            .any(|c| set & c.bit() != 0)
    }
}

/// The class word table of SPEC §3.1 ("env" and "environment variables" added to reads
/// private data).
#[rustfmt::skip]
const TABLE: &[(Class, &[&str])] = &[
    (Class::ReadsUntrusted, &[
        "fetch", "browse", "scrape", "crawl", "webpage", "web page", "website", "url", "urls",
        "inbox", "emails", "incoming", "ticket", "tickets", "issue", "issues", "comment",
        "comments", "pull request", "rss", "web search", "search the web", "download", "html",
    ]),
    (Class::ReadsPrivate, &[
        "customer", "customers", "database", "db", "records", "crm", "personal", "employee",
        "employees", "patient", "account", "accounts", "documents", "drive", "repository", "repo",
        "private", "internal", "sql", "contacts", "calendar", "mailbox", "inbox", "files", "env",
        "environment variables",
    ]),
    (Class::Changes, &[
        "create", "update", "write", "edit", "modify", "insert", "upsert", "set", "add", "commit",
        "merge", "move", "rename", "save", "patch", "put", "append", "upload",
    ]),
    (Class::Deletes, &[
        "delete", "remove", "drop", "truncate", "purge", "destroy", "erase", "wipe",
    ]),
    (Class::Sends, &[
        "send", "reply", "forward", "publish", "post", "webhook", "upload", "share", "notify",
        "tweet", "sms", "smtp", "message", "email", "mail", "http request", "post request",
        "invite",
    ]),
    (Class::Runs, &[
        "exec", "execute", "shell", "bash", "command", "cmd", "terminal", "eval", "run code",
        "python", "script", "subprocess", "spawn", "powershell", "sandbox",
    ]),
    (Class::FileSystem, &[
        "file", "files", "directory", "folder", "path", "filesystem", "filepath", "filename",
    ]),
    (Class::Payments, &[
        "payment", "payments", "pay", "transfer", "refund", "charge", "purchase", "checkout",
        "wallet", "payout",
    ]),
    (Class::Credentials, &[
        "password", "passwd", "token", "api key", "apikey", "api_key", "secret", "credential",
        "credentials", "oauth",
    ]),
];

/// Phrase (words joined by one space) → class bits. A fixed table (nothing a server sends is
/// ever inserted), so the fast non-keyed hash cannot be driven into collisions.
static WORDS: LazyLock<FxHashMap<String, u16>> = LazyLock::new(|| {
    let mut m: FxHashMap<String, u16> = FxHashMap::default();
    for (class, list) in TABLE {
        for w in *list {
            *m.entry(words(w).join(" ")).or_default() |= class.bit();
        }
    }
    m
});

/// Every word that is an entry or starts a multi-word entry ("web page", "search the web"):
/// its class bits (0 when it only starts phrases) and whether a phrase may start with it. One
/// lookup per word of a name.
static LOOKUP: LazyLock<FxHashMap<String, (u16, bool)>> = LazyLock::new(|| {
    let mut m: FxHashMap<String, (u16, bool)> = WORDS
        .iter()
        .filter(|(k, _)| !k.contains(' '))
        .map(|(k, bits)| (k.clone(), (*bits, false)))
        .collect();
    for k in WORDS.keys() {
        if let Some((first, _)) = k.split_once(' ') {
            m.entry(first.to_string()).or_default().1 = true;
        }
    }
    m
});

/// The table entries of the "reads" classes (the only ones a description counts for) as prose
/// patterns, with each pattern's phrase and class bits (a match, ASCII case aside, is its
/// pattern: no lookup, no copy). Leaving the other entries out finds the same "reads" words
/// (no other entry starts with one, or hides one behind a longer match; a test holds the two
/// automata to the same answers) with a smaller automaton and fewer matches to look at.
static PROSE: LazyLock<(Automaton, Vec<(&'static str, u16)>)> = LazyLock::new(|| {
    let patterns: Vec<(&'static str, u16)> = WORDS
        .iter()
        .filter(|(_, bits)| *bits & READS != 0)
        .map(|(k, bits)| (k.as_str(), *bits & READS))
        .collect();
    let ac = Automaton::new(
        AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            // As the phrase lists' automaton (poisoning.rs): on prose a prefilter only costs.
            .prefilter(false),
        patterns.iter().map(|(p, _)| p),
    )
    .unwrap_or_else(|e| panic!("the class words build: {e}"));
    (ac, patterns)
});

const READS: u16 = (1 << Class::ReadsUntrusted as u16)
    | (1 << Class::ReadsPrivate as u16)
    | (1 << Class::FileSystem as u16);
const PARAMS: u16 = READS | (1 << Class::Credentials as u16);

/// The most (class, word) pairs one text yields per class: the first ones are the evidence; a
/// text that repeats a word a million times yields no more (and a class named late in a long
/// text is still found).
const MAX_PER_CLASS: usize = 8;

/// Every (class, word) found in `text`, restricted to `mask`, in order of appearance.
pub fn classify(text: &str, mask: u16) -> Vec<(Class, String)> {
    classify_words(&word_parts(text), mask)
}

/// [`classify`] over words already split.
pub fn classify_words<S: AsRef<str>>(w: &[S], mask: u16) -> Vec<(Class, String)> {
    let mut found: Vec<(Class, String)> = Vec::new();
    let mut per_class = [0usize; Class::ALL.len()];
    let mut push = |phrase: &str, bits: u16| {
        for c in Class::ALL {
            if bits & mask & c.bit() != 0 && per_class[c as usize] < MAX_PER_CLASS {
                per_class[c as usize] += 1;
                found.push((c, phrase.to_string()));
            }
        }
    };
    let mut phrase = String::new();
    for (i, word) in w.iter().enumerate() {
        let Some(&(bits, starts)) = LOOKUP.get(word.as_ref()) else {
            continue;
        };
        if bits != 0 {
            push(word.as_ref(), bits);
        }
        // Multi-word entries ("web page", "search the web") only start at a few words.
        if !starts {
            continue;
        }
        phrase.clear();
        phrase.push_str(word.as_ref());
        for next in w.iter().skip(i + 1).take(2) {
            phrase.push(' ');
            phrase.push_str(next.as_ref());
            if let Some(bits) = WORDS.get(phrase.as_str()) {
                push(&phrase, *bits);
            }
        }
    }
    found
}

/// The "reads" classes a description names: for each, the first word found (what a profile
/// keeps), in one Aho-Corasick pass over the text, whole words only, ending as soon as every
/// one of them is found.
pub fn described_reads(text: &str, scan: &super::text::Scan) -> Vec<(Class, String)> {
    let view = MatchView::with_scan(text, scan);
    let (ac, patterns) = &*PROSE;
    let mut found = Vec::new();
    let mut seen = 0u16;
    let hay = view.text.as_ref();
    for m in ac.get(hay).find_iter(hay) {
        if !whole_word(&view.text, m.start(), m.end()) {
            continue;
        }
        // The patterns are ASCII and lower case: the match in lower case is its pattern.
        if let Some(&(phrase, bits)) = patterns.get(m.pattern().as_usize()) {
            for c in Class::ALL {
                if bits & c.bit() & !seen != 0 {
                    seen |= c.bit();
                    found.push((c, phrase.to_string()));
                }
            }
        }
        if seen == READS {
            break;
        }
    }
    found
}

/// What one tool can do, and why we think so.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub bits: u16,
    /// (class, word, where it was found: "name", "title", "description", "parameter `x`")
    pub reasons: Vec<(Class, String, String)>,
}

impl Profile {
    pub fn has(&self, c: Class) -> bool {
        self.bits & c.bit() != 0
    }
    fn add(&mut self, found: Vec<(Class, String)>, source: impl Fn() -> String) {
        for (c, word) in found {
            if self.bits & c.bit() == 0 {
                self.bits |= c.bit();
                self.reasons.push((c, word, source()));
            }
        }
    }
    pub fn reason(&self, c: Class) -> String {
        self.reasons
            .iter()
            .find(|(k, _, _)| *k == c)
            .map(|(_, w, s)| format!("\"{w}\" in its {s}"))
            .unwrap_or_default()
    }
    /// The classes from name and title only (C3 and C4 judge by those).
    pub fn named_effects(&self) -> Vec<Class> {
        self.reasons
            .iter()
            .filter(|(c, _, s)| {
                (s == "name" || s == "title")
                    && matches!(
                        c,
                        Class::Changes | Class::Deletes | Class::Sends | Class::Runs
                    )
            })
            .map(|(c, _, _)| *c)
            .collect()
    }
}

pub fn properties<'a>(tool: &Tool<'a>) -> Option<&'a Object<'a>> {
    tool.value
        .pointer("/inputSchema/properties")
        .and_then(Json::as_object)
}

/// Verbs that, leading a sentence or clause of a description, say the tool changes, deletes,
/// sends or runs ("Updates the record, deletes the draft"). Third-person forms anywhere a
/// clause starts; the imperative forms only at the very start of the description ("Delete a
/// branch"), where real servers use them; a noun in the same place ("Shows the commit log")
/// is not a verb and never counts.
#[rustfmt::skip]
const DOES_VERBS: &[(&str, Class)] = &[
    ("creates", Class::Changes), ("updates", Class::Changes), ("writes", Class::Changes),
    ("edits", Class::Changes), ("modifies", Class::Changes), ("inserts", Class::Changes),
    ("upserts", Class::Changes), ("overwrites", Class::Changes), ("renames", Class::Changes),
    ("saves", Class::Changes), ("appends", Class::Changes), ("sets", Class::Changes),
    ("adds", Class::Changes),
    ("deletes", Class::Deletes), ("removes", Class::Deletes), ("drops", Class::Deletes),
    ("truncates", Class::Deletes), ("purges", Class::Deletes), ("destroys", Class::Deletes),
    ("erases", Class::Deletes), ("wipes", Class::Deletes),
    ("sends", Class::Sends), ("publishes", Class::Sends), ("uploads", Class::Sends),
    ("forwards", Class::Sends), ("notifies", Class::Sends), ("spawns", Class::Runs),
    ("create", Class::Changes), ("update", Class::Changes), ("write", Class::Changes),
    ("edit", Class::Changes), ("modify", Class::Changes), ("insert", Class::Changes),
    ("overwrite", Class::Changes), ("rename", Class::Changes), ("delete", Class::Deletes),
    ("remove", Class::Deletes), ("drop", Class::Deletes), ("truncate", Class::Deletes),
    ("purge", Class::Deletes), ("destroy", Class::Deletes), ("erase", Class::Deletes),
    ("send", Class::Sends), ("publish", Class::Sends), ("upload", Class::Sends),
];
/// Where the imperative forms begin in [`DOES_VERBS`]. ("Runs"/"executes" are left out: a
/// read-only database tool "runs a read-only query".)
const IMPERATIVE_FROM: usize = 27;

/// What a description says the tool does, from the verbs that lead its sentences and clauses:
/// the first effect verb found, if any.
pub fn described_effect(desc: &str) -> Option<(Class, &'static str)> {
    let mut first_clause = true;
    // Clauses end at ASCII punctuation, so splitting the bytes keeps every piece a valid
    // string (and costs less than matching each character against the set).
    let ends = desc
        .bytes()
        .enumerate()
        .filter(|(_, b)| {
            matches!(
                b,
                b'.' | b',' | b';' | b'\n' | b':' | b'!' | b'?' | b'(' | b')'
            )
        })
        .map(|(i, _)| i)
        .chain(std::iter::once(desc.len()));
    let mut from = 0;
    for end in ends {
        let clause = desc.get(from..end).unwrap_or_default();
        from = end + 1;
        // Words are compared ASCII-case-insensitively (every listed word is ASCII lower case),
        // never copied in lower case.
        let is = |w: &str, list: &[&str]| list.iter().any(|x| x.eq_ignore_ascii_case(w));
        let mut ws = clause
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()));
        let mut w = ws.next();
        // "…, and deletes the draft": the verb after a conjunction.
        while w.is_some_and(|w| is(w, &["and", "or", "then", "also", "it"])) {
            w = ws.next();
        }
        let at_start = first_clause;
        first_clause = first_clause && clause.trim().is_empty();
        let Some(w) = w else { continue };
        // A verb takes an object or a complement; a lone word in a list ("log, commits, tags")
        // is a noun.
        // … and a noun in a list is followed by a conjunction or a verb ("deletes and inserts
        // seen in the trail", "updates since last week").
        let noun_follows = ws.next().is_none_or(|n| {
            is(
                n,
                &[
                    "and", "or", "nor", "of", "are", "is", "were", "was", "since", "seen", "from",
                    "for", "made", "to",
                ],
            )
        });
        if noun_follows {
            continue;
        }
        let found = DOES_VERBS
            .iter()
            .enumerate()
            .find(|(_, (v, _))| v.eq_ignore_ascii_case(w));
        if let Some((i, (v, c))) = found
            && (i < IMPERATIVE_FROM || at_start)
        {
            return Some((*c, v));
        }
    }
    None
}

/// Leading verbs that make a name a read (`get-annotated-message`, `list_posts`).
#[rustfmt::skip]
const READ_VERBS: &[&str] = &[
    "get", "list", "read", "search", "find", "fetch", "show", "describe", "query", "view",
    "lookup", "look", "count", "check", "validate", "inspect", "browse", "retrieve", "load",
    "download", "print", "explain", "summarize", "summarise", "analyze", "analyse", "preview",
    "watch", "monitor", "is", "has", "can", "diff", "compare",
];

/// Effect words that are also nouns: after a leading read verb they name what is read
/// (`get_message`, `list_commits`, `show_command_output`), not what the tool does.
#[rustfmt::skip]
const NOUN_EFFECTS: &[&str] = &[
    "message", "email", "mail", "post", "sms", "tweet", "webhook", "commit", "patch", "set",
    "share", "upload", "merge", "command", "cmd", "script", "shell", "terminal", "python", "bash",
    "sandbox", "transfer", "charge", "payment", "payments", "invite", "reply",
];

/// Classes of a name or title: every class word counts, except that after a leading read
/// verb the noun-like effect words do not.
pub fn classify_name(text: &str) -> Vec<(Class, String)> {
    let w = word_parts(text);
    let found = classify_words(&w, u16::MAX);
    let first = w.first().map_or("", |f| f.as_ref());
    if !READ_VERBS.contains(&first) {
        return found;
    }
    let effects = [
        Class::Changes,
        Class::Deletes,
        Class::Sends,
        Class::Runs,
        Class::Payments,
    ];
    found
        .into_iter()
        .filter(|(c, w)| !(effects.contains(c) && NOUN_EFFECTS.contains(&w.as_str())))
        .collect()
}

pub fn profile(tool: &Tool<'_>) -> Profile {
    let mut p = Profile::default();
    if let Some(name) = tool.name {
        p.add(classify_name(name), || "name".into());
    }
    if let Some(title) = tool.title() {
        p.add(classify_name(title), || "title".into());
    }
    if let Some((d, scan)) = tool.description() {
        p.add(described_reads(d, &scan), || "description".into());
    }
    if let Some(props) = properties(tool) {
        for name in props.keys() {
            p.add(classify(name, PARAMS), || {
                format!("parameter `{}`", visible(name))
            });
        }
        // A tool that reads from any URL the model names reads untrusted content whatever
        // its name says (C11).
        if !p.has(Class::ReadsUntrusted)
            && let Some((name, why)) = any_url_param(tool, props, &p)
        {
            p.add(vec![(Class::ReadsUntrusted, why.to_string())], || {
                format!("parameter `{}`", visible(name))
            });
        }
    }
    p
}

/// Words of a parameter that takes a URL.
const URL_WORDS: &[&str] = &[
    "url",
    "uri",
    "urls",
    "uris",
    "link",
    "href",
    "src",
    "source_url",
];
/// JSON Schema formats of a URL.
const URL_FORMATS: &[&str] = &["uri", "url", "iri", "uri-reference", "iri-reference"];
/// Words that make a URL parameter a destination, not a source (a webhook is written to).
const URL_DESTINATIONS: &[&str] = &[
    "webhook",
    "callback",
    "redirect",
    "notify",
    "notification",
    "upload",
    "destination",
    "target",
    "post",
    "publish",
    "endpoint",
];

/// C11: a string parameter that takes any URL (a URL format, or a URL word as its last name
/// word), with nothing restricting its value (no enum, const or pattern), on a tool that neither
/// changes, deletes nor sends by its name: what comes back from that URL is content nobody
/// vetted. The parameter and why, when there is one.
fn any_url_param<'a>(
    tool: &Tool<'a>,
    props: &'a Object<'a>,
    profile: &Profile,
) -> Option<(&'a str, &'static str)> {
    if !profile.named_effects().is_empty() {
        return None;
    }
    let name_words = tool.name.map(word_parts).unwrap_or_default();
    if name_words
        .iter()
        .any(|w| URL_DESTINATIONS.contains(&w.as_ref()))
    {
        return None;
    }
    for (name, schema) in props {
        let Some(map) = schema.as_object() else {
            continue;
        };
        let string = match map.get("type") {
            Some(Json::String(t)) => t == "string",
            Some(Json::Array(ts)) => ts.iter().any(|t| t.as_str() == Some("string")),
            _ => false,
        };
        if !string
            || ["enum", "const", "pattern"]
                .iter()
                .any(|k| map.contains_key(k))
        {
            continue;
        }
        let w = word_parts(name);
        if w.iter().any(|x| URL_DESTINATIONS.contains(&x.as_ref())) {
            continue;
        }
        let format = map
            .get("format")
            .and_then(Json::as_str)
            .filter(|f| URL_FORMATS.iter().any(|u| u.eq_ignore_ascii_case(f)));
        if format.is_some() {
            return Some((name, "a URL format"));
        }
        if map.contains_key("format") {
            continue;
        }
        if w.last().is_some_and(|x| URL_WORDS.contains(&x.as_ref())) {
            return Some((name, "a URL parameter"));
        }
    }
    None
}

/// What C10 looks for after a verb that hands something out: the process environment (high
/// confidence) or stored secrets (medium).
#[rustfmt::skip]
const HANDED_OUT: &[(&[&str], bool)] = &[
    (&["environment", "variables"], true), (&["environment", "variable"], true),
    (&["env", "vars"], true), (&["env", "var"], true), (&["env", "variables"], true),
    (&["process", "environment"], true), (&["environ"], true), (&["env"], true),
    (&["credentials"], false), (&["secrets"], false), (&["passwords"], false),
    (&["api", "keys"], false), (&["access", "tokens"], false), (&["secret", "values"], false),
    (&["stored", "credentials"], false), (&["saved", "passwords"], false),
];
/// Verbs that hand a value out to the model.
#[rustfmt::skip]
const HAND_VERBS: &[&str] = &[
    "returns", "return", "prints", "print", "lists", "list", "shows", "show", "dumps", "dump",
    "outputs", "output", "exposes", "expose", "reveals", "reveal", "displays", "display",
    "gets", "get", "reads", "read", "retrieves", "retrieve", "fetches", "fetch", "echoes",
    "echo", "exports", "export",
];
/// Words that may stand between the verb and what it hands out.
#[rustfmt::skip]
const HAND_FILLERS: &[&str] = &[
    "all", "the", "every", "current", "its", "process", "server", "server's", "process's",
    "of", "values", "value", "a", "an", "any", "available", "configured", "system", "shell",
    "complete", "full", "mcp",
];

/// C10: a tool that hands the process environment or stored secrets to the model. From the
/// name (`get-env`, `print_env_vars`, `list_secrets`: a read verb, or no verb, and the thing
/// as its object) or a sentence that starts with such a verb ("Returns all environment
/// variables"). Deployment "environments" (`list_environments`) are not the process
/// environment, and "environment variable" as where a key comes from is not handed out (the
/// verb must lead the sentence and the thing follow it).
fn hands_out_secrets(tool: &Tool<'_>) -> Option<(String, bool)> {
    // The phrase of HANDED_OUT at word `i`: its length and whether it is the environment.
    let matches_at = |w: &[std::borrow::Cow<'_, str>], i: usize| -> Option<(usize, bool)> {
        let rest = w.get(i..).unwrap_or_default();
        HANDED_OUT.iter().find_map(|(phrase, env)| {
            let fits = phrase.len() <= rest.len()
                && phrase.iter().zip(rest).all(|(p, x)| *p == x.as_ref());
            fits.then_some((phrase.len(), *env))
        })
    };
    // The name: the words after a leading read verb (or the whole name) are the thing, with
    // nothing after it (`get_env_schema` names a schema, not the environment).
    if let Some(name) = tool.name {
        let w = word_parts(name);
        let verb = w.first().is_some_and(|f| HAND_VERBS.contains(&f.as_ref()));
        let mut i = usize::from(verb);
        while i < w.len() && HAND_FILLERS.contains(&w[i].as_ref()) {
            i += 1;
        }
        if let Some((len, env)) = matches_at(&w, i)
            && i + len == w.len()
            && (verb || i == 0)
        {
            return Some((format!("its name `{}`", visible(name)), env));
        }
    }
    let (desc, _) = tool.description()?;
    for sentence in desc.split(['.', '\n', ';', '!']).take(8) {
        let w = word_parts(sentence);
        let Some(first) = w.first() else { continue };
        if !HAND_VERBS.contains(&first.as_ref()) {
            continue;
        }
        let mut i = 1;
        while i < w.len() && i <= 4 && HAND_FILLERS.contains(&w[i].as_ref()) {
            i += 1;
        }
        if let Some((_, env)) = matches_at(&w, i) {
            let said = sentence.trim();
            let cut = said.floor_char_boundary(said.len().min(80));
            return Some((
                format!("its description (\"{}\")", visible(&said[..cut])),
                env,
            ));
        }
    }
    None
}

fn tool_finding(tool: &Tool<'_>, rule: &str) -> crate::finding::FindingBuilder {
    super::finding(CHECK, rule)
        .tool(tool.label())
        .pointer(tool.pointer.clone())
}

/// Parameter-name words for C5, by what the parameter reaches.
const REACHES: &[(&str, &[&str])] = &[
    (
        "a URL",
        &["url", "uri", "urls", "link", "href", "endpoint", "webhook"],
    ),
    (
        "a path",
        &[
            "path",
            "filepath",
            "filename",
            "file",
            "dir",
            "directory",
            "folder",
        ],
    ),
    ("a command", &["command", "cmd", "shell", "script", "exec"]),
    ("a query", &["query", "sql"]),
    (
        "a recipient",
        &[
            "recipient",
            "recipients",
            "to",
            "cc",
            "bcc",
            "email",
            "phone",
        ],
    ),
];

/// Words before "token" that make it a pagination or size word, not a credential (C6).
const NOT_SECRET_TOKEN: &[&str] = &[
    "page",
    "next",
    "continuation",
    "cursor",
    "sync",
    "max",
    "num",
    "count",
    "total",
    "input",
    "output",
    "prompt",
    "completion",
    "csrf",
];

fn is_free_text(schema: &Json<'_>) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let mut string_type = false;
    for (k, v) in map {
        match (k, v) {
            ("enum" | "const" | "pattern" | "format", _) => return false,
            ("type", Json::String(t)) => string_type = t == "string",
            ("type", Json::Array(ts)) => {
                string_type = ts.iter().any(|t| t.as_str() == Some("string"))
            }
            _ => {}
        }
    }
    string_type
}

/// Whether a parameter name (and schema) takes a secret: the credentials word and why.
fn secret_param(w: &[std::borrow::Cow<'_, str>], schema: &Json<'_>) -> Option<String> {
    let creds = classify_words(w, 1 << Class::Credentials as u16);
    if let Some((_, word)) = creds.first() {
        let pagination = word == "token"
            && w.iter().position(|x| x == "token").is_some_and(|i| {
                i > 0
                    && w.get(i - 1)
                        .is_some_and(|prev| NOT_SECRET_TOKEN.contains(&prev.as_ref()))
            });
        if !pagination {
            return Some(format!("\"{word}\" in the parameter name"));
        }
    }
    if schema.get("format").and_then(Json::as_str) == Some("password") {
        return Some("`format: password`".into());
    }
    if schema.get("writeOnly") == Some(&Json::Bool(true)) {
        return Some("`writeOnly: true`".into());
    }
    None
}

/// C12: a secret written inline in a client's configuration (a finding of discovery, not of
/// a tool list).
pub fn inline_secret_finding() -> crate::finding::FindingBuilder {
    super::finding(CHECK, "C12")
}

/// Runs C1–C9 over the document's tools.
pub fn run(doc: &Document<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    // A host's stop (a time cap) ends the profiling early: the rules below then see fewer tools.
    let profiles: Vec<&Profile> = doc
        .tools
        .iter()
        .take_while(|_| !doc.stopped())
        .map(Tool::profile)
        .collect();

    // C1: one server whose tools read untrusted content, read private data and send data out.
    let pick = |c: Class, avoid: &[usize]| -> Option<usize> {
        let with: Vec<usize> = (0..profiles.len())
            .filter(|i| profiles[*i].has(c))
            .collect();
        with.iter()
            .find(|i| !avoid.contains(i))
            .or(with.first())
            .copied()
    };
    if let Some(u) = pick(Class::ReadsUntrusted, &[])
        && let Some(p) = pick(Class::ReadsPrivate, &[u])
        && let Some(s) = pick(Class::Sends, &[u, p])
    {
        let label = |i: usize| doc.tools.get(i).map(|t| t.label()).unwrap_or_default();
        let part = |i: usize, c: Class| {
            format!(
                "`{}` {} ({})",
                visible(&label(i)),
                c.describe(),
                profiles[i].reason(c)
            )
        };
        out.push(
            super::finding(CHECK, "C1")
                .pointer("/tools")
                .message(format!(
                    "exfiltration path: {}; {}; {}",
                    part(u, Class::ReadsUntrusted),
                    part(p, Class::ReadsPrivate),
                    part(s, Class::Sends)
                ))
                .text(format!("{} → {} → {}", label(u), label(p), label(s)))
                .build(),
        );
    }

    for (tool, prof) in doc.tools.iter().zip(&profiles) {
        let named = prof.named_effects();
        if named.contains(&Class::Runs) {
            out.push(
                tool_finding(tool, "C2")
                    .message(format!(
                        "runs code or commands ({})",
                        prof.reason(Class::Runs)
                    ))
                    .build(),
            );
        }
        let annotations = tool.value.get("annotations").and_then(Json::as_object);
        let read_only_hint =
            annotations.and_then(|a| a.get("readOnlyHint")) == Some(&Json::Bool(true));
        if named.is_empty()
            && read_only_hint
            && let Some((class, verb)) = tool
                .value
                .get("description")
                .and_then(Json::as_str)
                .and_then(described_effect)
        {
            out.push(
                tool_finding(tool, "C3")
                    .pointer(format!("{}/annotations/readOnlyHint", tool.pointer))
                    .message(format!(
                        "readOnlyHint: true, but its description says it {} (\"{verb}\")",
                        class.describe()
                    ))
                    .build(),
            );
        }
        if let Some(first) = named.first() {
            let read_only =
                annotations.and_then(|a| a.get("readOnlyHint")) == Some(&Json::Bool(true));
            if read_only {
                out.push(
                    tool_finding(tool, "C3")
                        .pointer(format!("{}/annotations/readOnlyHint", tool.pointer))
                        .message(format!(
                            "readOnlyHint: true, but it {} ({})",
                            first.describe(),
                            prof.reason(*first)
                        ))
                        .build(),
                );
            }
            let hints = [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ];
            let annotated = annotations.is_some_and(|a| hints.iter().any(|h| a.contains_key(h)));
            if !annotated {
                out.push(
                    tool_finding(tool, "C4")
                        .message(format!(
                            "{} ({}) and has no annotations: clients assume destructive and open-world",
                            first.describe(),
                            prof.reason(*first)
                        ))
                        .build(),
                );
            }
        }
        if let Some(props) = properties(tool) {
            params(tool, props, &mut out);
            if let Some((name, why)) = any_url_param(tool, props, prof) {
                out.push(
                    tool_finding(tool, "C11")
                        .pointer(format!(
                            "{}/inputSchema/properties/{}",
                            tool.pointer,
                            token(name)
                        ))
                        .message(format!(
                            "reads from any URL the model names: parameter `{}` ({why}, no enum or pattern); what it returns is untrusted content",
                            visible(name)
                        ))
                        .build(),
                );
            }
        }
        if let Some((why, env)) = hands_out_secrets(tool) {
            let what = if env {
                "the process environment (where servers keep their keys and tokens)"
            } else {
                "stored secrets"
            };
            let confidence = if env {
                crate::finding::Confidence::High
            } else {
                crate::finding::Confidence::Medium
            };
            out.push(
                tool_finding(tool, "C10")
                    .message(format!("hands {what} to the model: {why}"))
                    .confidence(confidence)
                    .build(),
            );
        }
    }

    if doc.tools.len() > 30 {
        out.push(
            super::finding(CHECK, "C9")
                .pointer("/tools")
                .message(format!("{} tools", doc.tools.len()))
                .build(),
        );
    }
    out
}

fn params(tool: &Tool<'_>, props: &Object<'_>, out: &mut Vec<Finding>) {
    for (name, schema) in props {
        let at = || format!("{}/inputSchema/properties/{}", tool.pointer, token(name));
        let w = word_parts(name);
        // C5
        if is_free_text(schema) {
            let reach = REACHES
                .iter()
                .find(|(_, list)| w.iter().any(|x| list.contains(&x.as_ref())))
                .map(|(what, _)| *what);
            if let Some(what) = reach {
                out.push(
                    tool_finding(tool, "C5")
                        .pointer(at())
                        .message(format!(
                            "parameter `{}` is free text (no enum, pattern or format) and reaches {what}",
                            visible(name)
                        ))
                        .build(),
                );
            }
        }
        // C6
        let secret = secret_param(&w, schema);
        if let Some(why) = &secret {
            out.push(
                tool_finding(tool, "C6")
                    .pointer(at())
                    .message(format!(
                        "parameter `{}` takes a secret ({why})",
                        visible(name)
                    ))
                    .build(),
            );
        }
        // C7
        if let Some(header) = schema.get("x-mcp-header") {
            let sensitive = secret.clone().or_else(|| {
                let pii = [
                    "auth",
                    "authorization",
                    "key",
                    "ssn",
                    "email",
                    "phone",
                    "cookie",
                    "session",
                ];
                w.iter()
                    .find(|x| pii.contains(&x.as_ref()))
                    .map(|x| format!("\"{x}\" in the parameter name"))
            });
            if let Some(why) = sensitive {
                out.push(
                    tool_finding(tool, "C7")
                        .pointer(format!("{}/x-mcp-header", at()))
                        .message(format!(
                            "parameter `{}` ({why}) is copied into the HTTP header Mcp-Param-{}",
                            visible(name),
                            visible(
                                &header
                                    .as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| header.to_string())
                            )
                        ))
                        .build(),
                );
            }
        }
        // C8
        if w.iter()
            .any(|x| matches!(x.as_ref(), "action" | "operation" | "op" | "verb"))
        {
            let values = schema.get("enum").and_then(Json::as_array).map(<[_]>::len);
            if values.is_none_or(|n| n >= 2) {
                let detail = match values {
                    Some(n) => format!("{n} actions in its enum"),
                    None => "any action as free text".into(),
                };
                out.push(
                    tool_finding(tool, "C8")
                        .pointer(at())
                        .message(format!(
                            "parameter `{}` selects the operation ({detail})",
                            visible(name)
                        ))
                        .build(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The "reads" automaton answers as the whole table's would (the definition: every entry,
    /// leftmost-longest, whole words, the first word of each "reads" class).
    #[test]
    fn reads_automaton_answers_as_the_whole_table() {
        let all: Vec<&str> = WORDS.keys().map(String::as_str).collect();
        let full = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&all)
            .unwrap_or_else(|e| panic!("{e}"));
        let reference = |text: &str| -> Vec<(Class, String)> {
            let view = MatchView::new(text);
            let mut found = Vec::new();
            let mut seen = 0u16;
            for m in full.find_iter(view.text.as_ref()) {
                if !whole_word(&view.text, m.start(), m.end()) {
                    continue;
                }
                let phrase = all[m.pattern().as_usize()];
                let bits = WORDS[phrase] & READS;
                for c in Class::ALL {
                    if bits & c.bit() & !seen != 0 {
                        seen |= c.bit();
                        found.push((c, phrase.to_string()));
                    }
                }
            }
            found
        };
        // Table words and what may stand between or around them.
        let mut parts = all.clone();
        parts.extend([
            " ", " ", " ", "", "_", "-", ".", "s", "x", "  ", "\n", "é", "Re",
        ]);
        for text in crate::rules::text::soups(&parts, 24, 30_000) {
            let scan = crate::rules::text::Scan::of(&text);
            assert_eq!(described_reads(&text, &scan), reference(&text), "{text:?}");
        }
    }
}
