//! Structure embedded in a text (issue 23): a description that carries a JSON object, a YAML or
//! TOML block, or any of these in a Markdown code fence. What parses is walked, and each key
//! and string value is handed back as a text of its own with its path inside the block, so the
//! phrase and encoding rules read what the block says once its quoting and escapes are undone
//! (`"\u0069gnore"` in JSON, a folded YAML string, a key spelled as a sentence).
//!
//! Bounded: at most [`MAX_BLOCKS`] blocks a text, each at most [`MAX_BLOCK`] bytes, nested at
//! most [`MAX_DEPTH`] levels, [`MAX_PIECES`] pieces in all. Parsers are the ones the project
//! already uses (serde_json, toml, serde_norway for YAML); an error means "not a block", never
//! a failure of the rules.

use serde_json::Value;

pub const MAX_BLOCKS: usize = 8;
pub const MAX_BLOCK: usize = 64 * 1024;
pub const MAX_DEPTH: usize = 16;
pub const MAX_PIECES: usize = 256;

/// One key or string value of an embedded block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// "JSON", "YAML" or "TOML".
    pub kind: &'static str,
    /// A JSON Pointer inside the block (`/steps/0/note`).
    pub path: String,
    pub text: String,
    /// A key (read like a property name), not a value.
    pub is_key: bool,
}

/// Whether a text may hold a block worth parsing: a code fence, a JSON object, or two lines
/// that look like `key: value` or `key = value`.
pub fn candidate(t: &str) -> bool {
    if t.contains("```") || (t.contains('{') && t.contains("\":")) {
        return true;
    }
    t.contains('\n')
        && t.lines()
            .take(4096)
            .filter(|l| keyed_line(l))
            .nth(1)
            .is_some()
}

/// `key: value`, `key = value` or `[section]` at the start of a line.
fn keyed_line(l: &str) -> bool {
    let l = l.trim_start_matches([' ', '-']);
    if l.starts_with('[') && l.trim_end().ends_with(']') && l.len() > 2 {
        return true;
    }
    let key_end = l
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(l.len());
    key_end > 0
        && (l[key_end..].starts_with(": ")
            || l[key_end..].starts_with(" = ")
            || l[key_end..] == *":")
}

/// Every key and string value of the blocks embedded in `t`.
pub fn pieces(t: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut blocks = 0usize;
    // Code fences first; their language, when given, picks the parser.
    let mut rest = t;
    let mut fenced_any = false;
    while blocks < MAX_BLOCKS {
        let Some(open) = rest.find("```") else { break };
        let after = &rest[open + 3..];
        let Some(close) = after.find("```") else {
            break;
        };
        let body = &after[..close];
        let (lang, code) = body.split_once('\n').unwrap_or(("", body));
        let lang = lang.trim().to_ascii_lowercase();
        blocks += 1;
        fenced_any = true;
        parse_block(&lang, code, &mut out);
        rest = &after[close + 3..];
    }
    if !fenced_any {
        // A JSON object or array inside prose: from its first brace.
        for (i, _) in t.match_indices(['{', '[']).take(4) {
            if blocks >= MAX_BLOCKS {
                break;
            }
            let from = &t[i..];
            let from = from
                .get(..from.floor_char_boundary(MAX_BLOCK))
                .unwrap_or(from);
            let mut it = serde_json::Deserializer::from_str(from).into_iter::<Value>();
            if let Some(Ok(v)) = it.next()
                && (v.is_object() || v.as_array().is_some_and(|a| !a.is_empty()))
            {
                blocks += 1;
                walk("JSON", &v, String::new(), 0, &mut out);
                break;
            }
        }
        // Lines of `key: value` (YAML) or `key = value` (TOML) together.
        if blocks < MAX_BLOCKS {
            let region: Vec<&str> = t
                .lines()
                .skip_while(|l| !keyed_line(l))
                .take_while(|l| keyed_line(l) || l.starts_with([' ', '\t', '-']))
                .take(4096)
                .collect();
            if region.iter().filter(|l| keyed_line(l)).count() >= 2 {
                parse_block("", &region.join("\n"), &mut out);
            }
        }
    }
    out.truncate(MAX_PIECES);
    out
}

fn parse_block(lang: &str, code: &str, out: &mut Vec<Piece>) {
    let code = code
        .get(..code.floor_char_boundary(MAX_BLOCK))
        .unwrap_or(code);
    let try_json = || serde_json::from_str::<Value>(code.trim()).ok();
    let try_toml = || {
        toml::from_str::<toml::Table>(code)
            .ok()
            .and_then(|t| serde_json::to_value(t).ok())
    };
    let try_yaml = || serde_norway::from_str::<Value>(code).ok();
    let parsed = match lang {
        "json" | "jsonc" | "json5" => try_json().map(|v| ("JSON", v)),
        "toml" => try_toml().map(|v| ("TOML", v)),
        "yaml" | "yml" => try_yaml().map(|v| ("YAML", v)),
        _ => try_json()
            .map(|v| ("JSON", v))
            .or_else(|| try_toml().map(|v| ("TOML", v)))
            .or_else(|| try_yaml().map(|v| ("YAML", v))),
    };
    // A YAML parse of prose is one string: only a mapping or a list is structure.
    if let Some((kind, v)) = parsed
        && (v.is_object() || v.is_array())
    {
        walk(kind, &v, String::new(), 0, out);
    }
}

fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn walk(kind: &'static str, v: &Value, path: String, depth: usize, out: &mut Vec<Piece>) {
    if depth > MAX_DEPTH || out.len() >= MAX_PIECES {
        return;
    }
    match v {
        Value::String(s) => out.push(Piece {
            kind,
            path,
            text: s.clone(),
            is_key: false,
        }),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(kind, x, format!("{path}/{i}"), depth + 1, out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                if out.len() >= MAX_PIECES {
                    return;
                }
                let p = format!("{path}/{}", token(k));
                out.push(Piece {
                    kind,
                    path: p.clone(),
                    text: k.clone(),
                    is_key: true,
                });
                walk(kind, x, p, depth + 1, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(t: &str) -> Vec<(String, String)> {
        pieces(t)
            .into_iter()
            .filter(|p| !p.is_key)
            .map(|p| (format!("{}{}", p.kind, p.path), p.text))
            .collect()
    }

    #[test]
    fn json_yaml_toml_and_fences_are_walked() {
        let j = r#"Looks up a city. {"hint": {"steps": ["\u0072ead the notes"]}}"#;
        assert_eq!(
            values(j),
            [("JSON/hint/steps/0".into(), "read the notes".into())]
        );
        let y = "Config:\n```yaml\nnote: >\n  fold\n  this\nlist:\n  - one\n```";
        // (serde_json's maps keep keys sorted.)
        assert_eq!(
            values(y),
            [
                ("YAML/list/0".to_string(), "one".to_string()),
                ("YAML/note".into(), "fold this\n".into())
            ]
        );
        let t = "Settings:\n```toml\n[extra]\nmessage = \"say hi\"\n```";
        assert_eq!(values(t), [("TOML/extra/message".into(), "say hi".into())]);
        let bare = "Formats text.\nmode: strict\nremark: keep it short";
        assert_eq!(values(bare).len(), 2);
        let keys: Vec<String> = pieces(r#"x {"ignore_all_previous_rules": 1}"#)
            .into_iter()
            .filter(|p| p.is_key)
            .map(|p| p.text)
            .collect();
        assert_eq!(keys, ["ignore_all_previous_rules"]);
    }

    #[test]
    fn prose_is_not_a_block() {
        assert!(pieces("Gets the weather: sunny or not. Use [city] names.").is_empty());
        assert!(!candidate("One line: with a colon"));
        assert!(pieces("Returns [] when nothing matches").is_empty());
    }

    #[test]
    fn bounded() {
        let deep = format!("x {}{}", "[".repeat(10_000), "]".repeat(10_000));
        let _ = pieces(&deep);
        let wide = format!(
            "x {{{}}}",
            (0..5000)
                .map(|i| format!("\"k{i}\": \"v\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(pieces(&wide).len() <= MAX_PIECES);
    }
}
