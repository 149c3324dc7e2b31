//! The store with a long history (issue 25): 100 targets and 100,000 finished runs in the
//! SQLite store (or, with `--postgres URL`, a PostgreSQL database), then the latency of what
//! `/targets` and a target's run list read (the store calls, 100 of each: median, p99 and the
//! worst), the same through the daemon's HTTP endpoint (its router on 127.0.0.1, 100 requests
//! of each), and retention bringing the table back to its bound. Run by `scripts/bench-fleet.sh`:
//!
//! ```text
//! cargo run --release --example history [-- --postgres postgres://…]
//! ```

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpprobe::config::Config;
use mcpprobe::daemon::{Daemon, DaemonConfig, http};
use mcpprobe::engine::{Scanner, ScannerConfig};

use mcpprobe::daemon::postgres::PgStore;
use mcpprobe::daemon::sqlite::SqliteStore;
use mcpprobe::daemon::store::{
    Claimed, Counts, Finished, Retention, RunStatus, Store, StoreError, TargetRow,
};

const TARGETS: i64 = 100;
const RUNS: i64 = 100_000;

fn finished() -> Finished {
    Finished {
        status: RunStatus::Complete,
        exit_code: 0,
        counts: Counts::default(),
        tool_list_sha256: Some("ab".repeat(32)),
        requests: 20,
        reason: None,
        // About what a real report weighs.
        report_json: format!("{{\"report\":\"{}\"}}", "x".repeat(4096)),
        observed_json: None,
        compared_with: None,
        refusal: None,
        duration_ms: 900,
        proof: None,
    }
}

fn percentiles(mut d: Vec<Duration>) -> String {
    d.sort();
    let at = |q: f64| d[((d.len() as f64 - 1.0) * q) as usize];
    format!(
        "median {:.2} ms, p99 {:.2} ms, worst {:.2} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        d[d.len() - 1].as_secs_f64() * 1e3
    )
}

/// The daemon's endpoint on this store (its router, on 127.0.0.1:0, the scheduler not
/// started), and 100 timed requests of `/targets` and of a target's run list, each answered
/// 200 (a request that is not fails the benchmark).
fn over_http(
    store: Arc<dyn Store>,
    rows: &[TargetRow],
    state: &std::path::Path,
) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let mut text = String::from("listen = \"127.0.0.1:0\"\n\n");
        for r in rows {
            text.push_str(&format!(
                "[[targets]]\nname = \"{}\"\nurl = \"{}\"\nevery = \"1h\"\n\n",
                r.name, r.url
            ));
        }
        let config = Config::parse(&text, std::path::Path::new("history.toml")).expect("config");
        let dc = DaemonConfig::new(&config, |_| None, state.to_path_buf()).expect("daemon config");
        let scanner = Scanner::new(ScannerConfig::new(state)).expect("scanner");
        let daemon = Daemon::new(dc, store, scanner);
        let app = http::router(http::AppState::of(&daemon));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let client = reqwest::Client::new();
        let time = |path: String| {
            let client = client.clone();
            async move {
                let t = Instant::now();
                let resp = client
                    .get(format!("http://{addr}{path}"))
                    .send()
                    .await
                    .expect("an answer");
                assert_eq!(resp.status(), 200, "{path}");
                resp.bytes().await.expect("a body");
                t.elapsed()
            }
        };
        let (mut listing, mut runs) = (Vec::new(), Vec::new());
        for i in 0..100 {
            listing.push(time("/targets".into()).await);
            runs.push(time(format!("/targets/t{:03}/runs", i % TARGETS)).await);
        }
        (listing, runs)
    })
}

fn main() -> Result<(), StoreError> {
    let args: Vec<String> = std::env::args().collect();
    let dir = tempfile::tempdir().map_err(|e| StoreError::Database {
        path: "a temporary folder".into(),
        message: e.to_string(),
    })?;
    let store: Arc<dyn Store> = match args.iter().position(|a| a == "--postgres") {
        Some(i) => {
            let url = secrecy::SecretString::from(args.get(i + 1).cloned().unwrap_or_default());
            Arc::new(PgStore::connect(&url, "--postgres")?)
        }
        None => Arc::new(SqliteStore::open(&dir.path().join("history.sqlite3"))?),
    };
    let rows: Vec<TargetRow> = (0..TARGETS)
        .map(|i| TargetRow {
            name: format!("t{i:03}"),
            url: format!("http://127.0.0.1:1/t{i:03}"),
            every_ms: 3_600_000,
        })
        .collect();
    store.sync_targets(&rows, 0)?;
    let start = Instant::now();
    let f = finished();
    for n in 0..RUNS {
        let (target, slot) = (format!("t{:03}", n % TARGETS), (n / TARGETS) * 3_600_000);
        if let Claimed::Run(c) = store.claim(&target, slot, slot + 1, 60_000)? {
            store.finish(&c, &f, slot + 2)?;
        }
    }
    println!(
        "stored {RUNS} runs of {TARGETS} targets in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let mut listing = Vec::new();
    let mut runs = Vec::new();
    for i in 0..100 {
        let t = Instant::now();
        store.targets()?;
        store.latest_runs()?;
        listing.push(t.elapsed());
        let t = Instant::now();
        store.runs(&format!("t{:03}", i % TARGETS), 200)?;
        runs.push(t.elapsed());
    }
    println!("/targets (targets + latest runs): {}", percentiles(listing));
    println!("a target's run list (200 runs): {}", percentiles(runs));
    let (listing, runs) = over_http(store.clone(), &rows, dir.path());
    println!("GET /targets over HTTP: {}", percentiles(listing));
    println!("GET /targets/NAME/runs over HTTP: {}", percentiles(runs));
    let t = Instant::now();
    let now = (RUNS / TARGETS) * 3_600_000;
    let deleted = store.prune(&Retention::default(), now)?;
    let left: usize = (0..TARGETS)
        .map(|i| store.runs(&format!("t{i:03}"), 100_000).map(|r| r.len()))
        .sum::<Result<usize, _>>()?;
    println!(
        "retention (keep_runs 200, keep_days 90): deleted {deleted} runs in {:.2} s; {left} left ({} per target at most)",
        t.elapsed().as_secs_f64(),
        Retention::default().runs
    );
    Ok(())
}
