//! CARD-02: A2A 1.0 agent card rules (A1–A10). Both the 1.0 shape and the 0.3 shape
//! (top-level `url`, `additionalInterfaces`, `security`) are read.

use base64::Engine as _;
use serde_json::Value;

use super::document::token;
use super::hosts::{parse_template, private_host};
use super::text::visible;
use crate::finding::Finding;

const CHECK: &str = "CARD-02";

const REQUIRED: [&str; 8] = [
    "name",
    "description",
    "supportedInterfaces",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
];

/// Interface URLs with their pointers (1.0 `supportedInterfaces`, 0.3 `url` and
/// `additionalInterfaces`).
fn interfaces(card: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for key in ["supportedInterfaces", "additionalInterfaces"] {
        if let Some(Value::Array(items)) = card.get(key) {
            for (i, it) in items.iter().enumerate() {
                if let Some(u) = it.get("url").and_then(Value::as_str) {
                    out.push((format!("/{key}/{i}/url"), u));
                }
            }
        }
    }
    if let Some(u) = card.get("url").and_then(Value::as_str) {
        out.push(("/url".into(), u));
    }
    out
}

/// Every URL-valued string in the card (for A3), bounded.
fn urls<'a>(v: &'a Value, ptr: String, depth: usize, out: &mut Vec<(String, &'a str)>) {
    if depth > 32 || out.len() > 10_000 {
        return;
    }
    match v {
        Value::String(s) if s.starts_with("http://") || s.starts_with("https://") => {
            out.push((ptr, s))
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                urls(x, format!("{ptr}/{i}"), depth + 1, out);
            }
        }
        Value::Object(map) => {
            for (k, x) in map {
                urls(x, format!("{ptr}/{}", token(k)), depth + 1, out);
            }
        }
        _ => {}
    }
}

fn decode_header(protected: &str) -> Option<Value> {
    let trimmed = protected.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(trimmed)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn non_empty_array(v: Option<&Value>) -> Option<bool> {
    v.and_then(Value::as_array).map(|a| !a.is_empty())
}

pub fn run(card: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    let f = |rule: &str| super::finding(CHECK, rule);

    // A1
    for field in REQUIRED {
        let present = card.get(field).is_some_and(|v| !v.is_null())
            || (field == "supportedInterfaces" && card.get("url").is_some_and(Value::is_string));
        if !present {
            out.push(
                f("A1")
                    .pointer(format!("/{field}"))
                    .message(format!("`{field}` is missing"))
                    .build(),
            );
        }
    }
    // A2
    for (ptr, u) in interfaces(card) {
        if u.starts_with("http://") {
            out.push(
                f("A2")
                    .pointer(ptr)
                    .message("interface on plain http://")
                    .text(visible(u))
                    .build(),
            );
        }
    }
    // A3
    let mut all = Vec::new();
    urls(card, String::new(), 0, &mut all);
    for (ptr, u) in all {
        if let Some(Ok(parsed)) = parse_template(u)
            && let Some(why) = private_host(&parsed)
        {
            out.push(f("A3").pointer(ptr).message(why).text(visible(u)).build());
        }
    }
    // A4 / A4p
    let reqs_key = ["securityRequirements", "security"]
        .into_iter()
        .find(|k| card.get(*k).is_some());
    let reqs = reqs_key.and_then(|k| non_empty_array(card.get(k)));
    let schemes = card
        .get("securitySchemes")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    let skill_reqs = card
        .get("skills")
        .and_then(Value::as_array)
        .is_some_and(|s| {
            s.iter()
                .any(|sk| non_empty_array(sk.get("securityRequirements")) == Some(true))
        });
    match (reqs_key, reqs) {
        (Some(k), Some(false)) => out.push(
            f("A4p")
                .pointer(format!("/{k}"))
                .message(format!(
                    "`{k}: []` says on purpose that no authentication is required"
                ))
                .build(),
        ),
        _ if !schemes && reqs != Some(true) && !skill_reqs => out.push(
            f("A4")
                .pointer("/securitySchemes")
                .message("no security schemes and no security requirements")
                .build(),
        ),
        _ => {}
    }
    // A5
    if let Some(map) = card.get("securitySchemes").and_then(Value::as_object) {
        for (name, scheme) in map {
            let api = scheme.get("apiKeySecurityScheme").unwrap_or(scheme);
            let location = api
                .get("location")
                .or_else(|| api.get("in"))
                .and_then(Value::as_str);
            let is_api_key = scheme.get("apiKeySecurityScheme").is_some()
                || scheme.get("type").and_then(Value::as_str) == Some("apiKey");
            if is_api_key && location == Some("query") {
                out.push(
                    f("A5")
                        .pointer(format!("/securitySchemes/{}", token(name)))
                        .message(format!(
                            "scheme `{}` sends the API key in the query string",
                            visible(name)
                        ))
                        .build(),
                );
            }
        }
    }
    // A6, A7, A7j, A7i
    match card
        .get("signatures")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        None | Some([]) => out.push(
            f("A6")
                .pointer("/signatures")
                .message("the card carries no JWS signature")
                .build(),
        ),
        Some(sigs) => {
            for (i, sig) in sigs.iter().enumerate() {
                let ptr = format!("/signatures/{i}");
                let header = sig
                    .get("protected")
                    .and_then(Value::as_str)
                    .and_then(decode_header);
                let Some(header) = header else {
                    out.push(
                        f("A7")
                            .pointer(format!("{ptr}/protected"))
                            .message(
                                "the protected header is missing or not base64url-encoded JSON",
                            )
                            .build(),
                    );
                    continue;
                };
                let alg = header.get("alg").and_then(Value::as_str);
                let mut problems = Vec::new();
                match alg {
                    None => problems.push("no `alg`".to_string()),
                    Some(a) if a.eq_ignore_ascii_case("none") => {
                        problems.push("`alg: none`".into())
                    }
                    _ => {}
                }
                if header.get("kid").and_then(Value::as_str).is_none() {
                    problems.push("no `kid`".into());
                }
                if !problems.is_empty() {
                    out.push(
                        f("A7")
                            .pointer(format!("{ptr}/protected"))
                            .message(format!(
                                "unusable signature header: {}",
                                problems.join(", ")
                            ))
                            .text(visible(&header.to_string()))
                            .build(),
                    );
                }
                let jku = header
                    .get("jku")
                    .or_else(|| sig.pointer("/header/jku"))
                    .and_then(Value::as_str);
                if let Some(j) = jku
                    && !j.starts_with("https://")
                {
                    out.push(
                        f("A7j")
                            .pointer(format!("{ptr}/protected"))
                            .message("the signing key URL (jku) is not https")
                            .text(visible(j))
                            .build(),
                    );
                }
            }
            out.push(
                f("A7i")
                    .pointer("/signatures")
                    .message(format!(
                        "{} signature(s); mcpprobe does not fetch keys or verify signatures",
                        sigs.len()
                    ))
                    .build(),
            );
        }
    }
    // A8
    if card.pointer("/capabilities/pushNotifications") == Some(&Value::Bool(true)) {
        out.push(
            f("A8")
                .pointer("/capabilities/pushNotifications")
                .message("push notifications enabled: webhook URLs must be validated against SSRF")
                .build(),
        );
    }
    // A9
    for ptr in [
        "/capabilities/extendedAgentCard",
        "/supportsAuthenticatedExtendedCard",
        "/supportsExtendedAgentCard",
    ] {
        if card.pointer(ptr) == Some(&Value::Bool(true)) {
            out.push(
                f("A9")
                    .pointer(ptr)
                    .message("an extended card is offered: it must require authentication")
                    .build(),
            );
            break;
        }
    }
    // A10
    if card.get("provider").is_none_or(Value::is_null) {
        out.push(
            f("A10")
                .pointer("/provider")
                .message("no provider (organization and url)")
                .build(),
        );
    }
    out
}
