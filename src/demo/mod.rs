//! `mcpprobe demo`: starts the bundled, deliberately vulnerable reference server on 127.0.0.1,
//! scans it like any target (the gate passes with a local proof), prints the report, stops it.

pub mod server;

use clap::Parser as _;
use serde_json::json;

use crate::cli::{Cli, Command, usage_error};

/// The demo's server: every weakness of the reference server, the legacy SSE transport, a
/// catch-all method handler and an A2A agent card on plain http.
pub fn vulnerable() -> server::Behaviour {
    server::Behaviour {
        legacy_sse: true,
        answer_unknown_methods: true,
        agent_card: Some(json!({
            "name": "Weather Agent", "description": "Weather, and a few other things.", "version": "0.9.0",
            "supportedInterfaces": [{"url": "http://weather.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"pushNotifications": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "w", "name": "Weather", "description": "Forecasts.", "tags": ["weather"]}]
        })),
        ..server::Behaviour::default()
    }
}

/// Runs the demo; `extra` are further `scan` arguments (`--format json`…).
pub fn run(extra: &[String]) -> i32 {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                let _ = url_tx.send(Err(e.to_string()));
                return;
            }
        };
        runtime.block_on(async move {
            match server::start(vulnerable(), 0).await {
                Ok(running) => {
                    let _ = url_tx.send(Ok(running.url()));
                    let _ = stop_rx.await;
                    drop(running);
                }
                Err(e) => {
                    let _ = url_tx.send(Err(e.to_string()));
                }
            }
        });
    });
    let url = match url_rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(Ok(u)) => u,
        Ok(Err(e)) => return usage_error(format!("the reference server did not start: {e}")),
        Err(_) => return usage_error("the reference server did not start within 10 s"),
    };
    eprintln!(
        "mcpprobe demo: started the deliberately vulnerable reference server at {url}; scanning it"
    );
    // The demo scans at the highest polite rate unless told otherwise.
    let mut argv = vec!["mcpprobe".to_string(), "scan".into(), url];
    if !extra
        .iter()
        .any(|a| a == "--rate" || a.starts_with("--rate="))
    {
        argv.extend(["--rate".to_string(), "10".to_string()]);
    }
    argv.extend(extra.iter().cloned());
    let code = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Scan(args),
        }) => crate::scan::scan(&args),
        Ok(_) => usage_error("demo: not a scan"),
        Err(e) => usage_error(e.to_string()),
    };
    let _ = stop_tx.send(());
    let _ = server.join();
    eprintln!("mcpprobe demo: the reference server was stopped");
    code
}
