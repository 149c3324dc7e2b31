//! `mcpprobe scan`: gate → fingerprint → passive checks → report → exit code (SPEC §1).

use chrono::Utc;

use crate::cli::{ScanArgs, emit, usage_error};
use crate::gate::state::StateDir;
use crate::gate::{self, HttpTarget, Stop};
use crate::net::dns::Dns;
use crate::net::{Network, Settings};
use crate::report::{GateRecord, Report, RunOutcome};

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

fn plan(args: &ScanArgs) -> Result<Plan, String> {
    if args.stdio {
        return Err("`scan --stdio` is not yet available in this build of mcpprobe".into());
    }
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
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return usage_error(format!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async {
        let dns = Dns::new(plan.resolver).map_err(|e| {
            Box::new(gate::Halted {
                stop: Stop::Unreachable(e),
                record: GateRecord::default(),
            })
        })?;
        let cleared =
            gate::clear_opt_out(plan.target.clone(), &dns, &net, GateRecord::default()).await?;
        let owned = gate::prove_ownership(cleared, &dns, &state, Utc::now()).await?;
        Ok::<_, Box<gate::Halted>>((owned, dns))
    });
    match result {
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
        }
        Ok((owned, _dns)) => {
            report.gate = Some(owned.record().clone());
            if args.active
                && let Err(e) = record_authorisation(args, &owned, &state, None)
            {
                return usage_error(e);
            }
            // The protocol fingerprint and the passive checks come next (not in this build).
            let why = "the target passed the gate; protocol fingerprinting is not yet available in this build, so no check ran";
            report.outcome = RunOutcome::Incomplete;
            report.reason = Some(why.into());
            report.skip_rest("not yet available in this build");
        }
    }
    report.requests_sent = net.requests_sent();
    report.finish();
    let target = report.target.clone();
    emit(&report, &args.output, &target)
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
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => return usage_error(format!("cannot start the async runtime: {e}")),
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
