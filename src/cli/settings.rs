//! What `scan` and `check` take from `mcpprobe.toml` and their flags (flags win), and how the
//! report they produce is judged and rendered: policy, suppressions, `--fail-on-new`, the SARIF
//! artifact and the invocation.

use std::path::{Path, PathBuf};

use crate::cli::{ConfigArgs, OutputArgs};
use crate::config::{Config, DEFAULT_FILE};
use crate::finding::Confidence;
use crate::model::{FailOn, Policy};
use crate::report::{Artifact, RenderOptions};
use crate::review::{PreviousReport, Review};

/// The configuration in use, and where it came from.
pub struct Loaded {
    pub config: Config,
    pub path: Option<PathBuf>,
}

/// `--config FILE`, else `./mcpprobe.toml` when it exists (not with `--no-config`).
pub fn load(args: &ConfigArgs) -> Result<Loaded, String> {
    let path = match (&args.config, args.no_config) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => Some(PathBuf::from(DEFAULT_FILE)).filter(|p| p.is_file()),
    };
    let config = match &path {
        Some(p) => Config::load(p).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    Ok(Loaded { config, path })
}

/// [`load`], and the [`Review`] of the file and `--fail-on-new`.
pub fn load_reviewed(args: &ConfigArgs) -> Result<(Loaded, Review), String> {
    let loaded = load(args)?;
    let review = loaded.review(args)?;
    Ok((loaded, review))
}

impl Loaded {
    /// Flags win over the file; the file over the built-in defaults.
    pub fn policy(&self, output: &OutputArgs) -> Policy {
        Policy {
            fail_on: output
                .fail_on
                .or(self.config.fail_on)
                .unwrap_or(FailOn::High)
                .severity(),
            min_confidence: output
                .min_confidence
                .or(self.config.min_confidence)
                .unwrap_or(Confidence::Low),
        }
    }

    /// The configuration's severities and suppressions, and the previous report.
    pub fn review(&self, args: &ConfigArgs) -> Result<Review, String> {
        let previous = args
            .fail_on_new
            .as_deref()
            .map(PreviousReport::load)
            .transpose()
            .map_err(|e| e.to_string())?;
        Ok(Review {
            severities: self.config.severity.clone(),
            suppressions: self.config.suppress.clone(),
            previous,
        })
    }
}

/// The largest artifact read to find the lines that name tools.
const MAX_ARTIFACT_BYTES: u64 = 16 * 1024 * 1024;

/// `path` as code scanning wants it: relative to the working folder (the checkout, in the
/// Action), `/`-separated; a file outside the working folder as an absolute `file://` URI.
fn repo_uri(path: &Path) -> String {
    let rel = std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf());
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            std::path::Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    if rel.is_absolute() {
        url::Url::from_file_path(&rel)
            .map(|u| u.to_string())
            .unwrap_or_else(|()| format!("file:///{}", parts.join("/")))
    } else {
        parts.join("/")
    }
}

/// The file SARIF results point at: the first of `candidates` that is given, read for its
/// lines; `fallback` (the target) when none is.
pub fn artifact(candidates: &[Option<&Path>], fallback: &str) -> Artifact {
    use std::io::Read as _;
    match candidates.iter().flatten().next() {
        Some(path) => {
            let mut text = String::new();
            let read = std::fs::File::open(path)
                .and_then(|f| f.take(MAX_ARTIFACT_BYTES).read_to_string(&mut text));
            Artifact {
                uri: repo_uri(path),
                text: read.ok().map(|_| text),
            }
        }
        None => Artifact::named(fallback),
    }
}

/// The command line, with the values of secret flags (`--token`, `--header`) replaced.
pub fn invocation(argv: impl IntoIterator<Item = String>) -> String {
    // A judge command's arguments may hold its model's key.
    const SECRET: [&str; 4] = ["--token", "--header", "-H", "--judge-command"];
    let mut out = Vec::new();
    let mut hide_next = false;
    for (i, arg) in argv.into_iter().enumerate() {
        let shown = if i == 0 {
            Path::new(&arg)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or(arg)
        } else if std::mem::take(&mut hide_next) {
            "[REDACTED]".to_string()
        } else if SECRET.contains(&arg.as_str()) {
            hide_next = true;
            arg
        } else if let Some(flag) = SECRET.iter().find(|f| {
            arg.starts_with(&format!("{f}="))
                || (**f == "-H" && arg.len() > 2 && arg.starts_with("-H"))
        }) {
            format!("{flag}=[REDACTED]")
        } else if arg.contains("://") {
            // Userinfo and the query's secret values (SPEC §7) are not shown.
            crate::net::redact::Secrets::from_sources(&[crate::net::redact::Source::Url(
                arg.clone(),
            )])
            .redact(&crate::net::scope::shown_url_str(&arg))
        } else {
            arg
        };
        out.push(quote(&shown));
    }
    out.join(" ")
}

fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+[]".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Render options for a report.
pub fn render_options(artifact: Artifact, color: bool) -> RenderOptions {
    RenderOptions {
        artifact,
        color,
        invocation: Some(invocation(
            std::env::args_os().map(|a| a.to_string_lossy().into_owned()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocations_hide_secrets() {
        let argv = [
            "/usr/bin/mcpprobe",
            "scan",
            "https://u:pw@h.example/mcp?api_key=qk1234&format=json",
            "--token",
            "s3cret",
            "-H",
            "X-Key: k1",
            "--header=X-Other: k2",
            "-HX-Third: k3",
        ]
        .map(String::from);
        let line = invocation(argv);
        for secret in ["s3cret", "k1", "k2", "k3", "pw", "qk1234"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
        assert!(line.contains("format=json"), "{line}");
        assert!(line.starts_with("mcpprobe scan "), "{line}");
    }

    #[test]
    fn uris_are_relative_and_slashed() {
        assert_eq!(repo_uri(Path::new("./mcpprobe.toml")), "mcpprobe.toml");
        assert_eq!(repo_uri(Path::new("a/./b.json")), "a/b.json");
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(repo_uri(&cwd.join("x/y.json")), "x/y.json");
        assert_eq!(
            repo_uri(Path::new("/elsewhere/a b.json")),
            "file:///elsewhere/a%20b.json"
        );
    }
}
