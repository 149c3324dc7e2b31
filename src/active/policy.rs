//! Which tools an active run may call at all (SPEC §13), decided once per tool before any check
//! plans a call. The rule is an allow-list: a tool is callable only when every one of these
//! holds, and otherwise the first that fails is the reason (a [`NotCalled`] variant):
//! - it is in `--scope` and not named by `--exclude-tool` (both take globs);
//! - it is not annotated `destructiveHint: true`;
//! - its name (NFKC, lower case, split across snake, kebab, dot and camel case, digits and the
//!   joined compounds of `words.toml`) holds only ASCII letters, digits and separators, and its
//!   verb is a read verb (get, list, read, search, …) or it has no verb at all;
//! - no word of its name, title, any clause of its description, a parameter's name or a
//!   parameter's description belongs to the changes, deletes, sends, runs or payments classes
//!   ([`super::words`]), in any inflection, short Unix commands included;
//! - it is annotated `readOnlyHint: true` (or has no annotations and `--include-unannotated`);
//! - every required parameter can be filled with a value of mcpprobe's own (not only an
//!   `enum` or `const` the server chose).
//!
//! Annotations never make a tool safe to call: the words are judged first.

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use super::words::{self, EffectClass, Tier, Vocabulary};
pub use crate::permit::{CallableSet, glob};
use crate::util::escape::{escape, escape_trimmed};

/// The user's scope and exclusions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallPolicy {
    /// Tool names or globs (`*`, `?`), from `--scope a,b*`; `*` alone is every tool.
    pub scope: Vec<String>,
    /// Tool names or globs, from `--exclude-tool` (the same globs as `--scope`).
    pub exclude: Vec<String>,
    /// `--include-unannotated`: a tool without annotations may be called (the MCP schema's
    /// default for it is destructive, so it is off by default).
    pub include_unannotated: bool,
}

/// Where in a tool a word was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Name,
    Title,
    Description,
    /// A parameter's name.
    Parameter(String),
    /// A parameter's description.
    ParameterDescription(String),
    /// A value the server offers for a parameter (`enum`, `const`, `default`, `examples`).
    ParameterValue(String),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Name => f.write_str("its name"),
            Place::Title => f.write_str("its title"),
            Place::Description => f.write_str("its description"),
            Place::Parameter(p) => write!(f, "its parameter `{}`", escape_trimmed(p, 40)),
            Place::ParameterValue(p) => write!(
                f,
                "a value its parameter `{}` offers (enum, const, default or examples)",
                escape_trimmed(p, 40)
            ),
            Place::ParameterDescription(p) => write!(
                f,
                "the description of its parameter `{}`",
                escape_trimmed(p, 40)
            ),
        }
    }
}

/// Why a tool is never called: one variant per rule of the allow-list (SPEC §13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCalled {
    Unnamed,
    OutOfScope,
    /// Named by `--exclude-tool` (the pattern that matched).
    Excluded(String),
    Destructive,
    Unannotated,
    NotReadOnly,
    /// A name longer than MCP's 128 characters.
    NameTooLong(usize),
    /// A character in the name (after NFKC) that is not an ASCII letter, digit or separator.
    NameCharacter(char),
    /// A word that mixes Latin letters with look-alikes of another script.
    MixedScript {
        place: Place,
        word: String,
    },
    /// A word of an effect class (`word` as written, `verb` the listed verb it is a form of).
    Effect {
        class: EffectClass,
        word: String,
        verb: String,
        place: Place,
    },
    /// Two words that together say an effect ("power off").
    EffectPair {
        words: String,
        place: Place,
    },
    /// A short Unix command as a word.
    UnixCommand {
        word: String,
        place: Place,
    },
    /// A parameter whose name says the tool writes or runs something (`command`, `content`).
    EffectParameter {
        param: String,
        word: String,
    },
    /// The name's verb position holds a word that is not a read verb.
    NoReadVerb(String),
    /// A text too long to be read whole (the rule fails closed).
    TooLong {
        place: Place,
        bytes: usize,
    },
    /// A required parameter that only server-chosen values (`enum`, `const`) can fill.
    ServerChosenOnly(String),
    /// The vocabulary could not be read: nothing is called.
    RuleData(String),
}

impl std::fmt::Display for NotCalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotCalled::Unnamed => f.write_str("it has no name"),
            NotCalled::OutOfScope => f.write_str("it is not in --scope"),
            NotCalled::Excluded(p) => {
                write!(f, "--exclude-tool `{}` names it", escape_trimmed(p, 60))
            }
            NotCalled::Destructive => f.write_str("it is annotated destructiveHint: true"),
            NotCalled::Unannotated => f.write_str(
                "it has no annotations (the MCP default is destructive; --include-unannotated calls it)",
            ),
            NotCalled::NotReadOnly => f.write_str("it is not annotated readOnlyHint: true"),
            NotCalled::NameTooLong(n) => {
                write!(f, "its name is {n} characters long (MCP allows 128)")
            }
            NotCalled::NameCharacter(c) => write!(
                f,
                "its name holds {}, which is not an ASCII letter, digit or separator (a look-alike letter can hide a word such as \"delete\")",
                escape(&c.to_string())
            ),
            NotCalled::MixedScript { place, word } => write!(
                f,
                "{place} spells \"{}\" with letters of two scripts (a look-alike letter can hide a word such as \"delete\")",
                escape_trimmed(word, 40)
            ),
            NotCalled::Effect {
                class,
                word,
                verb,
                place,
            } => {
                write!(f, "{place} says it {}: \"{}\"", class.does(), escape_trimmed(word, 40))?;
                if word != verb {
                    write!(f, " (a form of \"{verb}\")")?;
                }
                Ok(())
            }
            NotCalled::EffectPair { words, place } => write!(
                f,
                "{place} says it changes state: \"{}\"",
                escape_trimmed(words, 40)
            ),
            NotCalled::UnixCommand { word, place } => write!(
                f,
                "{place} names the command `{}`",
                escape_trimmed(word, 40)
            ),
            NotCalled::EffectParameter { param, word } => write!(
                f,
                "its parameter `{}` says it writes or runs something (\"{}\")",
                escape_trimmed(param, 40),
                escape_trimmed(word, 40)
            ),
            NotCalled::NoReadVerb(w) => write!(
                f,
                "its name has no read verb (get, list, read, search, fetch, …) and \"{}\" may be a verb that changes something",
                escape_trimmed(w, 40)
            ),
            NotCalled::TooLong { place, bytes } => write!(
                f,
                "{place} is {bytes} bytes long, too long to be read whole"
            ),
            NotCalled::ServerChosenOnly(p) => write!(
                f,
                "its required parameter `{}` takes only values the server chose (enum or const), and mcpprobe sends only its own",
                escape_trimmed(p, 40)
            ),
            NotCalled::RuleData(e) => write!(f, "the call rule's vocabulary could not be read ({e})"),
        }
    }
}

impl CallPolicy {
    /// `--scope` as given: comma-separated names or globs.
    pub fn parse_scope(raw: &str) -> Vec<String> {
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// Whether `tool` may be called, or the first rule that refuses it.
    pub fn decide(&self, tool: &Value) -> Result<String, NotCalled> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(NotCalled::Unnamed)?;
        if !self.scope.iter().any(|p| glob(p, name)) {
            return Err(NotCalled::OutOfScope);
        }
        if let Some(p) = self.exclude.iter().find(|p| glob(p, name)) {
            return Err(NotCalled::Excluded(p.clone()));
        }
        let hint = |k: &str| {
            tool.get("annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_bool)
        };
        if hint("destructiveHint") == Some(true) {
            return Err(NotCalled::Destructive);
        }
        // What the tool says it does first: annotations never make a tool safe to call.
        judge_words(tool)?;
        match tool.get("annotations") {
            None | Some(Value::Null) if self.include_unannotated => {}
            None | Some(Value::Null) => return Err(NotCalled::Unannotated),
            Some(_) if hint("readOnlyHint") == Some(true) => {}
            Some(_) => return Err(NotCalled::NotReadOnly),
        }
        if let Some(p) = server_chosen_only(tool) {
            return Err(NotCalled::ServerChosenOnly(p));
        }
        Ok(name.to_string())
    }
}

/// The longest name, title and description the rule reads whole (bytes).
const MAX_NAME: usize = 128;
const MAX_TITLE: usize = 1024;
const MAX_DESCRIPTION: usize = 32 * 1024;
/// Parameters read per tool (a tool with more is refused).
const MAX_PARAMS: usize = 256;

/// Parameter-name words that say the tool writes somewhere or runs something.
#[rustfmt::skip]
const EFFECT_PARAMS: &[&str] = &[
    "output", "out", "dest", "destination", "target", "save", "write", "overwrite", "command",
    "cmd", "script", "exec", "pid", "process", "signal", "body", "content", "contents", "data",
    "payload", "recipient", "recipients", "to", "cc", "bcc", "amount", "price", "code",
];

/// Words after which a word stands where a verb does, in a description or title.
#[rustfmt::skip]
const VERB_BEFORE: &[&str] = &[
    "to", "will", "can", "may", "might", "must", "should", "would", "could", "shall", "and",
    "or", "then", "also", "it", "this", "that", "which", "who", "tool", "function", "server",
    "is", "are", "was", "were", "be", "been", "being", "gets", "get", "got", "please", "you",
    "we", "i", "first", "finally", "later", "afterwards", "not", "never", "does", "do", "did",
    "let", "lets", "plus", "nor", "else", "otherwise", "thereby", "thus", "so",
];

/// Words after which a gerund stands where a verb does ("by deleting", "after posting").
const GERUND_BEFORE: &[&str] = &[
    "by", "of", "for", "after", "before", "while", "when", "via", "without", "on", "upon",
];

/// Conjunctions in a name: the word after one is a verb too (`get_and_close`).
const NAME_CONJUNCTIONS: &[&str] = &["and", "then", "or", "plus", "also", "with", "n"];

/// Every word-level rule: the name, the title, the description, the parameters.
fn judge_words(tool: &Value) -> Result<(), NotCalled> {
    let v = words::vocabulary().map_err(|e| NotCalled::RuleData(e.to_string()))?;
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
    // A name without a read verb is refused, but a word that says what the tool does is the
    // better reason: it is given first when there is one.
    let no_read_verb = match judge_name(v, name) {
        Err(NotCalled::NoReadVerb(w)) => Some(NotCalled::NoReadVerb(w)),
        other => {
            other?;
            None
        }
    };
    if let Some(title) = tool.get("title").and_then(Value::as_str) {
        judge_text(v, title, Place::Title, MAX_TITLE)?;
    }
    // An older place for the title.
    if let Some(title) = tool.pointer("/annotations/title").and_then(Value::as_str) {
        judge_text(v, title, Place::Title, MAX_TITLE)?;
    }
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name_has_verb = name_verb(v, name);
    judge_text(v, description, Place::Description, MAX_DESCRIPTION)?;
    if !name_has_verb && no_read_verb.is_none() {
        // A name with no verb at all: its description must start as a read does ("Returns
        // …", "The current …"), or the verb hides there.
        first_description_word(v, description)?;
    }
    if let Some(props) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    {
        if props.len() > MAX_PARAMS {
            return Err(NotCalled::TooLong {
                place: Place::Parameter(format!("({} parameters)", props.len())),
                bytes: props.len(),
            });
        }
        for (param, schema) in props {
            let place = Place::Parameter(param.clone());
            let (norm, mixed) = words::normalise(param);
            if let Some(word) = mixed {
                return Err(NotCalled::MixedScript { place, word });
            }
            for w in words::split_words(&norm) {
                if EFFECT_PARAMS.contains(&w.as_str()) {
                    return Err(NotCalled::EffectParameter {
                        param: param.clone(),
                        word: w,
                    });
                }
                if let Some(h) = v.lookup(&w).filter(|h| h.tier == Tier::Verb) {
                    return Err(NotCalled::Effect {
                        class: h.class,
                        word: w,
                        verb: h.verb,
                        place,
                    });
                }
            }
            // The values the server offers for it say what the tool can be made to do (an
            // `action` whose enum holds "delete", a default of "purge", an example "DROP …"):
            // mcpprobe never sends them, but the server may apply its default on its own.
            for value in offered_values(schema) {
                judge_text(v, value, Place::ParameterValue(param.clone()), MAX_TITLE)?;
            }
            if let Some(d) = schema.get("description").and_then(Value::as_str) {
                judge_text(
                    v,
                    d,
                    Place::ParameterDescription(param.clone()),
                    MAX_DESCRIPTION,
                )?;
            }
        }
    }
    no_read_verb.map_or(Ok(()), Err)
}

/// The name's words (NFKC, lower case, split across snake, kebab, dot and camel case, digits
/// and known joined compounds), refused on any character that is not an ASCII letter, digit
/// or separator.
fn name_words(v: &Vocabulary, name: &str) -> Result<Vec<String>, NotCalled> {
    let chars = name.chars().count();
    if chars > MAX_NAME {
        return Err(NotCalled::NameTooLong(chars));
    }
    let nfkc: String = name.nfkc().collect();
    if let Some(c) = nfkc
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | ' ')))
    {
        return Err(NotCalled::NameCharacter(c));
    }
    let mut out = Vec::new();
    for w in words::split_words(&nfkc) {
        match v.compound(&w) {
            Some(parts) => out.extend(parts.iter().cloned()),
            None => out.push(w),
        }
    }
    Ok(out)
}

/// Whether the name has a read verb where its verb stands (first word, or last in the
/// `domain_verb` shape such as `git_status`).
fn name_verb(v: &Vocabulary, name: &str) -> bool {
    let Ok(words) = name_words(v, name) else {
        return false;
    };
    words.first().is_some_and(|w| v.is_read_verb(w))
        || (words.len() > 1 && words.last().is_some_and(|w| v.is_read_verb(w)))
}

fn judge_name(v: &Vocabulary, name: &str) -> Result<(), NotCalled> {
    let words = name_words(v, name)?;
    // Digits spelled for letters (`d3lete`) are read as the letters too.
    let raw: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_lowercase)
        .collect();
    for token in &raw {
        for reading in words::unleet(token) {
            for w in words::split_words(&reading) {
                if let Some(h) = v.lookup(&w).or_else(|| v.joined(&w)) {
                    return Err(NotCalled::Effect {
                        class: h.class,
                        word: token.clone(),
                        verb: h.verb,
                        place: Place::Name,
                    });
                }
            }
        }
    }
    let effect = |w: &str, h: words::Hit| NotCalled::Effect {
        class: h.class,
        word: w.to_string(),
        verb: h.verb,
        place: Place::Name,
    };
    let leading_read = words.first().is_some_and(|w| v.is_read_verb(w));
    let trailing_read = words.len() > 1 && words.last().is_some_and(|w| v.is_read_verb(w));
    let effect_word = |w: &str| match v.lookup(w) {
        // An effect verb anywhere in a name.
        Some(h) if h.tier == Tier::Verb => Err(effect(w, h)),
        // An everyday noun that is also an effect verb (`get_post`, `list_pages`) is the
        // object of a leading read verb; anywhere else it is the verb.
        Some(h) if !leading_read => Err(effect(w, h)),
        Some(_) => Ok(()),
        None => v.joined(w).map_or(Ok(()), |h| Err(effect(w, h))),
    };
    for (i, w) in words.iter().enumerate() {
        if v.is_unix(w) {
            return Err(NotCalled::UnixCommand {
                word: w.clone(),
                place: Place::Name,
            });
        }
        if let Some(next) = words.get(i + 1)
            && v.is_pair(w, next)
        {
            return Err(NotCalled::EffectPair {
                words: format!("{w} {next}"),
                place: Place::Name,
            });
        }
        let after_conjunction = i > 0 && NAME_CONJUNCTIONS.contains(&words[i - 1].as_str());
        if after_conjunction && !v.is_read_verb(w) {
            return Err(match v.lookup(w) {
                Some(h) => effect(w, h),
                None => NotCalled::NoReadVerb(w.clone()),
            });
        }
        effect_word(w)?;
    }
    // The other reading of a run of capitals (`getWIPEget`: get, wipe, get, where the first
    // reading has get, wip, eget) is judged the same way.
    let nfkc: String = name.nfkc().collect();
    for w in words::split_words_whole_capitals(&nfkc) {
        effect_word(&w)?;
    }
    // A verb inside a run of letters however it is cased or joined (`getDELETEget`).
    for token in &raw {
        if let Some((form, h)) = v.inside(token) {
            return Err(NotCalled::Effect {
                class: h.class,
                word: form,
                verb: h.verb,
                place: Place::Name,
            });
        }
    }
    if leading_read || trailing_read {
        return Ok(());
    }
    // No read verb: callable only when no word of it can be a verb, that is every word is a
    // plain word or a number; otherwise the first word that could be one is named.
    match words.iter().find(|w| {
        !(v.is_plain(w) || NOUNS.contains(&w.as_str()) || w.chars().all(|c| c.is_ascii_digit()))
    }) {
        Some(w) => Err(NotCalled::NoReadVerb(w.clone())),
        None => Ok(()),
    }
}

/// Words that are never verbs in a tool's name: what a verb-less read tool is named after
/// (`weather`, `current_time`).
#[rustfmt::skip]
const NOUNS: &[&str] = &[
    "weather", "forecast", "time", "date", "clock", "now", "today", "current", "temperature",
    "timezone", "zone", "version", "info", "information", "health", "uptime", "hello", "world",
    "random", "number", "uuid", "quote", "joke", "fact", "facts", "docs", "documentation",
    "help", "about", "server", "system", "sysinfo", "whoami", "me", "my", "profile", "location",
    "ip", "dns", "hostname", "host", "definition", "dictionary", "thesaurus", "wiki",
    "wikipedia", "news", "headlines", "calendar", "holidays", "exchange", "rates", "rate",
    "price", "prices", "stock", "quotes", "currency", "unit", "units", "length", "word",
    "words", "character", "characters", "summary", "metadata", "schema", "schemas", "tree",
    "directory", "capabilities", "features", "limits", "quota", "usage", "env", "environment",
    "config", "configuration", "a", "an", "the", "of", "for", "by", "in", "on", "at", "all",
    "current", "latest", "recent", "today", "tomorrow", "yesterday", "local", "global", "utc",
];

/// A verb-less name's description must begin with a read verb, an article, or nothing.
fn first_description_word(v: &Vocabulary, description: &str) -> Result<(), NotCalled> {
    let head: String = description.chars().take(200).collect();
    let Some(first) = words::split_text(&head).into_iter().next() else {
        return Ok(());
    };
    const OPENERS: [&str; 12] = [
        "the", "a", "an", "returns", "return", "provides", "gives", "tells", "this", "current",
        "today", "latest",
    ];
    if v.is_read_verb(&first) || OPENERS.contains(&first.as_str()) || v.is_plain(&first) {
        return Ok(());
    }
    match v.lookup(&first) {
        Some(h) => Err(NotCalled::Effect {
            class: h.class,
            word: first.clone(),
            verb: h.verb,
            place: Place::Description,
        }),
        None => Err(NotCalled::NoReadVerb(first)),
    }
}

/// A title or description: every clause, every word. An effect verb in any inflection
/// anywhere, an everyday word of a class where a verb stands, a Unix command, an effect pair,
/// or a word spelled in two scripts refuses.
fn judge_text(v: &Vocabulary, text: &str, place: Place, max: usize) -> Result<(), NotCalled> {
    if text.len() > max {
        return Err(NotCalled::TooLong {
            place,
            bytes: text.len(),
        });
    }
    let (norm, mixed) = words::normalise(text);
    if let Some(word) = mixed {
        return Err(NotCalled::MixedScript { place, word });
    }
    let norm: String = norm.chars().filter(|c| *c != '\'' && *c != '’').collect();
    for clause in clauses(&norm) {
        let all = words::split_words(clause);
        let kept = v.without_idioms(&all);
        for (i, w) in kept.iter().enumerate() {
            let Some(w) = w else { continue };
            let prev = i
                .checked_sub(1)
                .and_then(|j| all.get(j))
                .map(String::as_str);
            let verb_stands = prev.is_none_or(|p| VERB_BEFORE.contains(&p));
            if v.is_unix(w) && !v.is_read_verb(w) && (v.is_unix_anywhere(w) || verb_stands) {
                return Err(NotCalled::UnixCommand {
                    word: w.clone(),
                    place,
                });
            }
            if let Some(Some(next)) = kept.get(i + 1)
                && v.is_pair(w, next)
            {
                return Err(NotCalled::EffectPair {
                    words: format!("{w} {next}"),
                    place,
                });
            }
            let Some(h) = v.lookup(w) else { continue };
            let prev = i
                .checked_sub(1)
                .and_then(|j| all.get(j))
                .map(String::as_str);
            let verb_here = match (h.tier, prev) {
                (Tier::Verb, _) => true,
                (Tier::Noun, _) => false,
                (Tier::Ambiguous, None) => true,
                (Tier::Ambiguous, Some(p)) => {
                    VERB_BEFORE.contains(&p)
                        || (p.len() > 3 && p.ends_with("ly"))
                        || (w.ends_with("ing") && GERUND_BEFORE.contains(&p))
                }
            };
            if verb_here {
                return Err(NotCalled::Effect {
                    class: h.class,
                    word: w.clone(),
                    verb: h.verb,
                    place,
                });
            }
        }
    }
    Ok(())
}

/// The strings a parameter's schema offers as values: its `enum`, `const`, `default` and
/// `examples` (also inside `items`, `oneOf` and `anyOf`, one level down), at most 64.
fn offered_values(schema: &Value) -> Vec<&str> {
    fn from<'s>(s: &'s Value, out: &mut Vec<&'s str>) {
        for k in ["enum", "examples"] {
            if let Some(items) = s.get(k).and_then(Value::as_array) {
                out.extend(items.iter().filter_map(Value::as_str));
            }
        }
        for k in ["const", "default"] {
            match s.get(k) {
                Some(Value::String(x)) => out.push(x.as_str()),
                Some(Value::Array(xs)) => out.extend(xs.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    from(schema, &mut out);
    if let Some(items) = schema.get("items") {
        from(items, &mut out);
    }
    for k in ["oneOf", "anyOf"] {
        if let Some(alts) = schema.get(k).and_then(Value::as_array) {
            for a in alts.iter().take(64) {
                from(a, &mut out);
            }
        }
    }
    out.truncate(64);
    out
}

/// A text's clauses: split at `,`, `;`, brackets, quotes, line breaks and dashes, and at `.`,
/// `:`, `!` and `?` where a space or the end follows (so `~/.ssh`, `a.b.com` and `https://`
/// stay inside their clause).
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_blank = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        let always = matches!(
            c,
            ',' | ';'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '\n'
                | '"'
                | '|'
                | '—'
                | '–'
                | '•'
                | '*'
                | '<'
                | '>'
        );
        let at_end = matches!(c, '.' | ':' | '!' | '?') && next_blank;
        if always || at_end {
            out.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out
}

/// A required parameter that only server-chosen values can fill (an `enum` or a `const`,
/// also spelled as a `oneOf`/`anyOf` of consts): mcpprobe has no neutral value for it.
fn server_chosen_only(tool: &Value) -> Option<String> {
    let schema = tool.get("inputSchema")?;
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array)?;
    required.iter().filter_map(Value::as_str).find_map(|name| {
        let s = props.and_then(|p| p.get(name))?;
        let only_consts = |k: &str| {
            s.get(k).and_then(Value::as_array).is_some_and(|alts| {
                !alts.is_empty()
                    && alts
                        .iter()
                        .all(|a| a.get("const").is_some() || a.get("enum").is_some())
            })
        };
        (s.get("enum").is_some()
            || s.get("const").is_some()
            || only_consts("oneOf")
            || only_consts("anyOf"))
        .then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> CallPolicy {
        CallPolicy {
            scope: vec!["*".into()],
            exclude: vec!["get_secret".into()],
            include_unannotated: false,
        }
    }

    #[test]
    fn globs() {
        assert!(glob("*", "anything"));
        assert!(glob("get_*", "get_weather"));
        assert!(!glob("get_*", "set_weather"));
        assert!(glob("?et_*r", "get_weather"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }

    fn ro(name: &str) -> Value {
        json!({"name": name, "annotations": {"readOnlyHint": true}})
    }

    #[test]
    fn plain_reads_are_called() {
        let p = policy();
        for name in [
            "get_weather",
            "list_files",
            "read_note",
            "search_docs",
            "lookup_host",
            "fetch_page",
            "describe_table",
            "show_config",
            "view_profile",
            "count_rows",
            "check_health",
            "ping",
            "git_status",
            "web_search",
            "getUserProfile",
            "list-open-issues",
            "weather",
            "current_time",
            "get_post",
            "list_pages",
            "get_commit",
            "get_settings",
            "get_address",
            "get_runtime_info",
        ] {
            assert!(
                p.decide(&ro(name)).is_ok(),
                "{name}: {:?}",
                p.decide(&ro(name))
            );
        }
        let described = json!({"name": "get_forecast", "title": "Weather forecast",
            "description": "Returns the forecast for a city, one page of results at a time, sorted by the last modified date. Results are truncated to 20 entries.",
            "annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "The city to look up"}}}});
        assert!(p.decide(&described).is_ok(), "{:?}", p.decide(&described));
    }

    /// (tool, a word of the reason)
    #[test]
    fn tools_that_change_delete_send_run_or_pay_are_refused_whatever_they_claim() {
        let p = policy();
        let cases: Vec<(Value, &str)> = vec![
            (ro("rm"), "`rm`"),
            (ro("unlink"), "unlink"),
            (ro("killall"), "kill"),
            (ro("chmod"), "chmod"),
            (ro("shut_down"), "shut down"),
            (ro("shutDown"), "shut down"),
            (ro("shutdown"), "shut"),
            (ro("power_off"), "power off"),
            (ro("overwrite_file"), "changes"),
            (ro("sell_stock"), "moves money"),
            (ro("comment_on_issue"), "sends"),
            (ro("user_purger"), "a form of \"purge\""),
            (ro("userpurger"), "purge"),
            (ro("getWIPEget"), "deletes"),
            (ro("listAUTOPAYrecords"), "moves money"),
            (ro("getAutowipeget"), "deletes"),
            (ro("userBulksenduser"), "sends"),
            (ro("deleteUser"), "deletes"),
            (ro("d3lete_user"), "deletes"),
            (ro("d\u{0435}lete_user"), "not an ASCII letter"),
            (ro("ｄｅｌｅｔｅ_user"), "deletes"),
            (ro("nuke_everything"), "deletes"),
            (ro("frobnicate_user"), "no read verb"),
            (ro("get_and_close_issue"), "changes"),
            (ro("reboot_host"), "`reboot`"),
            (ro("restart_service"), "runs"),
            (ro("tip_author"), "moves money"),
            (ro("post_tweet"), "sends"),
            (
                json!({"name": "records", "description": "Permanently deletes the user and all their data.", "annotations": {"readOnlyHint": true}}),
                "deletes",
            ),
            (
                json!({"name": "get_user", "description": "Looks up a user. Afterwards it posts a summary to the channel.", "annotations": {"readOnlyHint": true}}),
                "sends",
            ),
            (
                json!({"name": "get_user", "description": "Looks up a user, then runs the cleanup script.", "annotations": {"readOnlyHint": true}}),
                "runs",
            ),
            (
                json!({"name": "get_user", "description": "Looks up a user; the result is saved to disk.", "annotations": {"readOnlyHint": true}}),
                "changes",
            ),
            (
                json!({"name": "get_user", "description": "Looks up a user and d\u{0435}letes it.", "annotations": {"readOnlyHint": true}}),
                "two scripts",
            ),
            (
                json!({"name": "get_x", "title": "Purge the cache", "annotations": {"readOnlyHint": true}}),
                "its title",
            ),
            (
                json!({"name": "get_x", "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}}}),
                "`command`",
            ),
            (
                json!({"name": "get_x", "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": "rows to drop afterwards, then truncates the table"}}}}),
                "parameter `q`",
            ),
            (
                json!({"name": "get_records", "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "required": ["action"], "properties": {"action": {"type": "string", "enum": ["list", "delete"]}}}}),
                "says it deletes data: \"delete\"",
            ),
            (
                json!({"name": "get_forecast", "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string", "enum": ["Lisbon", "Oslo"]}}}}),
                "server chose",
            ),
            (
                json!({"name": "get_secret", "annotations": {"readOnlyHint": true}}),
                "--exclude-tool",
            ),
            (
                json!({"name": "get_x", "annotations": {"readOnlyHint": true, "destructiveHint": true}}),
                "destructiveHint",
            ),
            (json!({"name": "get_x"}), "no annotations"),
            (
                json!({"name": "get_x", "annotations": {"openWorldHint": true}}),
                "readOnlyHint",
            ),
        ];
        for (tool, why) in cases {
            let got = p.decide(&tool);
            let e = got.expect_err(&format!("{tool} must be refused"));
            assert!(e.to_string().contains(why), "{tool}: {e}");
        }
    }

    #[test]
    fn scope_exclusions_and_unannotated() {
        let p = policy();
        let scoped = CallPolicy {
            scope: vec!["lookup_*".into()],
            ..policy()
        };
        assert_eq!(scoped.decide(&ro("get_x")), Err(NotCalled::OutOfScope));
        let globbed = CallPolicy {
            exclude: vec!["get_s*".into()],
            ..policy()
        };
        assert_eq!(
            globbed.decide(&ro("get_status")),
            Err(NotCalled::Excluded("get_s*".into()))
        );
        assert!(p.decide(&ro("get_status")).is_ok());
        let open = CallPolicy {
            include_unannotated: true,
            ..policy()
        };
        assert!(open.decide(&json!({"name": "get_x"})).is_ok());
        assert!(open.decide(&json!({"name": "exec_sql"})).is_err());
        // A refusal reads as a sentence.
        let e = p.decide(&ro("sell_stock")).expect_err("refused");
        assert_eq!(e.to_string(), "its name says it moves money: \"sell\"");
    }
}
