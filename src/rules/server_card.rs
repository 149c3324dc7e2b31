//! CARD-01, the static rules over an MCP server card (SC1, SC2, SC5, SC6, SC7, SC9, SC10).
//! SC3, SC4, SC8 and SC11 need the live endpoints and run in `scan`.
//!
//! Both card shapes are read: the current draft (`remotes[]` with `type` and `url`) and the
//! early SEP-2127 draft (`transport{type, endpoint}`, `tools`).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::definitions::tool_problems;
use super::document::{Document, token};
use super::hosts::{is_loopback, parse_template, private_host};
use super::text::{excerpt, visible, words};
use crate::finding::Finding;

const CHECK: &str = "CARD-01";
const MAX_DEPTH: usize = 32;

/// One advertised endpoint: where it is in the card, its URL, its declared transport.
pub struct Endpoint<'a> {
    pub pointer: String,
    pub url: &'a str,
    pub transport: Option<&'a str>,
}

/// Every endpoint the card advertises, in both draft shapes.
pub fn endpoints(card: &Value) -> Vec<Endpoint<'_>> {
    let mut out = Vec::new();
    if let Some(Value::Array(remotes)) = card.get("remotes") {
        for (i, r) in remotes.iter().enumerate() {
            if let Some(url) = r.get("url").and_then(Value::as_str) {
                out.push(Endpoint {
                    pointer: format!("/remotes/{i}"),
                    url,
                    transport: r.get("type").and_then(Value::as_str),
                });
            }
        }
    }
    if let Some(t) = card.get("transport") {
        let url = t
            .get("endpoint")
            .or_else(|| t.get("url"))
            .and_then(Value::as_str);
        if let Some(url) = url {
            out.push(Endpoint {
                pointer: "/transport".into(),
                url,
                transport: t.get("type").and_then(Value::as_str),
            });
        }
    }
    if let Some(Value::Array(eps)) = card.get("endpoints") {
        for (i, e) in eps.iter().enumerate() {
            if let Some(url) = e.get("url").and_then(Value::as_str) {
                out.push(Endpoint {
                    pointer: format!("/endpoints/{i}"),
                    url,
                    transport: e
                        .get("transport")
                        .or_else(|| e.get("type"))
                        .and_then(Value::as_str),
                });
            }
        }
    }
    out
}

/// Well-known credential formats (SC5).
static SECRET_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:sk-[A-Za-z0-9_-]{20,}|ghp_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}",
        r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}",
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        r"|-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----",
        r"|(?i:\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*)"
    ))
    .unwrap_or_else(|e| panic!("the SC5 pattern compiles: {e}"))
});

/// The well-known credential format `s` holds (SC5's patterns), named for a report.
pub fn credential_format(s: &str) -> Option<&'static str> {
    let m = SECRET_VALUE.find(s)?.as_str();
    let lower = m.to_ascii_lowercase();
    Some(if m.starts_with("sk-") {
        "an API key (sk-…)"
    } else if m.starts_with("ghp_") || m.starts_with("github_pat_") {
        "a GitHub token"
    } else if m.starts_with("xox") {
        "a Slack token"
    } else if m.starts_with("AKIA") {
        "an AWS access key id"
    } else if m.starts_with("AIza") {
        "a Google API key"
    } else if m.starts_with("eyJ") {
        "a JSON Web Token"
    } else if m.starts_with("-----BEGIN") {
        "a private key"
    } else if lower.starts_with("bearer") {
        "a bearer token"
    } else {
        "a credential"
    })
}

fn is_template(s: &str) -> bool {
    s.contains('{') && s.contains('}')
}

fn secret_key(key: &str) -> bool {
    let w = words(key);
    let joined = w.join(" ");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api key",
        "apikey",
        "client secret",
        "access key",
        "private key",
    ]
    .iter()
    .any(|k| {
        joined == *k || joined.ends_with(&format!(" {k}")) || joined.starts_with(&format!("{k} "))
    }) || w
        .last()
        .is_some_and(|l| l == "password" || l == "secret" || l == "token")
}

fn sc5_walk(v: &Value, ptr: &str, depth: usize, out: &mut Vec<Finding>) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(map) => {
            let secret_input = map.get("isSecret") == Some(&Value::Bool(true));
            for (k, x) in map {
                let p = format!("{ptr}/{}", token(k));
                if let Value::String(s) = x {
                    let literal = !s.trim().is_empty() && !is_template(s);
                    let by_key = secret_key(k) && literal && s.len() >= 4;
                    let by_input = secret_input && (k == "default" || k == "value") && literal;
                    if by_key || by_input {
                        out.push(
                            super::finding(CHECK, "SC5")
                                .pointer(p.clone())
                                .message(if by_input {
                                    format!("a secret input has a literal `{k}`")
                                } else {
                                    format!("`{}` holds a literal value", visible(k))
                                })
                                .text(redact(s))
                                .build(),
                        );
                        continue;
                    }
                }
                sc5_walk(x, &p, depth + 1, out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                sc5_walk(x, &format!("{ptr}/{i}"), depth + 1, out);
            }
        }
        Value::String(s) => {
            if let Some(m) = SECRET_VALUE.find(s) {
                out.push(
                    super::finding(CHECK, "SC5")
                        .pointer(ptr.to_string())
                        .message("a string in the card looks like a credential")
                        .text(redact(&excerpt(s, m.start(), m.end(), 20)))
                        .build(),
                );
            }
        }
        _ => {}
    }
}

/// Keeps the first four characters of a secret, so the report itself does not leak it.
fn redact(s: &str) -> String {
    let keep: String = s.chars().take(4).collect();
    format!(
        "{}… [redacted, {} characters]",
        visible(&keep),
        s.chars().count()
    )
}

/// The static rules over a parsed card (SC2, SC5, SC6, SC7, SC9, SC10); SC1 is [`not_json`].
pub fn run(card: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    for ep in endpoints(card) {
        let at = |suffix: &str| format!("{}{suffix}", ep.pointer);
        if ep.transport.is_none() {
            out.push(
                super::finding(CHECK, "SC9")
                    .pointer(ep.pointer.clone())
                    .message("the endpoint declares no transport type")
                    .text(visible(ep.url))
                    .build(),
            );
        }
        let url_field = if ep.pointer == "/transport" {
            "/endpoint"
        } else {
            "/url"
        };
        // An origin-relative path (`/mcp`, as the early draft shows) resolves against the card.
        if ep.url.starts_with('/') && !ep.url.starts_with("//") {
            continue;
        }
        let parsed = match parse_template(ep.url) {
            None => continue,
            Some(p) => p,
        };
        match parsed {
            Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
                if u.scheme() == "http" && !is_loopback(&u) {
                    out.push(
                        super::finding(CHECK, "SC6")
                            .pointer(at(url_field))
                            .message("a public endpoint on plain http://")
                            .text(visible(ep.url))
                            .build(),
                    );
                }
                if let Some(why) = private_host(&u) {
                    out.push(
                        super::finding(CHECK, "SC7")
                            .pointer(at(url_field))
                            .message(why)
                            .text(visible(ep.url))
                            .build(),
                    );
                }
            }
            Ok(u) => out.push(
                super::finding(CHECK, "SC2")
                    .pointer(at(url_field))
                    .message(format!("scheme `{}:` is not http(s)", visible(u.scheme())))
                    .text(visible(ep.url))
                    .build(),
            ),
            Err(e) => out.push(
                super::finding(CHECK, "SC2")
                    .pointer(at(url_field))
                    .message(format!("not an absolute URL ({e})"))
                    .text(visible(ep.url))
                    .build(),
            ),
        }
    }
    sc5_walk(card, "", 0, &mut out);
    let tree = super::Json::borrow(card);
    let doc = Document::from_server_card(&tree);
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for tool in &doc.tools {
        if let Some(name) = tool.name {
            match seen.get(name) {
                Some(first) => out.push(
                    super::finding(CHECK, "SC10")
                        .pointer(format!("{}/name", tool.pointer))
                        .message(format!(
                            "S2: the name \"{}\" is also used by the card's tool at {first}",
                            visible(name)
                        ))
                        .tool(name)
                        .build(),
                ),
                None => {
                    seen.insert(name, &tool.pointer);
                }
            }
        }
        for (rule, pointer, message) in tool_problems(tool) {
            let b = super::finding(CHECK, "SC10")
                .pointer(pointer)
                .message(format!("{rule}: {message}"));
            out.push(match tool.name {
                Some(n) => b.tool(n).build(),
                None => b.build(),
            });
        }
    }
    out
}

/// SC1: the card is not valid JSON.
pub fn not_json(error: &str) -> Finding {
    super::finding(CHECK, "SC1")
        .pointer("")
        .message(format!("not valid JSON: {error}"))
        .build()
}
