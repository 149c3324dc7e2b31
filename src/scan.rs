//! `mcpprobe scan`: gate → fingerprint → passive checks → report → exit code (SPEC §1).

use chrono::Utc;

use crate::catalogue::catalogue;
use crate::checks::{Live, Outcome};
use crate::cli::{ScanArgs, emit, usage_error};
use crate::gate::state::StateDir;
use crate::gate::{self, HttpTarget, Stop};
use crate::net::dns::Dns;
use crate::net::{Network, Settings};
use crate::protocol::inventory::{self, Inventory};
use crate::protocol::ladder::{self, Fingerprint};
use crate::report::{GateRecord, Report, RunOutcome};

/// The longest a whole scan may take: every request has its own caps, and this bounds a server
/// that drips each answer just under them.
pub const SCAN_CAP: std::time::Duration = std::time::Duration::from_secs(180);

/// The single-threaded runtime a command runs on.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// `--header "Name: value"`.
fn parse_header(raw: &str) -> Result<(String, String), String> {
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| format!("--header {raw:?} is not `Name: value`"))?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    {
        return Err(format!("--header {raw:?}: {name:?} is not a header name"));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("--header {name}: the value holds a line break"));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Everything `scan` needs, validated: errors here are usage errors (exit 64).
struct Plan {
    target: HttpTarget,
    settings: Settings,
    resolver: Option<std::net::SocketAddr>,
}

/// Flags of features this build does not have yet: refused, never silently ignored.
fn unavailable(args: &ScanArgs) -> Option<String> {
    [
        (args.baseline.is_some(), "--baseline"),
        (args.update_baseline, "--update-baseline"),
        (args.fail_on_new.is_some(), "--fail-on-new"),
        (args.config.is_some(), "--config"),
    ]
    .into_iter()
    .find(|(given, _)| *given)
    .map(|(_, flag)| format!("`{flag}` is not yet available in this build of mcpprobe"))
}

fn plan(args: &ScanArgs) -> Result<Plan, String> {
    let url = args
        .url
        .as_deref()
        .ok_or("scan needs a URL (or --stdio -- COMMAND)")?;
    let target = HttpTarget::parse(url)?;
    if args.rate == 0 || args.rate > crate::net::MAX_RATE {
        return Err(format!(
            "--rate {} refused: mcpprobe sends at most {} requests per second",
            args.rate,
            crate::net::MAX_RATE
        ));
    }
    let resolver = match &args.resolver {
        Some(r) => Some(
            r.parse()
                .map_err(|_| format!("--resolver {r:?} is not IP:PORT"))?,
        ),
        None => None,
    };
    let headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let settings = Settings {
        rate: args.rate,
        token: args.token.clone().filter(|t| !t.is_empty()),
        headers,
        trace_file: args.trace_file.clone(),
        ..Settings::default()
    };
    Ok(Plan {
        target,
        settings,
        resolver,
    })
}

pub fn scan(args: &ScanArgs) -> i32 {
    let target_text = args.url.clone().unwrap_or_else(|| args.command.join(" "));
    let mut report = Report::new(target_text, args.output.policy());

    // SPEC §1.3: an unauthorised --active stops before anything is sent.
    if args.active
        && let Err(why) = gate::authorise_active(
            args.authorised_by.as_deref(),
            args.scope.as_deref(),
            args.verify,
        )
    {
        eprintln!("mcpprobe: {why}");
        report.outcome = RunOutcome::Refused;
        report.reason = Some(why);
        report.skip_rest("stopped by the gate: active mode not authorised");
        report.finish();
        return emit(&report, &args.output, &report.target.clone());
    }
    if let Some(e) = unavailable(args) {
        return usage_error(e);
    }
    if args.stdio {
        return scan_stdio(args, report);
    }
    let plan = match plan(args) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    let state = match StateDir::from_env() {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let net = match Network::new(plan.settings.clone()) {
        Ok(n) => n,
        Err(e) => return usage_error(e),
    };
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = run_http(args, &plan, &net, &state, &mut report) => r,
            _ = tokio::signal::ctrl_c() => Err("interrupted (Ctrl-C): the scan stopped; sessions may not have been closed".to_string()),
            _ = tokio::time::sleep(SCAN_CAP) => Err(format!("interrupted: the scan hit its {}-second cap (a slow server?)", SCAN_CAP.as_secs())),
        }
    });
    if let Err(e) = outcome {
        if e.starts_with("interrupted") {
            report.outcome = RunOutcome::Incomplete;
            report.reason = Some(e);
            report.skip_rest("the scan was interrupted");
        } else {
            return usage_error(e);
        }
    }
    report.requests_sent = net.requests_sent();
    report.finish();
    // Whatever a server echoed back, the user's secrets never reach a report.
    let secrets = net.secrets().clone();
    report.redact(|s| secrets.redact(s));
    let target = report.target.clone();
    emit(&report, &args.output, &target)
}

/// `scan --stdio -- COMMAND…`: the opt-out does not apply and the proof is local (mcpprobe
/// starts the server itself); the server is always stopped at the end.
fn scan_stdio(args: &ScanArgs, mut report: Report) -> i32 {
    report.gate = Some(GateRecord {
        opt_out: vec![
            "skipped: a stdio server that mcpprobe starts itself has nothing to opt out from"
                .into(),
        ],
        ownership: Some("local: a stdio server started by mcpprobe".into()),
        ..GateRecord::default()
    });
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let result = runtime.block_on(async {
        let process = crate::protocol::stdio::StdioProcess::spawn(&args.command)?;
        let run = async {
            let (fp, session) = ladder::stdio(process).await;
            let inventory = if fp.eras.is_empty() { None } else { Some(inventory::read(&session, &fp).await) };
            let sessions = std::slice::from_ref(&session);
            let live = LiveParts {
                fp: &fp,
                inventory: inventory.as_ref(),
                client: None,
                url: None,
                dns: None,
                sessions,
                credentialed: false,
                loopback: true,
            };
            assess(args, &mut report, live).await;
            let stats = session.stdio_stats().await;
            session.close().await;
            stats
        };
        tokio::select! {
            stats = run => Ok(stats),
            _ = tokio::signal::ctrl_c() => Err("interrupted (Ctrl-C): the server was stopped".to_string()),
            _ = tokio::time::sleep(SCAN_CAP) => Err(format!("interrupted: the scan hit its {}-second cap; the server was stopped", SCAN_CAP.as_secs())),
        }
    });
    match result {
        Ok(Some((sent, stderr))) => {
            report.requests_sent = sent;
            if let Some(path) = &args.trace_file {
                let line = serde_json::json!({"stdio_stderr": stderr});
                if let Err(e) = std::fs::write(path, format!("{line}\n")) {
                    return usage_error(format!("cannot write {}: {e}", path.display()));
                }
            }
        }
        Ok(None) => {}
        Err(e) => {
            report.outcome = RunOutcome::Incomplete;
            report.reason = Some(e);
            report.skip_rest("the stdio server could not be scanned");
        }
    }
    report.finish();
    let target = report.target.clone();
    emit(&report, &args.output, &target)
}

/// The HTTP pipeline after argument checks: gate, ladder, inventory, checks, session close.
/// `Err` is a configuration error (exit 64) or an interruption.
async fn run_http(
    args: &ScanArgs,
    plan: &Plan,
    net: &Network,
    state: &StateDir,
    report: &mut Report,
) -> Result<(), String> {
    let dns = Dns::new(plan.resolver).map_err(|e| e.to_string())?;
    let gated = async {
        let cleared =
            gate::clear_opt_out(plan.target.clone(), &dns, net, GateRecord::default()).await?;
        gate::prove_ownership(cleared, &dns, state, Utc::now()).await
    };
    let owned = match gated.await {
        Ok(o) => o,
        Err(halted) => {
            let gate::Halted { stop, record } = *halted;
            report.gate = Some(record);
            let (outcome, why, skip) = match stop {
                Stop::Refused(why) => (RunOutcome::Refused, why, "stopped by the gate"),
                Stop::Unreachable(why) => (
                    RunOutcome::Incomplete,
                    why,
                    "the target could not be reached",
                ),
            };
            eprintln!("mcpprobe: {why}");
            report.outcome = outcome;
            report.reason = Some(why);
            report.skip_rest(skip);
            return Ok(());
        }
    };
    report.gate = Some(owned.record().clone());
    if args.active {
        record_authorisation(args, &owned, state, None)?;
    }
    let client = owned.client(net).map_err(|e| e.to_string())?;
    for tool in &args.exclude_tool {
        client.guard().exclude(tool);
    }
    progress(&format!("fingerprinting {}", owned.target().url));
    let url = owned.target().url.clone();
    let (fp, sessions) = ladder::http(&client, &url).await;
    let inventory = match sessions.first() {
        Some(main) => {
            progress("reading the inventory");
            Some(inventory::read(main, &fp).await)
        }
        None => None,
    };
    if let Some(inv) = &inventory {
        guard_destructive(&client, inv);
    }
    let live = LiveParts {
        fp: &fp,
        inventory: inventory.as_ref(),
        client: Some(&client),
        url: Some(&url),
        dns: Some(&dns),
        sessions: &sessions,
        credentialed: plan.settings.token.is_some() || !plan.settings.headers.is_empty(),
        loopback: matches!(owned.proof(), gate::Proof::Local(_)),
    };
    assess(args, report, live).await;
    for s in sessions {
        let _ = s.close().await;
    }
    Ok(())
}

/// Tools annotated `destructiveHint: true` can never be called (SPEC §1.3).
fn guard_destructive(client: &crate::net::Client, inv: &Inventory) {
    for t in inv.tools() {
        if t.pointer("/annotations/destructiveHint") == Some(&serde_json::Value::Bool(true))
            && let Some(name) = t.get("name").and_then(serde_json::Value::as_str)
        {
            client.guard().exclude(name);
        }
    }
}

/// A progress line on stderr, only when stderr is a terminal.
fn progress(what: &str) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprintln!("mcpprobe: {}", crate::report::escape::escape(what));
    }
}

struct LiveParts<'a> {
    fp: &'a Fingerprint,
    inventory: Option<&'a Inventory>,
    client: Option<&'a crate::net::Client>,
    url: Option<&'a url::Url>,
    dns: Option<&'a Dns>,
    sessions: &'a [crate::protocol::session::Session],
    credentialed: bool,
    loopback: bool,
}

/// Whether `--checks` / `--skip-checks` let check `id` run (INFO-01 and INFO-02 always run).
fn selected(args: &ScanArgs, id: &str) -> bool {
    let has = |list: &[String]| list.iter().any(|c| c.trim().eq_ignore_ascii_case(id));
    id.starts_with("INFO-")
        || ((args.checks.is_empty() || has(&args.checks)) && !has(&args.skip_checks))
}

/// Runs every check against what the ladder and the inventory found, and fills the report.
async fn assess(args: &ScanArgs, report: &mut Report, parts: LiveParts<'_>) {
    let fp = parts.fp;
    let input = parts.inventory.and_then(|inv| {
        crate::rules::Input::from_value(inv.value.clone(), Some(crate::rules::InputKind::Tools))
            .ok()
    });
    let doc = input.as_ref().map(|i| i.document());
    let cx = Live {
        fingerprint: fp,
        inventory: parts.inventory,
        input: input.as_ref(),
        doc: doc.as_ref(),
        client: parts.client,
        url: parts.url,
        dns: parts.dns,
        no_follow_as: args.no_follow_as,
        sessions: parts.sessions,
        credentialed: parts.credentialed,
        loopback: parts.loopback,
        memo: Default::default(),
    };
    let mut fingerprint = crate::report::Fingerprint {
        eras: fp.eras.clone(),
        transport: fp.transport.clone(),
        ..Default::default()
    };
    if let Ok(serde_json::Value::Object(mut m)) = serde_json::to_value(fp) {
        m.remove("eras");
        m.remove("transport");
        fingerprint.extra = m;
    }
    report.fingerprint = Some(fingerprint);
    report.tool_list_sha256 = input.as_ref().map(|i| i.tools_sha256().to_string());

    let stop = if let Some(u) = &fp.unreachable {
        Some(format!("the target could not be reached: {u}"))
    } else if let Some(n) = &fp.not_mcp {
        Some(format!("not an MCP endpoint: {n}"))
    } else if fp.eras.is_empty() && fp.auth_required {
        Some("every rung answered 401/403: the server needs credentials (--token or --header); era unknown, inventory not read".into())
    } else if parts.inventory.is_none() {
        Some("no session could be opened to read the inventory".into())
    } else {
        None
    };
    for entry in &catalogue().entries {
        let id = entry.meta.id.as_str();
        if entry.meta.kind == crate::catalogue::Kind::Active {
            // Registered stubs: not implemented in every report, with what they would do.
            if let Some(plan) = parts
                .inventory
                .and_then(|inv| entry.check.plan(inv.tools()))
            {
                let gate = if args.active {
                    ""
                } else {
                    " (and not authorised: --active was not given)"
                };
                let reason = format!(
                    "{}{gate}; plan: {plan}",
                    crate::checks::ACTIVE_NOT_IMPLEMENTED
                );
                report.record(id, Outcome::NotImplemented(reason));
            }
            continue;
        }
        if !selected(args, id) {
            report.record(
                id,
                Outcome::Skipped("not selected (--checks / --skip-checks)".into()),
            );
            continue;
        }
        report.record(id, entry.check.live(&cx).await);
    }
    if let Some(why) = stop {
        report.outcome = RunOutcome::Incomplete;
        report.reason = Some(why);
    }
}

/// SPEC §1.3: every active run leaves an authorisation record in the state folder.
fn record_authorisation(
    args: &ScanArgs,
    owned: &gate::Owned,
    state: &StateDir,
    tool_list_sha256: Option<&str>,
) -> Result<std::path::PathBuf, String> {
    let now = Utc::now();
    let planned: Vec<&str> = crate::catalogue::catalogue()
        .metas()
        .filter(|m| m.kind == crate::catalogue::Kind::Active)
        .map(|m| m.id.as_str())
        .collect();
    let proof = match owned.proof() {
        gate::Proof::Local(why) => why.clone(),
        gate::Proof::DnsTxt(p) => format!("dns-txt, valid until {}", p.expires_at.to_rfc3339()),
    };
    let record = serde_json::json!({
        "authorised_by": args.authorised_by,
        "scope": args.scope,
        "target": owned.target().url.as_str(),
        "time": now.to_rfc3339(),
        "proof": proof,
        "tool_list_sha256": tool_list_sha256,
        "checks_planned": planned,
        "excluded_tools": args.exclude_tool,
        "note": crate::checks::ACTIVE_NOT_IMPLEMENTED,
    });
    state.save_authorisation(&record, &owned.target().host, now)
}

pub fn verify(action: &crate::cli::VerifyAction, resolver: Option<&str>) -> i32 {
    use crate::cli::VerifyAction;
    let state = match StateDir::from_env() {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let now = Utc::now();
    match action {
        VerifyAction::Init { host } => match gate::verify_init(host, &state, now) {
            Ok(text) => {
                print!("{text}");
                0
            }
            Err(e) => usage_error(e),
        },
        VerifyAction::Status => {
            let (text, ok) = gate::verify_status(&state, now);
            print!("{text}");
            if ok { 0 } else { 64 }
        }
        VerifyAction::Check { host } => {
            let server = match resolver.map(str::parse).transpose() {
                Ok(s) => s,
                Err(_) => return usage_error(format!("--resolver {resolver:?} is not IP:PORT")),
            };
            let runtime = match runtime() {
                Ok(r) => r,
                Err(e) => return usage_error(e),
            };
            let result = runtime.block_on(async {
                let dns = Dns::new(server).map_err(Stop::Unreachable)?;
                gate::verify_check(host, &state, &dns, now).await
            });
            match result {
                Ok(text) => {
                    print!("{text}");
                    0
                }
                Err(Stop::Refused(e)) | Err(Stop::Unreachable(e)) => {
                    eprintln!("mcpprobe: not verified: {e}");
                    crate::exit::ExitCode::Gate.code()
                }
            }
        }
    }
}
