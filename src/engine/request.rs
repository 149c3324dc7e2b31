//! What a host asks the engine to do: plain data, validated when it is built, no clap type.

use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use crate::gate::{HttpTarget, TargetError};
pub use crate::net::redact::Source as SecretSource;

/// A secret the user passed (a token, a header value, a stdio server's environment value, a
/// daemon target's URL): secrecy's string, never in `Debug`, zeroed on drop, read only through
/// [`ExposeSecret`] where it is sent.
pub use secrecy::{ExposeSecret, SecretString};

/// What to scan.
#[derive(Debug, Clone)]
pub enum Target {
    /// An HTTP(S) MCP endpoint.
    Http(Url),
    /// A stdio server mcpprobe starts itself: the program, its arguments and its whole
    /// environment (nothing else of the host's environment reaches it; see [`stdio_env`]).
    Stdio {
        program: String,
        args: Vec<String>,
        /// `(name, value)`; values are redacted in `Debug` (they may be the server's keys).
        env: Vec<(String, SecretString)>,
    },
}

/// What a stdio server always gets from the host's environment.
pub const STDIO_BASE_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];
/// Never passed to a stdio server, even when named with `--env`.
pub const STDIO_REFUSED_ENV: [&str; 1] = ["MCPPROBE_TOKEN"];

/// Whether `name` may be passed to a stdio server (`Err` says why not).
fn check_env_name(name: &str) -> Result<(), ConfigError> {
    let bad = |reason: &str| {
        Err(ConfigError::Env {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if STDIO_REFUSED_ENV.contains(&name) {
        return bad("mcpprobe's own token is never passed to the server");
    }
    if name.is_empty() || name.bytes().any(|b| b == b'=' || b == 0) {
        return bad("not an environment variable name");
    }
    Ok(())
}

/// The environment of a stdio server: [`STDIO_BASE_ENV`] and `names`, with the values `lookup`
/// finds (the host reads its environment; the engine never does). A name `lookup` does not
/// find is left out; `MCPPROBE_TOKEN` is refused.
pub fn stdio_env<S: AsRef<str>>(
    names: &[S],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, SecretString)>, ConfigError> {
    let mut env: Vec<(String, SecretString)> = Vec::new();
    let wanted = STDIO_BASE_ENV
        .iter()
        .copied()
        .chain(names.iter().map(AsRef::as_ref));
    for name in wanted {
        check_env_name(name)?;
        if env.iter().any(|(n, _)| n == name) {
            continue;
        }
        if let Some(value) = lookup(name) {
            env.push((name.to_string(), SecretString::from(value)));
        }
    }
    Ok(env)
}

impl Target {
    /// An HTTP(S) target; anything else is a configuration error.
    pub fn http(raw: &str) -> Result<Target, ConfigError> {
        Ok(Target::Http(HttpTarget::parse(raw)?.url))
    }

    /// A stdio target from a command line (program first), with an empty environment.
    pub fn stdio(command: &[String]) -> Result<Target, ConfigError> {
        Target::stdio_with_env(command, Vec::new())
    }

    /// A stdio target whose server sees exactly `env` (build it with [`stdio_env`]).
    pub fn stdio_with_env(
        command: &[String],
        env: Vec<(String, SecretString)>,
    ) -> Result<Target, ConfigError> {
        let (program, args) = command.split_first().ok_or(ConfigError::EmptyCommand)?;
        if program.is_empty() {
            return Err(ConfigError::EmptyCommand);
        }
        for (name, _) in &env {
            check_env_name(name)?;
        }
        Ok(Target::Stdio {
            program: program.clone(),
            args: args.to_vec(),
            env,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Http(u) => f.write_str(u.as_str()),
            Target::Stdio { program, args, .. } => {
                f.write_str(program)?;
                for a in args {
                    write!(f, " {a}")?;
                }
                Ok(())
            }
        }
    }
}

/// The user's credentials for the target. Only credentialed clients send them; the anonymous
/// view of AUTH-01 never does.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<SecretString>,
    /// Extra headers, `(name, value)`.
    pub headers: Vec<(String, SecretString)>,
}

impl Credentials {
    pub fn is_empty(&self) -> bool {
        self.token.is_none() && self.headers.is_empty()
    }

    /// Parses `Name: value` (the CLI's `--header`).
    pub fn parse_header(raw: &str) -> Result<(String, SecretString), ConfigError> {
        let bad = |reason: &str| ConfigError::Header {
            name: raw.split(':').next().unwrap_or_default().trim().to_string(),
            reason: reason.to_string(),
        };
        let (name, value) = raw
            .split_once(':')
            .ok_or_else(|| bad("not `Name: value`"))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
        {
            return Err(bad("not a header name"));
        }
        let value = value.trim();
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(bad("the value holds a line break"));
        }
        Ok((name.to_string(), SecretString::from(value)))
    }
}

/// Caps of one scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Requests per second of this scan (1..=10); the process's per-host rate also applies.
    pub rate: u32,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    pub max_body: usize,
    /// The longest a whole scan may take.
    pub scan_cap: Duration,
}

impl ScanLimits {
    /// Every limit within what a scan can keep (a host may build these from any input).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let hour = Duration::from_secs(3600);
        let bad = |what: &str| Err(ConfigError::Limits(what.to_string()));
        if self.connect_timeout.is_zero() || self.connect_timeout > hour {
            return bad("the connect timeout must be between 1 ms and 1 hour");
        }
        if self.response_timeout.is_zero() || self.response_timeout > hour {
            return bad("the response timeout must be between 1 ms and 1 hour");
        }
        if self.scan_cap.is_zero() || self.scan_cap > 24 * hour {
            return bad("the whole-scan cap must be between 1 ms and 24 hours");
        }
        if self.max_body == 0 || self.max_body > 256 * 1024 * 1024 {
            return bad("the body cap must be between 1 byte and 256 MiB");
        }
        Ok(())
    }
}

impl Default for ScanLimits {
    fn default() -> Self {
        let net = crate::net::Limits::default();
        ScanLimits {
            rate: crate::net::DEFAULT_RATE,
            connect_timeout: net.connect_timeout,
            response_timeout: net.response_timeout,
            max_body: net.max_body,
            scan_cap: Duration::from_secs(180),
        }
    }
}

pub use crate::catalogue::{Selection, UnknownCheck, check_id};
pub use crate::permit::ActiveRequest;

/// `--baseline FILE` (and `--update-baseline`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineRequest {
    pub path: PathBuf,
    /// Accept the current state as the new baseline.
    pub update: bool,
}

/// One scan, as a host asks for it.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    pub target: Target,
    pub credentials: Credentials,
    pub checks: Selection,
    pub limits: ScanLimits,
    /// Whether AUTH-03 may send its one GET to the advertised authorization server.
    pub follow_authorization_server: bool,
    /// `--allow-private-addresses`: a host name may resolve to loopback beside other
    /// addresses, private, link-local, … addresses (SPEC §7); refused (exit 2) otherwise.
    pub allow_private_addresses: bool,
    pub active: Option<ActiveRequest>,
    /// Tools never called (`--exclude-tool`).
    pub exclude_tools: Vec<String>,
    pub baseline: Option<BaselineRequest>,
    /// A baseline the host keeps itself (the daemon's accepted state); not with `baseline`.
    pub stored_baseline: Option<StoredBaseline>,
    /// Write every request and response (redacted) as JSON lines.
    pub trace_file: Option<PathBuf>,
    /// The META-01 judge (SPEC §12); off when `None`. It runs after the sessions are closed,
    /// and its total budget is added to the whole-scan cap.
    pub judge: Option<crate::judge::JudgeConfig>,
    /// Secrets the host holds beyond the target and the credentials (`MCPPROBE_TOKEN` when
    /// `--token` won, the daemon's other tokens): redacted like them (SPEC §7).
    pub secrets: Vec<SecretSource>,
    /// Return the inventory read in [`crate::engine::Scanned::inventory`] (discovery's rules
    /// across servers read it).
    pub keep_inventory: bool,
    /// Contact the target only at loopback addresses (see [`crate::gate::AddressRule::LoopbackOnly`]).
    pub loopback_only: bool,
}

impl ScanRequest {
    /// The gate's rule for the addresses of a host name ([`ScanRequest::allow_private_addresses`]).
    pub fn address_rule(&self) -> crate::gate::AddressRule {
        if self.loopback_only {
            crate::gate::AddressRule::LoopbackOnly
        } else if self.allow_private_addresses {
            crate::gate::AddressRule::AllowPrivate
        } else {
            crate::gate::AddressRule::PublicOnly
        }
    }

    /// A passive scan of `target` with the defaults: every check, 5 requests per second.
    pub fn new(target: Target) -> ScanRequest {
        ScanRequest {
            target,
            credentials: Credentials::default(),
            checks: Selection::all(),
            limits: ScanLimits::default(),
            follow_authorization_server: true,
            allow_private_addresses: false,
            active: None,
            exclude_tools: Vec::new(),
            baseline: None,
            stored_baseline: None,
            trace_file: None,
            judge: None,
            secrets: Vec::new(),
            keep_inventory: false,
            loopback_only: false,
        }
    }

    /// Every secret this request hands over (SPEC §7, "Secrets never leave"): the token, each
    /// header, the values passed to a stdio server (not [`STDIO_BASE_ENV`]), the target URL's
    /// query values, and [`ScanRequest::secrets`]. The engine builds its one redaction set
    /// from these before the first request.
    pub fn secret_sources(&self) -> Vec<SecretSource> {
        let mut out = match &self.target {
            Target::Http(url) => vec![SecretSource::Url(url.as_str().to_string())],
            Target::Stdio { env, .. } => env
                .iter()
                .filter(|(n, _)| !STDIO_BASE_ENV.contains(&n.as_str()))
                .map(|(name, value)| SecretSource::Env {
                    name: name.clone(),
                    value: value.expose_secret().to_string(),
                })
                .collect(),
        };
        out.extend(
            self.credentials
                .token
                .iter()
                .map(|t| SecretSource::Token(t.expose_secret().to_string())),
        );
        out.extend(
            self.credentials
                .headers
                .iter()
                .map(|(name, value)| SecretSource::Header {
                    name: name.clone(),
                    value: value.expose_secret().to_string(),
                }),
        );
        out.extend(self.secrets.iter().cloned());
        out
    }
}

/// A pinned state a host stores itself: the scan compares with `old` (a first pin when `None`)
/// and returns what it observed ([`crate::engine::Scanned`]); it writes no file.
#[derive(Debug, Clone)]
pub struct StoredBaseline {
    /// How reports name it ("the accepted baseline of target prod").
    pub label: String,
    pub old: Option<crate::baseline::Baseline>,
}

/// A configuration error: the scan was not started (exit 64). Everything else that can go
/// wrong in a scan is an outcome in its report.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("a scan compares with one baseline: a file or a stored one, not both")]
    TwoBaselines,
    #[error("--stdio needs a command after --")]
    EmptyCommand,
    #[error("--env {name:?}: {reason}")]
    Env { name: String, reason: String },
    #[error("--header {name:?}: {reason}")]
    Header { name: String, reason: String },
    #[error(transparent)]
    Rate(#[from] crate::net::RateError),
    #[error("scan limits refused: {0}")]
    Limits(String),
    #[error("judge budgets refused: {0}")]
    JudgeLimits(String),
    #[error(transparent)]
    JudgeCommand(#[from] crate::judge::command::CommandError),
    #[error("{}", crate::catalogue::unknown_check(id, suggestion.as_deref()))]
    UnknownCheck {
        id: String,
        suggestion: Option<String>,
    },
    #[error("the DNS resolver cannot be set up: {0}")]
    Resolver(#[from] crate::net::dns::DnsSetupError),
    #[error(transparent)]
    Network(#[from] crate::net::NetworkError),
    #[error(transparent)]
    State(#[from] crate::gate::state::StateError),
    #[error(transparent)]
    Baseline(#[from] crate::baseline::BaselineError),
}

impl From<UnknownCheck> for ConfigError {
    fn from(e: UnknownCheck) -> ConfigError {
        ConfigError::UnknownCheck {
            id: e.id,
            suggestion: e.suggestion,
        }
    }
}
