//! The vocabulary of the active call rule ([`super::policy`]): the five effect classes, the read
//! verbs, the short Unix commands, joined compounds and word pairs, from the data file
//! `src/active/words.toml` (compiled in). Every inflection of each listed verb is derived here
//! (`delete` → deletes, deleted, deleting, deletion, deleter, …), and a prefixed form (`re`,
//! `un`, `over`, `bulk`, …) counts as its verb, so the file lists each word once.
//!
//! Also the word splitting the rule reads texts with: NFKC first, invisible characters removed,
//! look-alike Cyrillic and Greek letters folded to the Latin ones they imitate, then words
//! across snake, kebab, dot and camel case and letter–digit boundaries, in lower case.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;
use strum::VariantArray as _;
use unicode_normalization::UnicodeNormalization;

/// What a tool does, by the class of a word that says so (SPEC §3.1's classes, for the call
/// rule: never called).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum EffectClass {
    Changes,
    Deletes,
    Sends,
    Runs,
    Payments,
}

impl EffectClass {
    /// What a tool of the class does, as the end of "it …".
    pub fn does(self) -> &'static str {
        match self {
            EffectClass::Changes => "changes data",
            EffectClass::Deletes => "deletes data",
            EffectClass::Sends => "sends something out",
            EffectClass::Runs => "runs code, commands or processes",
            EffectClass::Payments => "moves money",
        }
    }

    /// Its table in `words.toml` (`[classes.changes]`).
    fn key(self) -> &'static str {
        self.into()
    }
}

/// How surely a word says an effect (the data file's tiers), weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// A thing that runs or sends by its name alone (`shell`, `webhook`).
    Noun,
    /// A verb that is also an everyday noun or adjective (`post`, `page`, `close`).
    Ambiguous,
    /// An effect verb in any position.
    Verb,
}

/// A word of an effect class: the class, how sure, and the listed verb it is a form of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub class: EffectClass,
    pub tier: Tier,
    pub verb: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassData {
    verbs: Vec<String>,
    ambiguous: Vec<String>,
    nouns: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    classes: HashMap<String, ClassData>,
    irregular: HashMap<String, String>,
    unix: Commands,
    compounds: HashMap<String, Vec<String>>,
    pairs: Phrases,
    read: Verbs,
    plain: Words,
    idioms: IdiomData,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Commands {
    anywhere: Vec<String>,
    commands: Vec<String>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Phrases {
    phrases: Vec<[String; 2]>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Verbs {
    verbs: Vec<String>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Words {
    words: Vec<String>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdiomData {
    phrases: Vec<String>,
}

/// The vocabulary, built once from the data file.
#[derive(Debug)]
pub struct Vocabulary {
    forms: HashMap<String, Vec<Hit>>,
    /// Verb-tier forms of 4 or more letters (and `run`, `rm`, `pay`): what may be glued to
    /// another word in a name (`deleteuser`, `userpurger`).
    joinable: HashSet<String>,
    /// Every verb-tier form of five or more letters, found anywhere inside a name's token
    /// (`getDELETEget`, `bulkinsertrows`), one automaton for all.
    inside: Option<aho_corasick::AhoCorasick>,
    inside_forms: Vec<String>,
    unix: HashSet<String>,
    /// Unix commands that refuse wherever they stand in a title or description.
    unix_anywhere: HashSet<String>,
    compounds: HashMap<String, Vec<String>>,
    pairs: HashSet<(String, String)>,
    read: HashSet<String>,
    plain: HashSet<String>,
    /// Idioms as word sequences, by their first word.
    idioms: HashMap<String, Vec<Vec<String>>>,
}

/// Prefixes that keep a verb's class (`redeploy`, `unpublish`, `overwrite`, `bulkdelete`).
const PREFIXES: [&str; 12] = [
    "re", "un", "pre", "auto", "over", "bulk", "batch", "mass", "force", "multi", "mis", "de",
];

const DATA: &str = include_str!("words.toml");

/// The vocabulary, or why the data file could not be read (then nothing is ever called).
pub fn vocabulary() -> Result<&'static Vocabulary, &'static str> {
    static V: OnceLock<Result<Vocabulary, String>> = OnceLock::new();
    V.get_or_init(|| Vocabulary::parse(DATA))
        .as_ref()
        .map_err(String::as_str)
}

impl Vocabulary {
    fn parse(text: &str) -> Result<Vocabulary, String> {
        let data: Data = toml::from_str(text).map_err(|e| format!("src/active/words.toml: {e}"))?;
        let mut v = Vocabulary {
            forms: HashMap::new(),
            joinable: HashSet::new(),
            inside: None,
            inside_forms: Vec::new(),
            unix: data
                .unix
                .commands
                .iter()
                .map(|w| w.to_ascii_lowercase())
                .collect(),
            unix_anywhere: data
                .unix
                .anywhere
                .iter()
                .map(|w| w.to_ascii_lowercase())
                .collect(),
            compounds: data.compounds,
            pairs: data
                .pairs
                .phrases
                .into_iter()
                .map(|[a, b]| (a, b))
                .collect(),
            read: data.read.verbs.into_iter().collect(),
            plain: data.plain.words.into_iter().collect(),
            idioms: HashMap::new(),
        };
        for &class in EffectClass::VARIANTS {
            let c = data
                .classes
                .get(class.key())
                .ok_or_else(|| format!("src/active/words.toml: no [classes.{}]", class.key()))?;
            for (tier, words) in [
                (Tier::Verb, &c.verbs),
                (Tier::Ambiguous, &c.ambiguous),
                (Tier::Noun, &c.nouns),
            ] {
                for w in words {
                    let w = w.to_ascii_lowercase();
                    // A noun has its plural only; a verb of one or two letters (`rm`, `su`)
                    // only itself, or its forms would be inside ordinary words.
                    let forms = if tier == Tier::Noun {
                        vec![w.clone(), format!("{w}s")]
                    } else if w.len() <= 2 {
                        vec![w.clone()]
                    } else {
                        inflections(&w)
                    };
                    // What may be glued to another word: forms of a verb of four or more
                    // letters, and of `run` and `pay`.
                    let joins = tier == Tier::Verb
                        && (w.len() >= 4 || ["run", "pay"].contains(&w.as_str()));
                    for f in forms {
                        if joins {
                            v.joinable.insert(f.clone());
                        }
                        v.add(f, class, tier, &w);
                    }
                }
            }
        }
        for (form, verb) in data.irregular {
            let hits: Vec<Hit> = v.forms.get(&verb).cloned().unwrap_or_default();
            if hits.is_empty() {
                return Err(format!(
                    "src/active/words.toml: [irregular] {form} = {verb:?}, a verb no class lists"
                ));
            }
            for h in hits {
                v.add(form.clone(), h.class, h.tier, &h.verb);
            }
        }
        let mut inside: Vec<String> = v
            .forms
            .iter()
            .filter(|(f, hits)| f.len() >= 5 && hits.iter().any(|h| h.tier == Tier::Verb))
            .map(|(f, _)| f.clone())
            .collect();
        inside.sort();
        v.inside = Some(
            aho_corasick::AhoCorasick::new(&inside)
                .map_err(|e| format!("src/active/words.toml: the verb automaton: {e}"))?,
        );
        v.inside_forms = inside;
        for phrase in data.idioms.phrases {
            let words = split_text(&phrase);
            if let Some(first) = words.first() {
                v.idioms
                    .entry(first.clone())
                    .or_default()
                    .push(words.clone());
            }
        }
        Ok(v)
    }

    fn add(&mut self, form: String, class: EffectClass, tier: Tier, verb: &str) {
        let hits = self.forms.entry(form).or_default();
        if !hits.iter().any(|h| h.class == class && h.tier >= tier) {
            hits.retain(|h| h.class != class);
            hits.push(Hit {
                class,
                tier,
                verb: verb.to_string(),
            });
        }
    }

    /// The strongest class a word belongs to, itself or with a prefix taken off.
    pub fn lookup(&self, word: &str) -> Option<Hit> {
        if self.plain.contains(word) {
            return None;
        }
        let best = |hits: &Vec<Hit>| hits.iter().max_by_key(|h| h.tier).cloned();
        if let Some(h) = self.forms.get(word).and_then(best) {
            return Some(h);
        }
        for p in PREFIXES {
            if let Some(rest) = word.strip_prefix(p)
                && rest.len() >= 3
                && !self.plain.contains(rest)
                && let Some(h) = self.forms.get(rest).and_then(best)
                // A noun keeps no class under a prefix (`prescript` is not a script).
                && h.tier != Tier::Noun
            {
                return Some(h);
            }
        }
        None
    }

    /// In a name: an effect verb glued to another word (`deleteuser`, `userpurger`), with
    /// the verb it holds. Only verb-tier forms join (an everyday noun such as `page` or `set`
    /// is inside too many plain words).
    pub fn joined(&self, word: &str) -> Option<Hit> {
        if word.len() < 5 || self.plain.contains(word) || self.read.contains(word) {
            return None;
        }
        let n = word.len();
        for i in 2..=n.saturating_sub(2) {
            let (a, b) = (word.get(..i)?, word.get(i..)?);
            for part in [a, b] {
                // The verb itself, or with a prefix (`autowipe` + `get`).
                let hit = PREFIXES
                    .iter()
                    .filter_map(|p| part.strip_prefix(p).filter(|rest| rest.len() >= 3))
                    .chain(std::iter::once(part))
                    .filter(|v| self.joinable.contains(*v))
                    .find_map(|v| self.lookup(v));
                if hit.is_some() {
                    return hit;
                }
            }
        }
        None
    }

    /// An effect verb of five or more letters anywhere inside `token` (a name's run of letters
    /// and digits, in lower case), unless the token is a plain word.
    pub fn inside(&self, token: &str) -> Option<(String, Hit)> {
        if self.plain.contains(token) {
            return None;
        }
        let m = self.inside.as_ref()?.find(token)?;
        let form = self.inside_forms.get(m.pattern().as_usize())?;
        self.lookup(form).map(|h| (form.clone(), h))
    }

    pub fn is_read_verb(&self, word: &str) -> bool {
        self.read.contains(word)
    }

    pub fn is_unix(&self, word: &str) -> bool {
        self.unix.contains(word)
    }

    /// A Unix command that refuses wherever it stands in a text (`rm`, `chmod`), not only
    /// where a verb does (`ssh`, `curl`).
    pub fn is_unix_anywhere(&self, word: &str) -> bool {
        self.unix_anywhere.contains(word) || (self.unix.contains(word) && word.len() <= 2)
    }

    pub fn is_plain(&self, word: &str) -> bool {
        self.plain.contains(word)
    }

    pub fn is_pair(&self, a: &str, b: &str) -> bool {
        self.pairs.contains(&(a.to_string(), b.to_string()))
    }

    /// A joined compound's parts (`shutdown` → shut, down).
    pub fn compound(&self, word: &str) -> Option<&[String]> {
        self.compounds.get(word).map(Vec::as_slice)
    }

    /// `words` with every idiom (a description phrase that names no effect) blanked out.
    pub fn without_idioms(&self, words: &[String]) -> Vec<Option<String>> {
        let mut out: Vec<Option<String>> = words.iter().cloned().map(Some).collect();
        let mut i = 0;
        while i < words.len() {
            let mut skip = 0;
            if let Some(list) = self.idioms.get(&words[i]) {
                for idiom in list {
                    if words.get(i..i + idiom.len()) == Some(idiom.as_slice()) {
                        skip = skip.max(idiom.len());
                    }
                }
            }
            if skip > 0 {
                for w in out.iter_mut().skip(i).take(skip) {
                    *w = None;
                }
                i += skip;
            } else {
                i += 1;
            }
        }
        out
    }

    /// Every word the data file lists in `class`, by tier (for the tests, one per class).
    pub fn listed(&self, class: EffectClass) -> Vec<(String, Tier)> {
        let mut out: Vec<(String, Tier)> = self
            .forms
            .values()
            .flatten()
            .filter(|h| h.class == class)
            .map(|h| (h.verb.clone(), h.tier))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Every form of a verb: itself, -s/-es/-ies, -d/-ed/-ied, -ing, -er(s)/-or(s), -ion(s),
/// -ation(s), -ication(s), -ment(s), -al(s), -able, -ive, with the final consonant doubled
/// and the final `e` dropped where English does.
pub fn inflections(w: &str) -> Vec<String> {
    let mut out = vec![w.to_string()];
    let bytes = w.as_bytes();
    let last = bytes.last().copied().unwrap_or(b' ');
    let vowel = |c: u8| b"aeiou".contains(&c);
    let cons_y = last == b'y' && bytes.len() >= 2 && !vowel(bytes[bytes.len() - 2]);
    let stem_e = w.strip_suffix('e').filter(|_| !w.ends_with("ee"));
    // Bases the suffixes attach to: the word, without its final e, with its last consonant
    // doubled (drop → dropp-), and with y turned to i (modify → modifi-).
    let mut bases = vec![w.to_string()];
    if let Some(s) = stem_e {
        bases.push(s.to_string());
    }
    if bytes.len() >= 2 && !vowel(last) && vowel(bytes[bytes.len() - 2]) && !b"wxy".contains(&last)
    {
        bases.push(format!("{w}{}", last as char));
    }
    if cons_y {
        bases.push(format!("{}i", &w[..w.len() - 1]));
    }
    const SUFFIXES: [&str; 26] = [
        "s", "es", "d", "ed", "ing", "ings", "er", "ers", "r", "rs", "or", "ors", "ion", "ions",
        "ation", "ations", "cation", "cations", "ment", "ments", "al", "als", "able", "ive", "ee",
        "ery",
    ];
    for b in &bases {
        for s in SUFFIXES {
            out.push(format!("{b}{s}"));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Format and invisible characters a text may hide a word behind (`de\u{200B}lete`).
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{E0000}'..='\u{E0FFF}')
}

/// The Latin letter a Cyrillic, Greek or other look-alike imitates, if it is one.
fn latin_lookalike(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' | 'ɑ' => 'a',
        'в' | 'β' => 'b',
        'с' | 'ϲ' | 'ⅽ' => 'c',
        'ԁ' | 'ⅾ' => 'd',
        'е' | 'ε' | 'ё' | 'є' => 'e',
        'һ' => 'h',
        'і' | 'ι' | 'ї' | 'ı' => 'i',
        'ј' | 'ϳ' => 'j',
        'к' | 'κ' => 'k',
        'ӏ' | 'ⅼ' => 'l',
        'м' => 'm',
        'п' | 'η' => 'n',
        'о' | 'ο' | 'σ' | 'օ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' | 'ս' => 'u',
        'ν' | 'ѵ' => 'v',
        'ѡ' | 'ω' | 'ԝ' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        'ᴢ' => 'z',
        _ => return None,
    })
}

/// A text as the rule reads it: NFKC, invisible characters removed, look-alike letters folded
/// to Latin, lower case. Also whether a word of it mixed Latin letters with letters of
/// another script (a look-alike spelling): the first such word, as written.
pub fn normalise(text: &str) -> (String, Option<String>) {
    let nfkc: String = text.nfkc().filter(|c| !invisible(*c)).collect();
    let mut mixed = None;
    for word in nfkc.split(|c: char| !c.is_alphanumeric()) {
        let latin = word.chars().any(|c| c.is_ascii_alphabetic());
        let other = word.chars().any(|c| {
            !c.is_ascii()
                && c.is_alphabetic()
                && (latin_lookalike(c).is_some() || !is_latin_extended(c))
        });
        if latin && other && mixed.is_none() {
            mixed = Some(word.to_string());
        }
    }
    let folded: String = nfkc
        .chars()
        .map(|c| latin_lookalike(c).unwrap_or(c))
        .flat_map(char::to_lowercase)
        .collect();
    (folded, mixed)
}

/// Latin letters with diacritics (`café`, `naïve`): not a second script.
fn is_latin_extended(c: char) -> bool {
    matches!(c, '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}')
}

/// The words of a text the rule reads (a title, a description clause): after [`normalise`],
/// split at everything that is not a letter or digit, and at camel-case and letter–digit
/// boundaries; apostrophes vanish (`doesn't` → `doesnt`).
pub fn split_text(text: &str) -> Vec<String> {
    let (norm, _) = normalise(text);
    let joined: String = norm.chars().filter(|c| *c != '\'' && *c != '’').collect();
    split_words(&joined)
}

/// Words of an already-normalised text: lower-case runs of letters or digits, also split
/// where lower case meets upper case (`shutDown`), before the last capital of a run of
/// capitals followed by lower case (`HTTPRequest`), and where letters meet digits.
pub fn split_words(text: &str) -> Vec<String> {
    split(text, false)
}

/// The words of [`split_words`], but with a run of capitals kept whole where lower case
/// follows it (`getWIPEget` → get, wipe, get): the other reading of a name whose capitals
/// may end a word or start the next.
pub fn split_words_whole_capitals(text: &str) -> Vec<String> {
    split(text, true)
}

/// Both readings: a run of capitals followed by lower case gives its last capital to the next
/// word (`HTTPResponse`), or with `whole_capitals` keeps it (`WIPEget`).
fn split(text: &str, whole_capitals: bool) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|j| chars.get(j)) {
            let capitals_end = if whole_capitals {
                let before = i.checked_sub(2).and_then(|j| chars.get(j)).copied();
                prev.is_uppercase() && c.is_lowercase() && before.is_some_and(char::is_uppercase)
            } else {
                let next = chars.get(i + 1).copied();
                prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase)
            };
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || capitals_end
                || (prev.is_alphabetic() && c.is_numeric())
                || (prev.is_numeric() && c.is_alphabetic());
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word spelled with digits for letters (`d3l3te`, `k1ll`), read as letters: the two
/// readings of `1` (l and i) and the usual others. None when the word has no digit or no
/// letter.
pub fn unleet(word: &str) -> Vec<String> {
    if !word.chars().any(|c| c.is_ascii_digit()) || !word.chars().any(|c| c.is_ascii_alphabetic()) {
        return Vec::new();
    }
    let map = |one: char| -> String {
        word.chars()
            .map(|c| match c {
                '0' => 'o',
                '1' => one,
                '3' => 'e',
                '4' => 'a',
                '5' => 's',
                '7' => 't',
                '8' => 'b',
                '9' => 'g',
                '$' => 's',
                '@' => 'a',
                c => c,
            })
            .collect()
    };
    vec![map('l'), map('i')]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> &'static Vocabulary {
        vocabulary().expect("the data file reads")
    }

    /// Each class, in order, reads the `[classes.…]` table of its lower-case name.
    #[test]
    fn every_class_is_named_by_its_table() {
        let keys: Vec<&str> = EffectClass::VARIANTS.iter().map(|c| c.key()).collect();
        assert_eq!(keys, ["changes", "deletes", "sends", "runs", "payments"]);
        for &class in EffectClass::VARIANTS {
            let words = v()
                .forms
                .values()
                .flatten()
                .filter(|h| h.class == class)
                .count();
            assert!(words > 0, "{class:?} read no words from its table");
        }
    }

    #[test]
    fn inflections_cover_the_forms_a_name_or_description_uses() {
        let forms = inflections("delete");
        for f in [
            "delete", "deletes", "deleted", "deleting", "deletion", "deleter", "deleters",
        ] {
            assert!(forms.contains(&f.to_string()), "{f}");
        }
        let purge = inflections("purge");
        assert!(purge.contains(&"purger".to_string()));
        let drop = inflections("drop");
        assert!(drop.contains(&"dropped".to_string()) && drop.contains(&"dropping".to_string()));
        let modify = inflections("modify");
        assert!(
            modify.contains(&"modifies".to_string()) && modify.contains(&"modified".to_string())
        );
        assert!(modify.contains(&"modification".to_string()));
        assert!(inflections("pay").contains(&"payment".to_string()));
        assert!(inflections("execute").contains(&"execution".to_string()));
    }

    /// One test per class: the class is not empty, and each of its words (its verbs in any
    /// inflection) is found by lookup.
    fn class_is_whole(class: EffectClass) {
        let listed = v().listed(class);
        assert!(listed.len() >= 10, "{class:?} lists {} words", listed.len());
        for (verb, tier) in listed {
            let hit = v().lookup(&verb);
            assert!(
                hit.as_ref().is_some_and(|h| h.tier >= tier),
                "{class:?}: {verb} ({tier:?}) → {hit:?}"
            );
            if tier != Tier::Noun && verb.len() > 2 {
                for f in inflections(&verb) {
                    if !v().is_plain(&f) {
                        assert!(v().lookup(&f).is_some(), "{class:?}: {f}, a form of {verb}");
                    }
                }
            }
        }
    }

    #[test]
    fn class_changes() {
        class_is_whole(EffectClass::Changes);
    }
    #[test]
    fn class_deletes() {
        class_is_whole(EffectClass::Deletes);
    }
    #[test]
    fn class_sends() {
        class_is_whole(EffectClass::Sends);
    }
    #[test]
    fn class_runs() {
        class_is_whole(EffectClass::Runs);
    }
    #[test]
    fn class_payments() {
        class_is_whole(EffectClass::Payments);
    }

    #[test]
    fn unix_commands_compounds_pairs_and_read_verbs_are_listed() {
        for c in [
            "rm", "rmdir", "mv", "cp", "dd", "kill", "pkill", "killall", "chmod", "chown", "touch",
            "mkdir", "ln", "truncate",
        ] {
            assert!(v().is_unix(c), "{c}");
        }
        assert_eq!(v().compound("shutdown").map(<[String]>::len), Some(2));
        assert!(v().is_pair("power", "off"));
        for r in [
            "get", "list", "read", "search", "find", "fetch", "lookup", "describe", "show", "view",
            "count", "check", "ping", "status",
        ] {
            assert!(v().is_read_verb(r), "{r}");
            assert!(v().lookup(r).is_none(), "a read verb in a class: {r}");
        }
    }

    #[test]
    fn prefixes_and_joins() {
        assert_eq!(
            v().lookup("redeploy").map(|h| h.class),
            Some(EffectClass::Changes)
        );
        assert_eq!(
            v().lookup("republish").map(|h| h.verb),
            Some("publish".into())
        );
        assert!(v().lookup("review").is_none());
        assert!(v().lookup("settings").is_none());
        assert_eq!(
            v().joined("userpurger").map(|h| h.verb),
            Some("purge".into())
        );
        assert_eq!(
            v().joined("deleteuser").map(|h| h.class),
            Some(EffectClass::Deletes)
        );
        assert!(v().joined("address").is_none());
        assert!(v().joined("credit").is_none());
        assert!(v().joined("weather").is_none());
    }

    #[test]
    fn splitting_and_normalising() {
        assert_eq!(split_words("shutDown"), ["shut", "down"]);
        assert_eq!(
            split_words("getHTTPResponse2x"),
            ["get", "http", "response", "2", "x"]
        );
        // The other reading keeps a run of capitals whole.
        assert_eq!(split_words("getWIPEget"), ["get", "wip", "eget"]);
        assert_eq!(
            split_words_whole_capitals("getWIPEget"),
            ["get", "wipe", "get"]
        );
        assert_eq!(
            split_words_whole_capitals("getHTTPResponse2x"),
            ["get", "httpr", "esponse", "2", "x"]
        );
        assert_eq!(split_text("ｄｅｌｅｔｅ_user"), ["delete", "user"]);
        assert_eq!(split_text("de\u{200B}lete"), ["delete"]);
        // A Cyrillic е in "delete": folded, and said to mix scripts.
        let (n, mixed) = normalise("d\u{0435}lete user");
        assert_eq!(n, "delete user");
        assert_eq!(mixed.as_deref(), Some("d\u{0435}lete"));
        assert_eq!(normalise("café naïve").1, None);
        assert_eq!(
            normalise("Привет мир").1,
            None,
            "one script per word is not a look-alike"
        );
        assert_eq!(split_text("doesn't change"), ["doesnt", "change"]);
        assert!(unleet("d3lete").contains(&"delete".to_string()));
        assert!(unleet("k1ll").contains(&"kill".to_string()));
        assert!(unleet("weather").is_empty());
    }

    #[test]
    fn idioms_are_blanked() {
        let words = split_text("Lists files by last modified date");
        let kept: Vec<String> = v().without_idioms(&words).into_iter().flatten().collect();
        assert_eq!(kept, ["lists", "files", "by", "date"]);
    }
}
