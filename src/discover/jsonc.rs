//! Lenient JSON as editors write it (VS Code, Zed, Cursor): `//` and `/* */` comments and
//! trailing commas. They are blanked out in place (newlines kept), so a parse error still
//! names the line and column of the file the user opens.

/// The text with comments and trailing commas replaced by spaces; strings untouched. An
/// unterminated block comment blanks out the rest (the parser then says where the text ended).
pub fn strip(text: &str) -> String {
    let mut out: Vec<u8> = text.as_bytes().to_vec();
    let b = text.as_bytes();
    let mut i = 0;
    // The index of the last comma outside strings with only blanks (or comments) after it.
    let mut comma: Option<usize> = None;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' && *c != b'\r' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                comma = None;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |p| i + 2 + p + 2);
                blank(&mut out, i, end);
                i = end;
            }
            b',' => {
                comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(c) = comma.take() {
                    out[c] = b' ';
                }
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                comma = None;
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, by ASCII: the text is still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::strip;

    fn parse(t: &str) -> serde_json::Value {
        serde_json::from_str(&strip(t)).expect("parses after stripping")
    }

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let v = parse(
            "{\n // a comment\n \"a\": \"http://x/*not*/ // kept\", /* block\n over lines */\n \"b\": [1, 2,],\n}",
        );
        assert_eq!(v["a"], "http://x/*not*/ // kept");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn escaped_quotes_do_not_end_a_string() {
        let v = parse(r#"{"a": "say \"hi\" // still text", }"#);
        assert_eq!(v["a"], "say \"hi\" // still text");
    }

    #[test]
    fn errors_keep_their_line() {
        let e = serde_json::from_str::<serde_json::Value>(&strip("{\n// c\n\"a\": x\n}"))
            .expect_err("still broken");
        assert_eq!(e.line(), 3);
    }

    #[test]
    fn a_comma_between_values_stays() {
        let v = parse("[1, /* c */ 2]");
        assert_eq!(v, serde_json::json!([1, 2]));
    }
}
