//! The META-02 classifier's model as data: the reading of `classifier.tsv` and
//! `classifier-classes.txt`, and the open-addressing tables its words and word pairs are looked
//! up in. Plain `std` only: build.rs compiles the model in through this same file
//! (`$OUT_DIR/classifier_model.rs`), so the program never parses the model at start-up (it took
//! 11 ms of the 26 a one-tool `check` took), and the tests read the text through it to hold the
//! compiled tables to it.

use std::collections::HashMap;
use std::fmt;

/// A word class as the model knows it: the id of its feature (`@secret`) and of its schema twin
/// (`s@secret`, counted when the word is inside the tool's schema parts), each when the model
/// gave it a weight, alone or in a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    pub id: Option<u32>,
    pub twin: Option<u32>,
}

/// Why `classifier.tsv` or `classifier-classes.txt` could not be read (a build defect: the
/// build and the tests read them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    Line { line: usize, what: &'static str },
    Classes { what: &'static str },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Line { line, what } => write!(f, "classifier.tsv line {line}: {what}"),
            ModelError::Classes { what } => write!(f, "classifier-classes.txt: {what}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// The model as read: every word by id (features' words first, in the order of the file, then
/// the class words the features did not name), each word's weight alone, the weighted pairs,
/// each word's classes, and the class entries written in part (`*core*`, `core*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<'s> {
    pub bias: f64,
    pub add: f64,
    pub settle: f64,
    pub weak: f64,
    pub words: Vec<&'s str>,
    pub single: Vec<f64>,
    pub pair_words: Vec<(u32, u32)>,
    pub pair_weights: Vec<f64>,
    pub classes: Vec<Vec<Class>>,
    /// (core, whether it must begin the word, its classes).
    pub partial: Vec<(&'s str, bool, Vec<Class>)>,
}

impl<'s> Parsed<'s> {
    fn id(&mut self, ids: &mut HashMap<&'s str, u32>, w: &'s str) -> u32 {
        let next = self.words.len() as u32;
        let i = *ids.entry(w).or_insert(next);
        if i == next {
            self.words.push(w);
            self.single.push(0.0);
            self.classes.push(Vec::new());
        }
        i
    }
}

/// `s` cut at every `sep` (an ASCII byte), as `str::split` cuts it.
pub fn cut(s: &str, sep: u8) -> impl Iterator<Item = &str> {
    debug_assert!(sep.is_ascii());
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let r = rest?;
        match r.bytes().position(|b| b == sep) {
            Some(i) => {
                rest = r.get(i + 1..);
                r.get(..i)
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// Reads the trainer's output (`bias`, `add`, `settle`, `weak` and `w FEATURE WEIGHT` lines),
/// then the word classes. `word_char` says which characters a word is made of (the scorer's
/// `is_word_char`; the build passes `char::is_alphanumeric` and the tests hold the result to
/// the scorer's).
pub fn parse<'s>(
    src: &'s str,
    classes: &'s str,
    word_char: fn(char) -> bool,
) -> Result<Parsed<'s>, ModelError> {
    let mut m = Parsed {
        bias: 0.0,
        add: f64::INFINITY,
        settle: f64::NEG_INFINITY,
        weak: f64::NEG_INFINITY,
        words: Vec::new(),
        single: Vec::new(),
        pair_words: Vec::new(),
        pair_weights: Vec::new(),
        classes: Vec::new(),
        partial: Vec::new(),
    };
    let mut ids: HashMap<&'s str, u32> = HashMap::new();
    let mut pairs: HashMap<(u32, u32), u32> = HashMap::new();
    let mut seen = [false; 4];
    for (n, line) in cut(src, b'\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line_no = n + 1;
        let bad = |what| ModelError::Line {
            line: line_no,
            what,
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = cut(line, b'\t');
        let kind = parts.next().unwrap_or("");
        let number = |p: Option<&str>| -> Result<f64, ModelError> {
            p.and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad("not a finite number"))
        };
        match kind {
            "bias" | "add" | "settle" | "weak" => {
                let v = number(parts.next())?;
                if parts.next().is_some() {
                    return Err(bad("more than a value"));
                }
                let (slot, field) = match kind {
                    "bias" => (0, &mut m.bias),
                    "add" => (1, &mut m.add),
                    "settle" => (2, &mut m.settle),
                    _ => (3, &mut m.weak),
                };
                if seen[slot] {
                    return Err(bad("a line given twice"));
                }
                seen[slot] = true;
                *field = v;
            }
            "w" => {
                let feature = parts
                    .next()
                    .ok_or_else(|| bad("a weight without a feature"))?;
                let v = number(parts.next())?;
                if parts.next().is_some() {
                    return Err(bad("more than a feature and its weight"));
                }
                let mut words = cut(feature, b' ');
                let (a, b) = (words.next().unwrap_or(""), words.next());
                if a.is_empty() || words.next().is_some() || b == Some("") {
                    return Err(bad("a feature is one word or two"));
                }
                let ia = m.id(&mut ids, a);
                match b {
                    None if m.single[ia as usize] != 0.0 => {
                        return Err(bad("a feature given twice"));
                    }
                    None => m.single[ia as usize] = v,
                    Some(b) => {
                        let ib = m.id(&mut ids, b);
                        if pairs.contains_key(&(ia, ib)) {
                            return Err(bad("a feature given twice"));
                        }
                        pairs.insert((ia, ib), m.pair_weights.len() as u32);
                        m.pair_weights.push(v);
                        m.pair_words.push((ia, ib));
                    }
                }
            }
            _ => return Err(bad("unknown line kind")),
        }
    }
    // (core, must begin the word) -> index into m.partial.
    let mut partial_index: HashMap<(&'s str, bool), usize> = HashMap::new();
    for line in classes.lines() {
        let mut parts = line.split_whitespace();
        let Some(class) = parts.next().filter(|c| !c.starts_with('#')) else {
            continue;
        };
        // A class the model gave no weight, alone, in a pair or as a twin, changes no score.
        let c = Class {
            id: ids.get(format!("@{class}").as_str()).copied(),
            twin: ids.get(format!("s@{class}").as_str()).copied(),
        };
        let weighted = c.id.is_some() || c.twin.is_some();
        for w in parts {
            if let Some(stem) = w.strip_suffix('*') {
                let (core, at_start) = match stem.strip_prefix('*') {
                    Some(core) => (core, false),
                    None => (stem, true),
                };
                if core.is_empty() || core.contains('*') {
                    return Err(ModelError::Classes {
                        what: "an entry written in part has no letters between its stars",
                    });
                }
                if !core.chars().all(word_char) || core.to_lowercase() != core {
                    // A word is a lower-cased run of word characters: none could hold it.
                    return Err(ModelError::Classes {
                        what: "an entry written in part is not a lower-case run of word characters",
                    });
                }
                if core.is_ascii() {
                    // Only words with a character outside ASCII are tried in part.
                    return Err(ModelError::Classes {
                        what: "an entry written in part is all ASCII (list its words whole)",
                    });
                }
                if !weighted {
                    continue;
                }
                let next = partial_index.len();
                let k = *partial_index.entry((core, at_start)).or_insert(next);
                if k == next {
                    m.partial.push((core, at_start, Vec::new()));
                }
                if let Some((_, _, cs)) = m.partial.get_mut(k)
                    && !cs.contains(&c)
                {
                    cs.push(c);
                }
                continue;
            }
            if !weighted {
                continue;
            }
            let word = m.id(&mut ids, w) as usize;
            if let Some(cs) = m.classes.get_mut(word)
                && !cs.contains(&c)
            {
                cs.push(c);
            }
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(ModelError::Line {
            line: 0,
            what: [
                "no bias line",
                "no add line",
                "no settle line",
                "no weak line",
            ][i],
        });
    }
    if !(m.settle <= m.weak && m.weak < m.add) {
        return Err(ModelError::Line {
            line: 0,
            what: "the lines are out of order (settle <= weak < add)",
        });
    }
    Ok(m)
}

/// The lookup tables of a model as the scorer reads them: its words and its pairs by hash
/// ([`slots`]), and each word's classes as a range of one list. The build compiles them in; the
/// tests build them from the text read now, so both are made here.
#[derive(Debug, Clone, PartialEq)]
pub struct Tables {
    pub word_slots: Vec<u32>,
    pub pair_slots: Vec<u32>,
    pub class_spans: Vec<(u32, u32)>,
    pub class_list: Vec<Class>,
}

impl Parsed<'_> {
    pub fn tables(&self) -> Tables {
        let hashes: Vec<u64> = self.words.iter().map(|w| word_hash(w.as_bytes())).collect();
        let pair_hashes: Vec<u64> = self
            .pair_words
            .iter()
            .map(|&(a, b)| pair_hash(a, b))
            .collect();
        let mut class_spans = Vec::with_capacity(self.classes.len());
        let mut class_list = Vec::new();
        for cs in &self.classes {
            let start = class_list.len() as u32;
            class_list.extend_from_slice(cs);
            class_spans.push((start, class_list.len() as u32));
        }
        Tables {
            word_slots: slots(&hashes),
            pair_slots: slots(&pair_hashes),
            class_spans,
            class_list,
        }
    }
}

/// The hash of a word for [`slots`] and [`lookup`]: FNV-1a, then mixed so that the low bits
/// (the slot) depend on every byte. Fixed, so the build's tables are the program's.
pub fn word_hash(w: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in w {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix(h)
}

/// The hash of a word pair (two word ids).
pub fn pair_hash(a: u32, b: u32) -> u64 {
    mix((u64::from(a) << 32) | u64::from(b))
}

fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// An open-addressing table of `hashes.len()` keys: a power of two of at least twice as many
/// slots, each 0 (empty) or a key's index + 1, placed by linear probing from its hash.
pub fn slots(hashes: &[u64]) -> Vec<u32> {
    let size = (hashes.len() * 2).next_power_of_two().max(2);
    let mask = size - 1;
    let mut out = vec![0u32; size];
    for (k, &h) in hashes.iter().enumerate() {
        let mut i = (h as usize) & mask;
        while out[i] != 0 {
            i = (i + 1) & mask;
        }
        out[i] = k as u32 + 1;
    }
    out
}

/// The key whose hash is `h` in `slots`, `is` telling whether a key index is the one sought.
/// The table is at most half full, so a probe ends at an empty slot.
pub fn lookup(slots: &[u32], h: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
    let mask = slots.len().checked_sub(1)?;
    let mut i = (h as usize) & mask;
    for _ in 0..slots.len() {
        match slots.get(i).copied().unwrap_or(0) {
            0 => return None,
            k if is(k - 1) => return Some(k - 1),
            _ => i = (i + 1) & mask,
        }
    }
    None
}
