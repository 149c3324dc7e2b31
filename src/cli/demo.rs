//! `mcpprobe demo`: starts the bundled, deliberately vulnerable reference server on 127.0.0.1,
//! scans it through the engine like any target (the gate passes with a local proof), prints the
//! report, stops it.

use tokio_util::sync::CancellationToken;

use crate::cli::{DemoArgs, emit, usage_error};
use crate::demo::{server, vulnerable};
use crate::engine::{ScanLimits, ScanRequest, Scanner, ScannerConfig, Selection, Target};

pub fn run(args: &DemoArgs) -> i32 {
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
    super::scan::show_progress();
    let result = runtime.block_on(async {
        let running = server::start(vulnerable(), 0)
            .await
            .map_err(|e| format!("the reference server did not start: {e}"))?;
        let url = running.url();
        eprintln!(
            "mcpprobe demo: started the deliberately vulnerable reference server at {url}; scanning it"
        );
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
