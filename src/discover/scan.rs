//! Scanning what discovery found, within the rules (issue 26): a stdio server is started by
//! mcpprobe with the local proof and only the variables the user allows; a remote URL is
//! scanned only when its host has a proof in force (a stored DNS-TXT proof not expired, or
//! addresses that are all loopback) — otherwise nothing at all is sent to it and it is listed
//! "not scanned: no proof" with the command that would allow it. One report for the set: every
//! server's findings (each naming its server), the inline secrets, and the rules across servers
//! ([`crate::rules::cross`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures_util::StreamExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{ConfigRecord, Discovery, Launch, Named, Server};
use crate::baseline::{Baseline, BaselineError};
use crate::engine::{
    BaselineRequest, ConfigError, Credentials, ExposeSecret, ScanRequest, Scanned, Scanner,
    SecretSource, SecretString, StoredBaseline, Target,
};
use crate::finding::Finding;
use crate::model::{
    CheckStatus, DiscoveredFile, DiscoveryRecord, EntryRecord, Report, RunOutcome, ServerRecord,
};

/// Servers scanned at once.
pub const CONCURRENCY: usize = 4;

/// How the discovered servers are scanned; the rest of each server's scan (checks, limits,
/// rate, judge) comes from `template`, whose target is replaced.
pub struct DiscoverOptions {
    pub template: ScanRequest,
    /// Names of variables (a config entry's `env` or header name, or a variable it
    /// references) that may be passed on (`--env`). Nothing else of a config's `env` is.
    pub allowed_env: Vec<String>,
    /// `PATH`, `HOME`, `LANG` and every allowed variable's value, as the host read them.
    pub host_env: Vec<(String, SecretString)>,
    /// The project folder (for `${workspaceFolder}`).
    pub project: Option<PathBuf>,
    /// List what would be started and scanned; start and send nothing.
    pub dry_run: bool,
    /// `--baseline FILE` for the whole set (a file of baselines keyed by server).
    pub baseline: Option<BaselineRequest>,
    /// Start the stdio servers a project's files name (`--trust-project`). Without it they are
    /// listed, not started: a project folder may be someone else's repository, and clients
    /// ask before they run a project's servers too.
    pub trust_project: bool,
}

impl DiscoverOptions {
    /// Options whose variables are `allowed_env` with the values `lookup` finds (the host's
    /// environment), beside `PATH`, `HOME` and `LANG`. `MCPPROBE_TOKEN` is refused.
    pub fn new(
        template: ScanRequest,
        allowed_env: Vec<String>,
        lookup: impl Fn(&str) -> Option<String>,
        project: Option<PathBuf>,
    ) -> Result<DiscoverOptions, ConfigError> {
        let host_env = crate::engine::request::stdio_env(&allowed_env, lookup)?;
        Ok(DiscoverOptions {
            template,
            allowed_env,
            host_env,
            project,
            dry_run: false,
            baseline: None,
            trust_project: false,
        })
    }

    /// Every secret of this run: the allowed variables' values and what the files write
    /// (secret-looking variables and headers, secret arguments, URLs' query values). The host
    /// redacts them from all it prints; the scans redact them from their reports.
    pub fn secret_sources(&self, discovery: &Discovery) -> Vec<SecretSource> {
        let mut out: Vec<SecretSource> = self
            .host_env
            .iter()
            .filter(|(n, _)| !crate::engine::request::STDIO_BASE_ENV.contains(&n.as_str()))
            .map(|(name, v)| SecretSource::Env {
                name: name.clone(),
                value: v.expose_secret().to_string(),
            })
            .collect();
        for s in &discovery.servers {
            out.extend(s.secret_sources());
        }
        out
    }
}

fn file_record(c: &ConfigRecord) -> DiscoveredFile {
    DiscoveredFile {
        client: c.client.as_str().to_string(),
        scope: c.scope.as_str().to_string(),
        path: c.path.clone(),
        status: c.status.to_string(),
        servers: c.servers,
        error: c.error.clone(),
        problems: c.problems.clone(),
    }
}

/// One server to scan (or not): the entries sharing a launch, and what to do.
struct Planned {
    name: String,
    entries: Vec<usize>,
    action: Action,
    record: ServerRecord,
}

enum Action {
    Scan(Box<ScanRequest>),
    Skip,
}

/// The set baseline: a file of per-server baselines.
#[derive(Debug, Clone, Default)]
pub struct SetBaseline {
    pub servers: BTreeMap<String, Baseline>,
}

const SET_KIND: &str = "discovered";

/// Reads a set baseline: `Ok(None)` when the file does not exist. A file of another shape (a
/// single-server baseline, a report) is an error that names it, and is never written over.
pub fn load_set(path: &Path) -> Result<Option<SetBaseline>, BaselineError> {
    let Some(bytes) = crate::baseline::read_if_present(path)? else {
        return Ok(None);
    };
    let corrupt = |detail: String| BaselineError::Corrupt {
        path: path.to_path_buf(),
        detail,
    };
    let foreign = |detail: String| BaselineError::Foreign {
        path: path.to_path_buf(),
        detail,
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if value.get("kind").and_then(Value::as_str) != Some(SET_KIND)
        || value.get("version") != Some(&Value::from(1))
    {
        return Err(foreign(format!(
            "not the baseline of a discovered set (`\"version\": 1, \"kind\": \"{SET_KIND}\"`): a single server's baseline is compared with `scan --baseline`, not `scan --discover --baseline`"
        )));
    }
    let Some(servers) = value.get("servers").and_then(Value::as_object) else {
        return Err(corrupt("`servers` is missing or not an object".into()));
    };
    let mut out = SetBaseline::default();
    for (name, b) in servers {
        let text = serde_json::to_vec(b).map_err(|e| corrupt(e.to_string()))?;
        let one = crate::baseline::parse(&text, path).map_err(|e| match e {
            BaselineError::Corrupt { path, detail } => BaselineError::Corrupt {
                path,
                detail: format!("server `{name}`: {detail}"),
            },
            BaselineError::Foreign { path, detail } => BaselineError::Foreign {
                path,
                detail: format!("server `{name}`: {detail}"),
            },
            other => other,
        })?;
        out.servers.insert(name.clone(), one);
    }
    Ok(Some(out))
}

/// Writes a set baseline atomically (sorted, pretty: a pull request's diff reads well).
pub fn save_set(
    path: &Path,
    set: &SetBaseline,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), BaselineError> {
    let write_err = |source: std::io::Error| BaselineError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut servers = serde_json::Map::new();
    for (name, b) in &set.servers {
        servers.insert(
            name.clone(),
            b.to_sorted_value().map_err(|e| write_err(e.into()))?,
        );
    }
    let doc = serde_json::json!({
        "version": 1,
        "kind": SET_KIND,
        "written_at": now,
        "servers": servers,
    });
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| write_err(e.into()))?;
    text.push('\n');
    crate::util::atomic::write_atomically(path, &text, crate::util::atomic::Visibility::Shared)
        .map_err(write_err)
}

/// Names every distinct launch: the entry's name, or `name@client` (then `name@client#n`)
/// when an earlier launch has it. User files are read before a project's, so a project's entry
/// never takes the name (and the baseline key) of a user's server.
fn group(discovery: &Discovery) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    for (i, s) in discovery.servers.iter().enumerate() {
        match index.entry(s.launch_key()) {
            std::collections::hash_map::Entry::Occupied(g) => {
                if let Some(group) = groups.get_mut(*g.get()) {
                    group.1.push(i);
                }
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(groups.len());
                groups.push((s.name.clone(), vec![i]));
            }
        }
    }
    let mut taken: std::collections::HashSet<String> = Default::default();
    let mut next: std::collections::HashMap<String, usize> = Default::default();
    for (name, entries) in &mut groups {
        let client = entries
            .first()
            .and_then(|&e| discovery.servers.get(e))
            .map_or("other", |s| s.client.as_str());
        let mut chosen = if taken.contains(name.as_str()) {
            format!("{name}@{client}")
        } else {
            name.clone()
        };
        if taken.contains(&chosen) {
            let n = next.entry(chosen.clone()).or_insert(1);
            loop {
                *n += 1;
                let candidate = format!("{chosen}#{n}");
                if !taken.contains(&candidate) {
                    chosen = candidate;
                    break;
                }
            }
        }
        taken.insert(chosen.clone());
        *name = chosen;
    }
    groups
}

/// Whether an entry (a variable or header) may be passed: its name, or every variable it
/// references, is allowed.
fn allowed(n: &Named, allowed_env: &[String]) -> bool {
    allowed_env.contains(&n.name)
        || (!n.value.refs.is_empty() && n.value.refs.iter().all(|r| allowed_env.contains(r)))
}

fn lookup<'a>(opts: &'a DiscoverOptions) -> impl Fn(&str) -> Option<String> + 'a {
    move |name: &str| {
        opts.allowed_env
            .iter()
            .any(|a| a == name)
            .then(|| {
                opts.host_env
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.expose_secret().to_string())
            })
            .flatten()
    }
}

/// The entries' values passed on, and the names withheld with why.
fn pass_on(
    named: &[Named],
    opts: &DiscoverOptions,
    record: &mut ServerRecord,
) -> Vec<(String, SecretString)> {
    let look = lookup(opts);
    let mut out = Vec::new();
    for n in named {
        if !allowed(n, &opts.allowed_env) {
            record
                .env_withheld
                .push(format!("{} (not allowed with --env)", n.name));
            continue;
        }
        match n.value.resolve(&look, opts.project.as_deref()) {
            Ok(v) => {
                record.env_passed.push(n.name.clone());
                out.push((n.name.clone(), SecretString::from(v)));
            }
            Err(why) => record.env_withheld.push(format!("{} ({why})", n.name)),
        }
    }
    out
}

fn base_record(name: &str, discovery: &Discovery, entries: &[usize]) -> ServerRecord {
    let first = &discovery.servers[entries[0]];
    ServerRecord {
        name: name.to_string(),
        entries: entries
            .iter()
            .map(|&i| {
                let s = &discovery.servers[i];
                EntryRecord {
                    client: s.client.as_str().to_string(),
                    scope: s.scope.as_str().to_string(),
                    file: s.file.display().to_string(),
                    pointer: s.pointer.clone(),
                }
            })
            .collect(),
        kind: first.kind().to_string(),
        command: first.command_line(),
        url: first.shown_url(),
        status: String::new(),
        reason: None,
        to_allow: Vec::new(),
        env_passed: Vec::new(),
        env_withheld: Vec::new(),
        outcome: None,
        tool_list_sha256: None,
        tools: None,
        requests_sent: 0,
        findings: 0,
        trace_id: None,
    }
}

fn skip(mut record: ServerRecord, status: &str, reason: String) -> (Action, ServerRecord) {
    record.status = status.to_string();
    record.reason = Some(reason);
    (Action::Skip, record)
}

/// Decides, for one server, to scan it or why not. Only DNS is asked here (whether a host
/// name resolves only to loopback); nothing is sent to any server.
async fn decide(
    scanner: &Scanner,
    s: &Server,
    mut record: ServerRecord,
    opts: &DiscoverOptions,
) -> (Action, ServerRecord) {
    if s.disabled {
        return skip(record, "disabled", "disabled in the client's file".into());
    }
    let mut req = opts.template.clone();
    req.keep_inventory = true;
    req.baseline = None;
    // One trace file per server (`trace.jsonl` → `trace.<server>.jsonl`): scans run at once.
    if let Some(t) = &req.trace_file {
        req.trace_file = Some(per_server_file(t, &record.name));
    }
    // A project's remote entry too: it may point at a service on loopback and ask for the
    // variables --env allows.
    if s.scope == super::Scope::Project && !opts.trust_project {
        record.to_allow = vec!["mcpprobe scan --discover --trust-project".into()];
        return skip(
            record,
            "not_scanned",
            format!(
                "it comes from the project file {}: started or contacted only with --trust-project (a project may be someone else's repository; clients ask before they run its servers too)",
                s.file.display()
            ),
        );
    }
    match &s.launch {
        Launch::Stdio {
            command,
            args,
            env,
            cwd,
            ..
        } => {
            let look = lookup(opts);
            let mut full_env: Vec<(String, SecretString)> = opts
                .host_env
                .iter()
                .filter(|(n, _)| crate::engine::request::STDIO_BASE_ENV.contains(&n.as_str()))
                .cloned()
                .collect();
            full_env.extend(pass_on(env, opts, &mut record));
            let mut line = vec![command.clone()];
            for a in args {
                let v = super::ConfigValue::new(a);
                let all_allowed = v.refs.iter().all(|r| opts.allowed_env.contains(r));
                match v.resolve(&look, opts.project.as_deref()) {
                    Ok(r) if all_allowed => line.push(r),
                    _ => {
                        for r in &v.refs {
                            let note =
                                format!("{r} (in an argument; not allowed with --env, or unset)");
                            if !record.env_withheld.contains(&note) {
                                record.env_withheld.push(note);
                            }
                        }
                        line.push(a.clone());
                    }
                }
            }
            // Secrets written in the arguments are redacted like the environment's.
            for i in super::secret_args(args) {
                if let Some(a) = line.get(i + 1) {
                    req.secrets.push(SecretSource::Other(a.clone()));
                }
            }
            if cwd.is_some() {
                record.reason = Some("the entry's `cwd` is not applied: the server starts in mcpprobe's working folder".into());
            }
            match Target::stdio_with_env(&line, full_env) {
                Ok(t) => req.target = t,
                Err(e) => return skip(record, "not_scanned", format!("cannot be started: {e}")),
            }
        }
        Launch::Remote { url, headers, .. } => {
            let look = lookup(opts);
            let resolved =
                match super::ConfigValue::new(url).resolve(&look, opts.project.as_deref()) {
                    Ok(u) => u,
                    Err(why) => {
                        return skip(
                            record,
                            "not_scanned",
                            format!("its URL cannot be filled in: {why}"),
                        );
                    }
                };
            let target = match crate::gate::HttpTarget::parse(&resolved) {
                Ok(t) => t,
                Err(e) => {
                    return skip(
                        record,
                        "not_scanned",
                        // The error quotes the URL; its query may hold a key.
                        format!(
                            "not a URL mcpprobe scans: {}",
                            e.to_string()
                                .replace(resolved.as_str(), &super::shown_url(&resolved))
                                .replace(url.as_str(), &super::shown_url(url))
                        ),
                    );
                }
            };
            match find_proof(scanner, &target).await {
                ProofFound::Stored => {}
                ProofFound::Loopback => req.loopback_only = true,
                ProofFound::None(why) => {
                    if target.ip.is_none() {
                        record.to_allow = vec![
                            format!("mcpprobe verify init {}", target.host),
                            format!("mcpprobe verify check {}", target.host),
                        ];
                    }
                    return skip(record, "not_scanned", format!("no proof: {why}"));
                }
            }
            req.credentials = Credentials {
                headers: pass_on(headers, opts, &mut record),
                ..Credentials::default()
            };
            req.target = Target::Http(target.url);
        }
    }
    (Action::Scan(Box::new(req)), record)
}

/// `path` with the server's name (only letters, digits, `-`, `_` and `.`) before its extension.
pub fn per_server_file(path: &Path, server: &str) -> PathBuf {
    let mut safe: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    // A name that had to be changed also gets 8 hex digits of its hash: two servers never
    // share a file.
    if safe != server {
        use sha2::{Digest as _, Sha256};
        let h = hex::encode(Sha256::digest(server.as_bytes()));
        safe = format!("{safe}-{}", h.get(..8).unwrap_or_default());
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{safe}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{safe}"),
    };
    path.with_file_name(name)
}

/// Which proof lets a discovered remote server be scanned, or why none does.
enum ProofFound {
    /// A stored DNS-TXT proof that has not expired (the scan's gate checks the record again,
    /// and the opt-out first).
    Stored,
    /// Every address is loopback: the local proof; the scan then contacts loopback only.
    Loopback,
    None(String),
}

async fn find_proof(scanner: &Scanner, target: &crate::gate::HttpTarget) -> ProofFound {
    let addrs = match target.ip {
        Some(ip) => vec![ip],
        None => {
            if let Ok(Some(p)) = scanner.state().proof(&target.host)
                && p.expires_at > scanner.now()
            {
                return ProofFound::Stored;
            }
            match scanner.dns().addresses(&target.host).await {
                Ok(a) => a,
                Err(e) => {
                    return ProofFound::None(format!(
                        "{} has no ownership proof in force, so nothing is sent to it (its addresses could not be read either: {e})",
                        target.host
                    ));
                }
            }
        }
    };
    if !addrs.is_empty() && addrs.iter().all(crate::net::dns::is_loopback) {
        return ProofFound::Loopback;
    }
    ProofFound::None(match target.ip {
        Some(_) => format!(
            "{} is an IP address that is not loopback: only a host name can be proven (DNS TXT)",
            target.host
        ),
        None => format!(
            "{} has no ownership proof in force, so nothing is sent to it",
            target.host
        ),
    })
}

/// Scans what `discovery` found (see the module's text). `Err` is a configuration error of the
/// whole run (a corrupt set baseline); a server's own problems are in its record.
pub async fn scan_discovered(
    scanner: &Scanner,
    discovery: &Discovery,
    opts: &DiscoverOptions,
    cancel: CancellationToken,
) -> Result<Report, ConfigError> {
    let set = match &opts.baseline {
        Some(b) => load_set(&b.path)?,
        None => None,
    };
    let groups = group(discovery);
    // Decided a few at once (a remote's decision may wait for DNS), in order; a cancelled run
    // decides nothing more.
    let decisions: Vec<(String, Vec<usize>, Action, ServerRecord)> =
        futures_util::stream::iter(groups)
            .map(|(name, entries)| {
                let cancel = cancel.clone();
                async move {
                    let record = base_record(&name, discovery, &entries);
                    // The first entry that is not disabled decides (another client may run
                    // what one has disabled).
                    let first = entries
                        .iter()
                        .copied()
                        .find(|&e| discovery.servers.get(e).is_some_and(|s| !s.disabled))
                        .or(entries.first().copied())
                        .and_then(|e| discovery.servers.get(e));
                    let (action, record) = match first {
                        _ if cancel.is_cancelled() => {
                            skip(record, "not_scanned", "the run was cancelled".into())
                        }
                        None => skip(record, "not_scanned", "no entry".into()),
                        Some(s) => tokio::select! {
                            d = decide(scanner, s, record.clone(), opts) => d,
                            () = cancel.cancelled() => {
                                skip(record, "not_scanned", "the run was cancelled".into())
                            }
                        },
                    };
                    (name, entries, action, record)
                }
            })
            .buffered(CONCURRENCY * 4)
            .collect()
            .await;
    let mut planned: Vec<Planned> = Vec::new();
    for (name, entries, action, record) in decisions {
        let (mut action, mut record) = (action, record);

        if let Action::Scan(req) = &mut action {
            if opts.dry_run {
                record.status = "would_scan".into();
                action = Action::Skip;
            } else {
                record.status = "scanned".into();
                if let Some(b) = &opts.baseline {
                    req.stored_baseline = Some(StoredBaseline {
                        label: format!("the baseline {} (server {name})", b.path.display()),
                        old: set.as_ref().and_then(|s| s.servers.get(&name).cloned()),
                    });
                }
            }
        }
        planned.push(Planned {
            name,
            entries,
            action,
            record,
        });
    }

    let files = discovery
        .configs
        .iter()
        .filter(|c| c.status == "read")
        .count();
    let mut report = Report::new(
        format!(
            "{} MCP server{} in {files} client file{}",
            planned.len(),
            if planned.len() == 1 { "" } else { "s" },
            if files == 1 { "" } else { "s" },
        ),
        Default::default(),
    );
    report.started_at = Some(scanner.now());

    // Scan, a few at a time, in order of the plan.
    let jobs: Vec<(usize, ScanRequest)> = planned
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match &p.action {
            Action::Scan(r) => Some((i, (**r).clone())),
            Action::Skip => None,
        })
        .collect();
    let results: Vec<(usize, Result<Scanned, ConfigError>)> = futures_util::stream::iter(jobs)
        .map(|(i, req)| {
            let cancel = cancel.clone();
            async move { (i, scanner.scan_observed(&req, cancel).await) }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut results: Vec<_> = results;
    results.sort_by_key(|(i, _)| *i);

    let mut inventories: Vec<(String, Value)> = Vec::new();
    let mut observed: BTreeMap<String, Baseline> = BTreeMap::new();
    let mut reports: Vec<(usize, Report)> = Vec::new();
    for (i, r) in results {
        let p = &mut planned[i];
        match r {
            Ok(scanned) => {
                if let Some(inv) = scanned.inventory {
                    p.record.tools = inv.get("tools").and_then(Value::as_array).map(Vec::len);
                    inventories.push((p.name.clone(), inv));
                }
                if let Some(b) = scanned.observed {
                    observed.insert(p.name.clone(), b);
                }
                let r = scanned.report;
                p.record.outcome = Some(r.outcome);
                if r.outcome != RunOutcome::Complete {
                    p.record.reason = r.reason.clone();
                }
                p.record.tool_list_sha256 = r.tool_list_sha256.clone();
                p.record.requests_sent = r.requests_sent;
                p.record.findings = r.findings.len();
                p.record.trace_id = r.trace_id.clone();
                reports.push((i, r));
            }
            Err(e) => {
                p.record.status = "not_scanned".into();
                p.record.outcome = Some(RunOutcome::Incomplete);
                p.record.reason = Some(format!("refused before it started: {e}"));
            }
        }
    }

    merge_checks(&mut report, &reports, &planned);
    for (i, r) in &reports {
        let name = &planned[*i].name;
        for mut f in r.findings.clone() {
            if f.location.server.is_none() {
                f.location.server = Some(name.clone());
                f.fingerprint = f.compute_fingerprint();
            }
            report.findings.push(f);
        }
        report.requests_sent += r.requests_sent;
    }

    // Inline secrets: once per file entry.
    let secrets: Vec<Finding> = discovery
        .servers
        .iter()
        .flat_map(|s| {
            let shown = planned
                .iter()
                .find(|p| {
                    p.entries
                        .iter()
                        .any(|&e| std::ptr::eq(&discovery.servers[e], s))
                })
                .map(|p| p.name.clone())
                .unwrap_or_else(|| s.name.clone());
            s.secret_findings().into_iter().map(move |mut f| {
                f.location.server = Some(shown.clone());
                f.fingerprint = f.compute_fingerprint();
                f
            })
        })
        .collect();
    let meta03 = secrets.len();
    report.findings.extend(secrets);

    // Rules across servers, over what was read.
    let tools: Vec<crate::rules::cross::ServerTools<'_>> = inventories
        .iter()
        .map(|(server, inventory)| crate::rules::cross::ServerTools { server, inventory })
        .collect();
    let cross = if tools.len() > 1 {
        crate::rules::cross::run(&tools)
    } else {
        Vec::new()
    };
    for f in &cross {
        if let Some(c) = report.checks.iter_mut().find(|c| c.id == f.check) {
            c.findings += 1;
        }
    }
    if let Some(c) = report.checks.iter_mut().find(|c| c.id == "META-03") {
        c.findings += meta03;
        if meta03 > 0 && c.status == CheckStatus::Skipped {
            c.status = CheckStatus::Ran;
            c.reason = Some("over the client files (inline secrets)".into());
        }
    }
    report.findings.extend(cross);

    // The set baseline.
    if let Some(b) = &opts.baseline
        && !opts.dry_run
    {
        set_baseline(
            &mut report,
            b,
            set.as_ref(),
            &planned,
            observed,
            scanner.now(),
        );
    }

    // The set's fingerprint: each scanned server's tool-list fingerprint, by name.
    let fps: BTreeMap<&str, &str> = planned
        .iter()
        .filter_map(|p| Some((p.name.as_str(), p.record.tool_list_sha256.as_deref()?)))
        .collect();
    if !fps.is_empty() {
        use sha2::{Digest as _, Sha256};
        let text = serde_json::to_string(&fps).unwrap_or_default();
        report.tool_list_sha256 = Some(hex::encode(Sha256::digest(text.as_bytes())));
    }

    outcome(&mut report, &planned);
    // A client file that could not be read may name servers nobody scanned.
    let unread: Vec<String> = discovery
        .configs
        .iter()
        .filter_map(|c| c.error.as_ref().map(|e| format!("{} {e}", c.path)))
        .collect();
    if !unread.is_empty() && report.outcome == RunOutcome::Complete {
        report.outcome = RunOutcome::Incomplete;
        report.reason = Some(format!(
            "a client file could not be read, so its servers were not scanned: {}",
            unread.join("; ")
        ));
    }
    for p in &mut planned {
        if p.record.status == "scanned" {
            p.record.findings = report
                .findings
                .iter()
                .filter(|f| f.location.server.as_deref() == Some(p.name.as_str()))
                .count();
        }
    }
    report.discovery = Some(DiscoveryRecord {
        configs: discovery.configs.iter().map(file_record).collect(),
        servers: planned.into_iter().map(|p| p.record).collect(),
        absent: discovery.absent,
    });
    if cancel.is_cancelled() && report.outcome == RunOutcome::Complete {
        report.outcome = RunOutcome::Incomplete;
        report.reason = Some("interrupted: the scan was cancelled".into());
    }
    report.finish();
    Ok(report)
}

/// One line per check over the servers scanned: ran if it ran on any, error if it errored on
/// any; the reason says where it did not run.
fn merge_checks(report: &mut Report, reports: &[(usize, Report)], planned: &[Planned]) {
    if reports.is_empty() {
        for c in &mut report.checks {
            c.reason = Some("no server was scanned".into());
        }
        return;
    }
    for c in &mut report.checks {
        let mine: Vec<(&str, &crate::model::CheckRecord)> = reports
            .iter()
            .filter_map(|(i, r)| {
                r.checks
                    .iter()
                    .find(|x| x.id == c.id)
                    .map(|x| (planned[*i].name.as_str(), x))
            })
            .collect();
        let any = |s: CheckStatus| mine.iter().any(|(_, x)| x.status == s);
        c.status = if any(CheckStatus::Error) {
            CheckStatus::Error
        } else if any(CheckStatus::Ran) {
            CheckStatus::Ran
        } else if any(CheckStatus::NotImplemented) {
            CheckStatus::NotImplemented
        } else {
            CheckStatus::Skipped
        };
        c.findings = mine.iter().map(|(_, x)| x.findings).sum();
        c.requests = mine.iter().map(|(_, x)| x.requests).sum();
        let other: Vec<String> = mine
            .iter()
            .filter(|(_, x)| x.status != c.status || c.status != CheckStatus::Ran)
            .filter_map(|(n, x)| x.reason.as_ref().map(|r| format!("{n}: {r}")))
            .take(8)
            .collect();
        c.reason = (!other.is_empty()).then(|| other.join("; "));
    }
}

fn outcome(report: &mut Report, planned: &[Planned]) {
    let bad = |o: RunOutcome| -> Vec<String> {
        planned
            .iter()
            .filter(|p| p.record.outcome == Some(o))
            .map(|p| {
                format!(
                    "server {}: {}",
                    p.name,
                    p.record.reason.as_deref().unwrap_or("no reason recorded")
                )
            })
            .collect()
    };
    let incomplete = bad(RunOutcome::Incomplete);
    let refused = bad(RunOutcome::Refused);
    if !incomplete.is_empty() {
        report.outcome = RunOutcome::Incomplete;
        report.reason = Some(incomplete.join("; "));
    } else if !refused.is_empty() {
        report.outcome = RunOutcome::Refused;
        report.reason = Some(refused.join("; "));
    }
}

fn base_finding(server: &str, rule: &str) -> crate::finding::FindingBuilder {
    crate::catalogue::catalogue()
        .meta("BASE-01")
        .finding_of(Some(rule))
        .server(server.to_string())
}

/// Compares the set with its baseline (each server's tools were compared by its own scan):
/// servers added and removed; writes the file on a first pin or `--update-baseline`.
fn set_baseline(
    report: &mut Report,
    b: &BaselineRequest,
    set: Option<&SetBaseline>,
    planned: &[Planned],
    observed: BTreeMap<String, Baseline>,
    now: chrono::DateTime<chrono::Utc>,
) {
    let file = b.path.display();
    if let Some(old) = set {
        for p in planned.iter().filter(|p| p.record.status == "scanned") {
            if !old.servers.contains_key(&p.name) {
                report.findings.push(
                    base_finding(&p.name, "B7")
                        .message(format!(
                            "server `{}` is new since the baseline {file}: its tools were never reviewed",
                            p.name
                        ))
                        .text(p.name.clone())
                        .build(),
                );
            }
        }
        for name in old.servers.keys() {
            if !planned.iter().any(|p| &p.name == name) {
                report.findings.push(
                    base_finding(name, "B8")
                        .message(format!(
                            "server `{name}` of the baseline {file} is no longer in any client file"
                        ))
                        .text(name.clone())
                        .build(),
                );
            }
        }
    }
    let write = set.is_none() || b.update;
    if !write {
        return;
    }
    // A server that could not be read completely keeps its old pin (never replaced by less).
    let mut next = set.cloned().unwrap_or_default();
    if b.update {
        next.servers
            .retain(|name, _| planned.iter().any(|p| &p.name == name));
    }
    let complete = planned
        .iter()
        .all(|p| p.record.status != "scanned" || observed.contains_key(&p.name));
    next.servers.extend(observed);
    let saved = if set.is_none() {
        if !complete {
            Err("some servers were not read completely: nothing was pinned".to_string())
        } else {
            save_set(&b.path, &next, now).map_err(|e| e.to_string())
        }
    } else {
        save_set(&b.path, &next, now).map_err(|e| e.to_string())
    };
    match saved {
        Ok(()) => report.warnings.push(format!(
            "the baseline {file} was {} with {} servers",
            if set.is_none() { "written" } else { "updated" },
            next.servers.len()
        )),
        Err(why) => report
            .warnings
            .push(format!("the baseline {file} was not written: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::per_server_file;
    use std::path::Path;

    #[test]
    fn a_trace_file_per_server_keeps_its_folder_and_extension() {
        assert_eq!(
            per_server_file(Path::new("/t/trace.jsonl"), "git/hub x"),
            Path::new("/t/trace.git_hub_x-af3ea4cb.jsonl")
        );
        assert_eq!(
            per_server_file(Path::new("trace"), "a"),
            Path::new("trace.a")
        );
    }
}
