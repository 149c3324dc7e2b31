//! `mcpprobe daemon` as the CLI hosts it: the configuration (tokens from the environment), the
//! state folder, logs, SIGTERM/SIGINT (which cancel running scans, recorded as interrupted),
//! the status endpoint and the schedule. `daemon accept NAME` accepts a target's state.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cli::{DaemonAction, DaemonArgs, LogFormat, print_out, usage_error};
use crate::config::Config;
use crate::daemon::sqlite::SqliteStore;
use crate::daemon::store::Store;
use crate::daemon::{Daemon, DaemonConfig, http};
use crate::engine::{Scanner, ScannerConfig};

/// Logs on stderr, `secrets` redacted from every line (SPEC §7).
fn logs(format: LogFormat, secrets: crate::net::redact::Secrets) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target("mcpprobe::daemon", tracing::Level::INFO)
        .with_target("mcpprobe", tracing::Level::WARN);
    let base = tracing_subscriber::fmt::layer()
        .with_writer(crate::net::redact::RedactingStderr::new(secrets))
        .with_ansi(false);
    let _ = match format {
        LogFormat::Json => tracing_subscriber::registry()
            .with(base.json())
            .with(filter)
            .try_init(),
        LogFormat::Text => tracing_subscriber::registry()
            .with(base)
            .with(filter)
            .try_init(),
    };
}

/// Where Linux keeps this machine's host name.
const HOSTNAME_FILE: &str = "/proc/sys/kernel/hostname";

/// The longest host name a worker name keeps (a host name has 64 bytes at most on Linux).
const MAX_HOSTNAME: usize = 64;

/// This daemon's worker name, `<hostname>-<pid>`: the host name as read (none: `localhost`),
/// trimmed, each character outside `[A-Za-z0-9._-]` made `-`, at most [`MAX_HOSTNAME`] long.
fn worker_name(hostname: Option<&str>, pid: u32) -> String {
    let host: String = hostname
        .unwrap_or_default()
        .trim()
        .chars()
        .take(MAX_HOSTNAME)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = if host.is_empty() { "localhost" } else { &host };
    format!("{host}-{pid}")
}

pub fn run(args: &DaemonArgs) -> i32 {
    let config = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let default_state = match super::scan::state_dir_from_env() {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    // `accept` needs only the state folder (not the targets' tokens).
    if let Some(DaemonAction::Accept { name, run }) = &args.action {
        let state_dir = config.state_dir.clone().unwrap_or(default_state);
        let store = match SqliteStore::open(&SqliteStore::path_in(&state_dir)) {
            Ok(s) => s,
            Err(e) => return usage_error(e),
        };
        let now = chrono::Utc::now().timestamp_millis();
        let accepted = match run {
            Some(id) => store.accept_run(name, *id, now),
            None => store.accept_latest(name, now),
        };
        return match accepted {
            Ok(id) => print_out(&format!(
                "accepted the state of {name} as its baseline (#{id})\n"
            )),
            Err(e) => usage_error(e),
        };
    }
    let mut daemon_config =
        match DaemonConfig::new(&config, |v| std::env::var(v).ok(), default_state) {
            Ok(c) => c,
            Err(e) => return usage_error(e),
        };
    // The library reads no OS state: the host names the worker.
    daemon_config.worker = worker_name(
        std::fs::read_to_string(HOSTNAME_FILE).ok().as_deref(),
        std::process::id(),
    );
    if let Err(e) = std::fs::create_dir_all(&daemon_config.state_dir) {
        return usage_error(format!(
            "cannot create the state folder {}: {e}",
            daemon_config.state_dir.display()
        ));
    }
    let store = match SqliteStore::open(&SqliteStore::path_in(&daemon_config.state_dir)) {
        Ok(s) => Arc::new(s) as Arc<dyn Store>,
        Err(e) => return usage_error(e),
    };
    if daemon_config.targets.is_empty() {
        return usage_error(format!("{}: no [[targets]] to scan", args.config.display()));
    }
    logs(args.log_format, daemon_config.secrets.clone());
    let runtime = match super::scan::runtime() {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let resolver = match args.resolver.as_deref().map(str::parse).transpose() {
        Ok(r) => r,
        Err(_) => return usage_error("--resolver is not IP:PORT"),
    };
    runtime.block_on(async {
        let mut sc = ScannerConfig::new(daemon_config.state_dir.clone());
        sc.host_rate = daemon_config.rate;
        sc.resolver = resolver;
        let scanner = match Scanner::new(sc) {
            Ok(s) => s,
            Err(e) => return usage_error(e),
        };
        let (listen, worker) = (daemon_config.listen, daemon_config.worker.clone());
        let daemon = Daemon::new(daemon_config, store, scanner);
        let shutdown = CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(t) => t,
                    Err(_) => return,
                };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            tracing::info!(target: "mcpprobe::daemon", "shutting down: running scans are cancelled and recorded as interrupted");
            on_signal.cancel();
        });
        let server = if args.once {
            None
        } else {
            let listener = match tokio::net::TcpListener::bind(listen).await {
                Ok(l) => l,
                Err(e) => return usage_error(format!("cannot listen on {listen}: {e}")),
            };
            // The address bound (`listen = "127.0.0.1:0"` takes a free port).
            let bound = listener.local_addr().unwrap_or(listen);
            tracing::info!(target: "mcpprobe::daemon", "status endpoint on http://{bound}/ (worker {worker})");
            let state = http::AppState::new(
                daemon.config.clone(),
                daemon.store.clone(),
                daemon.scanner.clone(),
                daemon.metrics.clone(),
            );
            Some(tokio::spawn(http::serve(listener, state, shutdown.clone())))
        };
        let result = daemon.run(shutdown.clone(), args.once).await;
        shutdown.cancel();
        if let Some(s) = server {
            let _ = s.await;
        }
        match result {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!(target: "mcpprobe::daemon", "{e}");
                crate::exit::ExitCode::Incomplete.code()
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_is_the_sanitised_host_name_and_the_pid() {
        assert_eq!(
            worker_name(Some("build-7.example\n"), 42),
            "build-7.example-42"
        );
        assert_eq!(worker_name(Some("  h_1  "), 1), "h_1-1");
        assert_eq!(
            worker_name(Some("h\"o{s}t é=x"), 9),
            "h-o-s-t---x-9",
            "quotes, braces, spaces and non-ASCII become -"
        );
        assert_eq!(worker_name(None, 7), "localhost-7");
        assert_eq!(worker_name(Some(" \n"), 7), "localhost-7");
        let long = "a".repeat(300);
        assert_eq!(worker_name(Some(&long), 5), format!("{}-5", "a".repeat(64)));
    }
}
