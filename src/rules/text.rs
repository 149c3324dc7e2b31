//! Text helpers for the rules: the invisible-character table (P1), a matching view of a text
//! that maps back to the original, identifier tokenisation for capability words, and excerpts.

use crate::util::escape::escape;

/// P1's characters (SPEC §3.1): zero-width, bidi controls, word joiner and invisible operators,
/// BOM, and the Unicode tag block.
pub fn is_p1(c: char) -> bool {
    matches!(c as u32,
        0x200B..=0x200F | 0x2060..=0x2064 | 0xFEFF | 0x202A..=0x202E | 0x2066..=0x2069
        | 0xE0000..=0xE007F)
}

/// Characters that draw nothing and join nothing, outside P1's list: the soft hyphen, the
/// combining grapheme joiner, variation selectors, Mongolian free variation selectors and
/// vowel separator, Khmer inherent vowels, shorthand format controls, the Arabic letter mark,
/// the deprecated format characters U+206A–U+206F and the musical format controls (Unicode's
/// default-ignorable code points that P1 does not list). Inside a word they hide
/// it from a list of words (`te\u{AD}ll`); the views of the text drop them. (Not a P1
/// finding: a variation selector follows most emoji. The few that P1 counts from three in a
/// text, poisoning.rs `FILLERS`, are among these and [`is_blank_letter`]; a test holds it.)
pub fn is_ignorable(c: char) -> bool {
    matches!(c as u32,
        0xAD | 0x34F | 0x61C | 0x17B4 | 0x17B5 | 0x180B..=0x180F | 0x206A..=0x206F
        | 0xFE00..=0xFE0F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0100..=0xE01EF)
}

/// Letters and symbols that draw as a blank (the Hangul fillers, the blank Braille pattern):
/// read as a space between words.
pub fn is_blank_letter(c: char) -> bool {
    matches!(
        c,
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}'
    )
}

pub fn is_tag(c: char) -> bool {
    (0xE0000..=0xE007F).contains(&(c as u32))
}

/// A text prepared for phrase matching: runs of whitespace collapsed to one space, P1
/// characters and the other invisible ones ([`is_ignorable`]) dropped (so `ig\u{200B}nore
/// previous` and `te\u{AD}ll` still match), blank letters read as spaces, typographic apostrophes
/// made ASCII, and letters in disguise read as the ASCII letters they are drawn like: the
/// compatibility forms ([`compatibility_ascii`]: `ｉｇｎｏｒｅ`, `𝐢𝐠𝐧𝐨𝐫𝐞`) everywhere, and the
/// Cyrillic and Greek lookalikes inside a word that also holds ASCII letters
/// ([`disguised_letters`]: `іgnоrе`). Each such letter is replaced by one ASCII byte. The way back to the original is sparse: one `(view, original)` pair of byte
/// offsets wherever the two stop moving in step (a dropped character, a collapsed run, a
/// replacement of another width), so a text costs memory for what changed, not per byte.
pub struct MatchView<'a> {
    pub text: std::borrow::Cow<'a, str>,
    /// Sorted by view offset: from `view` on (until the next pair), view byte `view + k` is
    /// original byte `original + k`.
    shifts: Vec<(u32, u32)>,
    original_len: usize,
}

impl<'a> MatchView<'a> {
    pub fn new(original: &'a str) -> MatchView<'a> {
        MatchView::with_scan(original, &Scan::of(original))
    }

    /// [`MatchView::new`] when the text was already scanned.
    pub fn with_scan(original: &'a str, scan: &Scan) -> MatchView<'a> {
        if !scan.needs_normalizing {
            return MatchView::as_written(original);
        }
        MatchView::rewrite(original, false)
    }

    /// A view that only reads letters in disguise as ASCII ([`unmasked`]) and drops invisible
    /// characters, keeping every space, line break and punctuation mark as written (the
    /// sentence reading cuts sentences at them): for the readers that need a text's layout.
    /// None when the text has nothing of the kind and reads as written.
    pub fn letters(original: &'a str) -> Option<MatchView<'a>> {
        // One look at the characters before a copy of the text is made.
        if original.is_ascii()
            || !original.chars().any(|c| {
                is_p1(c)
                    || is_ignorable(c)
                    || lookalike(c).is_some()
                    || unmasked(c, false).is_some()
            })
        {
            return None;
        }
        let view = MatchView::rewrite(original, true);
        (view.text != original).then_some(view)
    }

    fn as_written(original: &'a str) -> MatchView<'a> {
        MatchView {
            text: original.into(),
            shifts: Vec::new(),
            original_len: original.len(),
        }
    }

    fn rewrite(original: &'a str, letters_only: bool) -> MatchView<'a> {
        // Offsets are kept as u32: a longer text (never one the walk lets through) is matched
        // as written.
        if original.len() > u32::MAX as usize {
            return MatchView::as_written(original);
        }
        let mut text = String::with_capacity(original.len());
        let mut shifts: Vec<(u32, u32)> = Vec::new();
        // The Cyrillic and Greek lookalikes to read as the ASCII letters they are drawn like.
        let disguised = disguised_letters(original);
        let mut next_disguised = disguised.iter().peekable();
        let mut last_space = false;
        // Whether view and original moved in step since the last pair.
        let mut in_step = true;
        for (i, c) in original.char_indices() {
            if is_p1(c) || is_ignorable(c) {
                in_step = false;
                continue;
            }
            let out = match c {
                c if c.is_ascii() && (letters_only || !c.is_ascii_whitespace()) => c,
                '\u{2019}' | '\u{2018}' | '\u{02BC}' if !letters_only => '\'',
                c if !letters_only && (c.is_whitespace() || is_blank_letter(c)) => ' ',
                c if next_disguised.next_if(|&&at| at as usize == i).is_some() => {
                    lookalike(c).unwrap_or(c)
                }
                c if letters_only => unmasked(c, false).unwrap_or(c),
                c => compatibility_ascii(c).unwrap_or(c),
            };
            if out == ' ' && !letters_only {
                if last_space {
                    in_step = false;
                    continue;
                }
                last_space = true;
            } else {
                last_space = false;
            }
            let same_width = out.len_utf8() == c.len_utf8();
            if !in_step || !same_width {
                shifts.push((text.len() as u32, i as u32));
            }
            text.push(out);
            in_step = same_width;
        }
        MatchView {
            text: text.into(),
            shifts,
            original_len: original.len(),
        }
    }

    /// The original byte offset of view byte `v`. Replacements are all to one ASCII byte, so a
    /// pair that starts a replaced character covers just that byte; within any other run the
    /// two move in step.
    fn original_at(&self, v: usize) -> usize {
        let k = self.shifts.partition_point(|&(view, _)| view as usize <= v);
        let at = match k.checked_sub(1).and_then(|k| self.shifts.get(k)) {
            None => v,
            Some(&(view, orig)) => orig as usize + (v - view as usize),
        };
        at.min(self.original_len)
    }

    /// The original byte range of the view's byte range `start..end`.
    pub fn original_range(&self, start: usize, end: usize, original: &str) -> (usize, usize) {
        if self.shifts.is_empty() {
            return (start, end);
        }
        let s = if start >= self.text.len() {
            self.original_len
        } else {
            original.floor_char_boundary(self.original_at(start))
        };
        let e = if end == 0 {
            s
        } else if end > self.text.len() {
            self.original_len
        } else {
            // End of the last mapped character.
            let last = original.floor_char_boundary(self.original_at(end - 1));
            let width = original
                .get(last..)
                .and_then(|t| t.chars().next())
                .map(char::len_utf8)
                .unwrap_or(0);
            last + width
        };
        (s, e.max(s))
    }
}

/// The ASCII letter a Cyrillic or Greek letter is drawn like (`а` U+0430 is `a`, `Ρ` U+03A1 is
/// `P`): the letters a text uses to spell English words that no list of English words matches.
pub fn lookalike(c: char) -> Option<char> {
    Some(match c {
        // Cyrillic.
        'а' => 'a',
        'е' => 'e',
        'о' => 'o',
        'р' => 'p',
        'с' => 'c',
        'у' => 'y',
        'х' => 'x',
        'і' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'ԁ' => 'd',
        'һ' => 'h',
        'ӏ' => 'l',
        'ԛ' => 'q',
        'ԝ' => 'w',
        'ѵ' => 'v',
        'ү' => 'y',
        'Ӏ' => 'I',
        'Ԁ' => 'D',
        'Һ' => 'H',
        'Ѵ' => 'V',
        'Ү' => 'Y',
        'А' => 'A',
        'В' => 'B',
        'Е' => 'E',
        'К' => 'K',
        'М' => 'M',
        'Н' => 'H',
        'О' => 'O',
        'Р' => 'P',
        'С' => 'C',
        'Т' => 'T',
        'Х' => 'X',
        'У' => 'Y',
        'І' => 'I',
        'Ј' => 'J',
        'Ѕ' => 'S',
        'Ԛ' => 'Q',
        'Ԝ' => 'W',
        // Greek.
        'α' => 'a',
        'ο' => 'o',
        'ρ' => 'p',
        'ν' => 'v',
        'ι' => 'i',
        'κ' => 'k',
        'υ' => 'u',
        'χ' => 'x',
        'ϲ' => 'c',
        'Ϲ' => 'C',
        'Α' => 'A',
        'Β' => 'B',
        'Ε' => 'E',
        'Ζ' => 'Z',
        'Η' => 'H',
        'Ι' => 'I',
        'Κ' => 'K',
        'Μ' => 'M',
        'Ν' => 'N',
        'Ο' => 'O',
        'Ρ' => 'P',
        'Τ' => 'T',
        'Υ' => 'Y',
        'Χ' => 'X',
        _ => return None,
    })
}

/// The byte offsets, in order, of the [`lookalike`] letters that stand in a word beside ASCII
/// letters (`prevіоus` with a Cyrillic `і` and `о`): a word that mixes the two scripts is
/// English in disguise, while a word written wholly in Cyrillic or Greek is that language
/// and is left alone. A word is a run of alphanumeric characters (P1 characters inside it
/// do not end it, as the view drops them).
pub fn disguised_letters(t: &str) -> Vec<u32> {
    let mut out = Vec::new();
    // Greek and Cyrillic are U+0370..U+052F: their UTF-8 lead bytes are 0xCD..0xD4.
    if !t.bytes().any(|b| matches!(b, 0xCD..=0xD4)) {
        return out;
    }
    let mut word: Vec<u32> = Vec::new();
    let mut ascii = false;
    let mut end_word = |word: &mut Vec<u32>, ascii: &mut bool| {
        if *ascii {
            out.extend_from_slice(word);
        }
        word.clear();
        *ascii = false;
    };
    for (i, c) in t.char_indices() {
        if c.is_ascii_alphabetic() {
            ascii = true;
        } else if lookalike(c).is_some() {
            // Offsets fit: a text past u32::MAX bytes is matched as written.
            word.push(u32::try_from(i).unwrap_or(u32::MAX));
        } else if !(c.is_alphanumeric() && !is_blank_letter(c) || is_p1(c) || is_ignorable(c)) {
            end_word(&mut word, &mut ascii);
        }
    }
    end_word(&mut word, &mut ascii);
    out
}

/// The printable ASCII character that a compatibility form stands for: fullwidth (`ｉ`),
/// mathematical (`𝐢`, `𝓲`), enclosed (`ⓘ`), superscript and modifier letters: the characters
/// whose NFKC form is one printable ASCII character. A model reads them as the letters they
/// are drawn from; a list of phrases does not, unless they are read back.
pub fn compatibility_ascii(c: char) -> Option<char> {
    use unicode_normalization::UnicodeNormalization;
    // The blocks that hold such forms (anything else is returned at once: a Japanese or
    // Arabic text pays one comparison per character).
    if !matches!(c as u32,
        0xAA..=0x2FF | 0x37E | 0x1D00..=0x1DBF | 0x1FEF | 0x2000..=0x24FF | 0x2C7C..=0x2C7D
        | 0xA7F1..=0xA7F4 | 0xFB29 | 0xFE10..=0xFE6B | 0xFF01..=0xFF5E | 0x107A5
        | 0x1CCD6..=0x1CCF9 | 0x1D400..=0x1D7FF | 0x1F100..=0x1F1FF | 0x1FBF0..=0x1FBF9)
    {
        return None;
    }
    let mut n = std::iter::once(c).nfkc();
    let a = n.next()?;
    (n.next().is_none() && a.is_ascii_graphic()).then_some(a)
}

/// The ASCII letter or digit a letter in disguise stands for, as every reader reads it (the
/// views here, the classifier's words): a compatibility form of a letter or digit always, a
/// Cyrillic or Greek [`lookalike`] when it stands `beside_latin` letters in its word. Letters
/// and digits only: the fullwidth punctuation of Chinese and Japanese prose disguises nothing.
pub fn unmasked(c: char, beside_latin: bool) -> Option<char> {
    compatibility_ascii(c)
        .filter(char::is_ascii_alphanumeric)
        .or_else(|| beside_latin.then(|| lookalike(c)).flatten())
}

/// Whether a span that matched an ASCII phrase was written with letters in disguise (what
/// [`MatchView`] read back): a finding says so, as the quoted text looks like plain English.
/// A lookalike counts only inside a word with ASCII letters (a Russian sentence is Russian).
pub fn in_disguise(span: &str) -> bool {
    span.chars().any(|c| unmasked(c, false).is_some()) || !disguised_letters(span).is_empty()
}

/// What a finding's message adds when the text it quotes is [`in_disguise`].
pub fn disguise_note(quoted: Option<&str>) -> &'static str {
    if quoted.is_some_and(in_disguise) {
        " (written in lookalike letters)"
    } else {
        ""
    }
}

/// What one pass over a text's bytes tells the rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scan {
    /// Any byte outside ASCII (where every P1 character lives).
    pub non_ascii: bool,
    /// Non-ASCII, a line break or tab, or two spaces in a row: [`MatchView`] must rewrite it.
    pub needs_normalizing: bool,
    /// A byte that starts markup, an escape or a data: URI, or 32+ base64 characters in a row:
    /// P5 must look.
    pub p5_candidate: bool,
    /// A `[`, `<`, `:` or line break: a role or control marker may be there
    /// ([`super::families::markers`] must look).
    pub marker_candidate: bool,
}

const NON_ASCII: u8 = 1;
const BREAK: u8 = 2;
const SPACE: u8 = 4;
const SPECIAL: u8 = 8;
const MARK: u8 = 16;

/// The classes of one byte, computed with comparisons only (no table: a gather per byte keeps
/// the compiler from vectorising the fold below). Line breaks and tabs are `BREAK`, not
/// `SPECIAL`, though they are control characters.
#[inline(always)]
fn byte_class(b: u8) -> u8 {
    let brk = (b == b'\n') | (b == b'\r') | (b == b'\t');
    let special = (b == b'<')
        | (b == b'\\')
        | (b == b'&')
        | (b == b':')
        | (b == b'%')
        | ((b < 0x20) & !brk)
        | (b == 0x7f);
    let mark = (b == b'[') | (b == b'~') | (b == b'$');
    (u8::from(b >= 0x80) * NON_ASCII)
        | (u8::from(brk) * BREAK)
        | (u8::from(b == b' ') * SPACE)
        | (u8::from(special) * SPECIAL)
        | (u8::from(mark) * MARK)
}

impl Scan {
    pub fn of(text: &str) -> Scan {
        let bytes = text.as_bytes();
        // The classes of all bytes OR-ed together, and whether a space follows a space: a
        // pass without a branch or a chain from byte to byte, LANES independent lanes at a
        // time (a shape the compiler vectorises; a plain fold over the bytes, or a table
        // lookup per byte, it does not).
        let mut class = [0u8; LANES];
        let mut pairs = [0u8; LANES];
        let mut lanes = |this: &[u8], next: &[u8]| {
            for (((c, p), &b), &n) in class.iter_mut().zip(pairs.iter_mut()).zip(this).zip(next) {
                *c |= byte_class(b);
                *p |= u8::from(b == b' ') & u8::from(n == b' ');
            }
        };
        let mut at = 0;
        // Whole chunks while the byte after each one exists.
        while let (Some(this), Some(next)) =
            (bytes.get(at..at + LANES), bytes.get(at + 1..at + LANES + 1))
        {
            lanes(this, next);
            at += LANES;
        }
        // The rest (at most LANES bytes), padded with a byte of no class.
        let mut tail = [b'a'; LANES + 1];
        let rest = bytes.get(at..).unwrap_or_default();
        if let Some(t) = tail.get_mut(..rest.len()) {
            t.copy_from_slice(rest);
        }
        lanes(&tail[..LANES], &tail[1..]);
        let all = class.iter().fold(0u8, |a, &c| a | c);
        let double_space = pairs.iter().fold(0u8, |a, &p| a | p) != 0;
        let non_ascii = all & NON_ASCII != 0;
        Scan {
            non_ascii,
            needs_normalizing: non_ascii || all & BREAK != 0 || double_space,
            // A long base64-like run matters only when nothing else makes P5 look.
            p5_candidate: all & SPECIAL != 0 || long_b64_run(bytes),
            marker_candidate: all & (MARK | SPECIAL | BREAK) != 0,
        }
    }
}

/// Bytes [`Scan::of`] reads at a time.
const LANES: usize = 32;

/// A base64 character.
#[inline(always)]
fn is_b64(b: u8) -> bool {
    ((b | 0x20).wrapping_sub(b'a') < 26) | (b.wrapping_sub(b'0') < 10) | (b == b'+') | (b == b'/')
}

/// 32 or more base64 characters in a row. Such a run covers a whole 16-byte block of the grid
/// starting at the text's first byte, so only a block made entirely of them (rare in prose:
/// a space breaks it) is measured, from its run's start to its end; a block inside a run
/// already measured is skipped, and a run's start is at most 16 bytes before its block (the
/// block before was not all base64, or was measured): linear.
fn long_b64_run(bytes: &[u8]) -> bool {
    let mut measured_to = 0;
    for (k, block) in bytes.chunks_exact(16).enumerate() {
        let at = k * 16;
        if at < measured_to || block.iter().fold(1u8, |all, &b| all & u8::from(is_b64(b))) == 0 {
            continue;
        }
        let start = bytes[..at]
            .iter()
            .rposition(|&b| !is_b64(b))
            .map_or(0, |i| i + 1);
        let end = bytes[at..]
            .iter()
            .position(|&b| !is_b64(b))
            .map_or(bytes.len(), |i| at + i);
        if end - start >= 32 {
            return true;
        }
        measured_to = end;
    }
    false
}

pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// True when `needle` found at `start..end` of `hay` is a whole word or phrase: a boundary on
/// each side where the needle itself begins or ends with a word character.
pub fn whole_word(hay: &str, start: usize, end: usize) -> bool {
    let bytes = hay.as_bytes();
    let first_is_word = bytes.get(start).is_some_and(|b| is_word_byte(*b));
    let last_is_word = end > 0 && bytes.get(end - 1).is_some_and(|b| is_word_byte(*b));
    let before_ok = !first_is_word
        || start == 0
        || !bytes
            .get(start - 1)
            .is_some_and(|b| is_word_byte(*b) || *b >= 0x80);
    let after_ok = !last_is_word
        || !bytes
            .get(end)
            .is_some_and(|b| is_word_byte(*b) || *b >= 0x80);
    before_ok && after_ok
}

/// Splits an identifier or a sentence into lowercase words: on anything not alphanumeric,
/// on lower→upper case changes (`sendEmail`), before the last capital of an acronym
/// (`HTTPRequest` → http, request), and between letters and digits.
pub fn words(s: &str) -> Vec<String> {
    if s.is_ascii() {
        return ascii_words(s);
    }
    unicode_words(s)
}

/// [`words`] on characters: any text (the ASCII path must agree with it).
fn unicode_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|j| chars.get(j)) {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(|n| n.is_lowercase()))
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic());
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

/// [`words`] for ASCII text, on bytes.
fn ascii_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    ascii_word_spans(s.as_bytes(), |a, b, _| {
        out.push(s.get(a..b).unwrap_or_default().to_ascii_lowercase());
    });
    out
}

/// [`words`], each borrowed from `s` when it is already lower case (a snake_case name costs
/// no copy): what the capability rules read for every name and parameter.
pub fn word_parts(s: &str) -> Vec<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    if !s.is_ascii() {
        return words(s).into_iter().map(Cow::Owned).collect();
    }
    let mut out = Vec::new();
    ascii_word_spans(s.as_bytes(), |a, b, upper| {
        let w = s.get(a..b).unwrap_or_default();
        out.push(if upper {
            Cow::Owned(w.to_ascii_lowercase())
        } else {
            Cow::Borrowed(w)
        });
    });
    out
}

/// The byte ranges of [`words`] in ASCII text, in order, each with whether it holds a capital.
fn ascii_word_spans(b: &[u8], mut word: impl FnMut(usize, usize, bool)) {
    const OTHER: u8 = 0;
    const LOWER: u8 = 1;
    const UPPER: u8 = 2;
    const DIGIT: u8 = 3;
    let class = |c: u8| match c {
        b'a'..=b'z' => LOWER,
        b'A'..=b'Z' => UPPER,
        b'0'..=b'9' => DIGIT,
        _ => OTHER,
    };
    let (mut start, mut upper, mut prev) = (None, false, OTHER);
    for (i, &byte) in b.iter().enumerate() {
        let c = class(byte);
        let boundary = match (prev, c) {
            (_, OTHER) => true,
            (LOWER, UPPER) | (LOWER | UPPER, DIGIT) | (DIGIT, LOWER | UPPER) => true,
            // Before the last capital of an acronym (`HTTPRequest`).
            (UPPER, UPPER) => b.get(i + 1).is_some_and(u8::is_ascii_lowercase),
            _ => false,
        };
        if boundary && let Some(s) = start.take() {
            word(s, i, std::mem::take(&mut upper));
        }
        prev = c;
        if c != OTHER {
            start.get_or_insert(i);
            upper |= c == UPPER;
        }
    }
    if let Some(s) = start {
        word(s, b.len(), upper);
    }
}

/// An excerpt of `text` around byte range `start..end`, at most about `context` characters on
/// each side, with invisible characters made visible (`[U+200B]`).
pub fn excerpt(text: &str, start: usize, end: usize, context: usize) -> String {
    let start = text.floor_char_boundary(start.min(text.len()));
    let mut end = text.floor_char_boundary(end.min(text.len())).max(start);
    // Walk back from the match, never over the whole prefix.
    let from = match context.checked_sub(1) {
        None => start,
        Some(n) => text[..start]
            .char_indices()
            .rev()
            .nth(n)
            .map_or(0, |(i, _)| i),
    };
    // A long match is quoted by its start.
    let mut cut = false;
    if let Some((i, _)) = text[start..end].char_indices().nth(2 * context.max(1)) {
        end = start + i;
        cut = true;
    }
    let after_end = if cut {
        end
    } else {
        text[end..]
            .char_indices()
            .nth(context)
            .map(|(i, _)| end + i)
            .unwrap_or(text.len())
    };
    let mut s = String::new();
    if from > 0 {
        s.push('…');
    }
    s.push_str(&visible(&text[from..after_end]));
    if after_end < text.len() {
        s.push('…');
    }
    s
}

/// Invisible and control characters shown as `[U+XXXX]`; everything else as is.
pub fn visible(s: &str) -> String {
    escape(s)
}

/// Test texts: `n` strings, each of fewer than `max` pieces of `parts`, drawn by a fixed
/// xorshift sequence (the same texts on every run).
#[cfg(test)]
pub(crate) fn soups(parts: &[&str], max: u64, n: usize) -> Vec<String> {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            let mut text = String::new();
            for _ in 0..(seed % max) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(parts[(seed % parts.len() as u64) as usize]);
            }
            text
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_identifiers() {
        assert_eq!(words("sendEmail"), ["send", "email"]);
        assert_eq!(words("delete-records"), ["delete", "records"]);
        assert_eq!(words("send_email_v2"), ["send", "email", "v", "2"]);
        assert_eq!(words("HTTPRequest"), ["http", "request"]);
        assert_eq!(words("dbname"), ["dbname"]);
        assert_eq!(words("assets"), ["assets"]);
    }

    #[test]
    fn match_view_collapses_and_maps_back() {
        let original = "Please  ig\u{200B}nore\n previous text";
        let v = MatchView::new(original);
        assert_eq!(v.text, "Please ignore previous text");
        let start = v.text.find("ignore previous").expect("found");
        let (s, e) = v.original_range(start, start + "ignore previous".len(), original);
        assert_eq!(&original[s..e], "ig\u{200B}nore\n previous");
    }

    /// Letters in disguise are read as the ASCII letters they are drawn like, and a match
    /// over them quotes the original: compatibility forms anywhere, Cyrillic and Greek
    /// lookalikes only inside a word that also holds ASCII letters.
    #[test]
    fn letters_in_disguise_are_read_as_ascii() {
        let cases = [
            // Fullwidth, with an ideographic space.
            (
                "\u{FF49}\u{FF47}\u{FF4E}\u{FF4F}\u{FF52}\u{FF45}\u{3000}previous",
                "ignore previous",
            ),
            // Mathematical bold and bold script.
            (
                "\u{1D422}\u{1D420}\u{1D427}\u{1D428}\u{1D42B}\u{1D41E} previous",
                "ignore previous",
            ),
            ("\u{1D4F7}\u{1D4F8}\u{1D4FD} tell", "not tell"),
            // Enclosed.
            ("\u{24D8}gnore previous", "ignore previous"),
            // Cyrillic і, о, е and Greek ο beside ASCII letters.
            (
                "\u{0456}gn\u{043E}r\u{0435} previ\u{03BF}us",
                "ignore previous",
            ),
            // A lookalike after an invisible character is still inside the word.
            ("ignor\u{200B}\u{0435} previous", "ignore previous"),
            // Soft hyphens and variation selectors inside words, a Hangul filler between them.
            ("ig\u{AD}nore pre\u{FE0F}vious", "ignore previous"),
            ("ignore\u{3164}previous", "ignore previous"),
        ];
        for (original, want) in cases {
            let v = MatchView::new(original);
            assert_eq!(v.text, want, "{original:?}");
            let (s, e) = v.original_range(0, v.text.len(), original);
            assert_eq!((s, e), (0, original.len()), "{original:?}");
            let at = want.find(' ').unwrap_or(0) + 1;
            let (s, e) = v.original_range(at, want.len(), original);
            assert_eq!(
                MatchView::new(&original[s..e]).text,
                want[at..],
                "{original:?}"
            );
        }
        // What a finding calls a disguise: letters, not the fullwidth punctuation of Chinese.
        assert!(in_disguise("prev\u{0456}ous") && in_disguise("\u{FF49}gnore"));
        assert!(!in_disguise("\u{8C03}\u{7528}\u{FF1A}\u{FF08}x\u{FF09}"));
        assert!(!in_disguise(
            "\u{043D}\u{0435} \u{043D}\u{0443}\u{0436}\u{043D}\u{043E}"
        ));
        // Russian and Greek words are left as they are, even where every letter has a
        // lookalike; so are letters that only resemble others in a font (é, ı) and forms
        // whose compatibility reading is more than one character (ﬁ, ⑩).
        for kept in [
            "\u{0441}\u{043E}\u{0440}\u{0443} \u{043F}\u{0440}\u{0438}\u{0432}\u{0435}\u{0442}",
            "\u{03BF}\u{03B9}\u{03BA}\u{03BF}\u{03C2}",
            "caf\u{00E9} kullan\u{0131}c\u{0131}",
            "\u{FB01}le \u{2469}",
        ] {
            assert_eq!(MatchView::new(kept).text, kept);
        }
    }

    /// `compatibility_ascii`'s blocks hold every character whose NFKC form is one printable
    /// ASCII character (the block test only saves the normalisation on other text).
    #[test]
    fn every_compatibility_form_of_ascii_is_read() {
        use unicode_normalization::UnicodeNormalization;
        let missed: Vec<String> = ('\u{80}'..=char::MAX)
            .filter(|&c| {
                let mut n = std::iter::once(c).nfkc();
                let one = n.next().filter(|a| a.is_ascii_graphic());
                one.is_some() && n.next().is_none() && compatibility_ascii(c).is_none()
            })
            .map(|c| format!("U+{:04X}", c as u32))
            .collect();
        assert!(missed.is_empty(), "not read: {missed:?}");
    }

    /// Every view range maps back to an original range on character boundaries whose own view
    /// is the view's range (what a finding quotes is what matched), over texts mixing every kind
    /// of rewrite: dropped P1 characters, collapsed and replaced whitespace, apostrophes of
    /// another width, and multi-byte characters kept as they are.
    #[test]
    fn match_view_ranges_map_back_exactly() {
        let parts = [
            "a",
            "é",
            "\u{200B}",
            " ",
            "  ",
            "\n",
            "\u{00A0}",
            "\u{2019}",
            "'",
            "日本",
            "\u{E0041}",
            "\t\t",
            "x",
            // Compatibility forms, read as one ASCII byte each (fullwidth, mathematical).
            "\u{FF49}",
            "\u{1D422}",
            // Invisible characters the view drops, a blank letter it reads as a space.
            "\u{AD}",
            "\u{FE0F}",
            "\u{3164}",
        ];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..3000 {
            let mut original = String::new();
            for _ in 0..(seed % 12 + 1) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                original.push_str(parts[(seed % parts.len() as u64) as usize]);
            }
            let v = MatchView::new(&original);
            let view: &str = v.text.as_ref();
            let bounds: Vec<usize> = (0..=view.len())
                .filter(|&i| view.is_char_boundary(i))
                .collect();
            for (k, &a) in bounds.iter().enumerate() {
                for &b in &bounds[k..] {
                    let (s, e) = v.original_range(a, b, &original);
                    assert!(
                        original.is_char_boundary(s) && original.is_char_boundary(e) && s <= e,
                        "{original:?}: view {a}..{b} -> {s}..{e}"
                    );
                    let again = MatchView::new(&original[s..e]);
                    let want = view[a..b].trim_matches(' ');
                    assert_eq!(
                        again.text.trim_matches(' '),
                        want,
                        "{original:?}: view {a}..{b} -> original {s}..{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn excerpts_walk_back_and_cut_long_matches() {
        let t = "αβγδε ".repeat(100);
        let x = excerpt(&t, 300, 310, 5);
        assert!(x.starts_with('…') && x.ends_with('…'), "{x}");
        assert!(x.chars().count() <= 5 + 10 + 5 + 2, "{x}");
        assert_eq!(excerpt("abc", 1, 2, 0), "…b…");
        let long = excerpt(&t, 0, t.len(), 3);
        assert!(long.chars().count() <= 8, "{long}");
    }

    /// The borrowed words are the words.
    #[test]
    fn word_parts_are_words() {
        let parts = [
            "send", "Email", "HTTP", "Request", "_", "-", " ", "v2", "2", "dbName", "é", "ÄB", "x",
            "ID", ".", "URLs",
        ];
        for text in soups(&parts, 7, 20_000) {
            let borrowed: Vec<String> = word_parts(&text)
                .into_iter()
                .map(std::borrow::Cow::into_owned)
                .collect();
            assert_eq!(borrowed, words(&text), "{text:?}");
            if text.is_ascii() {
                assert_eq!(words(&text), unicode_words(&text), "{text:?}");
            }
        }
    }

    /// The scan says what the byte-by-byte definition says.
    #[test]
    fn scan_matches_its_definition() {
        // The definition, byte by byte, written as sets.
        fn class(b: u8) -> u8 {
            match b {
                0x80.. => NON_ASCII,
                b'\n' | b'\r' | b'\t' => BREAK,
                b' ' => SPACE,
                b'<' | b'\\' | b'&' | b':' | b'%' | 0..0x20 | 0x7f => SPECIAL,
                b'[' | b'~' | b'$' => MARK,
                _ => 0,
            }
        }
        for b in 0..=255u8 {
            assert_eq!(byte_class(b), class(b), "{b:#x}");
            assert_eq!(
                is_b64(b),
                b.is_ascii_alphanumeric() || b == b'+' || b == b'/',
                "{b:#x}"
            );
        }
        fn reference(text: &str) -> (bool, bool, bool, bool) {
            let (mut all, mut prev) = (0u8, 0u8);
            let (mut run, mut long, mut double_space) = (0u32, false, false);
            for &b in text.as_bytes() {
                let c = class(b);
                all |= c;
                double_space |= c & prev & SPACE != 0;
                run = if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' {
                    run + 1
                } else {
                    0
                };
                long |= run >= 32;
                prev = c;
            }
            let non_ascii = all & NON_ASCII != 0;
            (
                non_ascii,
                non_ascii || all & BREAK != 0 || double_space,
                all & SPECIAL != 0 || long,
                all & (MARK | SPECIAL | BREAK) != 0,
            )
        }
        let parts = [
            "a",
            "Z",
            "9",
            "+",
            "/",
            " ",
            "  ",
            "\n",
            "\t",
            "é",
            "<",
            ":",
            "[",
            "~",
            "$",
            "=",
            ".",
            "-",
            "\u{200B}",
            "abcdefghijklmnop",
            "0123456789abcdefghijklmnopqrstu",
            "xyz0123456789abcdefghijklmnopqrs",
            "abcdefg",
            "ABCDEFGHIJKLMNOP",
            "0123456789+/",
        ];
        for text in soups(&parts, 40, 20_000) {
            let s = Scan::of(&text);
            assert_eq!(
                (
                    s.non_ascii,
                    s.needs_normalizing,
                    s.p5_candidate,
                    s.marker_candidate
                ),
                reference(&text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn whole_words() {
        assert!(whole_word("use the db now", 8, 10));
        assert!(!whole_word("dbname", 0, 2));
        assert!(whole_word("see ~/.ssh/config", 4, 10));
    }
}
