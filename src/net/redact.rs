//! Redaction of every secret the user passed (`--token`, `--header`, `MCPPROBE_TOKEN`) from
//! evidence, logs and the trace file.

/// Header names whose values are always redacted, whatever they hold.
const SENSITIVE_HEADERS: [&str; 6] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
];

pub const REDACTED: &str = "[REDACTED]";

/// The secrets of one scan.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: Vec<String>,
    headers: Vec<String>,
}

impl Secrets {
    /// `values` are redacted wherever they appear (when at least 4 characters long: a shorter
    /// value would blank out ordinary text; it is still redacted as a header value);
    /// `headers` are header names the user set, whose values are always redacted.
    pub fn new(
        values: impl IntoIterator<Item = String>,
        headers: impl IntoIterator<Item = String>,
    ) -> Secrets {
        let mut values: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
        // Longest first, so a secret that contains another is redacted whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets {
            values,
            headers: headers
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
        }
    }

    /// The length of the longest secret, in bytes.
    pub fn longest(&self) -> usize {
        self.values.first().map_or(0, String::len)
    }

    /// `text` with every secret replaced by `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in self.values.iter().filter(|v| v.len() >= 4) {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), REDACTED);
            }
        }
        out
    }

    /// A header as it may be shown: sensitive names and the user's own headers lose their value.
    pub fn header(&self, name: &str, value: &str) -> (String, String) {
        let lower = name.to_ascii_lowercase();
        if SENSITIVE_HEADERS.contains(&lower.as_str())
            || self.headers.contains(&lower)
            || self.values.iter().any(|v| v == value)
        {
            (name.to_string(), REDACTED.to_string())
        } else {
            (name.to_string(), self.redact(value))
        }
    }
}

/// Applies `redact` to every string of `v`, object keys included.
pub fn redact_value(v: &mut serde_json::Value, redact: &dyn Fn(&str) -> String) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = redact(s),
        Value::Array(items) => items.iter_mut().for_each(|i| redact_value(i, redact)),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut x) in old {
                redact_value(&mut x, redact);
                m.insert(redact(&k), x);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_values_and_sensitive_headers() {
        let s = Secrets::new(["s3cr3t-token".to_string()], ["X-Tenant".to_string()]);
        assert_eq!(
            s.redact("Bearer s3cr3t-token here"),
            "Bearer [REDACTED] here"
        );
        assert_eq!(s.header("Authorization", "Bearer x").1, REDACTED);
        assert_eq!(s.header("x-tenant", "acme").1, REDACTED);
        assert_eq!(s.header("Accept", "application/json").1, "application/json");
    }
}
