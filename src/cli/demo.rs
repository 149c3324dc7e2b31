//! `mcpprobe demo`: starts the bundled, deliberately vulnerable reference server on 127.0.0.1,
//! scans it through the engine like any target (the gate passes with a local proof), prints the
//! report, stops it. `--serve` only runs the server (for `scan` and the Action); `--safe` is
//! its twin without the weaknesses.

use tokio_util::sync::CancellationToken;

use crate::cli::{DemoArgs, emit, usage_error};
use crate::demo::{server, vulnerable};
use crate::engine::{
    Credentials, ScanLimits, ScanRequest, Scanner, ScannerConfig, SecretString, Selection, Target,
};

/// Serves the reference server until Ctrl-C or SIGTERM; its URL is the first line on stdout.
fn serve(args: &DemoArgs, behaviour: server::Behaviour) -> i32 {
    let runtime = match super::scan::runtime() {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let result = runtime.block_on(async {
        let running = server::start(behaviour, args.port)
            .await
            .map_err(|e| format!("the reference server did not start: {e}"))?;
        super::print_out(&format!("{}\n", running.url()));
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("cannot wait for SIGTERM: {e}"))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        drop(running);
        Ok::<(), String>(())
    });
    match result {
        Ok(()) => 0,
        Err(e) => usage_error(e),
    }
}

pub fn run(args: &DemoArgs) -> i32 {
    let token = args.token.clone().filter(|t| !t.is_empty());
    let behaviour = match (&token, args.safe) {
        (Some(t), true) => server::Behaviour::safe(t),
        (None, true) => return usage_error("--safe needs a token: --token or MCPPROBE_TOKEN"),
        (_, false) => vulnerable(),
    };
    if args.serve {
        return serve(args, behaviour);
    }
    let checks = match Selection::new(&args.selection.checks, &args.selection.skip_checks) {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let state_dir = match super::scan::state_dir_from_env() {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let runtime = match super::scan::runtime() {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    super::scan::show_progress(crate::net::redact::Secrets::from_sources(
        &token
            .iter()
            .cloned()
            .map(crate::engine::SecretSource::Token)
            .collect::<Vec<_>>(),
    ));
    let result = runtime.block_on(async {
        let running = server::start(behaviour, args.port)
            .await
            .map_err(|e| format!("the reference server did not start: {e}"))?;
        let url = running.url();
        let which = if args.safe {
            "the safe twin of the reference server"
        } else {
            "the deliberately vulnerable reference server"
        };
        eprintln!("mcpprobe demo: started {which} at {url}; scanning it");
        let mut config = ScannerConfig::new(state_dir);
        config.host_rate = args.rate;
        let scanner = Scanner::new(config).map_err(|e| e.to_string())?;
        let mut req = ScanRequest::new(Target::http(&url).map_err(|e| e.to_string())?);
        req.checks = checks;
        req.limits = ScanLimits {
            rate: args.rate,
            ..ScanLimits::default()
        };
        req.trace_file = args.trace_file.clone();
        if args.active {
            req.active = Some(crate::engine::ActiveRequest {
                authorised_by: Some(
                    "mcpprobe demo (the bundled reference server on loopback)".into(),
                ),
                scope: Some("*".into()),
                verify: true,
                include_unannotated: false,
                dry_run: false,
            });
        }
        if args.safe {
            req.credentials = Credentials {
                token: token.clone().map(SecretString::from),
                headers: Vec::new(),
            };
        }
        let cancel = CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let report = scanner.scan(&req, cancel).await.map_err(|e| e.to_string());
        ctrl_c.abort();
        drop(running);
        eprintln!("mcpprobe demo: the reference server was stopped");
        report
    });
    match result {
        Ok(mut report) => {
            super::scan::say_outcome(&report);
            report.apply_policy(args.output.policy());
            let target = report.target.clone();
            emit(
                &report,
                &args.output,
                super::settings::artifact(&[args.output.sarif_artifact.as_deref()], &target),
            )
        }
        Err(e) => usage_error(e),
    }
}
