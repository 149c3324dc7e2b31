//! Making server-controlled text safe for a terminal (and for the daemon's web page and the
//! badges, which show it the same way).
//!
//! Nothing a server sends reaches the terminal raw: C0 and C1 controls (ESC, BEL, CR…), DEL,
//! invisible and direction-changing characters, Unicode tag characters and other format
//! characters are shown as `[U+XXXX]`. A line feed inside multi-line text becomes `\n` so that a
//! server cannot forge report lines.

use std::fmt::Write as _;

/// True for characters that must never reach a terminal as themselves.
pub fn is_hidden(c: char) -> bool {
    let u = c as u32;
    c.is_control()                      // C0, DEL, C1
        || (0x200B..=0x200F).contains(&u) // zero-width, LRM/RLM
        || (0x2028..=0x202E).contains(&u) // line/paragraph separators, bidi embeddings/overrides
        || (0x2060..=0x206F).contains(&u) // word joiner, invisible operators, bidi isolates
        || u == 0xFEFF                    // BOM / zero-width no-break space
        || u == 0x00AD                    // soft hyphen
        || u == 0x034F                    // combining grapheme joiner
        || u == 0x061C                    // Arabic letter mark
        || u == 0x115F || u == 0x1160 || u == 0x3164 || u == 0xFFA0 // Hangul fillers
        || u == 0x180E                    // Mongolian vowel separator
        || (0xFE00..=0xFE0F).contains(&u) // variation selectors
        || (0xFFF9..=0xFFFB).contains(&u) // interlinear annotation
        || (0xE0000..=0xE007F).contains(&u) // tag characters
        || (0xE0100..=0xE01EF).contains(&u) // variation selectors supplement
        || (0xF0000..=0x10FFFF).contains(&u) // private use planes 15–16
}

/// Escapes `s` for display: hidden characters become `[U+XXXX]`, a line feed becomes `\n`,
/// a tab becomes `\t`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if is_hidden(c) => {
                let _ = write!(out, "[U+{:04X}]", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Like [`escape`], but keeps line feeds and tabs as themselves: for multi-line text shown in
/// a block of its own (a `<pre>` on the daemon's web page), where a line break cannot forge a
/// line of anything else. A carriage return is still shown as `[U+000D]`.
pub fn escape_multiline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if is_hidden(c) => {
                let _ = write!(out, "[U+{:04X}]", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Like [`escape`], then shortened to at most `max` characters with an ellipsis.
pub fn escape_trimmed(s: &str, max: usize) -> String {
    let e = escape(s);
    if e.chars().count() <= max {
        e
    } else {
        let mut t: String = e.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_bidi_and_tags() {
        let s = "a\u{1b}[31mred\u{7}\rb\u{202E}c\u{E0041}d\u{200B}";
        assert_eq!(
            escape(s),
            "a[U+001B][31mred[U+0007][U+000D]b[U+202E]c[U+E0041]d[U+200B]"
        );
    }

    #[test]
    fn keeps_ordinary_text_and_marks_newlines() {
        assert_eq!(
            escape("héllo wörld ✓\nnext\tcol"),
            "héllo wörld ✓\\nnext\\tcol"
        );
    }

    #[test]
    fn multiline_keeps_line_breaks_and_tabs_only() {
        assert_eq!(
            escape_multiline("a\n\tb\r\n\u{1b}[0m\u{2066}"),
            "a\n\tb[U+000D]\n[U+001B][0m[U+2066]"
        );
    }

    #[test]
    fn c1_controls_and_del_are_escaped() {
        assert_eq!(escape("\u{9b}31m\u{7f}"), "[U+009B]31m[U+007F]");
    }
}
