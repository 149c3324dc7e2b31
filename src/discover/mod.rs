//! Discovery (issue 26): the MCP servers this machine's clients run, read from their
//! configuration files, and scanned together ([`scan`]).
//!
//! - [`locations`]: where each client keeps its file, per platform and scope;
//! - [`parse`]: one file → its servers (JSON with comments, YAML, TOML; each client's layout);
//! - this module: the servers as values, the variables they reference, and the secrets written
//!   inline (found, named by file and key, never shown);
//! - [`scan`]: scanning what was found within the gate's rules, and the cross-server rules.
//!
//! Nothing here reads the environment: the host gives the folders ([`Places`]) and, when
//! scanning, the values of the variables the user allowed.

pub mod jsonc;
pub mod locations;
pub mod parse;
pub mod scan;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

pub use locations::{Candidate, Client, Layout, Places, Platform, Scope};

use crate::engine::{ExposeSecret, SecretString};
use crate::finding::Finding;
use crate::rules::text::words;

/// Files read in all (Continue's block folders can hold many).
pub const MAX_FILES: usize = 64;

/// A string of a configuration: its text, kept secret (an `env` value may be a key), and the
/// variables it references (`${VAR}`, `${env:VAR}`, `$VAR`, `%VAR%`) and the other
/// placeholders (`${input:id}`, `${workspaceFolder}`).
#[derive(Clone)]
pub struct ConfigValue {
    text: SecretString,
    /// Environment variables it references.
    pub refs: Vec<String>,
    /// Other placeholders a client fills in itself (VS Code's inputs and variables).
    pub placeholders: Vec<String>,
}

impl std::fmt::Debug for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigValue")
            .field("refs", &self.refs)
            .field("placeholders", &self.placeholders)
            .finish_non_exhaustive()
    }
}

static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    // Continue's `${{ secrets.NAME }}` first: a placeholder the client fills in. `${VAR}`,
    // `${env:VAR}` and `${VAR:-default}` anywhere; a bare `$VAR` or `%VAR%` only as the whole
    // value (inside other text, as in `pa$Word9`, it is the text itself).
    Regex::new(concat!(
        r"\$\{\{\s*(?P<cont>[^}]*?)\s*\}\}",
        r"|\$\{(?:env:)?(?P<env>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<def>[^}]*))?\}",
        r"|\$\{(?P<ph>[^}]*)\}",
        r"|^\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)$",
        r"|^%(?P<pct>[A-Za-z_][A-Za-z0-9_]*)%$",
    ))
    .unwrap_or_else(|e| panic!("the reference pattern compiles: {e}"))
});

/// VS Code's predefined variables: filled by the client, not environment variables.
const PREDEFINED: &[&str] = &[
    "workspaceFolder",
    "workspaceFolderBasename",
    "userHome",
    "pathSeparator",
    "cwd",
];

impl ConfigValue {
    pub fn new(text: &str) -> ConfigValue {
        let mut refs: Vec<String> = Vec::new();
        let mut placeholders: Vec<String> = Vec::new();
        for c in REFERENCE.captures_iter(text) {
            let env = c
                .name("env")
                .or(c.name("bare"))
                .or(c.name("pct"))
                .map(|m| m.as_str());
            match (env, c.name("cont").or(c.name("ph"))) {
                (Some(n), _) if PREDEFINED.contains(&n) => placeholders.push(n.to_string()),
                (Some(n), _) => refs.push(n.to_string()),
                (None, Some(p)) => placeholders.push(p.as_str().to_string()),
                (None, None) => {}
            }
        }
        refs.dedup();
        ConfigValue {
            text: SecretString::from(text.to_string()),
            refs,
            placeholders,
        }
    }

    /// Written out in the file, with nothing to fill in.
    pub fn is_literal(&self) -> bool {
        self.refs.is_empty() && self.placeholders.is_empty()
    }

    /// The text as written (only to pass it on, never to show it).
    pub fn expose(&self) -> &str {
        self.text.expose_secret()
    }

    /// The value with its references filled in from `lookup` and `${workspaceFolder}` from
    /// `project`; `Err` names what cannot be filled (an input the client asks the user for, a
    /// variable that is not set).
    pub fn resolve(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        project: Option<&Path>,
    ) -> Result<String, String> {
        let text = self.expose();
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for c in REFERENCE.captures_iter(text) {
            let Some(whole) = c.get(0) else { continue };
            out.push_str(&text[last..whole.start()]);
            last = whole.end();
            let env = c
                .name("env")
                .or(c.name("bare"))
                .or(c.name("pct"))
                .map(|m| m.as_str());
            let default = c.name("def").map(|m| m.as_str());
            match (env, c.name("cont").or(c.name("ph")).map(|m| m.as_str())) {
                (Some("workspaceFolder" | "cwd"), _) => match project {
                    Some(p) => out.push_str(&p.display().to_string()),
                    None => return Err("`${workspaceFolder}` needs a project folder".into()),
                },
                (Some(n), _) if PREDEFINED.contains(&n) => {
                    return Err(format!("`${{{n}}}` is filled in by the client"));
                }
                (Some(n), _) => match (lookup(n), default) {
                    (Some(v), _) => out.push_str(&v),
                    (None, Some(d)) => out.push_str(d),
                    (None, None) => return Err(format!("the variable {n} is not set")),
                },
                (None, Some(p)) => {
                    return Err(format!("`${{{p}}}` is asked of the user by the client"));
                }
                (None, None) => out.push_str(whole.as_str()),
            }
        }
        out.push_str(&text[last..]);
        Ok(out)
    }
}

/// A named string of an entry: an environment variable or a header.
#[derive(Debug, Clone)]
pub struct Named {
    pub name: String,
    /// Its JSON Pointer in the file.
    pub pointer: String,
    pub value: ConfigValue,
}

/// How a client starts or reaches a server. Its `Debug` shows no argument and no URL as
/// written (they may hold secrets).
#[derive(Clone)]
pub enum Launch {
    Stdio {
        command: String,
        args: Vec<String>,
        args_pointer: String,
        env: Vec<Named>,
        cwd: Option<String>,
    },
    Remote {
        url: String,
        url_pointer: String,
        /// `http`, `sse`, `streamable-http`… as the file says (absent: the client guesses).
        transport: Option<String>,
        headers: Vec<Named>,
    },
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Launch::Stdio {
                command, args, env, ..
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &args.len())
                .field("env", env)
                .finish_non_exhaustive(),
            Launch::Remote {
                url,
                transport,
                headers,
                ..
            } => f
                .debug_struct("Remote")
                .field("url", &shown_url(url))
                .field("transport", transport)
                .field("headers", headers)
                .finish_non_exhaustive(),
        }
    }
}

/// What [`parse`] read of one file.
#[derive(Debug, Default)]
pub struct ParsedFile {
    pub servers: Vec<ParsedServer>,
    /// Entries that could not be read, each with its pointer and why (at most
    /// [`parse::MAX_PROBLEMS`]).
    pub problems: Vec<String>,
    /// Problems beyond those kept.
    pub dropped: usize,
    /// More than [`parse::MAX_SERVERS`] servers: the rest were not read.
    pub truncated: bool,
}

#[derive(Debug)]
pub struct ParsedServer {
    pub name: String,
    pub pointer: String,
    pub launch: Launch,
    pub disabled: bool,
}

/// A secret written in a configuration: where, never what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InlineSecret {
    pub pointer: String,
    /// The variable, header or argument that holds it.
    pub key: String,
    /// Why it reads as a secret ("the name says token; 40 characters").
    pub why: String,
}

/// A server some client runs.
#[derive(Debug, Clone)]
pub struct Server {
    pub client: Client,
    pub scope: Scope,
    pub file: PathBuf,
    pub name: String,
    pub pointer: String,
    pub launch: Launch,
    pub disabled: bool,
    pub secrets: Vec<InlineSecret>,
}

/// How one file was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigRecord {
    pub client: Client,
    pub scope: Scope,
    pub path: String,
    /// `read`, or `unreadable` with `error`.
    pub status: &'static str,
    pub servers: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Everything found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub configs: Vec<ConfigRecord>,
    pub servers: Vec<Server>,
    /// Files searched that do not exist.
    pub absent: usize,
}

/// Reads every documented file of `places` that exists, and every `given` file (which must).
pub fn discover(places: &Places, given: &[PathBuf]) -> Discovery {
    let mut list = locations::candidates(places);
    list.extend(locations::continue_blocks(places, MAX_FILES));
    list.extend(given.iter().map(|p| Candidate {
        client: Client::Other,
        scope: Scope::Given,
        path: p.clone(),
        layout: Layout::Detect,
    }));
    let mut out = Discovery::default();
    let mut seen: Vec<PathBuf> = Vec::new();
    for c in list {
        if c.scope != Scope::Given && !c.path.is_file() {
            out.absent += 1;
            continue;
        }
        // One file named twice (a project folder that is also home, a given file that is also
        // a known one) is read once, as the first name found.
        let canonical = std::fs::canonicalize(&c.path).unwrap_or_else(|_| c.path.clone());
        if seen.contains(&canonical) {
            continue;
        }
        seen.push(canonical);
        if out.configs.len() >= MAX_FILES {
            // Listed, not dropped: the user sees what was left unread.
            out.configs.push(ConfigRecord {
                client: c.client,
                scope: c.scope,
                path: c.path.display().to_string(),
                status: "unreadable",
                servers: 0,
                error: Some(format!("not read: more than {MAX_FILES} client files")),
                problems: Vec::new(),
            });
            continue;
        }
        read_one(&c, &mut out);
    }
    out
}

fn read_one(c: &Candidate, out: &mut Discovery) {
    let path = c.path.display().to_string();
    match parse::read(&c.path, c.layout) {
        Err(e) => out.configs.push(ConfigRecord {
            client: c.client,
            scope: c.scope,
            path,
            status: "unreadable",
            servers: 0,
            error: Some(e.to_string()),
            problems: Vec::new(),
        }),
        Ok(parsed) => {
            out.configs.push(ConfigRecord {
                client: c.client,
                scope: c.scope,
                path,
                status: "read",
                servers: parsed.servers.len(),
                error: None,
                problems: {
                    let mut p = parsed.problems;
                    if parsed.dropped > 0 {
                        p.push(format!("… and {} more entries not read", parsed.dropped));
                    }
                    p
                },
            });
            for s in parsed.servers {
                let secrets = inline_secrets(&s.launch);
                out.servers.push(Server {
                    client: c.client,
                    scope: c.scope,
                    file: c.path.clone(),
                    name: s.name,
                    pointer: s.pointer,
                    launch: s.launch,
                    disabled: s.disabled,
                    secrets,
                });
            }
        }
    }
}

/// Whether a name (of a variable, header, flag or query key) says it holds a secret.
pub fn secret_name(name: &str) -> bool {
    let w = words(name);
    let has = |x: &str| w.iter().any(|y| y == x);
    if has("public") {
        return false;
    }
    [
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pat",
        "credential",
        "credentials",
        "apikey",
        "authorization",
        "cookie",
        "auth",
    ]
    .iter()
    .any(|k| has(k))
        || (has("key")
            && (has("api") || has("access") || has("private") || has("secret") || has("signing")))
}

/// Whether a literal value is a placeholder left for the user ("<your token>", "YOUR_KEY",
/// "xxxx", "changeme"), or too short to be a secret.
fn placeholder(v: &str) -> bool {
    let l = v.trim().to_ascii_lowercase();
    let mut chars = l.chars();
    let first = chars.next();
    l.chars().count() < 8
        || chars.all(|c| Some(c) == first)
        || [
            "your",
            "xxx",
            "<",
            "placeholder",
            "changeme",
            "change-me",
            "example",
            "replace",
            "***",
            "...",
            "todo",
            "dummy",
        ]
        .iter()
        .any(|p| l.contains(p))
}

fn looks_like_credential(v: &str) -> Option<&'static str> {
    crate::rules::server_card::credential_format(v)
}

fn named_secret(n: &Named) -> Option<InlineSecret> {
    if !n.value.is_literal() {
        return None;
    }
    let v = n.value.expose();
    let by_format = looks_like_credential(v);
    let by_name = secret_name(&n.name) && !placeholder(v);
    let why = match (by_format, by_name) {
        (Some(f), _) => format!("looks like {f}"),
        (None, true) => "its name says it is a secret".to_string(),
        (None, false) => return None,
    };
    Some(InlineSecret {
        pointer: n.pointer.clone(),
        key: n.name.clone(),
        why: format!(
            "{why}; {} characters written in the file",
            v.chars().count()
        ),
    })
}

/// The secrets an entry writes inline: literal values of secret-named variables and headers,
/// values in a known credential format anywhere (arguments too), a secret flag's value
/// (`--api-key VALUE`, `--token=VALUE`), a URL's password or secret query value.
pub fn inline_secrets(launch: &Launch) -> Vec<InlineSecret> {
    let mut out = Vec::new();
    match launch {
        Launch::Stdio {
            args,
            args_pointer,
            env,
            ..
        } => {
            out.extend(env.iter().filter_map(named_secret));
            for i in secret_args(args) {
                let arg = &args[i];
                let prev = i
                    .checked_sub(1)
                    .and_then(|p| args.get(p))
                    .map(String::as_str);
                out.push(InlineSecret {
                    pointer: format!("{args_pointer}/{i}"),
                    key: format!("argument {}", i + 1),
                    why: format!(
                        "{}; {} characters written in the file",
                        secret_arg(arg, prev).unwrap_or_default(),
                        secret_part(arg).chars().count()
                    ),
                });
            }
        }
        Launch::Remote {
            url,
            url_pointer,
            headers,
            ..
        } => {
            out.extend(headers.iter().filter_map(named_secret));
            out.extend(url_secrets(url).into_iter().map(|(key, why)| InlineSecret {
                pointer: url_pointer.clone(),
                key,
                why,
            }));
        }
    }
    out
}

/// The part of an argument that is its secret: the value of `NAME=VALUE` or `Name: value` when
/// the name says secret, else the whole argument.
fn secret_part(arg: &str) -> &str {
    fn named<'a>((n, v): (&str, &'a str)) -> Option<&'a str> {
        let n = n.trim().trim_start_matches('-');
        (!n.is_empty() && !n.contains(' ') && secret_name(n)).then_some(v.trim())
    }
    arg.split_once('=')
        .and_then(named)
        .or_else(|| arg.split_once(':').and_then(named))
        .unwrap_or(arg)
}

/// Why one argument (after `prev`) holds a secret literally, if it does: a known credential
/// format; `--token=VALUE`, `DB_PASSWORD=VALUE` or `X-Api-Key: VALUE` with a secret name; the
/// value after a secret flag (`--api-key VALUE`); a URL with a password or a secret query value.
fn secret_arg(arg: &str, prev: Option<&str>) -> Option<String> {
    if !ConfigValue::new(arg).is_literal() {
        return None;
    }
    if let Some(f) = looks_like_credential(arg) {
        return Some(format!("looks like {f}"));
    }
    let part = secret_part(arg);
    if part.len() < arg.len() && !placeholder(part) && ConfigValue::new(part).is_literal() {
        return Some("the value of a secret-named setting".into());
    }
    let flag =
        |p: &str| p.starts_with('-') && !p.contains('=') && secret_name(p.trim_start_matches('-'));
    if !arg.starts_with('-') && prev.is_some_and(flag) && !placeholder(arg) {
        return Some("the value of a secret flag".into());
    }
    if arg.contains("://")
        && let Some(why) = url_secrets(arg).into_iter().next()
    {
        return Some(why.1);
    }
    None
}

/// The indexes of arguments that hold a secret literally.
pub fn secret_args(args: &[String]) -> Vec<usize> {
    (0..args.len())
        .filter(|&i| {
            let prev = i
                .checked_sub(1)
                .and_then(|p| args.get(p))
                .map(String::as_str);
            args.get(i).is_some_and(|a| secret_arg(a, prev).is_some())
        })
        .collect()
}

/// The secrets a URL holds: (what, why) for its user name in a credential format, its password,
/// a path segment in a credential format, each secret query value.
fn url_secrets(url: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(u) = url::Url::parse(url) else {
        return out;
    };
    if looks_like_credential(u.username()).is_some() {
        out.push((
            "the URL's user name".into(),
            "a credential as the URL's user name".into(),
        ));
    }
    if u.password().is_some_and(|p| !p.is_empty()) {
        out.push((
            "the URL's password".into(),
            "a password written in the URL".into(),
        ));
    }
    if u.path_segments()
        .is_some_and(|mut segs| segs.any(|seg| looks_like_credential(seg).is_some()))
    {
        out.push((
            "the URL's path".into(),
            "a credential in the URL's path".into(),
        ));
    }
    for (k, v) in u.query_pairs() {
        let v = ConfigValue::new(&v);
        if v.is_literal()
            && ((secret_name(&k) && !placeholder(v.expose()))
                || looks_like_credential(v.expose()).is_some())
        {
            out.push((
                format!(
                    "the URL's `{}` query value",
                    crate::rules::text::visible(&k)
                ),
                format!(
                    "{} characters written in the file",
                    v.expose().chars().count()
                ),
            ));
        }
    }
    out
}

impl Server {
    /// `stdio`, or the transport a remote entry names (`http` when it names none).
    pub fn kind(&self) -> &str {
        match &self.launch {
            Launch::Stdio { .. } => "stdio",
            Launch::Remote { transport, .. } => match transport.as_deref() {
                Some(t) if t.contains("sse") => "sse",
                _ => "http",
            },
        }
    }

    /// The command line as it may be shown: arguments holding a secret replaced.
    pub fn command_line(&self) -> Option<Vec<String>> {
        let Launch::Stdio { command, args, .. } = &self.launch else {
            return None;
        };
        let hidden = secret_args(args);
        let mut out = vec![command.clone()];
        out.extend(args.iter().enumerate().map(|(i, a)| {
            if hidden.contains(&i) {
                "[redacted]".to_string()
            } else if a.contains("://") && url::Url::parse(a).is_ok() {
                // A URL argument (mcp-remote's, say) shows as a URL: no password or query.
                shown_url(a)
            } else {
                a.clone()
            }
        }));
        Some(out)
    }

    /// The URL as it may be shown: its password and every query value replaced.
    pub fn shown_url(&self) -> Option<String> {
        let Launch::Remote { url, .. } = &self.launch else {
            return None;
        };
        Some(shown_url(url))
    }

    /// Every variable the entry references, with where.
    pub fn references(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut add = |v: &ConfigValue, ptr: &str| {
            for r in v.refs.iter().chain(&v.placeholders) {
                out.push((r.clone(), ptr.to_string()));
            }
        };
        match &self.launch {
            Launch::Stdio {
                args,
                args_pointer,
                env,
                ..
            } => {
                for (i, a) in args.iter().enumerate() {
                    add(&ConfigValue::new(a), &format!("{args_pointer}/{i}"));
                }
                for n in env {
                    add(&n.value, &n.pointer);
                }
            }
            Launch::Remote {
                url,
                url_pointer,
                headers,
                ..
            } => {
                add(&ConfigValue::new(url), url_pointer);
                for n in headers {
                    add(&n.value, &n.pointer);
                }
            }
        }
        out
    }

    /// What makes two entries the same server (the same launch in two clients' files): the
    /// command, arguments and environment, or the URL and headers; hashed, never shown.
    pub fn launch_key(&self) -> String {
        use sha2::{Digest as _, Sha256};
        let mut h = Sha256::new();
        let mut put = |s: &str| {
            h.update(s.as_bytes());
            h.update([0u8]);
        };
        match &self.launch {
            Launch::Stdio {
                command,
                args,
                env,
                cwd,
                ..
            } => {
                put("stdio");
                put(command);
                args.iter().for_each(|a| put(a));
                put("env");
                for n in env {
                    put(&n.name);
                    put(n.value.expose());
                }
                put(cwd.as_deref().unwrap_or(""));
            }
            Launch::Remote { url, headers, .. } => {
                put("remote");
                put(url);
                for n in headers {
                    put(&n.name);
                    put(n.value.expose());
                }
            }
        }
        hex::encode(h.finalize())
    }

    /// This server's inline secrets as findings (META-03 C12): the file and key, never the value.
    pub fn secret_findings(&self) -> Vec<Finding> {
        self.secrets
            .iter()
            .map(|s| {
                crate::rules::capabilities::inline_secret_finding()
                    .pointer(s.pointer.clone())
                    .server(self.name.clone())
                    .message(format!(
                        "{} of server `{}` in {} holds a secret written in the file ({})",
                        s.key,
                        crate::rules::text::visible(&self.name),
                        self.file.display(),
                        s.why
                    ))
                    .text(format!("{}#{}", self.file.display(), s.pointer))
                    .build()
            })
            .collect()
    }
}

impl Server {
    /// What this entry writes that must never be shown: secret-looking variables and headers,
    /// secret arguments, the URL's password and query values (redacted from every output).
    pub fn secret_sources(&self) -> Vec<crate::engine::SecretSource> {
        use crate::engine::SecretSource;
        let mut out = Vec::new();
        let named = |n: &Named| {
            named_secret(n).map(|_| SecretSource::Env {
                name: n.name.clone(),
                value: n.value.expose().to_string(),
            })
        };
        match &self.launch {
            Launch::Stdio { args, env, .. } => {
                out.extend(env.iter().filter_map(named));
                out.extend(
                    secret_args(args)
                        .into_iter()
                        .filter_map(|i| args.get(i))
                        .map(|a| SecretSource::Other(secret_part(a).to_string())),
                );
            }
            Launch::Remote { url, headers, .. } => {
                out.push(SecretSource::Url(url.clone()));
                out.extend(headers.iter().filter_map(named));
            }
        }
        out
    }
}

/// A URL with its password and query values replaced (a URL's query may carry a key).
pub fn shown_url(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        return "[a URL that does not parse]".into();
    };
    if u.password().is_some() {
        let _ = u.set_password(Some("redacted"));
    }
    if !u.username().is_empty() {
        let _ = u.set_username("redacted");
    }
    let segments: Option<Vec<String>> = u.path_segments().map(|segs| {
        segs.map(|seg| {
            if looks_like_credential(seg).is_some() {
                "redacted".to_string()
            } else {
                seg.to_string()
            }
        })
        .collect()
    });
    if let Some(segs) = segments
        && let Ok(mut path) = u.path_segments_mut()
    {
        path.clear().extend(segs.iter().map(String::as_str));
    }
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, _)| (k.into_owned(), "redacted".to_string()))
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string()
}

impl Discovery {
    /// Every inline secret as a finding.
    pub fn findings(&self) -> Vec<Finding> {
        self.servers
            .iter()
            .flat_map(Server::secret_findings)
            .collect()
    }

    /// The listing `mcpprobe discover` prints and `discover --format json` writes: every file,
    /// every server (values never shown), the inline secrets.
    pub fn listing(&self) -> Listing {
        Listing {
            version: 1,
            configs: self.configs.clone(),
            servers: self.servers.iter().map(ServerView::of).collect(),
            findings: self.findings(),
            absent: self.absent,
        }
    }
}

/// [`Discovery::listing`].
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    pub version: u32,
    pub configs: Vec<ConfigRecord>,
    pub servers: Vec<ServerView>,
    pub findings: Vec<Finding>,
    /// Documented files that do not exist on this machine.
    pub absent: usize,
}

/// A server as it may be shown: where it is configured, how it starts, which variables it
/// names (never their values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerView {
    pub client: Client,
    pub scope: Scope,
    pub file: String,
    pub name: String,
    pub pointer: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The variables (`env`) or headers the entry sets, by name.
    pub env: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// Variables and placeholders referenced, with where.
    pub references: Vec<Reference>,
    pub disabled: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inline_secrets: Vec<InlineSecret>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reference {
    pub name: String,
    pub pointer: String,
}

impl ServerView {
    pub fn of(s: &Server) -> ServerView {
        let (env, headers) = match &s.launch {
            Launch::Stdio { env, .. } => (env.iter().map(|n| n.name.clone()).collect(), Vec::new()),
            Launch::Remote { headers, .. } => {
                (Vec::new(), headers.iter().map(|n| n.name.clone()).collect())
            }
        };
        ServerView {
            client: s.client,
            scope: s.scope,
            file: s.file.display().to_string(),
            name: s.name.clone(),
            pointer: s.pointer.clone(),
            kind: s.kind().to_string(),
            command: s.command_line(),
            url: s.shown_url(),
            env,
            headers,
            references: s
                .references()
                .into_iter()
                .map(|(name, pointer)| Reference { name, pointer })
                .collect(),
            disabled: s.disabled,
            inline_secrets: s.secrets.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_in_every_syntax() {
        let v = ConfigValue::new(
            "Bearer ${env:GH} ${HOME} ${input:pat} ${workspaceFolder} ${{ secrets.K }} ${D:-x}",
        );
        assert_eq!(v.refs, ["GH", "HOME", "D"]);
        assert_eq!(
            v.placeholders,
            ["input:pat", "workspaceFolder", "secrets.K"]
        );
        assert!(!v.is_literal());
        assert!(ConfigValue::new("plain").is_literal());
        // A bare `$X` or `%X%` is a reference only as the whole value.
        assert_eq!(ConfigValue::new("$USER").refs, ["USER"]);
        assert_eq!(ConfigValue::new("%APPDATA%").refs, ["APPDATA"]);
        assert!(ConfigValue::new("pa$Word9xyz").is_literal());
        assert!(ConfigValue::new("50%OFF%").is_literal());
    }

    #[test]
    fn a_default_fills_an_unset_variable() {
        let none = |_: &str| None;
        assert_eq!(
            ConfigValue::new("${PORT:-8080}")
                .resolve(&none, None)
                .as_deref(),
            Ok("8080")
        );
    }

    #[test]
    fn secrets_in_every_argument_shape_are_found_and_never_shown() {
        let args: Vec<String> = [
            "-e",
            "DB_PASSWORD=pa$Word9xyz",
            "--header",
            "X-Api-Key: abcd1234efgh5678",
            "https://h.example/sse?api_key=zz9988776655",
            "--password=hunter$Secret42",
            "--name=plain",
            "LOG_LEVEL=debug",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(secret_args(&args), [1, 3, 4, 5]);
        let server = Server {
            client: Client::Cursor,
            scope: Scope::User,
            file: PathBuf::from("/f"),
            name: "s".into(),
            pointer: "/mcpServers/s".into(),
            launch: stdio(&args.iter().map(String::as_str).collect::<Vec<_>>(), vec![]),
            disabled: false,
            secrets: Vec::new(),
        };
        let shown = server.command_line().unwrap_or_default().join(" ");
        for secret in [
            "pa$Word9xyz",
            "abcd1234efgh5678",
            "zz9988776655",
            "hunter$Secret42",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("--name=plain") && shown.contains("LOG_LEVEL=debug"),
            "{shown}"
        );
        let sources = format!("{:?}", server.secret_sources().len());
        assert_eq!(sources, "4");
    }

    #[test]
    fn resolving_fills_variables_and_refuses_inputs() {
        let look = |n: &str| (n == "GH").then(|| "v".to_string());
        let ok = ConfigValue::new("Bearer ${env:GH} in ${workspaceFolder}")
            .resolve(&look, Some(Path::new("/w")))
            .expect("resolves");
        assert_eq!(ok, "Bearer v in /w");
        assert!(ConfigValue::new("${input:x}").resolve(&look, None).is_err());
        assert!(ConfigValue::new("$NOPE").resolve(&look, None).is_err());
    }

    fn named(name: &str, v: &str) -> Named {
        Named {
            name: name.into(),
            pointer: format!("/env/{name}"),
            value: ConfigValue::new(v),
        }
    }

    fn stdio(args: &[&str], env: Vec<Named>) -> Launch {
        Launch::Stdio {
            command: "x".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            args_pointer: "/args".into(),
            env,
            cwd: None,
        }
    }

    #[test]
    fn inline_secrets_by_name_by_format_and_by_flag_never_references_or_placeholders() {
        let fake_pat = format!("ghp_{}", "a1B2".repeat(9));
        let found = inline_secrets(&stdio(
            &[
                "--api-key",
                "q8Zr4kLm2Pw9",
                "--token=${env:T}",
                &fake_pat,
                "--name",
                "n",
            ],
            vec![
                named("GITHUB_TOKEN", "s3cr3t-v4lue-12"),
                named("API_KEY", "${env:API_KEY}"),
                named("DB_PASSWORD", "<your password>"),
                named("LOG_LEVEL", "debug-verbose"),
                named("PUBLIC_KEY", "abcdefghijkl"),
            ],
        ));
        let keys: Vec<&str> = found.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["GITHUB_TOKEN", "argument 2", "argument 4"]);
        assert!(
            found
                .iter()
                .all(|s| !s.why.contains("q8Zr") && !s.why.contains("ghp_"))
        );
    }

    #[test]
    fn a_urls_password_and_secret_query_are_inline_secrets_and_never_shown() {
        let l = Launch::Remote {
            url: "https://u:pw123456@h.example/mcp?api_key=abcdefgh12345&v=2".into(),
            url_pointer: "/url".into(),
            transport: None,
            headers: vec![named("Authorization", "Bearer abcdefghijklmnopqrstu")],
        };
        let found = inline_secrets(&l);
        assert_eq!(found.len(), 3, "{found:?}");
        let shown = shown_url("https://u:pw123456@h.example/mcp?api_key=abcdefgh12345&v=2");
        assert!(
            !shown.contains("pw123456") && !shown.contains("abcdefgh12345"),
            "{shown}"
        );
    }
}
