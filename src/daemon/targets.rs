//! Targets managed at fleet scale (issue 25): imported (`mcpprobe daemon targets import FILE`,
//! `POST /targets`) beside the ones written in `mcpprobe.toml`, and the list the scheduler and
//! the status API see.
//!
//! An import file holds `[[targets]]` tables exactly like `mcpprobe.toml`'s (TOML), or one
//! target object per line with the same keys (JSONL), or a JSON array of them; each target is
//! checked as [`TargetConfig`] is, and an import with one bad target imports nothing (every
//! error names the file, the line and the key). The store keeps each imported target's keys as
//! canonical JSON ([`ImportedTarget::spec`]): `token_env` names a variable, never a token.
//!
//! The targets a daemon schedules are the configuration's, merged by name with the store's
//! imported ones (a name in both is the configuration file's), each imported one checked as a
//! configured one is ([`spec_of`]: its URL, its token variable set in this daemon's
//! environment, its checks, the file's policy defaults). One that fails is logged and left out;
//! it never stops the daemon. The list is read again at most every [`REFRESH_MS`] (so a target
//! another daemon imported is picked up), and at once after an import through this daemon's
//! API. Each list carries its own [`Secrets`]: every target's token and URL query values, the
//! configuration's and the imported ones', so that what a run stores and what the logs show is
//! redacted of all of them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::store::{ImportedTarget, Store};
use super::{DaemonConfig, TargetSpec, db, now_ms, schedule};
use crate::config::{Config, ConfigFileError, SeverityOverride, TargetConfig};
use crate::engine::{ExposeSecret as _, SecretSource, SecretString, Selection, Target};
use crate::finding::Confidence;
use crate::model::{FailOn, Policy};
use crate::net::redact::Secrets;
use crate::review::{Review, Suppression};

/// How often (at most) the scheduler reads the imported targets again, in milliseconds.
pub const REFRESH_MS: i64 = 5_000;

/// The largest import file read.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The most targets one import takes.
pub const MAX_IMPORT: usize = 50_000;

/// The largest `POST /targets` body.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The most targets one `POST /targets` takes.
pub const MAX_BODY_TARGETS: usize = 10_000;

/// An import that cannot be used: nothing of it was imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the format is not known: name the file .toml, .jsonl or .json", path.display())]
    Format { path: PathBuf },
    #[error("{origin}: larger than {max} bytes")]
    TooLarge { origin: String, max: u64 },
    #[error("{origin}: {count} targets, more than the {max} one import takes")]
    TooMany {
        origin: String,
        count: usize,
        max: usize,
    },
    #[error("{origin}:{line}:{column}: {}{message}", key.as_deref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
    Invalid {
        /// The file (or `request body`).
        origin: String,
        line: usize,
        column: usize,
        /// Which target (0-based, in the order written), when the error is about one.
        index: Option<usize>,
        /// The key (`every`, `suppress[0].reason`; `targets[3].url` in TOML), when known.
        key: Option<String>,
        message: String,
    },
}

/// How an import is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `[[targets]]` tables, as in `mcpprobe.toml`.
    Toml,
    /// One target object per line.
    Jsonl,
    /// A JSON array of target objects (or, as JSONL, one per line).
    Json,
}

impl Format {
    /// The format a file's extension names.
    pub fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "toml" => Some(Format::Toml),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// Reads and checks the import file at `path` (its format from its extension).
pub fn read_file(path: &Path) -> Result<Vec<ImportedTarget>, ImportError> {
    use std::io::Read as _;
    let format = Format::of(path).ok_or_else(|| ImportError::Format {
        path: path.to_path_buf(),
    })?;
    let read = |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let origin = path.display().to_string();
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ImportError::TooLarge {
            origin,
            max: MAX_FILE_BYTES,
        });
    }
    let text = utf8(bytes, &origin)?;
    parse(&text, path, format, MAX_IMPORT)
}

/// Checks a `POST /targets` body: a JSON array of target objects, or JSONL.
pub fn parse_body(bytes: Vec<u8>) -> Result<Vec<ImportedTarget>, ImportError> {
    let origin = "request body";
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ImportError::TooLarge {
            origin: origin.into(),
            max: MAX_BODY_BYTES as u64,
        });
    }
    let text = utf8(bytes, origin)?;
    parse(&text, Path::new(origin), Format::Json, MAX_BODY_TARGETS)
}

fn utf8(bytes: Vec<u8>, origin: &str) -> Result<String, ImportError> {
    String::from_utf8(bytes).map_err(|e| {
        let before = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = before.len()
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1)
            + 1;
        ImportError::Invalid {
            origin: origin.to_string(),
            line,
            column,
            index: None,
            key: None,
            message: "not UTF-8".into(),
        }
    })
}

/// Checks `text`, read from `path` (named in every error), as `format`: every target or an
/// error (the first found), never some of them.
pub fn parse(
    text: &str,
    path: &Path,
    format: Format,
    max: usize,
) -> Result<Vec<ImportedTarget>, ImportError> {
    let origin = path.display().to_string();
    let entries = match format {
        Format::Toml => toml_entries(text, path)?,
        Format::Json if text.trim_start().starts_with('[') => json_array(text, &origin)?,
        Format::Json | Format::Jsonl => jsonl(text, &origin, max)?,
    };
    if entries.len() > max {
        return Err(ImportError::TooMany {
            origin,
            count: entries.len(),
            max,
        });
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(entries.len());
    for (index, e) in entries.into_iter().enumerate() {
        let invalid = |key: &str, message: String| ImportError::Invalid {
            origin: origin.clone(),
            line: e.line,
            column: 1,
            index: Some(index),
            key: Some(format!("{}{key}", e.prefix)),
            message,
        };
        if let Some(first) = seen.insert(e.target.name.clone(), e.line) {
            return Err(invalid(
                "name",
                format!(
                    "two targets are named {:?} (the first on line {first})",
                    e.target.name
                ),
            ));
        }
        out.push(imported(&e.target, e.json).map_err(|(key, m)| invalid(key, m))?);
    }
    Ok(out)
}

/// One target of an import: checked, with its keys as written (as JSON) and where it is.
struct Entry {
    target: TargetConfig,
    json: Value,
    line: usize,
    /// What its keys are prefixed with in errors (`targets[3].` in TOML, `[3].` in an array).
    prefix: String,
}

/// The `[[targets]]` of a TOML file, checked as `mcpprobe.toml`'s are (with their lines and
/// keys); any other top-level key is an error.
fn toml_entries(text: &str, path: &Path) -> Result<Vec<Entry>, ImportError> {
    let origin = path.display().to_string();
    let config = Config::parse(text, path).map_err(|e| match e {
        ConfigFileError::Invalid {
            line,
            column,
            key,
            message,
            ..
        } => ImportError::Invalid {
            origin: origin.clone(),
            line,
            column,
            index: key.as_deref().and_then(target_index),
            key,
            message,
        },
        other => ImportError::Invalid {
            origin: origin.clone(),
            line: 1,
            column: 1,
            index: None,
            key: None,
            message: other.to_string(),
        },
    })?;
    let table: toml::Table = toml::from_str(text).map_err(|e| ImportError::Invalid {
        origin: origin.clone(),
        line: 1,
        column: 1,
        index: None,
        key: None,
        message: format!("not valid TOML: {}", e.message()),
    })?;
    if let Some(key) = table.keys().find(|k| *k != "targets") {
        return Err(ImportError::Invalid {
            origin,
            line: config.lines.top(key),
            column: 1,
            index: None,
            key: Some(key.clone()),
            message: "an import file holds only [[targets]] tables (the daemon's other keys belong in mcpprobe.toml)".into(),
        });
    }
    let raw = match table.get("targets") {
        Some(toml::Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    Ok(config
        .targets
        .into_iter()
        .zip(raw)
        .enumerate()
        .map(|(i, (target, raw))| Entry {
            target,
            json: json_of(raw),
            line: config.lines.target(i),
            prefix: format!("targets[{i}]."),
        })
        .collect())
}

/// `targets[3].every` → 3.
fn target_index(key: &str) -> Option<usize> {
    key.strip_prefix("targets[")?
        .split(']')
        .next()?
        .parse()
        .ok()
}

/// A TOML value as JSON (a date as its text, as `until` reads it).
fn json_of(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(json_of).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, json_of(v))).collect())
        }
    }
}

/// The key an error is about: serde's path, plus the field a "missing field" or "unknown
/// field" message names.
fn key_of(path: &str, message: &str) -> Option<String> {
    let named = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|p| message.strip_prefix(p))
        .and_then(|rest| rest.split('`').next());
    let path = (path != "." && !path.is_empty()).then_some(path);
    match (path, named) {
        (Some(p), Some(n)) if !p.ends_with(n) => Some(format!("{p}.{n}")),
        (Some(p), _) => Some(p.to_string()),
        (None, Some(n)) => Some(n.to_string()),
        (None, None) => None,
    }
}

/// serde_json's message without the position it appends (the error names it already).
fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) if e.line() > 0 => text[..at].to_string(),
        _ => text,
    }
}

/// A JSON array of target objects.
fn json_array(text: &str, origin: &str) -> Result<Vec<Entry>, ImportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let typed: Vec<TargetConfig> = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = message_of(&inner);
        let index = path
            .strip_prefix('[')
            .and_then(|p| p.split(']').next())
            .and_then(|i| i.parse().ok());
        ImportError::Invalid {
            origin: origin.to_string(),
            line: inner.line().max(1),
            column: inner.column().max(1),
            index,
            key: key_of(&path, &message),
            message,
        }
    })?;
    // The same text, as written (checked whole here: nothing may follow the array), and each
    // element's line.
    let raw: Vec<Value> = serde_json::from_str(text).map_err(|e| ImportError::Invalid {
        origin: origin.to_string(),
        line: e.line().max(1),
        column: e.column().max(1),
        index: None,
        key: None,
        message: message_of(&e),
    })?;
    let lines = element_lines(text);
    Ok(typed
        .into_iter()
        .zip(raw)
        .enumerate()
        .map(|(i, (target, json))| Entry {
            target,
            json,
            line: lines.get(i).copied().unwrap_or(1),
            prefix: format!("[{i}]."),
        })
        .collect())
}

/// The line each element of a JSON array of objects starts on (its `{` at depth 1).
fn element_lines(text: &str) -> Vec<usize> {
    let (mut lines, mut line, mut depth) = (Vec::new(), 1, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            if c == '\n' {
                line += 1;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '\n' => line += 1,
            '[' | '{' => {
                if depth == 1 && c == '{' {
                    lines.push(line);
                }
                depth += 1;
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    lines
}

/// One target object per line (blank lines skipped).
fn jsonl(text: &str, origin: &str, max: usize) -> Result<Vec<Entry>, ImportError> {
    let mut out = Vec::new();
    for (n, line_text) in text.lines().enumerate() {
        if line_text.trim().is_empty() {
            continue;
        }
        let (line, index) = (n + 1, out.len());
        if index == max {
            return Err(ImportError::TooMany {
                origin: origin.to_string(),
                count: index
                    + 1
                    + text
                        .lines()
                        .skip(n + 1)
                        .filter(|l| !l.trim().is_empty())
                        .count(),
                max,
            });
        }
        let invalid = |column: usize, key: Option<String>, message: String| ImportError::Invalid {
            origin: origin.to_string(),
            line,
            column: column.max(1),
            index: Some(index),
            key,
            message,
        };
        let json: Value = serde_json::from_str(line_text)
            .map_err(|e| invalid(e.column(), None, message_of(&e)))?;
        if !json.is_object() {
            return Err(invalid(1, None, "a target is a JSON object".into()));
        }
        let target: TargetConfig = serde_path_to_error::deserialize(&json).map_err(|e| {
            let path = e.path().to_string();
            let message = message_of(e.inner());
            invalid(1, key_of(&path, &message), message)
        })?;
        out.push(Entry {
            target,
            json,
            line,
            prefix: String::new(),
        });
    }
    Ok(out)
}

/// A value with its objects' keys sorted and their nulls left out (a null is an absent key):
/// the same target written twice, in any order or format, has one spec.
fn canonical(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> =
                m.into_iter().filter(|(_, v)| !v.is_null()).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, canonical(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(canonical).collect()),
        v => v,
    }
}

/// The stored form of a checked target: what does not depend on this machine is checked here
/// (its URL); its token variable is checked by each daemon that loads it.
fn imported(t: &TargetConfig, json: Value) -> Result<ImportedTarget, (&'static str, String)> {
    Target::http(&t.url).map_err(|e| ("url", e.to_string()))?;
    let spec = serde_json::to_string(&canonical(json)).map_err(|e| ("name", e.to_string()))?;
    // What the daemon will read back: the same checks hold on the stored form.
    serde_json::from_str::<TargetConfig>(&spec).map_err(|e| ("name", message_of(&e)))?;
    Ok(ImportedTarget {
        name: t.name.clone(),
        url: shown_url(&t.url),
        every_ms: super::ms(t.every),
        spec,
    })
}

/// `url` as it may be shown: its query values and password redacted.
fn shown_url(url: &str) -> String {
    Secrets::from_sources(&[SecretSource::Url(url.to_string())]).redact(url)
}

/// Reads environment variables (the targets' tokens) for the daemon; cheap to clone.
#[derive(Clone)]
pub struct Env(Arc<EnvFn>);

/// What [`Env`] calls: a variable's name in, its value (if set) out.
type EnvFn = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Env {
    pub fn new(f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Env {
        Env(Arc::new(f))
    }

    /// No variable set: the library reads no environment; a host gives it one
    /// ([`super::DaemonConfig::with_env`]; the CLI passes the process's).
    pub fn none() -> Env {
        Env::new(|_| None)
    }

    pub fn get(&self, var: &str) -> Option<String> {
        (self.0)(var)
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}

/// What a target takes from the configuration file's top level when it does not say.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    pub checks: Option<Vec<String>>,
    pub skip_checks: Option<Vec<String>>,
    pub fail_on: Option<FailOn>,
    pub min_confidence: Option<Confidence>,
    pub severity: Vec<SeverityOverride>,
    pub suppress: Vec<Suppression>,
}

impl Defaults {
    pub fn of(config: &Config) -> Defaults {
        Defaults {
            checks: config.checks.clone(),
            skip_checks: config.skip_checks.clone(),
            fail_on: config.fail_on,
            min_confidence: config.min_confidence,
            severity: config.severity.clone(),
            suppress: config.suppress.clone(),
        }
    }
}

/// Why a target cannot be scheduled: the key at fault and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key `{key}`: {message}")]
pub struct TargetError {
    pub key: &'static str,
    pub message: String,
}

impl TargetError {
    fn new(key: &'static str, message: impl Into<String>) -> TargetError {
        TargetError {
            key,
            message: message.into(),
        }
    }
}

/// A target ready to scan, checked as every target is (configured or imported): its URL, its
/// token (`token_env` must be set in `env`), its checks, the file's policy defaults. Its `url`
/// is still the URL as written: the caller redacts it with the secrets of every target.
pub fn spec_of(
    t: &TargetConfig,
    d: &Defaults,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TargetSpec, TargetError> {
    Target::http(&t.url).map_err(|e| TargetError::new("url", e.to_string()))?;
    let token = match &t.token_env {
        Some(var) => match env(var).filter(|v| !v.is_empty()) {
            Some(v) => Some(SecretString::from(v)),
            None => {
                return Err(TargetError::new(
                    "token_env",
                    format!("the environment variable {var} is not set"),
                ));
            }
        },
        None => None,
    };
    let (only, skip) = match (&t.checks, &t.skip_checks) {
        (None, None) => (d.checks.clone(), d.skip_checks.clone()),
        (o, s) => (o.clone(), s.clone()),
    };
    let checks = Selection::new(
        only.as_deref().unwrap_or_default(),
        skip.as_deref().unwrap_or_default(),
    )
    .map_err(|e| TargetError::new("checks", e.to_string()))?;
    let every_ms = super::ms(t.every);
    let suppressions: Vec<Suppression> = d
        .suppress
        .iter()
        .chain(t.suppress.iter())
        .cloned()
        .collect();
    Ok(TargetSpec {
        name: t.name.clone(),
        url: t.url.clone(),
        scan_url: SecretString::from(t.url.clone()),
        every_ms,
        offset_ms: schedule::offset_ms(&t.name, every_ms),
        policy: Policy {
            fail_on: t.fail_on.or(d.fail_on).unwrap_or(FailOn::High).severity(),
            min_confidence: t
                .min_confidence
                .or(d.min_confidence)
                .unwrap_or(Confidence::Low),
        },
        token,
        checks,
        review: Review {
            severities: d.severity.clone(),
            suppressions,
            previous: None,
        },
        allow_private_addresses: t.allow_private_addresses,
    })
}

/// The secrets of `targets`: each one's URL query values and token.
pub(crate) fn secret_sources(targets: &[TargetSpec]) -> Vec<SecretSource> {
    let mut sources = Vec::new();
    for t in targets {
        sources.push(SecretSource::Url(t.scan_url.expose_secret().to_string()));
        sources.extend(
            t.token
                .iter()
                .map(|v| SecretSource::Token(v.expose_secret().to_string())),
        );
    }
    sources
}

/// The targets a daemon schedules and shows at one moment, with the secrets of them all.
#[derive(Debug, Clone)]
pub struct TargetSet {
    /// The configuration's targets (in the file's order), then the imported ones (by name).
    pub targets: Vec<TargetSpec>,
    /// Every secret of the configuration and of the imported targets (their tokens and URL
    /// query values, the API token): redacted from every run stored and every log line.
    pub secrets: Secrets,
    /// The imported targets this daemon does not schedule, with why (redacted).
    pub skipped: Vec<(String, String)>,
    by_name: HashMap<String, usize>,
}

impl TargetSet {
    /// The configuration's targets alone.
    pub fn configured(config: &DaemonConfig) -> TargetSet {
        TargetSet::new(config.targets.clone(), config.secrets.clone(), Vec::new())
    }

    fn new(targets: Vec<TargetSpec>, secrets: Secrets, skipped: Vec<(String, String)>) -> Self {
        let by_name = targets
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        TargetSet {
            targets,
            secrets,
            skipped,
            by_name,
        }
    }

    /// The configuration's targets merged by name with `imported` (the configuration wins),
    /// each imported one checked as a configured one; those that fail are left out (in
    /// `skipped`).
    pub fn merged(config: &DaemonConfig, imported: &[ImportedTarget]) -> TargetSet {
        let configured: HashSet<&str> = config.targets.iter().map(|t| t.name.as_str()).collect();
        let mut extra = Vec::new();
        let mut failed: Vec<(String, String)> = Vec::new();
        // Every imported URL's secrets, those of the targets that fail too (their errors may
        // show them).
        let mut sources = Vec::new();
        for it in imported {
            if configured.contains(it.name.as_str()) {
                continue;
            }
            // The URL as stored, even when the rest does not read (an error may quote it).
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&it.spec)
                && let Some(Value::String(url)) = m.get("url")
            {
                sources.push(SecretSource::Url(url.clone()));
            }
            let loaded = serde_json::from_str::<TargetConfig>(&it.spec)
                .map_err(|e| format!("its stored spec does not read: {}", message_of(&e)))
                .and_then(|t| {
                    spec_of(&t, &config.defaults, &|v| config.env.get(v)).map_err(|e| e.to_string())
                });
            match loaded {
                Ok(spec) => extra.push(spec),
                Err(why) => failed.push((it.name.clone(), why)),
            }
        }
        sources.extend(secret_sources(&config.targets));
        sources.extend(secret_sources(&extra));
        sources.extend(
            config
                .api_token
                .iter()
                .map(|v| SecretSource::Other(secrecy::ExposeSecret::expose_secret(v).to_string())),
        );
        if let Some(d) = &config.database {
            let url = secrecy::ExposeSecret::expose_secret(&d.url).to_string();
            sources.push(SecretSource::Url(url.clone()));
            sources.push(SecretSource::Other(url));
        }
        let secrets = Secrets::from_sources(&sources);
        let mut targets = config.targets.clone();
        if let Some(every) = config.every_override {
            for t in &mut extra {
                t.every_ms = every;
                t.offset_ms = schedule::offset_ms(&t.name, every);
            }
        }
        extra.sort_by(|a, b| a.name.cmp(&b.name));
        targets.extend(extra);
        for t in &mut targets {
            t.url = secrets.redact(&t.url);
        }
        let skipped = failed
            .into_iter()
            .map(|(name, why)| (name, secrets.redact(&why)))
            .collect();
        TargetSet::new(targets, secrets, skipped)
    }

    pub fn get(&self, name: &str) -> Option<&TargetSpec> {
        self.by_name.get(name).and_then(|i| self.targets.get(*i))
    }
}

/// The daemon's current [`TargetSet`], read again from the store at most every
/// [`REFRESH_MS`] (or at once after [`LiveTargets::invalidate`]); shared by the scheduler and
/// the status API.
pub struct LiveTargets {
    config: Arc<DaemonConfig>,
    set: RwLock<Arc<TargetSet>>,
    /// One reading at a time; when it was, and what it read (a list read the same is not
    /// checked again).
    refresh: tokio::sync::Mutex<Refreshed>,
    stale: AtomicBool,
    changed: tokio::sync::Notify,
}

#[derive(Default)]
struct Refreshed {
    at_ms: Option<i64>,
    imported: Vec<ImportedTarget>,
}

impl LiveTargets {
    pub fn new(config: Arc<DaemonConfig>) -> LiveTargets {
        LiveTargets {
            set: RwLock::new(Arc::new(TargetSet::configured(&config))),
            config,
            refresh: tokio::sync::Mutex::new(Refreshed::default()),
            stale: AtomicBool::new(true),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// The set as last read (no store access).
    pub fn last(&self) -> Arc<TargetSet> {
        match self.set.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The set, read again from `store` when the last reading is [`REFRESH_MS`] old (by the
    /// daemon's clock, `now_ms`) or was invalidated. A store that cannot answer keeps the last
    /// set (logged): it never stops the daemon.
    pub async fn current(&self, store: &Arc<dyn Store>, now_ms: i64) -> Arc<TargetSet> {
        let mut r = self.refresh.lock().await;
        let stale = self.stale.swap(false, Ordering::SeqCst);
        let due = r
            .at_ms
            .is_none_or(|at| now_ms - at >= REFRESH_MS || now_ms < at);
        if !stale && !due {
            return self.last();
        }
        let first = r.at_ms.is_none();
        r.at_ms = Some(now_ms);
        let imported = match db(store, |s| s.imported_targets()).await {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!(target: "mcpprobe::daemon", "the imported targets could not be read (the last list stays): {e}");
                return self.last();
            }
        };
        if !first && imported == r.imported {
            return self.last();
        }
        let config = self.config.clone();
        let list = imported.clone();
        let set = match tokio::task::spawn_blocking(move || TargetSet::merged(&config, &list)).await
        {
            Ok(s) => Arc::new(s),
            Err(e) => {
                tracing::warn!(target: "mcpprobe::daemon", "the imported targets could not be loaded (the last list stays): {e}");
                return self.last();
            }
        };
        r.imported = imported;
        // The logs redact the new secrets before anything about the new targets is logged.
        self.config.log_secrets.set(set.secrets.clone());
        let before: HashSet<(String, String)> = self.last().skipped.iter().cloned().collect();
        for (name, why) in &set.skipped {
            if first || !before.contains(&(name.clone(), why.clone())) {
                tracing::warn!(target: "mcpprobe::daemon", target_name = %name, "imported target {name} is not scheduled: {why}");
            }
        }
        match self.set.write() {
            Ok(mut s) => *s = set.clone(),
            Err(poisoned) => *poisoned.into_inner() = set.clone(),
        }
        set
    }

    /// Reads the store again at the next [`LiveTargets::current`], and wakes the scheduler
    /// (an import or a removal through this daemon's API).
    pub fn invalidate(&self) {
        self.stale.store(true, Ordering::SeqCst);
        self.changed.notify_one();
    }

    /// Returns once [`LiveTargets::invalidate`] was called (at once if it was since the last
    /// wait).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

impl super::Daemon {
    /// The targets the scheduler runs now: the configuration's merged with the imported ones
    /// (read again at most every [`REFRESH_MS`]), with the secrets of them all.
    pub async fn current_targets(&self) -> Arc<TargetSet> {
        self.targets
            .current(&self.store, now_ms(&self.scanner))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(text: &str) -> Result<Vec<ImportedTarget>, ImportError> {
        parse(text, Path::new("fleet.toml"), Format::Toml, MAX_IMPORT)
    }

    fn jsonl_of(text: &str) -> Result<Vec<ImportedTarget>, ImportError> {
        parse(text, Path::new("fleet.jsonl"), Format::Jsonl, MAX_IMPORT)
    }

    /// (line, index, key, message) of an invalid import.
    fn invalid(
        r: Result<Vec<ImportedTarget>, ImportError>,
    ) -> (usize, Option<usize>, Option<String>, String) {
        match r {
            Err(ImportError::Invalid {
                line,
                index,
                key,
                message,
                ..
            }) => (line, index, key, message),
            other => panic!("not an invalid import: {other:?}"),
        }
    }

    #[test]
    fn the_same_target_in_toml_jsonl_and_json_has_one_spec() {
        let t = toml(
            "[[targets]]\nname = \"a\"\nurl = \"https://mcp.example.com/mcp\"\nevery = \"1h\"\ntoken_env = \"A_TOKEN\"\n\n[[targets.suppress]]\ncheck = \"AUTH-01\"\nreason = \"behind the VPN\"\nuntil = 2030-01-01\n",
        )
        .expect("valid");
        let j = jsonl_of(
            "{\"every\":\"1h\",\"url\":\"https://mcp.example.com/mcp\",\"name\":\"a\",\"token_env\":\"A_TOKEN\",\"fail_on\":null,\"suppress\":[{\"reason\":\"behind the VPN\",\"check\":\"AUTH-01\",\"until\":\"2030-01-01\"}]}\n",
        )
        .expect("valid");
        let a = parse(
            "[\n  {\"name\":\"a\",\"url\":\"https://mcp.example.com/mcp\",\"every\":\"1h\",\"token_env\":\"A_TOKEN\",\n   \"suppress\":[{\"check\":\"AUTH-01\",\"reason\":\"behind the VPN\",\"until\":\"2030-01-01\"}]}\n]\n",
            Path::new("fleet.json"),
            Format::Json,
            MAX_IMPORT,
        )
        .expect("valid");
        assert_eq!(t, j);
        assert_eq!(t, a);
        assert_eq!(t[0].every_ms, 3_600_000);
        assert!(
            t[0].spec.contains("\"token_env\":\"A_TOKEN\""),
            "{}",
            t[0].spec
        );
        // The stored spec reads back as the target.
        let back: TargetConfig = serde_json::from_str(&t[0].spec).expect("reads");
        assert_eq!(back.suppress.len(), 1);
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        // TOML: the key's line, as in mcpprobe.toml.
        let (line, index, key, message) = invalid(toml(
            "[[targets]]\nname = \"a\"\nurl = \"https://a.example/mcp\"\nevery = \"1h\"\n\n[[targets]]\nname = \"b\"\nurl = \"https://b.example/mcp\"\nevery = \"5s\"\n",
        ));
        assert_eq!(
            (line, index, key.as_deref()),
            (9, Some(1), Some("targets[1].every"))
        );
        assert!(message.contains("between 30s"), "{message}");
        // An unknown key (a token written in the file is one).
        let (line, _, key, _) = invalid(toml(
            "[[targets]]\nname = \"a\"\nurl = \"https://a.example/mcp\"\nevery = \"1h\"\ntoken = \"x\"\n",
        ));
        assert_eq!((line, key.as_deref()), (5, Some("targets[0].token")));
        // Another top-level key.
        let (line, _, key, _) = invalid(toml("listen = \"127.0.0.1:1\"\n"));
        assert_eq!((line, key.as_deref()), (1, Some("listen")));
        // A URL the scanner cannot use: the target's header line.
        let (line, _, key, _) = invalid(toml(
            "\n[[targets]]\nname = \"a\"\nurl = \"ftp://a.example/\"\nevery = \"1h\"\n",
        ));
        assert_eq!((line, key.as_deref()), (2, Some("targets[0].url")));
        // JSONL: the line (blank lines counted), the key.
        let (line, index, key, _) = invalid(jsonl_of(
            "{\"name\":\"a\",\"url\":\"https://a.example/mcp\",\"every\":\"1h\"}\n\n{\"name\":\"b\",\"url\":\"https://b.example/mcp\",\"every\":\"1h\",\"fail_on\":\"loud\"}\n",
        ));
        assert_eq!((line, index, key.as_deref()), (3, Some(1), Some("fail_on")));
        let (line, _, key, _) = invalid(jsonl_of("{\"name\":\"a\",\"every\":\"1h\"}\n"));
        assert_eq!((line, key.as_deref()), (1, Some("url")));
        let (line, _, key, _) = invalid(jsonl_of(
            "{\"name\":\"a\",\"url\":\"https://a.example/mcp\",\"every\":\"1h\"}\n{\"name\":\n",
        ));
        assert_eq!((line, key), (2, None));
        let (line, _, key, message) = invalid(jsonl_of(
            "{\"name\":\"a\",\"url\":\"https://a.example/mcp\",\"every\":\"1h\"}\n{\"name\":\"a\",\"url\":\"https://a.example/mcp\",\"every\":\"2h\"}\n",
        ));
        assert_eq!((line, key.as_deref()), (2, Some("name")));
        assert!(message.contains("first on line 1"), "{message}");
        // A JSON array: the element's index and key, and the line of the error.
        let (line, index, key, _) = invalid(parse(
            "[\n{\"name\":\"a\",\"url\":\"https://a.example/mcp\",\"every\":\"1h\"},\n{\"name\":\"b c\",\n \"url\":\"https://b.example/mcp\",\"every\":\"1h\"}\n]",
            Path::new("body"),
            Format::Json,
            MAX_IMPORT,
        ));
        assert_eq!(
            (line, index, key.as_deref()),
            (3, Some(1), Some("[1].name"))
        );
        let (line, index, key, _) = invalid(parse(
            "[\n{\"name\":\"a\",\"url\":\"https://a.example/mcp\",\"every\":\"1h\"},\n{\"name\":\"b\",\n \"url\":\"nope\",\"every\":\"1h\"}\n]",
            Path::new("body"),
            Format::Json,
            MAX_IMPORT,
        ));
        assert_eq!((line, index, key.as_deref()), (3, Some(1), Some("[1].url")));
    }

    #[test]
    fn too_many_targets_are_refused_whole() {
        let line = |i: usize| {
            format!("{{\"name\":\"t{i}\",\"url\":\"https://a.example/mcp\",\"every\":\"1h\"}}\n")
        };
        let text: String = (0..4).map(line).collect();
        assert_eq!(
            parse(&text, Path::new("x.jsonl"), Format::Jsonl, 4)
                .map(|v| v.len())
                .ok(),
            Some(4)
        );
        assert!(matches!(
            parse(&text, Path::new("x.jsonl"), Format::Jsonl, 3),
            Err(ImportError::TooMany {
                count: 4,
                max: 3,
                ..
            })
        ));
        assert!(matches!(
            parse_body(vec![b' '; MAX_BODY_BYTES + 1]),
            Err(ImportError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_url_with_a_query_secret_is_shown_redacted() {
        let t = jsonl_of(
            "{\"name\":\"a\",\"url\":\"https://a.example/mcp?api_key=imp0rtedKey-77&x=1\",\"every\":\"1h\"}\n",
        )
        .expect("valid");
        assert_eq!(t[0].url, "https://a.example/mcp?api_key=[REDACTED]&x=1");
    }

    fn daemon_config(text: &str, env: &'static [(&'static str, &'static str)]) -> DaemonConfig {
        let config = Config::parse(text, Path::new("mcpprobe.toml")).expect("valid");
        let lookup = move |v: &str| {
            env.iter()
                .find(|(k, _)| *k == v)
                .map(|(_, t)| t.to_string())
        };
        DaemonConfig::new(&config, lookup, PathBuf::from("/tmp/state"))
            .expect("valid")
            .with_env(lookup)
    }

    #[test]
    fn the_configuration_wins_by_name_and_a_target_that_fails_is_left_out() {
        let d = daemon_config(
            "fail_on = \"critical\"\nskip_checks = [\"AUTH-01\"]\n[[targets]]\nname = \"both\"\nurl = \"https://config.example/mcp\"\nevery = \"1h\"\n",
            &[("IMP", "imported-token-4455")],
        );
        let imported = [
            ("both", "{\"name\":\"both\",\"url\":\"https://import.example/mcp\",\"every\":\"2h\"}"),
            ("ok", "{\"name\":\"ok\",\"url\":\"https://ok.example/mcp?key=qu3rySecret-1\",\"every\":\"2h\",\"token_env\":\"IMP\"}"),
            ("unset", "{\"name\":\"unset\",\"url\":\"https://unset.example/mcp?sig=unsetSecret-2\",\"every\":\"2h\",\"token_env\":\"NOT_SET\"}"),
        ]
        .map(|(name, json)| {
            let mut t = jsonl_of(json).expect("valid").remove(0);
            assert_eq!(t.name, name);
            t.url = "shown".into();
            t
        });
        let set = TargetSet::merged(&d, &imported);
        let names: Vec<&str> = set.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["both", "ok"]);
        let both = set.get("both").expect("listed");
        assert_eq!(both.url, "https://config.example/mcp", "the file's");
        assert_eq!(both.every_ms, 3_600_000);
        let ok = set.get("ok").expect("listed");
        // The file's defaults apply to an imported target.
        assert_eq!(ok.policy.fail_on, Some(crate::finding::Severity::Critical));
        assert!(!ok.checks.includes("AUTH-01"));
        assert_eq!(ok.url, "https://ok.example/mcp?key=[REDACTED]");
        assert_eq!(
            ok.scan_url.expose_secret(),
            "https://ok.example/mcp?key=qu3rySecret-1"
        );
        // Its token and URL secrets, and those of the target left out, are redacted.
        assert_eq!(
            set.secrets
                .redact("imported-token-4455 qu3rySecret-1 unsetSecret-2"),
            "[REDACTED] [REDACTED] [REDACTED]"
        );
        assert_eq!(set.skipped.len(), 1);
        assert_eq!(set.skipped[0].0, "unset");
        assert!(
            set.skipped[0].1.contains("NOT_SET is not set"),
            "{:?}",
            set.skipped
        );
    }
}
