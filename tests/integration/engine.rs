//! The engine used as a library, as the daemon and the Python package will use it: concurrent
//! scans on a multi-threaded runtime, cancellation, a panicking check, the per-host rate limit,
//! usage errors for unknown check ids, and the `Send` future.

use std::sync::Arc;
use std::time::Duration;

use mcpprobe::checks::{BoxFuture, Check, Live, Outcome};
use mcpprobe::demo::server::{self, Behaviour, Running};
use mcpprobe::engine::{
    ConfigError, ScanLimits, ScanRequest, Scanner, ScannerConfig, Selection, Target,
};
use mcpprobe::model::{CheckStatus, Report, RunOutcome};
use tokio_util::sync::CancellationToken;

use crate::support::state_dir;

/// Every test's bound: a scan that does not end within it is a failure, not a hang.
const BOUND: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn scanner(state: &std::path::Path, rate: u32, overrides: Vec<&'static dyn Check>) -> Scanner {
    let mut config = ScannerConfig::new(state);
    config.host_rate = rate;
    config.overrides = overrides;
    Scanner::new(config).expect("a scanner")
}

fn request(url: &str, rate: u32) -> ScanRequest {
    let mut req = ScanRequest::new(Target::http(url).expect("a URL"));
    req.limits = ScanLimits {
        rate,
        ..ScanLimits::default()
    };
    req
}

fn status<'r>(r: &'r Report, id: &str) -> &'r mcpprobe::model::CheckRecord {
    r.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} is in every report"))
}

/// A server that refuses unknown session ids, so that it tracks which sessions are open.
fn tracking() -> Behaviour {
    Behaviour {
        accept_unknown_sessions: false,
        ..Behaviour::default()
    }
}

#[test]
fn the_scan_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let rt = runtime();
    rt.block_on(async {
        let dir = state_dir();
        let s = scanner(dir.path(), 5, vec![]);
        let req = request("http://127.0.0.1:9/mcp", 5);
        let fut = s.scan(&req, CancellationToken::new());
        assert_send(&fut);
        drop(fut);
    });
}

#[test]
fn two_scans_of_two_servers_run_concurrently_on_spawned_tasks() {
    let rt = runtime();
    let dir = state_dir();
    rt.block_on(async {
        let a = server::start(Behaviour::default(), 0)
            .await
            .expect("server a");
        let b = server::start(Behaviour::safe("t0ken"), 0)
            .await
            .expect("server b");
        let s = Arc::new(scanner(dir.path(), 10, vec![]));
        let spawn = |url: String| {
            let s = s.clone();
            tokio::spawn(async move {
                let req = request(&url, 10);
                s.scan(&req, CancellationToken::new()).await
            })
        };
        let (ha, hb) = (spawn(a.url()), spawn(b.url()));
        let (ra, rb) = tokio::time::timeout(BOUND, async { (ha.await, hb.await) })
            .await
            .expect("both scans end");
        let ra = ra.expect("task a").expect("no config error");
        let rb = rb.expect("task b").expect("no config error");
        assert_eq!(ra.outcome, RunOutcome::Complete, "{:?}", ra.reason);
        assert!(
            ra.findings.iter().any(|f| f.check == "META-02"),
            "the vulnerable server's poisoning is found"
        );
        // The safe twin needs a token we did not pass: every rung answers 401.
        assert_eq!(rb.target, b.url());
        assert!(rb.findings.iter().all(|f| f.check != "META-02"));
        assert!(ra.requests_sent > 0 && rb.requests_sent > 0);
    });
}

#[test]
fn a_cancelled_scan_ends_promptly_incomplete_with_its_sessions_closed() {
    let rt = runtime();
    let dir = state_dir();
    rt.block_on(async {
        let srv: Running = server::start(tracking(), 0).await.expect("server");
        let s = Arc::new(scanner(dir.path(), 10, vec![]));
        let cancel = CancellationToken::new();
        let mut seen = srv.requests_seen();
        let task = {
            let (s, url, cancel) = (s.clone(), srv.url(), cancel.clone());
            tokio::spawn(async move { s.scan(&request(&url, 10), cancel).await })
        };
        // Halfway: after the ladder and the inventory (a full scan sends about 37 requests).
        tokio::time::timeout(BOUND, seen.wait_for(|n| *n >= 14))
            .await
            .expect("the scan gets going")
            .expect("the server is up");
        let before = srv.arrivals().len();
        cancel.cancel();
        let report = tokio::time::timeout(BOUND, task)
            .await
            .expect("the cancelled scan ends")
            .expect("no panic")
            .expect("no config error");
        assert_eq!(report.outcome, RunOutcome::Incomplete);
        assert!(
            report
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("cancelled")),
            "{:?}",
            report.reason
        );
        // Nothing but session ends goes out after the cancellation.
        let after = srv.arrivals().len();
        assert!(
            after - before <= 4,
            "{} requests after the cancel",
            after - before
        );
        assert_eq!(
            srv.open_sessions(),
            0,
            "every 2025 session was ended with DELETE"
        );
        let interrupted = report
            .checks
            .iter()
            .filter(|c| {
                c.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("interrupted"))
            })
            .count();
        assert!(interrupted > 0, "the checks that did not run say why");
        assert!(report.checks.iter().all(|c| c.status != CheckStatus::Error));
    });
}

/// A test-only check that panics in the middle of a scan.
struct Panics;

impl Check for Panics {
    fn id(&self) -> &'static str {
        "PROTO-02"
    }
    fn live<'a>(&'a self, _cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async { panic!("a check with a bug") })
    }
}

static PANICS: Panics = Panics;

#[test]
fn a_panicking_check_is_an_errored_check_not_a_dead_process() {
    let rt = runtime();
    let dir = state_dir();
    rt.block_on(async {
        let srv = server::start(tracking(), 0).await.expect("server");
        let s = scanner(dir.path(), 10, vec![&PANICS]);
        let report = tokio::time::timeout(
            BOUND,
            s.scan(&request(&srv.url(), 10), CancellationToken::new()),
        )
        .await
        .expect("the scan ends")
        .expect("no config error");
        let p = status(&report, "PROTO-02");
        assert_eq!(p.status, CheckStatus::Error);
        assert!(
            p.reason
                .as_deref()
                .is_some_and(|r| r.contains("panicked") && r.contains("a check with a bug")),
            "{:?}",
            p.reason
        );
        // The other checks still ran, and the scan is incomplete because one errored.
        assert_eq!(status(&report, "PROTO-03").status, CheckStatus::Ran);
        assert_eq!(report.outcome, RunOutcome::Incomplete);
        assert_eq!(srv.open_sessions(), 0, "sessions are still ended");
    });
}

#[test]
fn two_concurrent_scans_of_one_host_share_its_rate() {
    shared_rate(|srv| (srv.url(), srv.url()));
}

#[test]
fn a_name_and_an_ip_literal_of_one_server_share_its_rate() {
    shared_rate(|srv| (srv.url(), srv.url().replace("127.0.0.1", "localhost")));
}

/// Two concurrent scans of one server (by the URLs `urls` gives) together stay within the rate.
fn shared_rate(urls: impl Fn(&Running) -> (String, String)) {
    let rt = runtime();
    let dir = state_dir();
    let rate = 5;
    rt.block_on(async {
        let srv = server::start(tracking(), 0).await.expect("server");
        let s = Arc::new(scanner(dir.path(), rate, vec![]));
        let (first, second) = urls(&srv);
        let spawn = |url: String| {
            let s = s.clone();
            tokio::spawn(async move {
                let mut req = request(&url, rate);
                req.checks = Selection::new(&["META-02"], &[] as &[&str]).expect("ids");
                s.scan(&req, CancellationToken::new()).await
            })
        };
        let (a, b) = (spawn(first), spawn(second));
        let (a, b) = tokio::time::timeout(BOUND, async { (a.await, b.await) })
            .await
            .expect("both end");
        let (a, b) = (a.expect("a").expect("a ok"), b.expect("b").expect("b ok"));
        assert_eq!(a.outcome, RunOutcome::Complete, "{:?}", a.reason);
        assert_eq!(b.outcome, RunOutcome::Complete, "{:?}", b.reason);
        let times = srv.arrivals();
        assert!(
            times.len() >= 16,
            "both scans sent their ladders ({} requests)",
            times.len()
        );
        // No one-second window holds more than the rate, plus the request at its edge.
        let worst = times
            .iter()
            .enumerate()
            .map(|(i, t)| {
                times[i..]
                    .iter()
                    .take_while(|u| u.duration_since(*t) < Duration::from_secs(1))
                    .count()
            })
            .max()
            .unwrap_or(0);
        assert!(
            worst <= rate as usize + 1,
            "{worst} requests in one second at a rate of {rate}"
        );
    });
}

#[test]
fn unknown_check_ids_are_usage_errors_with_the_closest_id() {
    match Selection::new(&["AUTH01"], &[] as &[&str]).map_err(ConfigError::from) {
        Err(ConfigError::UnknownCheck { id, suggestion }) => {
            assert_eq!(id, "AUTH01");
            assert_eq!(suggestion.as_deref(), Some("AUTH-01"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Selection::new(&[] as &[&str], &["NOPE-99"]).map_err(ConfigError::from),
        Err(ConfigError::UnknownCheck { .. })
    ));
    assert!(Selection::new(&["auth-01", "trans-03"], &[] as &[&str]).is_ok());
    let out = crate::support::mcpprobe()
        .args(["scan", "http://127.0.0.1:9/mcp", "--checks", "AUTH01"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean AUTH-01"), "{err}");
    assert!(out.stdout.is_empty(), "nothing was scanned");
}

#[test]
fn a_rate_above_ten_is_a_configuration_error() {
    let rt = runtime();
    let dir = state_dir();
    rt.block_on(async {
        let mut config = ScannerConfig::new(dir.path());
        config.host_rate = 11;
        assert!(matches!(Scanner::new(config), Err(ConfigError::Rate(_))));
        let s = scanner(dir.path(), 5, vec![]);
        let r = s
            .scan(
                &request("http://127.0.0.1:9/mcp", 0),
                CancellationToken::new(),
            )
            .await;
        assert!(matches!(r, Err(ConfigError::Network(_))), "{r:?}");
    });
}

/// Which module may import the CLI is `tests/layering.rs`'s (the CLI is the top floor); this
/// holds the other half: only the CLI may print.
#[test]
fn only_the_cli_prints() {
    let src = crate::support::root().join("src");
    // The lints that keep printing in the CLI: denied for the crate, allowed on `cli` only.
    let manifest =
        std::fs::read_to_string(crate::support::root().join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        manifest.contains("print_stdout = \"deny\"")
            && manifest.contains("print_stderr = \"deny\"")
    );
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    assert!(lib.contains("#[allow(clippy::print_stdout, clippy::print_stderr)]\npub mod cli;"));
    assert_eq!(
        lib.matches("allow(clippy::print").count(),
        1,
        "no other module may print"
    );
}

fn authorisation_records(state: &std::path::Path) -> Vec<serde_json::Value> {
    let mut paths: Vec<_> = std::fs::read_dir(state.join("authorisations"))
        .expect("the records folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths.iter().map(|p| crate::support::json_file(p)).collect()
}

fn active() -> mcpprobe::engine::ActiveRequest {
    mcpprobe::engine::ActiveRequest {
        authorised_by: Some("Grace Hopper".into()),
        scope: Some("read-only tools".into()),
        verify: true,
        include_unannotated: false,
        dry_run: false,
    }
}

#[test]
fn active_runs_record_the_tool_list_hash_over_http_and_stdio() {
    let rt = runtime();
    let dir = state_dir();
    rt.block_on(async {
        let srv = server::start(tracking(), 0).await.expect("server");
        let s = scanner(dir.path(), 10, vec![]);
        let mut req = request(&srv.url(), 10);
        req.active = Some(active());
        let http = s
            .scan(&req, CancellationToken::new())
            .await
            .expect("http scan");
        let script = crate::support::root().join("fixtures/servers/stdio_server.py");
        let mut req = ScanRequest::new(
            Target::stdio(&["python3".to_string(), script.display().to_string()])
                .expect("a command"),
        );
        req.active = Some(active());
        let stdio = s
            .scan(&req, CancellationToken::new())
            .await
            .expect("stdio scan");
        assert_eq!(stdio.outcome, RunOutcome::Complete, "{:?}", stdio.reason);
        let records = authorisation_records(dir.path());
        assert_eq!(
            records.len(),
            2,
            "one record per active run, names never collide"
        );
        let hashes: std::collections::BTreeSet<String> = records
            .iter()
            .map(|r| r["tool_list_sha256"].as_str().expect("a hash").to_string())
            .collect();
        let expected: std::collections::BTreeSet<String> = [&http, &stdio]
            .iter()
            .map(|r| r.tool_list_sha256.clone().expect("an inventory"))
            .collect();
        assert_eq!(hashes, expected);
        assert!(records.iter().all(|r| r["authorised_by"] == "Grace Hopper"));
    });
}

#[test]
fn concurrent_state_writes_leave_one_whole_file_and_no_temporary_files() {
    use mcpprobe::gate::state::{StateDir, StoredProof};
    let dir = state_dir();
    let state = Arc::new(StateDir::new(dir.path()));
    let token = "0123456789abcdef0123456789abcdef";
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let state = state.clone();
            std::thread::spawn(move || {
                for j in 0..25 {
                    let now = chrono::Utc::now() + chrono::Duration::seconds(i * 100 + j);
                    state
                        .save_proof(&StoredProof::new("mcp.example.com", token, now))
                        .expect("a write");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("no writer panicked");
    }
    let proof = state
        .proof("mcp.example.com")
        .expect("readable")
        .expect("present");
    assert_eq!(secrecy::ExposeSecret::expose_secret(&proof.token), token);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("proofs"))
        .expect("proofs folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "mcp.example.com.json")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn credentials_in_the_target_url_are_refused() {
    assert!(matches!(
        Target::http("https://user:pass@mcp.example.com/mcp"),
        Err(ConfigError::Target(_))
    ));
    let out = crate::support::mcpprobe()
        .args(["scan", "http://ada:hunter2@127.0.0.1:9/mcp"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--header") && !err.contains("hunter2"),
        "{err}"
    );
}
