//! `mcpprobe daemon` as the CLI hosts it: the configuration (tokens from the environment), the
//! state folder, logs, SIGTERM/SIGINT (which cancel running scans, recorded as interrupted),
//! the status endpoint and the schedule. `daemon accept NAME` accepts a target's state;
//! `daemon targets import FILE | remove NAME | list` manages the imported targets.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cli::{DaemonAction, DaemonArgs, LogFormat, TargetsAction, print_out, usage_error};
use crate::config::Config;
use crate::daemon::postgres::PgStore;
use crate::daemon::sqlite::SqliteStore;
use crate::daemon::store::{Store, StoreError};
use crate::daemon::{Daemon, DaemonConfig, DatabaseUrl, http};
use crate::engine::{Scanner, ScannerConfig};

/// Logs on stderr, `secrets` redacted from every line (SPEC §7): the latest set at each line,
/// so that an imported target's secrets are redacted as soon as the daemon loads it.
fn logs(format: LogFormat, secrets: crate::net::redact::SharedSecrets) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target("mcpprobe::daemon", tracing::Level::INFO)
        .with_target("mcpprobe", tracing::Level::WARN);
    let base = tracing_subscriber::fmt::layer()
        .with_writer(crate::net::redact::RedactingStderr::shared(secrets))
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

/// The store: the shared PostgreSQL database when `database_url_env` names one, else the
/// SQLite file in the state folder.
fn open_store(
    state_dir: &std::path::Path,
    database: Option<&DatabaseUrl>,
) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match database {
        Some(d) => Arc::new(PgStore::connect(&d.url, &d.var)?),
        None => Arc::new(SqliteStore::open(&SqliteStore::path_in(state_dir))?),
    })
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
    // `accept` and `targets` need only the store (not the targets' tokens).
    if let Some(action) = &args.action {
        let state_dir = config.state_dir.clone().unwrap_or(default_state);
        let database = match DatabaseUrl::of(&config, |v| std::env::var(v).ok()) {
            Ok(d) => d,
            Err(e) => return usage_error(e),
        };
        let (name, run) = match action {
            DaemonAction::Targets { action } => {
                return targets(action, &state_dir, database.as_ref());
            }
            DaemonAction::Accept { name, run } => (name, run),
        };
        let store = match open_store(&state_dir, database.as_ref()) {
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
            Ok(c) => c.with_env(|v| std::env::var(v).ok()),
            Err(e) => return usage_error(e),
        };
    // The library reads no OS state: the host names the worker.
    daemon_config.worker = match &args.test_worker {
        Some(w) => w.clone(),
        None => worker_name(
            std::fs::read_to_string(HOSTNAME_FILE).ok().as_deref(),
            std::process::id(),
        ),
    };
    daemon_config.hurry(
        args.test_every_ms.map(std::time::Duration::from_millis),
        args.test_lease_ms.map(std::time::Duration::from_millis),
    );
    if let Err(e) = std::fs::create_dir_all(&daemon_config.state_dir) {
        return usage_error(format!(
            "cannot create the state folder {}: {e}",
            daemon_config.state_dir.display()
        ));
    }
    let store = match open_store(&daemon_config.state_dir, daemon_config.database.as_ref()) {
        Ok(s) => s,
        Err(e) => return usage_error(daemon_config.secrets.redact(&e.to_string())),
    };
    if daemon_config.targets.is_empty() {
        match store.imported_targets() {
            Ok(imported) if !imported.is_empty() => {}
            Ok(_) => {
                return usage_error(format!(
                    "{}: no [[targets]] to scan, and none imported (`mcpprobe daemon targets import FILE`)",
                    args.config.display()
                ));
            }
            Err(e) => return usage_error(e),
        }
    }
    logs(args.log_format, daemon_config.log_secrets.clone());
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
            let state = http::AppState::of(&daemon);
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

/// Why `mcpprobe daemon targets …` did nothing (exit 64).
#[derive(Debug, thiserror::Error)]
enum TargetsError {
    #[error(transparent)]
    Import(#[from] crate::daemon::targets::ImportError),
    #[error(transparent)]
    Store(#[from] crate::daemon::store::StoreError),
    #[error("cannot create the state folder {}: {source}", path.display())]
    StateDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `mcpprobe daemon targets …` on the store in `state_dir`.
fn targets(
    action: &TargetsAction,
    state_dir: &std::path::Path,
    database: Option<&DatabaseUrl>,
) -> i32 {
    let open = || -> Result<Arc<dyn Store>, TargetsError> {
        if database.is_none() {
            std::fs::create_dir_all(state_dir).map_err(|source| TargetsError::StateDir {
                path: state_dir.to_path_buf(),
                source,
            })?;
        }
        Ok(open_store(state_dir, database)?)
    };
    let done = match action {
        TargetsAction::Import { file } => import(file, open),
        TargetsAction::Remove { name } => open().and_then(|store| {
            store.remove_target(name)?;
            Ok(format!(
                "removed {name}: no longer listed or scheduled (its history is kept)\n"
            ))
        }),
        TargetsAction::List => open().and_then(|store| Ok(list(&store)?)),
    };
    match done {
        Ok(text) => print_out(&text),
        Err(e) => usage_error(e),
    }
}

/// Checks `file` whole before the store is opened (a bad file imports nothing), then imports
/// it in one transaction.
fn import(
    file: &std::path::Path,
    open: impl FnOnce() -> Result<Arc<dyn Store>, TargetsError>,
) -> Result<String, TargetsError> {
    let list = crate::daemon::targets::read_file(file)?;
    let store = open()?;
    let now = chrono::Utc::now().timestamp_millis();
    let s = store.import_targets(&list, now)?;
    let mut text = format!(
        "imported {}: {} targets ({} added, {} updated, {} unchanged)\n",
        file.display(),
        list.len(),
        s.added,
        s.updated,
        s.unchanged
    );
    if s.shadowed > 0 {
        text.push_str(&format!(
            "{} of them are named by the configuration file, which wins: their import is not kept\n",
            s.shadowed
        ));
    }
    Ok(text)
}

/// The listed targets: name, source, interval, URL (its secrets redacted), one a line.
fn list(store: &Arc<dyn Store>) -> Result<String, crate::daemon::store::StoreError> {
    let imported: std::collections::HashSet<String> = store
        .imported_targets()?
        .into_iter()
        .map(|t| t.name)
        .collect();
    let mut text = String::new();
    for t in store.targets()? {
        let source = if imported.contains(&t.name) {
            "import"
        } else {
            "config"
        };
        text.push_str(&format!(
            "{}\t{source}\t{}s\t{}\n",
            t.name,
            t.every_ms / 1000,
            crate::util::escape::escape(&t.url)
        ));
    }
    Ok(text)
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
