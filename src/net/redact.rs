//! Redaction of every secret the user hands over (SPEC §7, "Secrets never leave") from every
//! output: reports (terminal, JSON, SARIF, Markdown), the trace file, logs, the daemon's store
//! and the text a judge is given.
//!
//! One [`Secrets`] set per scan, built before the first request from a typed list of
//! [`Source`]s. What is redacted, and the length rule:
//!
//! - **Whole values** of 4 characters or more: `--token` / `MCPPROBE_TOKEN` / a daemon target's
//!   `token_env`, every `--header` value, every `--env` value passed to a stdio server, the
//!   value of a target URL query parameter whose name reads as a secret (`key`, `token`,
//!   `secret`, `sig`, `auth`, `pass`, `session`, `code`, …), the password of a URL's userinfo,
//!   the credentials inside `Basic` (decoded `user:pass` and the password), and any other secret
//!   a host names (the daemon's API token, say). A shorter value cannot be redacted in free
//!   text without blanking ordinary words; it is still redacted as the value of a header.
//! - **Words** of 8 characters or more of each of those values, split on whitespace and on
//!   `, ; = & " '` (so the bare token of `Bearer X`, of `Basic …`, of `Token token=X` and each
//!   cookie value of `a=X; b=Y`), and every other query value of 8 characters or more. A few
//!   words of header syntax (`Negotiate`, `HttpOnly`, `SameSite`, `Signature`, …) are not
//!   secrets and are kept.
//! - **The forms a server may echo** of each of those: percent-encoded (`%XX`, and `+` for a
//!   space), JSON-escaped (`\"`, `\\`, `\/`, `\uXXXX`), HTML-escaped; and the base64
//!   (standard and URL-safe) of each whole value and of `user:pass` credentials. Matching
//!   ignores ASCII case (so `%2f` and `%2F` are one form).
//!
//! Matches are found in one leftmost-longest pass (a secret that contains another is redacted
//! whole), repeated until no secret is left; a secret that only reappears around the
//! `[REDACTED]` marker (one made of brackets) blanks the whole text. A value that is a piece
//! of the marker itself (`DACTED`) cannot be hidden and is not redacted.

use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

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

/// Whole values shorter than this (in characters) are not redacted in free text.
pub const MIN_WHOLE: usize = 4;
/// Words (and query values that do not read as secrets) shorter than this are not redacted.
pub const MIN_WORD: usize = 8;

/// Bytes that separate the words of a value (besides whitespace).
const WORD_SEPARATORS: [char; 6] = [',', ';', '=', '&', '"', '\''];

/// Words of header syntax that are never secrets (compared ignoring ASCII case).
pub const NOT_SECRET_WORDS: [&str; 9] = [
    "negotiate",
    "httponly",
    "samesite",
    "partitioned",
    "credential",
    "signature",
    "signedheaders",
    "aws4-hmac-sha256",
    "max-age",
];

/// Pieces of a query parameter's name that make its value a secret whatever its length.
const SECRET_PARAM_WORDS: [&str; 14] = [
    "key", "token", "secret", "sig", "auth", "pass", "pwd", "session", "code", "cred", "jwt",
    "bearer", "apikey", "access",
];

/// Passes of the redactor before a text whose secrets keep reappearing is blanked whole.
const MAX_PASSES: usize = 4;

/// Where a secret came from; each kind has its own rules (see the module's documentation).
#[derive(Clone, PartialEq, Eq)]
pub enum Source {
    /// `--token`, `MCPPROBE_TOKEN`, a daemon target's `token_env` value.
    Token(String),
    /// `--header NAME: VALUE`: the header's value is never shown, and its value and words are
    /// redacted everywhere (the credentials inside `Basic` too).
    Header { name: String, value: String },
    /// A value passed to a stdio server's environment (`--env NAME`).
    Env { name: String, value: String },
    /// The target URL: its query values (decoded and raw) and any userinfo password.
    Url(String),
    /// Any other secret a host holds (the daemon's API token, a database URL).
    Other(String),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Token(_) => f.write_str("Token(redacted)"),
            Source::Header { name, .. } => write!(f, "Header({name}: redacted)"),
            Source::Env { name, .. } => write!(f, "Env({name}=redacted)"),
            Source::Url(_) => f.write_str("Url(redacted)"),
            Source::Other(_) => f.write_str("Other(redacted)"),
        }
    }
}

/// The secrets of one scan (or of one host's logs). Cheap to clone; its `Debug` shows counts.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Whole values (any length): a header whose value is exactly one of them is redacted.
    whole: Arc<[String]>,
    /// Every text that is redacted, longest first.
    patterns: Arc<[String]>,
    matcher: Option<Arc<AhoCorasick>>,
    /// Header names the user set, lower case: their values are always redacted.
    headers: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("patterns", &self.patterns.len())
            .field("headers", &self.headers)
            .finish()
    }
}

/// What the sources give, before the matcher is built.
#[derive(Default)]
struct Builder {
    whole: Vec<String>,
    patterns: Vec<String>,
    headers: Vec<String>,
}

impl Builder {
    /// `value` and the forms a server may echo it in, when it has at least `min` characters.
    fn text(&mut self, value: &str, min: usize) {
        if value.chars().count() < min {
            return;
        }
        for form in forms(value) {
            // A piece of the marker cannot be hidden (every redaction would show it again).
            if REDACTED
                .to_ascii_lowercase()
                .contains(&form.to_ascii_lowercase())
            {
                continue;
            }
            self.patterns.push(form);
        }
    }

    /// A whole value (redacted at [`MIN_WHOLE`]) and its words (at [`MIN_WORD`]).
    fn value(&mut self, value: &str) {
        let value = value.trim();
        if value.is_empty() {
            return;
        }
        self.whole.push(value.to_string());
        self.text(value, MIN_WHOLE);
        if value.chars().count() >= MIN_WHOLE {
            self.base64(value);
        }
        self.words(value);
        self.embedded_url(value);
    }

    fn words(&mut self, value: &str) {
        for word in words(value) {
            if !NOT_SECRET_WORDS
                .iter()
                .any(|w| w.eq_ignore_ascii_case(word))
            {
                self.text(word, MIN_WORD);
            }
        }
    }

    /// `user:pass` credentials: the pair, the password, and their base64.
    fn credentials(&mut self, user: &str, pass: &str) {
        if pass.is_empty() {
            return;
        }
        let pair = format!("{user}:{pass}");
        self.whole.push(pass.to_string());
        self.text(pass, MIN_WHOLE);
        self.text(&pair, MIN_WHOLE);
        self.base64(&pair);
    }

    /// The base64 of `value`: standard and URL-safe, padded or not (the longest match wins,
    /// so a padded echo is redacted whole).
    fn base64(&mut self, value: &str) {
        use base64::engine::general_purpose::{
            STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
        };
        for b64 in [
            STANDARD.encode(value),
            URL_SAFE.encode(value),
            STANDARD_NO_PAD.encode(value),
            URL_SAFE_NO_PAD.encode(value),
        ] {
            self.text(&b64, MIN_WHOLE);
        }
    }

    /// `Basic <base64>` anywhere in a header value: the credentials it carries.
    fn basic(&mut self, value: &str) {
        let mut parts = value.split_whitespace();
        while let Some(scheme) = parts.next() {
            if !scheme.eq_ignore_ascii_case("basic") {
                continue;
            }
            let Some(encoded) = parts.next() else { return };
            let encoded = encoded.trim_end_matches('=');
            let decoded = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(encoded)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded));
            if let Ok(bytes) = decoded
                && let Ok(text) = String::from_utf8(bytes)
            {
                self.whole.push(text.clone());
                self.text(&text, MIN_WHOLE);
                if let Some((user, pass)) = text.split_once(':') {
                    self.credentials(user, pass);
                }
            }
        }
    }

    /// A value that is a URL (a database URL, an endpoint with a key): its password and its
    /// query values.
    fn embedded_url(&mut self, value: &str) {
        if let Ok(url) = url::Url::parse(value)
            && url.has_host()
        {
            self.url(&url);
        }
    }

    fn url(&mut self, url: &url::Url) {
        if let Some(pass) = url.password() {
            let decoded = percent_decode(pass);
            self.credentials(&percent_decode(url.username()), &decoded);
            self.text(pass, MIN_WHOLE);
        }
        let Some(query) = url.query() else { return };
        for pair in query.split('&') {
            let (name, raw) = pair.split_once('=').unwrap_or(("", pair));
            let name = form_decode(name).to_ascii_lowercase();
            let decoded = form_decode(raw);
            let min = if SECRET_PARAM_WORDS.iter().any(|w| name.contains(w)) {
                MIN_WHOLE
            } else {
                MIN_WORD
            };
            for v in [raw.to_string(), decoded] {
                if v.chars().count() >= min {
                    self.whole.push(v.clone());
                }
                self.text(&v, min);
                self.words(&v);
            }
        }
    }

    fn source(&mut self, source: &Source) {
        match source {
            Source::Token(v) | Source::Other(v) => self.value(v),
            Source::Header { name, value } => {
                self.headers.push(name.to_ascii_lowercase());
                self.value(value);
                self.basic(value);
            }
            Source::Env { value, .. } => self.value(value),
            Source::Url(raw) => {
                if let Ok(url) = url::Url::parse(raw) {
                    self.url(&url);
                }
            }
        }
    }

    fn build(self) -> Secrets {
        let mut patterns = self.patterns;
        // Longest first (the matcher prefers the longest match anyway; `longest` reads it).
        patterns.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        patterns.dedup();
        let matcher = if patterns.is_empty() {
            None
        } else {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .ascii_case_insensitive(true)
                .build(&patterns)
                .ok()
                .map(Arc::new)
        };
        let mut whole = self.whole;
        whole.sort();
        whole.dedup();
        let mut headers = self.headers;
        headers.sort();
        headers.dedup();
        Secrets {
            whole: whole.into(),
            patterns: patterns.into(),
            matcher,
            headers,
        }
    }
}

/// The words of `value`: split on whitespace and [`WORD_SEPARATORS`].
fn words(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(|c: char| c.is_whitespace() || WORD_SEPARATORS.contains(&c))
        .filter(|w| !w.is_empty())
}

/// `value` and the encodings a server may echo it in (duplicates removed by the caller).
fn forms(value: &str) -> Vec<String> {
    let mut out = vec![value.to_string()];
    let mut add = |f: String| {
        if !out.contains(&f) {
            out.push(f);
        }
    };
    add(percent_encode(value));
    add(url::form_urlencoded::byte_serialize(value.as_bytes()).collect());
    let json = json_escape(value, false);
    add(json.replace('/', "\\/"));
    add(json_escape(value, true));
    add(json_escape(value, true).replace('/', "\\/"));
    add(json);
    add(html_escape(value));
    out
}

/// The unreserved characters of RFC 3986: every other byte is written `%XX`.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Every byte but the unreserved ones (RFC 3986) as `%XX`.
fn percent_encode(value: &str) -> String {
    utf8_percent_encode(value, UNRESERVED).to_string()
}

/// `%XX` decoded (a `%` not followed by two hex digits is kept as it is); bytes that are not
/// UTF-8 become U+FFFD.
fn percent_decode(value: &str) -> String {
    percent_decode_str(value).decode_utf8_lossy().into_owned()
}

/// A query component decoded as a form would (`+` is a space).
fn form_decode(value: &str) -> String {
    percent_decode(&value.replace('+', " "))
}

/// `value` as it reads inside a JSON string; with `ascii`, every non-ASCII character as
/// `\uXXXX` (what Python's `json.dumps` writes by default).
fn json_escape(value: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn html_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

impl Secrets {
    /// The set of `sources` (see the module's documentation for what each gives).
    pub fn from_sources<'a>(sources: impl IntoIterator<Item = &'a Source>) -> Secrets {
        let mut b = Builder::default();
        for s in sources {
            b.source(s);
        }
        b.build()
    }

    /// `values` as [`Source::Other`] secrets, and `headers`, header names whose values are
    /// always redacted.
    pub fn new(
        values: impl IntoIterator<Item = String>,
        headers: impl IntoIterator<Item = String>,
    ) -> Secrets {
        let mut b = Builder::default();
        for v in values {
            b.source(&Source::Other(v));
        }
        b.headers
            .extend(headers.into_iter().map(|h| h.to_ascii_lowercase()));
        b.build()
    }

    /// Whether nothing is redacted in free text.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The length of the longest text redacted, in bytes.
    pub fn longest(&self) -> usize {
        self.patterns.first().map_or(0, String::len)
    }

    /// Whether `text` holds a secret.
    pub fn found_in(&self, text: &str) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// `text` with every secret replaced by `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        let Some(m) = &self.matcher else {
            return text.to_string();
        };
        if !m.is_match(text) {
            return text.to_string();
        }
        let mut out = text.to_string();
        for _ in 0..MAX_PASSES {
            let mut next = String::with_capacity(out.len());
            m.replace_all_with(&out, &mut next, |_, _, dst| {
                dst.push_str(REDACTED);
                true
            });
            out = next;
            if !m.is_match(&out) {
                return out;
            }
        }
        // A secret that keeps reappearing around the marker (it is made of brackets).
        REDACTED.to_string()
    }

    /// A header as it may be shown: sensitive names and the user's own headers lose their value.
    pub fn header(&self, name: &str, value: &str) -> (String, String) {
        let lower = name.to_ascii_lowercase();
        if SENSITIVE_HEADERS.contains(&lower.as_str())
            || self.headers.contains(&lower)
            || self.whole.iter().any(|v| v == value.trim())
        {
            (self.redact(name), REDACTED.to_string())
        } else {
            (self.redact(name), self.redact(value))
        }
    }
}

pub use crate::util::json::map_strings as redact_value;

/// A `tracing` writer to stderr that redacts each event (one `write` per event by the `fmt`
/// layer; the redaction runs when the event's writer is dropped): hosts install it so no log
/// line carries a secret, whatever a server echoed into it.
#[derive(Clone, Debug)]
pub struct RedactingStderr {
    secrets: SharedSecrets,
}

impl RedactingStderr {
    pub fn new(secrets: Secrets) -> RedactingStderr {
        RedactingStderr::shared(SharedSecrets::new(secrets))
    }

    /// A writer redacting whatever `secrets` holds when each line is written (a daemon's
    /// secrets grow as targets are imported).
    pub fn shared(secrets: SharedSecrets) -> RedactingStderr {
        RedactingStderr { secrets }
    }
}

/// A set of secrets that its holders replace as they learn more (a daemon's, as targets are
/// imported); every reader sees the latest. Cheap to clone (the clones share it).
#[derive(Clone, Default)]
pub struct SharedSecrets(Arc<std::sync::RwLock<Arc<Secrets>>>);

impl SharedSecrets {
    pub fn new(secrets: Secrets) -> SharedSecrets {
        SharedSecrets(Arc::new(std::sync::RwLock::new(Arc::new(secrets))))
    }

    /// The latest set.
    pub fn get(&self) -> Arc<Secrets> {
        match self.0.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the set.
    pub fn set(&self, secrets: Secrets) {
        let secrets = Arc::new(secrets);
        match self.0.write() {
            Ok(mut s) => *s = secrets,
            Err(poisoned) => *poisoned.into_inner() = secrets,
        }
    }
}

impl std::fmt::Debug for SharedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// One event's bytes, written redacted to stderr when dropped.
pub struct RedactedEvent {
    secrets: Arc<Secrets>,
    buf: Vec<u8>,
}

impl std::io::Write for RedactedEvent {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedEvent {
    fn drop(&mut self) {
        use std::io::Write as _;
        let text = String::from_utf8_lossy(&self.buf);
        let _ = std::io::stderr()
            .lock()
            .write_all(self.secrets.redact(&text).as_bytes());
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactingStderr {
    type Writer = RedactedEvent;
    fn make_writer(&'a self) -> RedactedEvent {
        RedactedEvent {
            secrets: self.secrets.get(),
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, value: &str) -> Source {
        Source::Header {
            name: name.into(),
            value: value.into(),
        }
    }

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

    #[test]
    fn the_bare_token_of_a_header_is_redacted() {
        let s = Secrets::from_sources(&[header("Authorization", "Bearer tok-1234567890")]);
        assert_eq!(s.redact("you sent tok-1234567890"), "you sent [REDACTED]");
        assert_eq!(
            s.redact("Bearer tok-1234567890 was sent"),
            "[REDACTED] was sent"
        );
        // The scheme is not a secret.
        assert_eq!(s.redact("use Bearer auth"), "use Bearer auth");
    }

    #[test]
    fn cookie_values_and_parameters_are_words() {
        let s = Secrets::from_sources(&[header(
            "Cookie",
            "a=LONGSECRET1; b=other-long-secret, c=\"quoted-secret\"; d=short; HttpOnly",
        )]);
        let out = s.redact("LONGSECRET1 other-long-secret quoted-secret short HttpOnly");
        assert_eq!(out, "[REDACTED] [REDACTED] [REDACTED] short HttpOnly");
    }

    #[test]
    fn the_minimum_lengths() {
        let s = Secrets::from_sources(&[
            Source::Token("abc".into()),
            Source::Other("abcd".into()),
            header("X-Key", "one twoseven eightch8"),
        ]);
        // A 3-character whole value is not redacted in text, a 4-character one is.
        assert_eq!(s.redact("abc"), "abc");
        assert_eq!(s.redact("xabcdx"), "x[REDACTED]x");
        // Words: 7 characters kept, 8 redacted; the whole value redacted.
        assert_eq!(s.redact("twoseven"), "[REDACTED]");
        assert_eq!(s.redact("eightch8 one"), "[REDACTED] one");
        let seven = Secrets::from_sources(&[header("X-Key", "one seven77 two")]);
        assert_eq!(seven.redact("seven77"), "seven77");
        // A short value is still a header's value.
        assert_eq!(s.header("X-Other", "abc").1, REDACTED);
    }

    #[test]
    fn encoded_forms_are_redacted() {
        let secret = "p@ss wörd/\"q\\x";
        let s = Secrets::from_sources(&[Source::Token(secret.into())]);
        let echoed = [
            secret.to_string(),
            percent_encode(secret),
            percent_encode(secret).to_ascii_lowercase(),
            url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
            serde_json::to_string(secret)
                .expect("json")
                .trim_matches('"')
                .to_string(),
            json_escape(secret, true),
            html_escape(secret),
        ];
        for e in echoed {
            let out = s.redact(&format!("<{e}>"));
            assert_eq!(out, "<[REDACTED]>", "{e}");
        }
    }

    #[test]
    fn a_secret_in_a_json_body_is_redacted_as_escaped() {
        let secret = "tok\"en\\12345";
        let s = Secrets::from_sources(&[Source::Token(secret.into())]);
        let body = serde_json::json!({"echo": secret}).to_string();
        assert!(!body.contains(secret), "the body holds the escaped form");
        let out = s.redact(&body);
        assert_eq!(out, r#"{"echo":"[REDACTED]"}"#);
    }

    #[test]
    fn basic_credentials_decoded_and_encoded() {
        let b64 = base64::engine::general_purpose::STANDARD.encode("alice:hunter2-long");
        let s = Secrets::from_sources(&[header("Authorization", &format!("Basic {b64}"))]);
        assert_eq!(s.redact(&b64), REDACTED);
        assert_eq!(s.redact("user alice:hunter2-long"), "user [REDACTED]");
        assert_eq!(s.redact("pw hunter2-long"), "pw [REDACTED]");
        // The user name alone is not a secret.
        assert_eq!(s.redact("alice"), "alice");
    }

    #[test]
    fn url_userinfo_gives_its_base64() {
        let s = Secrets::from_sources(&[Source::Env {
            name: "DATABASE_URL".into(),
            value: "postgres://bob:pa%24%24word@db.internal/app?sslkey=/k".into(),
        }]);
        let b64 = base64::engine::general_purpose::STANDARD.encode("bob:pa$$word");
        assert_eq!(s.redact(&b64), REDACTED);
        assert_eq!(s.redact("pa$$word"), REDACTED);
        assert_eq!(s.redact("pa%24%24word"), REDACTED);
        // "postgres" is not a word of the value (URLs are not split on `:` or `/`).
        assert_eq!(s.redact("postgres"), "postgres");
    }

    #[test]
    fn query_values_decoded_and_raw() {
        let s = Secrets::from_sources(&[Source::Url(
            "https://mcp.example.com/mcp?api_key=k%2Fy+z1&format=json&state=long-opaque-state"
                .into(),
        )]);
        assert_eq!(s.redact("k%2Fy+z1"), REDACTED);
        assert_eq!(s.redact("k/y z1"), REDACTED);
        assert_eq!(s.redact("long-opaque-state"), REDACTED);
        // A short value of a parameter that is not a secret is kept (8 characters needed).
        assert_eq!(s.redact("application/json"), "application/json");
        assert_eq!(
            s.redact("https://mcp.example.com/mcp?api_key=k%2Fy+z1&format=json"),
            "https://mcp.example.com/mcp?api_key=[REDACTED]&format=json"
        );
    }

    #[test]
    fn percent_forms_round_trip_and_keep_what_is_not_an_escape() {
        assert_eq!(percent_encode("a-b._~ /é"), "a-b._~%20%2F%C3%A9");
        assert_eq!(
            percent_decode(&percent_encode("p@ss wörd/\"q")),
            "p@ss wörd/\"q"
        );
        // A `%` without two hex digits after it stays; a lone byte that is not UTF-8 is U+FFFD.
        assert_eq!(percent_decode("100%, %4 and %zz"), "100%, %4 and %zz");
        assert_eq!(percent_decode("a%FFb"), "a\u{fffd}b");
        assert_eq!(form_decode("k%2Fy+z1"), "k/y z1");
    }

    #[test]
    fn longest_first_and_overlaps() {
        let s = Secrets::from_sources(&[
            Source::Token("abcdefgh".into()),
            Source::Other("abcdefgh-ijkl".into()),
            Source::Other("ghijklmn".into()),
        ]);
        // The longer secret is redacted whole, not as "[REDACTED]-ijkl".
        assert_eq!(s.redact("xabcdefgh-ijkly"), "x[REDACTED]y");
        // Overlapping secrets: neither survives.
        let out = s.redact("abcdefghijklmn");
        assert!(
            !out.contains("abcdefgh") && !out.contains("ghijklmn"),
            "{out}"
        );
    }

    #[test]
    fn case_is_ignored() {
        let s = Secrets::from_sources(&[Source::Token("deadbeefcafe".into())]);
        assert_eq!(s.redact("DEADBEEFCAFE"), REDACTED);
    }

    #[test]
    fn secrets_around_the_marker_never_survive() {
        // "D]xyz" would reappear after "[REDACTED]" + "xyz".
        let s = Secrets::from_sources(&[
            Source::Other("D]xyz".into()),
            Source::Other("secret-one".into()),
            Source::Other("DACTED".into()),
        ]);
        let out = s.redact("secret-onexyz D]xyz");
        assert!(!out.contains("D]xyz"), "{out}");
        assert!(!out.contains("secret-one"), "{out}");
        // A piece of the marker is not a secret that can be hidden.
        assert!(!s.found_in("[REDACTED]"));
    }

    #[test]
    fn debug_shows_no_secret() {
        let src = header("Authorization", "Bearer tok-1234567890");
        let s = Secrets::from_sources(std::slice::from_ref(&src));
        assert!(!format!("{s:?}{src:?}").contains("tok-1234567890"));
    }
}
