//! `mcpprobe scan` and `mcpprobe verify` as the CLI hosts them: flags → [`ScanRequest`], a
//! runtime, Ctrl-C (which cancels the scan), rendering, and the exit code from the report.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::cli::{ScanArgs, VerifyAction, emit, print_out, settings, usage_error};
use crate::engine::{
    ActiveRequest, BaselineRequest, ConfigError, Credentials, ExposeSecret, ScanLimits,
    ScanRequest, Scanner, ScannerConfig, SecretSource, SecretString, Selection, Target,
};
use crate::gate::state::StateDir;
use crate::model::{Report, RunOutcome};
use crate::net::redact::Secrets;

/// The state folder of this process's environment (see [`StateDir::locate`]).
pub fn state_dir_from_env() -> Result<PathBuf, crate::gate::state::StateError> {
    StateDir::locate(|n| std::env::var_os(n))
}

/// The runtime a command runs on: multi-threaded, as the daemon's, so that what the CLI
/// exercises is what every host gets.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Cancels `cancel` on Ctrl-C, SIGTERM or SIGHUP (a CI runner's stop, a closed terminal): the
/// scan then ends promptly, its sessions closed, a stdio server's and a judge's process groups
/// killed. Abort the returned task when the work is done.
pub fn cancel_on_signals(cancel: &CancellationToken) -> tokio::task::JoinHandle<()> {
    let cancel = cancel.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (mut term, mut hup) = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(t), Ok(h)) => (t, h),
            _ => {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
                return;
            }
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => if r.is_err() { return },
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        cancel.cancel();
    })
}

/// Progress lines on stderr (`tracing` events of `mcpprobe::progress`), only on a terminal,
/// with `secrets` redacted from each.
pub fn show_progress(secrets: crate::net::redact::Secrets) {
    use std::io::IsTerminal as _;
    if !std::io::stderr().is_terminal() {
        return;
    }
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target("mcpprobe::progress", tracing::Level::INFO);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(crate::net::redact::RedactingStderr::new(secrets))
        .with_ansi(false)
        .with_target(false)
        .with_level(false)
        .without_time();
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init();
}

/// The engine's request for these flags and the configuration (flags win); every error is a
/// usage error.
pub fn request(args: &ScanArgs, loaded: &settings::Loaded) -> Result<ScanRequest, ConfigError> {
    let target = if args.stdio {
        let env = crate::engine::request::stdio_env(&args.env, |n| std::env::var(n).ok())?;
        Target::stdio_with_env(&args.command, env)?
    } else {
        match args.url.as_deref() {
            Some(url) => Target::http(url)?,
            None => return Err(ConfigError::EmptyCommand),
        }
    };
    request_for(args, loaded, target)
}

/// The request of these flags for `target` (`scan --discover` replaces it per server).
pub fn request_for(
    args: &ScanArgs,
    loaded: &settings::Loaded,
    target: Target,
) -> Result<ScanRequest, ConfigError> {
    let mut req = ScanRequest::new(target);
    req.credentials = Credentials {
        token: args
            .token
            .clone()
            .filter(|t| !t.is_empty())
            .map(SecretString::from),
        headers: args
            .headers
            .iter()
            .map(|h| Credentials::parse_header(h))
            .collect::<Result<_, _>>()?,
    };
    req.checks = selection(
        &args.selection.checks,
        &args.selection.skip_checks,
        &loaded.config,
    )?;
    req.limits = ScanLimits {
        rate: rate(args, loaded),
        ..ScanLimits::default()
    };
    req.follow_authorization_server = !args.no_follow_as;
    req.allow_private_addresses = args.allow_private_addresses;
    req.active = args.active.then(|| ActiveRequest {
        authorised_by: args.authorised_by.clone(),
        scope: args.scope.clone(),
        verify: args.verify,
        include_unannotated: args.include_unannotated,
        dry_run: args.dry_run,
    });
    req.exclude_tools = args.exclude_tool.clone();
    // MCPPROBE_TOKEN is --token's default; when --token won, its value is still a secret.
    req.secrets.extend(
        std::env::var(MCPPROBE_TOKEN)
            .ok()
            .filter(|t| !t.is_empty())
            .map(SecretSource::Token),
    );
    let mut secrets: Vec<&str> = req
        .credentials
        .headers
        .iter()
        .map(|(_, v)| v.expose_secret())
        .collect();
    secrets.extend(
        req.credentials
            .token
            .as_ref()
            .map(ExposeSecret::expose_secret),
    );
    if let Target::Stdio { env, .. } = &req.target {
        // What --env passes the stdio server (PATH, HOME, LANG aside) is its secret, not the judge's.
        secrets.extend(
            env.iter()
                .filter(|(n, _)| !crate::engine::request::STDIO_BASE_ENV.contains(&n.as_str()))
                .map(|(_, v)| v.expose_secret()),
        );
    }
    req.judge = args.judge.config(&secrets)?;
    req.trace_file = args.trace_file.clone();
    req.baseline = args.baseline.clone().map(|path| BaselineRequest {
        path,
        update: args.update_baseline,
    });
    Ok(req)
}

/// The environment variable of the token (`--token`'s default).
const MCPPROBE_TOKEN: &str = "MCPPROBE_TOKEN";

/// Every secret of these flags, read from the flags as given (so even a message about a flag
/// that does not parse is redacted): the same sources as [`ScanRequest::secret_sources`].
pub fn flag_secrets(args: &ScanArgs) -> Secrets {
    Secrets::from_sources(&flag_secrets_sources(args))
}

/// The sources of [`flag_secrets`].
pub fn flag_secrets_sources(args: &ScanArgs) -> Vec<SecretSource> {
    let mut sources: Vec<SecretSource> = Vec::new();
    if let Some(url) = &args.url {
        sources.push(SecretSource::Url(url.clone()));
        // Not a URL the parser reads: then the whole text is the secret.
        if url::Url::parse(url).is_err() {
            sources.push(SecretSource::Other(url.clone()));
        }
    }
    sources.extend(
        args.token
            .iter()
            .cloned()
            .chain(std::env::var(MCPPROBE_TOKEN).ok())
            .filter(|t| !t.is_empty())
            .map(SecretSource::Token),
    );
    for h in &args.headers {
        let (name, value) = h.split_once(':').unwrap_or(("", h));
        sources.push(SecretSource::Header {
            name: name.trim().to_string(),
            value: value.trim().to_string(),
        });
    }
    for name in &args.env {
        if let Ok(value) = std::env::var(name)
            && !crate::engine::request::STDIO_BASE_ENV.contains(&name.as_str())
        {
            sources.push(SecretSource::Env {
                name: name.clone(),
                value,
            });
        }
    }
    sources
}

/// `--rate`, else the configuration's, else the default.
pub fn rate(args: &ScanArgs, loaded: &settings::Loaded) -> u32 {
    args.rate
        .or(loaded.config.rate)
        .unwrap_or(crate::net::DEFAULT_RATE)
}

/// The checks of the flags, or of the configuration when no flag names any.
pub fn selection(
    only: &[String],
    skip: &[String],
    config: &crate::config::Config,
) -> Result<Selection, ConfigError> {
    let selection = if only.is_empty() && skip.is_empty() {
        Selection::new(
            config.checks.as_deref().unwrap_or_default(),
            config.skip_checks.as_deref().unwrap_or_default(),
        )
    } else {
        Selection::new(only, skip)
    };
    Ok(selection?)
}

/// `--resolver IP:PORT`.
pub fn resolver(raw: Option<&str>) -> Result<Option<std::net::SocketAddr>, String> {
    raw.map(|r| {
        r.parse()
            .map_err(|_| format!("--resolver {r:?} is not IP:PORT"))
    })
    .transpose()
}

/// Runs `work` on a fresh scanner of this environment's state folder, on the CLI's runtime,
/// Ctrl-C (SIGTERM, SIGHUP) cancelling it. `Err` is a usage error.
pub fn with_scanner<'w, T: Send>(
    resolver_addr: Option<&str>,
    host_rate: u32,
    work: impl FnOnce(
        std::sync::Arc<Scanner>,
        CancellationToken,
    ) -> crate::util::BoxFuture<'w, Result<T, String>>,
) -> Result<T, String> {
    let mut config = ScannerConfig::new(state_dir_from_env().map_err(|e| e.to_string())?);
    config.resolver = resolver(resolver_addr)?;
    config.host_rate = host_rate;
    let runtime = runtime()?;
    runtime.block_on(async {
        let scanner = std::sync::Arc::new(Scanner::new(config).map_err(|e| e.to_string())?);
        let cancel = CancellationToken::new();
        let signals = cancel_on_signals(&cancel);
        let out = work(scanner, cancel).await;
        signals.abort();
        out
    })
}

/// Runs one request on a fresh scanner, Ctrl-C cancelling it. `Err` is a usage error.
pub fn run_scan(
    req: &ScanRequest,
    resolver_addr: Option<&str>,
    host_rate: u32,
) -> Result<Report, String> {
    with_scanner(resolver_addr, host_rate, |scanner, cancel| {
        Box::pin(async move { scanner.scan(req, cancel).await.map_err(|e| e.to_string()) })
    })
}

/// Says on stderr why a run was refused or is incomplete (the report says it too).
pub fn say_outcome(report: &Report) {
    if report.outcome != RunOutcome::Complete
        && let Some(why) = &report.reason
    {
        eprintln!("mcpprobe: {}", crate::util::escape::escape(why));
    }
}

pub fn scan(args: &ScanArgs) -> i32 {
    if args.discover {
        return super::discover::scan_discovered(args);
    }
    // Where discovery looks means nothing to a scan of one server: say so rather than ignore it.
    let places = &args.places;
    if !places.client_config.is_empty()
        || places.project.is_some()
        || places.no_project
        || places.test_platform.is_some()
    {
        return usage_error(
            "--client-config, --project and --no-project are read only with --discover (a scan of one server names it)",
        );
    }
    if !args.env.is_empty() && !args.stdio {
        return usage_error(
            "--env passes variables to a --stdio server or, with --discover, to discovered servers",
        );
    }
    if args.dry_run && !args.active {
        return usage_error(
            "--dry-run needs --active (the calls it would make) or --discover (the servers it would start)",
        );
    }
    if args.url.is_none() && !args.stdio {
        return usage_error("give a URL, --stdio -- COMMAND, or --discover");
    }
    let (loaded, review) = match settings::load_reviewed(&args.config) {
        Ok(l) => l,
        Err(e) => return usage_error(e),
    };
    // Whatever is printed, the secrets of the flags are not (SPEC §7).
    let flagged = flag_secrets(args);
    let req = match request(args, &loaded) {
        Ok(r) => r,
        Err(e) => return usage_error(flagged.redact(&e.to_string())),
    };
    let secrets = Secrets::from_sources(&req.secret_sources());
    show_progress(secrets.clone());
    match run_scan(&req, args.resolver.as_deref(), rate(args, &loaded)) {
        Ok(mut report) => {
            say_outcome(&report);
            review.apply(&mut report, chrono::Utc::now().date_naive());
            report.apply_policy(loaded.policy(&args.output));
            let artifact = settings::artifact(
                &[
                    args.output.sarif_artifact.as_deref(),
                    loaded.path.as_deref(),
                    args.baseline.as_deref(),
                ],
                &report.target,
            );
            if args.output.writes_sarif() {
                warn_unplaced(&artifact, &report);
            }
            emit(&report, &args.output, artifact)
        }
        Err(e) => usage_error(secrets.redact(&e)),
    }
}

/// SARIF of a network target with no file to point at: code scanning cannot place it.
fn warn_unplaced(artifact: &crate::report::Artifact, report: &Report) {
    if artifact.uri == report.target {
        eprintln!(
            "mcpprobe: warning: the SARIF results point at the target URL, which code scanning \
             cannot place in the repository; give --sarif-artifact FILE, --config or --baseline"
        );
    }
}

pub fn verify(action: &VerifyAction, resolver_addr: Option<&str>) -> i32 {
    let state = match state_dir_from_env() {
        Ok(s) => StateDir::new(s),
        Err(e) => return usage_error(e),
    };
    let now = chrono::Utc::now();
    match action {
        VerifyAction::Init { host } => match crate::gate::verify_init(host, &state, now) {
            Ok(text) => print_out(&text),
            Err(e) => usage_error(e),
        },
        VerifyAction::Status => {
            let (text, ok) = crate::gate::verify_status(&state, now);
            print_out(&text);
            if ok { 0 } else { 64 }
        }
        VerifyAction::Check { host } => {
            let server = match resolver(resolver_addr) {
                Ok(s) => s,
                Err(e) => return usage_error(e),
            };
            let runtime = match runtime() {
                Ok(r) => r,
                Err(e) => return usage_error(e),
            };
            let result: Result<String, Box<dyn std::error::Error>> = runtime.block_on(async {
                let dns = crate::net::dns::Dns::new(server)?;
                Ok(crate::gate::verify_check(host, &state, &dns, now).await?)
            });
            match result {
                Ok(text) => print_out(&text),
                Err(e) => {
                    eprintln!("mcpprobe: not verified: {e}");
                    crate::exit::ExitCode::Gate.code()
                }
            }
        }
    }
}
