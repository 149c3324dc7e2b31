//! `mcpprobe.toml` (SPEC §4.1 and §8): scan defaults, checks enabled or disabled, severities
//! changed per check or rule, suppressions, and the daemon's keys, in one file that the CLI, the
//! daemon and the Action share. Parsing is pure: a host reads the file and says where it came
//! from; every error names that file, the line and the key (exit 64 in the CLI).
//!
//! The JSON Schema editors use is `schema/mcpprobe-config.schema.json`; a test keeps it and
//! these types in step.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::finding::{Confidence, Severity};
use crate::model::FailOn;
use crate::review::Suppression;

/// The file a host looks for in the working folder when `--config` is not given.
pub const DEFAULT_FILE: &str = "mcpprobe.toml";

/// The largest configuration file read (a config is a few kilobytes; this is a guard).
pub const MAX_BYTES: u64 = 1024 * 1024;

/// A configuration that could not be used: which file, where in it, which key, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: larger than {MAX_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("{}:{line}:{column}: {}{message}", path.display(), key.as_deref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        /// The dotted path of the key (`suppress[1].reason`), when the error is about one.
        key: Option<String>,
        message: String,
    },
}

/// `mcpprobe.toml`. Unknown keys are errors everywhere in it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Exit 1 at or above this severity (`--fail-on`).
    pub fail_on: Option<FailOn>,
    /// Requests per second (`--rate`, at most 10).
    #[serde(default, deserialize_with = "rate")]
    pub rate: Option<u32>,
    /// Leave out findings below this confidence (`--min-confidence`).
    pub min_confidence: Option<Confidence>,
    /// Only these checks (`--checks`).
    #[serde(default, deserialize_with = "check_ids")]
    pub checks: Option<Vec<String>>,
    /// Not these checks (`--skip-checks`).
    #[serde(default, deserialize_with = "check_ids")]
    pub skip_checks: Option<Vec<String>>,
    /// A severity per check (`"META-03"`) or per rule (`"META-03/C5"`).
    #[serde(default, deserialize_with = "severities")]
    pub severity: Vec<SeverityOverride>,
    /// Reviewed exceptions (SPEC §4.1).
    #[serde(default)]
    pub suppress: Vec<Suppression>,

    // The daemon's keys (SPEC §8); the scan command ignores them.
    /// The status endpoint's address (default 127.0.0.1:9464).
    pub listen: Option<String>,
    pub max_concurrent_scans: Option<u32>,
    /// Runs kept per target (default 200); older ones are deleted, the accepted baseline's
    /// and each target's latest aside.
    pub keep_runs: Option<u64>,
    /// Days a run is kept (default 90).
    pub keep_days: Option<u32>,
    /// Default: the state folder of SPEC §1.2.
    pub state_dir: Option<PathBuf>,
    /// The environment variable holding the bearer token of the status endpoint (required when
    /// `listen` is not loopback).
    pub api_token_env: Option<String>,
    /// The environment variable holding a PostgreSQL URL: the store a fleet of daemons shares
    /// (without it, the SQLite file in the state folder). The URL never appears in a log, a
    /// page or an error.
    pub database_url_env: Option<String>,
    #[serde(default)]
    pub targets: Vec<TargetConfig>,
    /// Where keys were written, for errors found after parsing (the daemon's checks).
    #[serde(skip)]
    pub lines: KeyLines,
}

/// The lines of a file's top-level keys and its `[[targets]]` and `[[suppress]]` headers.
#[derive(Debug, Clone, Default)]
pub struct KeyLines {
    pub path: PathBuf,
    top: Vec<(String, usize)>,
    targets: Vec<usize>,
    /// The top-level `[[suppress]]` headers.
    suppress: Vec<usize>,
}

impl KeyLines {
    /// The lines of the parsed document's keys, from the spans `toml` keeps: a key written in
    /// a multi-line string is no key, a dotted key (`severity."META-03" = …`) is its first
    /// part's, a `[[targets]]` entry is its header's.
    fn of(table: &toml::Spanned<toml::de::DeTable<'_>>, text: &str, path: &Path) -> KeyLines {
        let line = |span: std::ops::Range<usize>| line_column(text, span.start).0;
        let headers = |key: &str| -> Vec<usize> {
            table
                .get_ref()
                .get(key)
                .and_then(|v| v.get_ref().as_array())
                .map(|a| a.iter().map(|e| line(e.span())).collect())
                .unwrap_or_default()
        };
        KeyLines {
            path: path.to_path_buf(),
            top: table
                .get_ref()
                .iter()
                .map(|(k, _)| (k.get_ref().to_string(), line(k.span())))
                .collect(),
            targets: headers("targets"),
            suppress: headers("suppress"),
        }
    }

    /// The line of top-level `key`, else 1.
    pub fn top(&self, key: &str) -> usize {
        self.top
            .iter()
            .find(|(k, _)| k == key)
            .map_or(1, |(_, l)| *l)
    }

    /// The line of the `index`th `[[targets]]` header, else 1.
    pub fn target(&self, index: usize) -> usize {
        self.targets.get(index).copied().unwrap_or(1)
    }

    /// The line of the entry a dotted key is in (`suppress[1].rule`: the second `[[suppress]]`
    /// header; `targets[0]…`: the first `[[targets]]` header; `rate`: its line), else 1.
    pub fn of_key(&self, key: &str) -> usize {
        let index = |prefix: &str| -> Option<usize> {
            key.strip_prefix(prefix)?.split(']').next()?.parse().ok()
        };
        if let Some(i) = index("suppress[") {
            return self.suppress.get(i).copied().unwrap_or(1);
        }
        if let Some(i) = index("targets[") {
            return self.target(i);
        }
        self.top(key.split(['.', '[']).next().unwrap_or(key))
    }

    /// An error about `key` at `line` of this file.
    pub fn error(
        &self,
        line: usize,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> ConfigFileError {
        ConfigFileError::Invalid {
            path: self.path.clone(),
            line,
            column: 1,
            key: Some(key.into()),
            message: message.into(),
        }
    }
}

pub use crate::review::SeverityOverride;

/// One target of the daemon (SPEC §8).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// Used in URLs (`/targets/NAME/report`): letters, digits, `-` and `_`.
    #[serde(deserialize_with = "target_name")]
    pub name: String,
    pub url: String,
    /// How often: `"30s"`, `"15m"`, `"1h"`, `"24h"`, `"7d"`.
    #[serde(deserialize_with = "interval")]
    pub every: Duration,
    pub fail_on: Option<FailOn>,
    pub min_confidence: Option<Confidence>,
    /// The environment variable the bearer token comes from (never the token itself).
    pub token_env: Option<String>,
    /// `--allow-private-addresses` for this target: its name may resolve to addresses that
    /// are not public (SPEC §7). Off by default: such a run is refused (`private_address`).
    #[serde(default)]
    pub allow_private_addresses: bool,
    #[serde(default, deserialize_with = "check_ids")]
    pub checks: Option<Vec<String>>,
    #[serde(default, deserialize_with = "check_ids")]
    pub skip_checks: Option<Vec<String>>,
    /// Suppressions for this target only, beside the file's top-level ones.
    #[serde(default)]
    pub suppress: Vec<Suppression>,
}

impl Config {
    /// Parses `text`, read from `path` (named in every error).
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigFileError> {
        let at = |span: Option<std::ops::Range<usize>>, key: Option<String>, message: String| {
            let (line, column) = line_column(text, span.map(|s| s.start).unwrap_or(0));
            ConfigFileError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                key,
                message,
            }
        };
        let table = toml::de::DeTable::parse(text)
            .map_err(|e| at(e.span(), None, format!("not valid TOML: {}", e.message())))?;
        let lines = KeyLines::of(&table, text, path);
        let de = toml::de::Deserializer::from(table);
        let mut config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = key_of(&e.path().to_string(), e.inner().message());
            let message = e.inner().message().to_string();
            let entry = lines.of_key(key.as_deref().unwrap_or_default());
            let spanned = e.inner().span().map(|s| line_column(text, s.start));
            match spanned {
                Some((line, _)) if line >= entry => at(e.inner().span(), key, message),
                // An entry checked as a whole (a suppression's rule against its check) gets no
                // span, or one before the entry: its header's line, not the top of the file.
                _ => lines.error(entry, key.unwrap_or_default(), message),
            }
        })?;
        // Each suppression remembers where it was written, so warnings can name it.
        config.lines = lines;
        for (i, s) in config.suppress.iter_mut().enumerate() {
            s.source = Some(source_of(path, config.lines.suppress.get(i).copied()));
        }
        let mut seen = BTreeSet::new();
        for (i, t) in config.targets.iter().enumerate() {
            if !seen.insert(t.name.as_str()) {
                return Err(config.lines.error(
                    config.lines.target(i),
                    format!("targets[{i}].name"),
                    format!("two targets are named {:?}", t.name),
                ));
            }
        }
        Ok(config)
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigFileError> {
        use std::io::Read as _;
        let read = |source| ConfigFileError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read)?;
        let mut bytes = Vec::new();
        file.take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(ConfigFileError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let (line, column) = line_column_bytes(e.as_bytes(), e.utf8_error().valid_up_to());
            ConfigFileError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                key: None,
                message: "not UTF-8".into(),
            }
        })?;
        Config::parse(&text, path)
    }
}

/// The 1-based line and column of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    line_column_bytes(text.as_bytes(), offset)
}

fn line_column_bytes(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (line, before.len() - start + 1)
}

/// The key an error is about: serde's path, plus the field a "missing field" or "unknown field"
/// message names.
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

fn source_of(path: &Path, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{}:{l}", path.display()),
        None => path.display().to_string(),
    }
}

fn rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let r = u32::deserialize(d)?;
    if r == 0 || r > crate::net::MAX_RATE {
        return Err(serde::de::Error::custom(format!(
            "rate must be 1 to {} requests per second, not {r}",
            crate::net::MAX_RATE
        )));
    }
    Ok(Some(r))
}

pub(crate) use crate::review::{known_check, known_rule};

fn check_ids<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let ids = Vec::<String>::deserialize(d)?;
    ids.iter()
        .map(|id| known_check(id))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
        .map_err(serde::de::Error::custom)
}

fn severities<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<SeverityOverride>, D::Error> {
    let map = std::collections::BTreeMap::<String, Severity>::deserialize(d)?;
    map.into_iter()
        .map(|(key, severity)| {
            let (check, rule) = match key.split_once('/') {
                Some((c, r)) => (c, Some(r)),
                None => (key.as_str(), None),
            };
            let check = known_check(check).map_err(|e| format!("severity.{key:?}: {e}"))?;
            let rule = rule
                .map(|r| known_rule(&check, r))
                .transpose()
                .map_err(|e| format!("severity.{key:?}: {e}"))?;
            Ok(SeverityOverride {
                check,
                rule,
                severity,
            })
        })
        .collect::<Result<_, String>>()
        .map_err(serde::de::Error::custom)
}

fn target_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let name = String::deserialize(d)?;
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(name)
    } else {
        Err(serde::de::Error::custom(format!(
            "target name {name:?} must be 1 to 64 letters, digits, `-` or `_` (it is used in URLs)"
        )))
    }
}

/// Parses an interval: a whole number and one of `s`, `m`, `h`, `d` (`"30s"`, `"24h"`, `"7d"`).
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let bad = || format!("interval {s:?} is not a number and one of s, m, h, d (\"15m\", \"24h\")");
    let split = s.len().checked_sub(1).ok_or_else(bad)?;
    let (n, unit) = s.split_at_checked(split).ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60).ok_or_else(bad)?,
        "h" => n.checked_mul(3600).ok_or_else(bad)?,
        "d" => n.checked_mul(86_400).ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if !(30..=366 * 86_400).contains(&secs) {
        return Err(format!("interval {s:?} must be between 30s and 366d"));
    }
    Ok(Duration::from_secs(secs))
}

fn interval<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    parse_interval(&s).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigFileError> {
        Config::parse(text, Path::new("mcpprobe.toml"))
    }

    fn invalid(text: &str) -> (usize, Option<String>, String) {
        match parse(text) {
            Err(ConfigFileError::Invalid {
                line, key, message, ..
            }) => (line, key, message),
            other => panic!("expected an invalid config, got {other:?}"),
        }
    }

    #[test]
    fn a_full_file_parses() {
        let c = parse(
            r#"
fail_on = "medium"
rate = 3
min_confidence = "medium"
skip_checks = ["trans-03"]
[severity]
"META-03" = "low"
"META-03/C5" = "high"

[[suppress]]
check = "META-03"
rule = "C5"
tool = "fetch_url"
reason = "validated server-side"
until = "2027-03-01"

[[targets]]
name = "prod"
url = "https://mcp.example.com/mcp"
every = "24h"
token_env = "PROD_MCP_TOKEN"
"#,
        )
        .expect("valid");
        assert_eq!(c.fail_on, Some(FailOn::Medium));
        assert_eq!(c.rate, Some(3));
        assert_eq!(
            c.skip_checks.as_deref(),
            Some(&["TRANS-03".to_string()][..])
        );
        assert_eq!(c.severity.len(), 2);
        assert_eq!(c.suppress[0].source.as_deref(), Some("mcpprobe.toml:10"));
        assert_eq!(c.targets[0].every, Duration::from_secs(86_400));
    }

    #[test]
    fn errors_name_line_and_key() {
        let (line, key, msg) =
            invalid("rate = 2\n[[suppress]]\ncheck = \"META-03\"\nreson = \"x\"\n");
        assert_eq!(line, 4, "{msg}");
        assert_eq!(key.as_deref(), Some("suppress[0].reson"), "{msg}");
        let (line, key, msg) = invalid("\n[[suppress]]\ncheck = \"META-03\"\n");
        assert_eq!(key.as_deref(), Some("suppress[0].reason"), "{msg}");
        assert!(line >= 2, "{line}");
        let (line, key, _) = invalid("fail_on = \"high\"\nrate = 50\n");
        assert_eq!((line, key.as_deref()), (2, Some("rate")));
        let (_, key, msg) = invalid("[severity]\n\"META-03/Z9\" = \"low\"\n");
        assert_eq!(key.as_deref(), Some("severity"));
        assert!(msg.contains("no rule \"Z9\""), "{msg}");
        // Checked on the field: the reason's own line and key.
        let (line, key, msg) =
            invalid("rate = 2\n[[suppress]]\ncheck = \"META-03\"\nreason = \" \"\n");
        assert_eq!(
            (line, key.as_deref()),
            (4, Some("suppress[0].reason")),
            "{msg}"
        );
        assert!(msg.contains("`reason` must say why"), "{msg}");
        // Checked on the entry (a rule against its check): the entry's header line.
        let (line, key, msg) = invalid(
            "[[suppress]]\ncheck = \"META-03\"\nreason = \"r\"\n\n[[suppress]]\ncheck = \"META-03\"\nrule = \"Z9\"\nreason = \"r\"\n",
        );
        assert_eq!((line, key.as_deref()), (5, Some("suppress[1]")), "{msg}");
        assert!(msg.contains("no rule \"Z9\""), "{msg}");
        let (line, _, msg) = invalid("rate = 2\n\n[severity]\n\"META-03/Z9\" = \"low\"\n");
        assert_eq!(line, 3, "{msg}");
        let (line, _, msg) = invalid("fail_on = \n");
        assert_eq!(line, 1);
        assert!(msg.starts_with("not valid TOML"), "{msg}");
    }

    #[test]
    fn a_multi_line_string_is_no_key_or_header() {
        // The string holds text that reads like a header and a key: neither is one.
        let text = "state_dir = \"\"\"\n/var/lib\n[[suppress]]\nlisten = \"x\"\n\"\"\"\nlisten = \"127.0.0.1:9464\"\n\n[[suppress]]\ncheck = \"META-03\"\nreason = \"\"\"\nmany\n[[suppress]]\nlines\"\"\"\n\n[[suppress]]\ncheck = \"META-03\"\nrule = \"Z9\"\nreason = \"r\"\n";
        let (line, key, msg) = invalid(text);
        assert_eq!((line, key.as_deref()), (15, Some("suppress[1]")), "{msg}");
        assert!(msg.contains("no rule \"Z9\""), "{msg}");
        let fixed = text.replace("rule = \"Z9\"\n", "");
        let c = parse(&fixed).expect("valid");
        assert_eq!(c.lines.top("listen"), 6);
        assert_eq!(c.lines.top("state_dir"), 1);
        let sources: Vec<_> = c.suppress.iter().map(|s| s.source.clone()).collect();
        assert_eq!(
            sources,
            [
                Some("mcpprobe.toml:8".to_string()),
                Some("mcpprobe.toml:15".to_string())
            ]
        );
    }

    #[test]
    fn a_dotted_key_is_on_its_own_line() {
        let (line, key, msg) = invalid("rate = 2\n\nseverity.\"META-03/Z9\" = \"low\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("severity")), "{msg}");
        assert!(msg.contains("no rule \"Z9\""), "{msg}");
        let c = parse("rate = 2\n\nseverity.\"META-03\" = \"low\"\nlisten = \"127.0.0.1:1\"\n")
            .expect("valid");
        assert_eq!((c.lines.top("severity"), c.lines.top("listen")), (3, 4));
        assert_eq!(c.severity.len(), 1);
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_interval("7d"), Ok(Duration::from_secs(604_800)));
        for bad in [
            "",
            "m",
            "10",
            "5s",
            "1w",
            "-1h",
            "99999999999999999999d",
            "1.5h",
        ] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
