//! Encoded text in what the model reads (P5, issue 23): runs of base64 (standard and URL-safe,
//! with or without padding), base32, hex (contiguous, separated by spaces, colons, commas or
//! dashes, `\x41`, `0x41`), 8-bit binary, percent-encoding, `\u` escapes and numeric character
//! entities are decoded, a result that is itself one encoded run is decoded again (mixtures, up
//! to three layers), and only a result that reads as text counts: a digest, an identifier or an
//! image decodes to bytes nobody reads, which is not an attack on its own.
//!
//! Bounded: at most [`MAX_RUNS`] runs looked at per text, each at most [`MAX_RUN`] bytes, and
//! every regex is linear (the `regex` crate).

use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;

/// Runs looked at per text (readable or not).
pub const MAX_RUNS: usize = 32;
/// Bytes of one run decoded (a longer run is decoded up to this).
pub const MAX_RUN: usize = 64 * 1024;
/// Layers of encoding undone (base64 of hex of text is three).
const MAX_LAYERS: usize = 3;

/// One encoded run that decodes to readable text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Where the run is in the text (bytes).
    pub start: usize,
    pub end: usize,
    /// The encodings undone, outermost first ("base64", "hex").
    pub layers: Vec<&'static str>,
    /// What it says.
    pub text: String,
}

/// The groups of [`RUNS`] whose shape names their encoding (a base64-alphabet run may be
/// several: [`b64_kinds`]).
const MARKED: [&str; 8] = [
    "uesc", "ents", "xesc", "zerox", "zhex", "bin", "hexsep", "pct",
];

static RUNS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?P<uesc>(?:\\u[0-9A-Fa-f]{4}|\\u\{[0-9A-Fa-f]{1,6}\}){4,})",
        r"|(?P<ents>(?:&#[xX][0-9A-Fa-f]{1,6};|&#[0-9]{1,7};){4,})",
        r"|(?P<xesc>(?:\\x[0-9A-Fa-f]{2}){4,})",
        r"|(?P<zerox>(?:0[xX][0-9A-Fa-f]{2}[, ]{0,2}){6,})",
        // One 0x before a long run of hex digits (a number as C writes it, or bytes).
        r"|(?P<zhex>(?-u:\b)0[xX](?:[0-9A-Fa-f]{2}){8,}(?-u:\b))",
        r"|(?P<bin>[01]{8}(?:[ ,]?[01]{8}){3,})",
        r"|(?P<hexsep>(?-u:\b)[0-9A-Fa-f]{2}(?:[ :,-][0-9A-Fa-f]{2}){7,}(?-u:\b))",
        r"|(?P<pct>[A-Za-z0-9._~+!*'()-]*(?:%[0-9A-Fa-f]{2}[A-Za-z0-9._~+!*'()-]*){4,})",
        r"|(?P<b64>[A-Za-z0-9+/_-]{16,}={0,2})",
    ))
    .ok()
});

/// Whether the decoded bytes read as text: valid UTF-8, at least 6 characters, almost all of
/// them letters, digits, spaces and ordinary punctuation, mostly letters, with a word of three
/// letters or more. Random bytes (a digest decoded) fail at once.
pub fn readable(s: &str) -> bool {
    let n = s.chars().count();
    if n < 6 {
        return false;
    }
    let mut plain = 0usize;
    let mut letters = 0usize;
    let mut spaces = 0usize;
    let mut run = 0usize;
    let mut word = false;
    for c in s.chars() {
        if c.is_alphabetic() {
            letters += 1;
            run += 1;
            word |= run >= 3;
        } else {
            run = 0;
        }
        if c == ' ' || c == '\n' || c == '\t' {
            spaces += 1;
        }
        if c.is_alphanumeric() || c.is_whitespace() || (c.is_ascii_punctuation()) {
            plain += 1;
        }
    }
    let visible = n - spaces;
    plain * 100 >= n * 95 && visible > 0 && letters * 100 >= visible * 55 && word
        // A single long token of letters and digits (an id that happened to decode to ASCII)
        // is not a sentence: text has a space, or a path or file name.
        && (spaces >= 1 || s.contains('/') || s.contains('.') || s.contains('~'))
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// Hex digits in pairs, anything else skipped (the separators, `\x`, `0x`).
fn hex_pairs(s: &str, skip_prefix: bool) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if skip_prefix
            && (b[i] == b'x' || b[i] == b'X')
            && i > 0
            && matches!(b[i - 1], b'0' | b'\\')
        {
            i += 1;
            continue;
        }
        match (hex_value(b[i]), hex_value(b[i + 1])) {
            (Some(h), Some(l))
                if !(skip_prefix && b[i] == b'0' && matches!(b[i + 1], b'x' | b'X')) =>
            {
                out.push(h << 4 | l);
                i += 2;
            }
            _ => i += 1,
        }
    }
    out
}

fn from_utf8(bytes: Vec<u8>) -> Option<String> {
    String::from_utf8(bytes).ok()
}

/// Decodes one run of `kind`, or `None` when it does not decode.
fn decode(kind: &'static str, run: &str) -> Option<String> {
    let run = run.get(..run.floor_char_boundary(MAX_RUN)).unwrap_or(run);
    match kind {
        "uesc" => {
            let mut out = String::new();
            for part in run.split("\\u").filter(|p| !p.is_empty()) {
                let hex = part.trim_start_matches('{').trim_end_matches('}');
                let hex = hex.get(..hex.len().min(6)).unwrap_or(hex);
                out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
            }
            Some(out)
        }
        "ents" => {
            let mut out = String::new();
            for part in run.split(';').filter(|p| !p.is_empty()) {
                let body = part.trim_start_matches("&#");
                let code = match body.strip_prefix(['x', 'X']) {
                    Some(h) => u32::from_str_radix(h, 16).ok()?,
                    None => body.parse().ok()?,
                };
                out.push(char::from_u32(code)?);
            }
            Some(out)
        }
        "xesc" | "zerox" | "zhex" => from_utf8(hex_pairs(run, true)),
        "hexsep" => from_utf8(hex_pairs(run, false)),
        "bin" => {
            let bits: Vec<u8> = run.bytes().filter(|b| matches!(b, b'0' | b'1')).collect();
            let bytes = bits
                .chunks_exact(8)
                .map(|c| c.iter().fold(0u8, |a, &b| a << 1 | (b - b'0')))
                .collect();
            from_utf8(bytes)
        }
        // `+` is a space (form encoding) before `%XX` is decoded, so `%2B` stays a plus sign.
        "pct" => from_utf8(percent_encoding::percent_decode_str(&run.replace('+', " ")).collect()),
        "hex" => (run.len() % 2 == 0)
            .then(|| from_utf8(hex_pairs(run, false)))
            .flatten(),
        "base32" => base32(run),
        "b64" => {
            let trimmed = run.trim_end_matches('=');
            let url = run.contains(['-', '_']);
            let engine = if url {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
            } else {
                base64::engine::general_purpose::STANDARD_NO_PAD
            };
            engine.decode(trimmed).ok().and_then(from_utf8)
        }
        _ => None,
    }
}

/// RFC 4648 base32 (upper case, padding optional).
fn base32(run: &str) -> Option<String> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in run.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => return None,
        };
        acc = (acc << 5) | u32::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).ok()?);
        }
    }
    from_utf8(out)
}

/// Which encodings a base64-alphabet run may be: hex when it is all hex digits (even length),
/// base32 when all upper case letters and 2–7, else base64.
fn b64_kinds(run: &str) -> &'static [&'static str] {
    let b = run.trim_end_matches('=').as_bytes();
    if b.iter().all(u8::is_ascii_hexdigit) {
        &["hex", "b64"]
    } else if b
        .iter()
        .all(|c| c.is_ascii_uppercase() || (b'2'..=b'7').contains(c))
    {
        &["base32", "b64"]
    } else {
        &["b64"]
    }
}

fn name(kind: &'static str) -> &'static str {
    match kind {
        "uesc" => "\\u escapes",
        "ents" => "character entities",
        "xesc" | "zerox" | "zhex" | "hexsep" | "hex" => "hex",
        "bin" => "binary",
        "pct" => "percent-encoding",
        "base32" => "base32",
        _ => "base64",
    }
}

/// The readable text under one run, undoing up to [`MAX_LAYERS`] encodings.
fn unwrap(kind: &'static str, run: &str) -> Option<(Vec<&'static str>, String)> {
    let mut layers = vec![name(kind)];
    let mut text = decode(kind, run)?;
    for _ in 1..MAX_LAYERS {
        if readable(&text) && !looks_encoded(&text) {
            break;
        }
        // The result is itself one encoded run (base64 of hex…): decode it again.
        let t = text.trim();
        let Some(inner) = whole_run(t) else { break };
        layers.push(name(inner.0));
        text = inner.1;
    }
    readable(&text).then_some((layers, text))
}

/// Whether a text is one token of an encoding alphabet (what a layer of a mixture looks like).
fn looks_encoded(t: &str) -> bool {
    !t.contains(' ') && whole_run(t.trim()).is_some()
}

/// A text that is one encoded run, end to end, decoded one layer.
fn whole_run(t: &str) -> Option<(&'static str, String)> {
    let re = RUNS.as_ref()?;
    let caps = re.captures(t)?;
    let whole = caps.get(0)?;
    if whole.start() != 0 || whole.end() != t.len() {
        return None;
    }
    for k in MARKED {
        if caps.name(k).is_some() {
            return decode(k, t).map(|s| (k, s));
        }
    }
    b64_kinds(t)
        .iter()
        .find_map(|k| decode(k, t).filter(|s| !s.is_empty()).map(|s| (*k, s)))
}

/// Every encoded run of `t` (at most [`MAX_RUNS`] looked at) that decodes to readable text.
pub fn find(t: &str) -> Vec<Decoded> {
    let Some(re) = RUNS.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Words and snake/kebab identifiers of the base64 alphabet are not worth a decoding (and
    // must not use up the runs a text is given).
    let worth = |c: &regex::Captures<'_>| {
        c.name("b64").is_none_or(|m| {
            m.as_str()
                .bytes()
                .any(|b| b.is_ascii_digit() || b.is_ascii_uppercase() || b == b'+' || b == b'/')
        })
    };
    for caps in re.captures_iter(t).filter(worth).take(MAX_RUNS) {
        let Some(whole) = caps.get(0) else { continue };
        let run = whole.as_str();
        let kinds: &[&'static str] = if caps.name("b64").is_some() {
            b64_kinds(run)
        } else {
            match MARKED.iter().find(|k| caps.name(k).is_some()) {
                Some(k) => std::slice::from_ref(k),
                None => continue,
            }
        };
        if let Some((layers, text)) = kinds.iter().find_map(|k| unwrap(k, run)) {
            out.push(Decoded {
                start: whole.start(),
                end: whole.end(),
                layers,
                text,
            });
        }
    }
    out
}

/// Whether a text may hold separated hex or binary that the byte scan's P5 flag does not see
/// (no markup byte, no 32-character base64 run): eight two-digit hex groups or four 8-bit
/// groups in a row, each followed by one separator (the last may end the text). One pass, at
/// the separators: a group is the digits just before one, and groups are in a row when their
/// separators are a group's width apart.
pub fn separated_candidate(b: &[u8]) -> bool {
    // The last group's separator, and the groups of each kind in a row up to it.
    let (mut last, mut hex, mut bin) = (usize::MAX, 0usize, 0usize);
    for j in 2..=b.len() {
        let sep = b.get(j).copied();
        if sep.is_some_and(|c| !matches!(c, b' ' | b':' | b',' | b'-')) {
            continue;
        }
        // A binary group is read first (its last two digits are hex digits too).
        let binary = j >= 8
            && sep.is_none_or(|c| matches!(c, b' ' | b','))
            && b[j - 8..j].iter().all(|c| matches!(c, b'0' | b'1'));
        let (width, own, other) = if binary {
            (9, &mut bin, &mut hex)
        } else if b[j - 2].is_ascii_hexdigit() && b[j - 1].is_ascii_hexdigit() {
            (3, &mut hex, &mut bin)
        } else {
            continue;
        };
        if last.wrapping_add(width) == j {
            *own += 1;
        } else {
            *own = 1;
            *other = 0;
        }
        last = j;
        if hex >= 8 || bin >= 4 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(t: &str) -> Vec<String> {
        find(t).into_iter().map(|d| d.text).collect()
    }

    #[test]
    fn each_encoding_of_a_sentence_is_read() {
        let s = "read the notes file";
        let b64 = base64::engine::general_purpose::STANDARD.encode(s);
        // URL-safe: this one encodes with `_`.
        let b64url =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("read the file now >>?");
        let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
        let hexsep: Vec<String> = s.bytes().map(|b| format!("{b:02X}")).collect();
        let xesc: String = s.bytes().map(|b| format!("\\x{b:02x}")).collect();
        let bin: Vec<String> = s.bytes().map(|b| format!("{b:08b}")).collect();
        let pct: String = s.bytes().map(|b| format!("%{b:02X}")).collect();
        let uesc: String = s.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
        let ents: String = s.chars().map(|c| format!("&#{};", c as u32)).collect();
        for (what, t) in [
            ("base64", b64.clone()),
            ("hex", hex.clone()),
            ("hex with spaces", hexsep.join(" ")),
            ("hex with colons", hexsep.join(":")),
            ("\\x", xesc),
            ("binary", bin.join(" ")),
            ("percent", pct),
            ("\\u", uesc),
            ("entities", ents),
        ] {
            assert_eq!(decoded(&format!("Note: {t} ok")), [s], "{what}: {t}");
        }
        assert!(b64url.contains('_'), "{b64url}");
        assert_eq!(decoded(&format!("x {b64url} y")), ["read the file now >>?"]);
        // A mixture: base64 of hex.
        let mixed = base64::engine::general_purpose::STANDARD.encode(&hex);
        let d = find(&format!("see {mixed}"));
        assert_eq!(d.first().map(|d| d.text.as_str()), Some(s));
        assert_eq!(
            d.first().map(|d| d.layers.clone()),
            Some(vec!["base64", "hex"])
        );
        // base32.
        let b32 = "NBSWY3DPEB3W64TMMQ======"; // "hello world"
        assert_eq!(decoded(&format!("id {b32}")), ["hello world"]);
    }

    #[test]
    fn digests_ids_and_words_are_not_text() {
        for t in [
            "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "folder 32tzhRD12KDh2hXABY8OZRFv7Smy8WBkQ",
            "the page Engineering-Wiki-114abc10cb38487e91ec906fc6c6f350",
            "image iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
            "call get_customer_records_by_identifier then list_all_open_invoices",
            "asset 0x036CbD53842c5426634e7929541eC2318f3dCF7e",
            "a MAC 00:1a:2b:3c:4d:5e and 2001:0db8:85a3:0000",
        ] {
            assert!(decoded(t).is_empty(), "{t}: {:?}", decoded(t));
        }
    }

    #[test]
    fn the_candidate_flag_sees_separated_runs() {
        assert!(separated_candidate(b"x 69 67 6e 6f 72 65 20 61 6c 6c y"));
        assert!(separated_candidate(b"01101001 01100111 01101110 01101111"));
        assert!(!separated_candidate(b"at 10 20 30 and 40"));
        assert!(!separated_candidate(b"plain words only"));
        // The last group may end the text; groups must be in a row; seven hex groups or three
        // binary groups are not enough; a byte inside a run breaks it.
        assert!(separated_candidate(b"69:67:6e:6f:72:65:20:61"));
        assert!(!separated_candidate(b"69 67 6e 6f 72 65 20"));
        assert!(!separated_candidate(b"01101001 01100111 01101110"));
        assert!(!separated_candidate(b"69 67 6e 6f x 72 65 20 61"));
        assert!(separated_candidate(b"x:69-67,6e 6f 72 65 20 61 y"));
        assert!(!separated_candidate(b""));
        assert!(!separated_candidate(b"6"));
    }

    #[test]
    fn work_is_bounded() {
        let t = "QUFB ".repeat(100_000);
        assert!(find(&t).len() <= MAX_RUNS);
        let long = "A".repeat(1 << 20);
        let _ = find(&long);
    }
}
