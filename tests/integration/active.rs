//! The active checks (SPEC §13): the gate in the types and at run time, the call policy, budgets,
//! and each implemented check against a deliberately vulnerable server with twins that are safe,
//! that reflect their input, and that are slow. Every vulnerable server runs in the sandbox of
//! `tests/support/sandbox.sh` (read-only file system but its scratch folder, loopback only).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{mcpprobe, root, state_dir, stdout_json};

/// The active checks that call the sandboxed fixture in its own network namespace (ACT-03 needs
/// the fixture to reach mcpprobe's listener, ACT-06 an HTTP server that advertises OAuth: each
/// has a test of its own).
const IMPLEMENTED: [&str; 6] = ["ACT-01", "ACT-02", "ACT-04", "ACT-05", "ACT-07", "ACT-08"];

const GATE: [&str; 6] = [
    "--active",
    "--authorised-by",
    "Ada Lovelace",
    "--scope",
    "*",
    "--verify",
];

/// A scratch folder for a sandboxed server (the target folder's; the sandbox binds a scratch
/// folder under /tmp back in after mounting its own /tmp).
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a scratch folder")
}

/// Every file under `dir` with its bytes, sorted: what "nothing changed" is compared on.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).expect("readable")));
            }
        }
    }
    out.sort();
    out
}

/// `mcpprobe scan --stdio` of `vuln_stdio.py MODE` in the sandbox → (exit code, report, state).
fn scan_fixture(
    mode: &str,
    scratch: &Path,
    extra: &[&str],
) -> (Option<i32>, Value, tempfile::TempDir) {
    scan_fixture_in(mode, scratch, extra, false)
}

/// [`scan_fixture`]; with `shared_net`, mcpprobe itself runs in a loopback-only network
/// namespace that the sandboxed server shares (so that it can reach mcpprobe's listener).
fn scan_fixture_in(
    mode: &str,
    scratch: &Path,
    extra: &[&str],
    shared_net: bool,
) -> (Option<i32>, Value, tempfile::TempDir) {
    let fixture = root()
        .join("tests/support/vuln_stdio.py")
        .display()
        .to_string();
    scan_sandboxed(&["python3", &fixture, mode], scratch, extra, shared_net)
}

/// `mcpprobe scan --stdio --format json` of `server` (a program and its arguments) in the
/// sandbox → (exit code, report, state); with `shared_net` as [`scan_fixture_in`].
fn scan_sandboxed(
    server: &[&str],
    scratch: &Path,
    extra: &[&str],
    shared_net: bool,
) -> (Option<i32>, Value, tempfile::TempDir) {
    let state = state_dir();
    let mut cmd = if shared_net {
        let mut c = assert_cmd::Command::new("unshare");
        c.args([
            "--net",
            "--",
            "sh",
            "-c",
            "ip link set lo up && exec \"$@\"",
            "sh",
        ])
        .arg(assert_cmd::cargo::cargo_bin("mcpprobe"))
        .env("SANDBOX_NET", "inherit")
        .env_remove("MCPPROBE_TOKEN")
        .env_remove("MCPPROBE_RESOLVER");
        c
    } else {
        mcpprobe()
    };
    let net_env: &[&str] = if shared_net {
        &["--env", "SANDBOX_NET"]
    } else {
        &[]
    };
    let o = cmd
        .env("MCPPROBE_STATE_DIR", state.path())
        .timeout(std::time::Duration::from_secs(120))
        .args(["scan", "--stdio", "--format", "json", "--no-config"])
        .args(net_env)
        .args(extra)
        .arg("--")
        .arg(root().join("tests/support/sandbox.sh"))
        .arg(scratch)
        .args(server)
        .output()
        .expect("runs");
    (o.status.code(), stdout_json(&o), state)
}

fn findings<'r>(report: &'r Value, check: &str) -> Vec<&'r Value> {
    report["findings"]
        .as_array()
        .map(|f| f.iter().filter(|f| f["check"] == check).collect())
        .unwrap_or_default()
}

fn record(report: &Value, id: &str) -> Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .cloned()
        .unwrap_or(Value::Null)
}

fn authorisation(state: &Path) -> Value {
    let dir = state.join("authorisations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("an authorisation record")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    crate::support::json_file(&files.remove(0))
}

/// A program scripts/setup-peers.sh installs under the repo.
fn installed_peer(rel: &str) -> PathBuf {
    let program = root().join(rel);
    assert!(
        program.exists(),
        "{} is missing: run scripts/setup-peers.sh",
        program.display()
    );
    program
}

/// One ACT-02 finding, at `read_file`, and a warning for each refusal in `refused`.
fn read_file_proven_and_refused(report: &Value, refused: &[&str]) {
    let act02 = findings(report, "ACT-02");
    assert_eq!(act02.len(), 1, "{report}");
    assert_eq!(act02[0]["location"]["tool"], "read_file");
    let warnings = report["warnings"].to_string();
    for r in refused {
        assert!(warnings.contains(r), "{warnings}");
    }
}

/// Every call the authorisation record lists went to one of `tools`.
fn called_only(state: &Path, tools: &[&str]) {
    let calls = authorisation(state)["calls"].clone();
    for c in calls.as_array().expect("calls") {
        assert!(tools.contains(&c["tool"].as_str().unwrap_or("")), "{c}");
    }
}

fn budget(id: &str) -> u64 {
    mcpprobe::catalogue::catalogue()
        .metas()
        .find(|m| m.id == id)
        .map(|m| u64::from(m.requests))
        .expect("in the catalogue")
}

#[test]
fn each_check_proves_the_sandboxed_vulnerable_server_and_changes_nothing() {
    let dir = scratch();
    std::fs::write(
        dir.path().join("keep.txt"),
        "the scratch folder before the scan",
    )
    .expect("write");
    let before = snapshot(dir.path());
    let (code, report, state) = scan_fixture("vulnerable", dir.path(), &GATE);
    assert_eq!(code, Some(1), "{report}");
    // ACT-01: the product, which only a shell computes, in the result of lookup_host's `host`.
    let act01 = findings(&report, "ACT-01");
    assert_eq!(act01.len(), 1, "{report}");
    assert_eq!(act01[0]["severity"], "critical");
    assert_eq!(act01[0]["location"]["tool"], "lookup_host");
    assert_eq!(
        act01[0]["location"]["pointer"],
        "/tools/0/inputSchema/properties/host"
    );
    assert!(
        !act01[0]["evidence"]["exchanges"]
            .as_array()
            .expect("calls")
            .is_empty()
    );
    // A real shell also sleeps: the echo proof is confirmed by alternating delays.
    let message = act01[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("confirmed by timing"), "{message}");
    // ACT-02: /proc/version's marker through read_note's `name`, which its control did not show.
    let act02 = findings(&report, "ACT-02");
    assert_eq!(act02.len(), 1, "{report}");
    assert_eq!(act02[0]["location"]["tool"], "read_note");
    assert!(
        act02[0]["evidence"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Linux version")
    );
    // ACT-04: find_customer's `name` breaks the query with a lone quote (SQLite's syntax error)
    // and answers the same value with its quotes balanced (the baseline and two pairs, with
    // mcpprobe's own value, which matches no row) without one; check_customer answers "ok" whatever the rows, so
    // only its MySQL sleep shows it: each answer as slow as asked, the control fast. Its
    // PostgreSQL form (an error the blind tool swallows) proved nothing.
    let act04 = findings(&report, "ACT-04");
    assert_eq!(act04.len(), 2, "{report}");
    let of = |tool: &str| {
        *act04
            .iter()
            .find(|f| f["location"]["tool"] == tool)
            .unwrap_or_else(|| panic!("no ACT-04 finding at {tool}: {report}"))
    };
    let pairs = of("find_customer");
    assert_eq!(pairs["subcode"], "quote");
    assert_eq!(pairs["confidence"], "medium");
    assert_eq!(
        pairs["evidence"]["exchanges"].as_array().map(Vec::len),
        Some(6)
    );
    let sleep = of("check_customer");
    assert_eq!(sleep["subcode"], "sleep");
    assert_eq!(
        sleep["location"]["pointer"],
        "/tools/6/inputSchema/properties/customer"
    );
    let m = sleep["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("MySQL SLEEP") && m.contains("correlation"),
        "{m}"
    );
    assert_eq!(
        sleep["evidence"]["exchanges"].as_array().map(Vec::len),
        Some(5)
    );
    // ACT-08: the file:// template resolves `..` to /proc/version; its control did not.
    let act08 = findings(&report, "ACT-08");
    assert_eq!(act08.len(), 1, "{report}");
    assert_eq!(
        act08[0]["location"]["pointer"],
        "/resourceTemplates/0/uriTemplate"
    );
    // ACT-03: the fixture's own network namespace cannot reach mcpprobe's listener: it ran,
    // its probe was not fetched, and it says nothing.
    assert_eq!(record(&report, "ACT-03")["status"], "ran");
    assert!(findings(&report, "ACT-03").is_empty());
    // ACT-05: the notice's result carries an instruction aimed at the model.
    let act05 = findings(&report, "ACT-05");
    assert!(
        act05.iter().all(|f| f["location"]["tool"] == "get_notice"),
        "{report}"
    );
    assert!(act05.iter().any(|f| f["subcode"] == "P2"), "{report}");
    // ACT-07: a wrong type accepted (medium), unexpected properties accepted (info).
    let act07 = findings(&report, "ACT-07");
    assert!(
        act07
            .iter()
            .any(|f| f["subcode"] == "wrong-type" && f["severity"] == "medium"),
        "{report}"
    );
    assert!(
        act07
            .iter()
            .any(|f| f["subcode"] == "extra-property" && f["severity"] == "info"),
        "{report}"
    );
    // The tools the policy refuses were never called, and nothing changed in the scratch folder
    // (the only place the server could write).
    assert_eq!(snapshot(dir.path()), before, "the scratch folder changed");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("`delete_cache`: its name says it deletes data"),
        "{warnings}"
    );
    assert!(
        warnings.contains("`get_unannotated`: it has no annotations"),
        "{warnings}"
    );
    // The authorisation record lists every call made, within each check's budget.
    let auth = authorisation(state.path());
    assert_eq!(auth["status"], "finished");
    assert_eq!(auth["authorised_by"], "Ada Lovelace");
    let calls = auth["calls"].as_array().expect("calls");
    for id in IMPLEMENTED {
        let made = calls.iter().filter(|c| c["check"] == id).count() as u64;
        assert!(made > 0 && made <= budget(id), "{id}: {made} calls");
        assert_eq!(record(&report, id)["requests"], made, "{id}");
    }
    assert!(
        calls
            .iter()
            .all(|c| c["tool"] != "delete_cache" && c["tool"] != "get_unannotated")
    );
}

#[test]
fn the_safe_and_the_reflecting_twins_get_no_finding() {
    for mode in ["safe", "reflect"] {
        let dir = scratch();
        let (code, report, _state) = scan_fixture(mode, dir.path(), &GATE);
        // The passive rules still flag `delete_cache` (read-only by its annotations, a delete
        // by its name): exit 1 from them, none from an active check.
        assert_eq!(code, Some(1), "{mode}: {report}");
        assert_eq!(report["outcome"], "complete", "{mode}");
        for id in IMPLEMENTED {
            assert_eq!(record(&report, id)["status"], "ran", "{mode} {id}");
            assert!(findings(&report, id).is_empty(), "{mode} {id}: {report}");
        }
    }
}

#[test]
fn a_slow_twin_is_not_mistaken_for_an_injection() {
    let dir = scratch();
    let mut args = GATE.to_vec();
    args.extend(["--checks", "ACT-01,ACT-04"]);
    let (code, report, _state) = scan_fixture("slow", dir.path(), &args);
    assert_eq!(code, Some(0), "{report}");
    for id in ["ACT-01", "ACT-04"] {
        assert_eq!(record(&report, id)["status"], "ran");
        assert!(findings(&report, id).is_empty(), "{report}");
    }
    // ACT-04 sleep probes ran on the blind check_customer and the slow control told them apart.
    assert!(
        record(&report, "ACT-04")["requests"].as_u64() > Some(18),
        "{report}"
    );
}

#[test]
fn unannotated_tools_are_called_only_with_include_unannotated_and_delete_never() {
    let dir = scratch();
    // Scoped to the two tools (the budgets would otherwise go to the others first).
    let args = [
        "--active",
        "--authorised-by",
        "Ada Lovelace",
        "--scope",
        "get_unannotated,delete_cache",
        "--verify",
        "--include-unannotated",
    ];
    let (_, report, state) = scan_fixture("safe", dir.path(), &args);
    let log = std::fs::read_to_string(dir.path().join("calls-forbidden.log")).unwrap_or_default();
    assert!(log.contains("get_unannotated"), "{report}");
    assert!(!log.contains("delete_cache"), "{log}");
    let auth = authorisation(state.path());
    assert_eq!(auth["include_unannotated"], true);
    assert!(
        auth["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .all(|c| c["tool"] != "delete_cache")
    );
}

#[test]
fn scope_and_exclusions_limit_what_is_called() {
    let dir = scratch();
    let args = [
        "--active",
        "--authorised-by",
        "Ada Lovelace",
        "--scope",
        "get_*",
        "--verify",
        "--exclude-tool",
        "get_status",
    ];
    let (_, report, state) = scan_fixture("vulnerable", dir.path(), &args);
    let auth = authorisation(state.path());
    let tools: std::collections::BTreeSet<&str> = auth["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["tool"].as_str())
        .collect();
    assert_eq!(tools, ["get_notice"].into_iter().collect(), "{report}");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("`lookup_host`: it is not in --scope"),
        "{warnings}"
    );
    assert!(
        warnings.contains("`get_status`: --exclude-tool `get_status` names it"),
        "{warnings}"
    );
}

#[test]
fn a_dry_run_calls_nothing_and_says_what_it_would_call() {
    let dir = scratch();
    let mut args = GATE.to_vec();
    args.push("--dry-run");
    let (code, report, state) = scan_fixture("vulnerable", dir.path(), &args);
    assert_eq!(code, Some(1), "the passive findings still count: {report}");
    for id in IMPLEMENTED {
        let r = record(&report, id);
        assert_eq!(r["status"], "skipped", "{r}");
        assert!(
            r["reason"]
                .as_str()
                .unwrap_or_default()
                .starts_with("dry run (--dry-run)"),
            "{r}"
        );
        assert!(findings(&report, id).is_empty());
    }
    let reason = record(&report, "ACT-01")["reason"].to_string();
    assert!(
        reason.contains("`lookup_host`") && reason.contains("of 28 calls planned"),
        "{reason}"
    );
    // Follow-up calls depend on answers a dry run does not have: it says what they would be.
    assert!(reason.contains("5 timing calls"), "{reason}");
    let reason = record(&report, "ACT-04")["reason"].to_string();
    assert!(
        reason.contains("`check_customer`") && reason.contains("5 sleep calls per dialect"),
        "{reason}"
    );
    assert_eq!(authorisation(state.path())["calls"], serde_json::json!([]));
}

#[test]
fn the_demo_proves_its_injection_and_calls_only_what_the_policy_allows() {
    let state = state_dir();
    let o = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["demo", "--active", "--format", "json"])
        .output()
        .expect("runs");
    let report = stdout_json(&o);
    let act01 = findings(&report, "ACT-01");
    assert_eq!(act01.len(), 1, "{report}");
    assert_eq!(act01[0]["location"]["tool"], "lookup_host");
    let auth = authorisation(state.path());
    let calls = auth["calls"].as_array().expect("calls");
    // run_command claims read-only: it runs, so it is never called; the others have no
    // annotations (or send): never called either.
    for c in calls {
        let tool = c["tool"].as_str().unwrap_or_default();
        assert!(
            ["lookup_host", "query_customers"].contains(&tool),
            "{tool} was called"
        );
    }
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("`run_command`: its name says it runs code, commands or processes"),
        "{warnings}"
    );
}

/// A passive check that tries to call a tool: the client refuses it at run time (and at compile
/// time it has no way to a permit: that needs the gate's token).
struct Sneaky;

static SNEAKY: Sneaky = Sneaky;

impl mcpprobe::checks::Check for Sneaky {
    fn id(&self) -> &'static str {
        "PROTO-04"
    }
    fn live<'a>(
        &'a self,
        cx: &'a mcpprobe::checks::Live<'a>,
    ) -> mcpprobe::checks::BoxFuture<'a, mcpprobe::checks::Outcome> {
        Box::pin(async move {
            let Some(s) = cx.sessions.first() else {
                return mcpprobe::checks::Outcome::Error("no session".into());
            };
            let call = s
                .call(
                    "tools/call",
                    serde_json::json!({"name": "lookup_host", "arguments": {"host": "x"}}),
                )
                .await;
            mcpprobe::checks::Outcome::Error(format!("{:?}", call.error))
        })
    }
}

#[test]
fn a_passive_check_cannot_call_a_tool_even_on_an_authorised_run() {
    let rt = crate::support::runtime();
    let dir = state_dir();
    let server = rt
        .block_on(mcpprobe::demo::server::start(
            mcpprobe::demo::vulnerable(),
            0,
        ))
        .expect("the server starts");
    let report = rt.block_on(async {
        let mut config = mcpprobe::engine::ScannerConfig::new(dir.path());
        config.host_rate = 10;
        config.overrides = vec![&SNEAKY];
        let scanner = mcpprobe::engine::Scanner::new(config).expect("a scanner");
        let mut req = mcpprobe::engine::ScanRequest::new(
            mcpprobe::engine::Target::http(&server.url()).expect("a URL"),
        );
        req.limits.rate = 10;
        req.checks =
            mcpprobe::engine::Selection::new(&["PROTO-04", "ACT-01"], &[] as &[&str]).expect("ids");
        req.active = Some(mcpprobe::engine::ActiveRequest {
            authorised_by: Some("Ada Lovelace".into()),
            scope: Some("*".into()),
            verify: true,
            include_unannotated: false,
            dry_run: false,
        });
        scanner
            .scan(&req, tokio_util::sync::CancellationToken::new())
            .await
            .expect("a report")
    });
    rt.block_on(server.stop());
    let sneaky = report
        .checks
        .iter()
        .find(|c| c.id == "PROTO-04")
        .expect("PROTO-04");
    let why = sneaky.reason.clone().unwrap_or_default();
    assert!(why.contains("refused: no active check's permit"), "{why}");
    // ACT-01, inside its permit, did call.
    let act01 = report
        .checks
        .iter()
        .find(|c| c.id == "ACT-01")
        .expect("ACT-01");
    assert!(act01.requests > 0, "{act01:?}");
}

#[test]
fn ssrf_is_proven_by_a_hit_on_the_loopback_listener_and_the_safe_twin_gets_none() {
    let mut args = GATE.to_vec();
    args.extend(["--checks", "ACT-03"]);
    let dir = scratch();
    let (_, report, _state) = scan_fixture_in("vulnerable", dir.path(), &args, true);
    let act03 = findings(&report, "ACT-03");
    assert_eq!(act03.len(), 1, "{report}");
    assert_eq!(act03[0]["location"]["tool"], "fetch_page");
    let message = act03[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the server requested it (GET /mcpprobe-"),
        "{message}"
    );
    assert!(message.contains("returned what it fetched"), "{message}");
    for mode in ["safe", "reflect"] {
        let dir = scratch();
        let (_, report, _state) = scan_fixture_in(mode, dir.path(), &args, true);
        assert_eq!(record(&report, "ACT-03")["status"], "ran", "{mode}");
        assert!(findings(&report, "ACT-03").is_empty(), "{mode}: {report}");
    }
}

#[test]
fn a_tool_callable_without_the_advertised_authorization_is_found_and_a_guarded_one_is_not() {
    let rt = crate::support::runtime();
    for (unguarded, expect) in [(true, 1), (false, 0)] {
        let token = "act06-token-8c1d2e";
        let server = rt
            .block_on(mcpprobe::demo::server::start(
                mcpprobe::demo::server::Behaviour {
                    tools_call_without_token: unguarded,
                    ..mcpprobe::demo::server::Behaviour::safe(token)
                },
                0,
            ))
            .expect("the server starts");
        let state = state_dir();
        let o = mcpprobe()
            .env("MCPPROBE_STATE_DIR", state.path())
            .env("MCPPROBE_TOKEN", token)
            .args([
                "scan",
                &server.url(),
                "--rate",
                "10",
                "--no-config",
                "--format",
                "json",
            ])
            .args(GATE)
            .args(["--checks", "ACT-06"])
            .output()
            .expect("runs");
        rt.block_on(server.stop());
        let report = stdout_json(&o);
        assert_eq!(record(&report, "ACT-06")["status"], "ran", "{report}");
        let found = findings(&report, "ACT-06");
        assert_eq!(found.len(), expect, "unguarded {unguarded}: {report}");
        if expect == 1 {
            assert_eq!(found[0]["location"]["tool"], "get_forecast");
        }
        // The one anonymous call is the only call.
        let calls = authorisation(state.path())["calls"]
            .as_array()
            .map(Vec::len);
        assert_eq!(calls, Some(1));
    }
}

/// A real, deliberately vulnerable server from PyPI (`vuln-mcp-filesystem-workspace-actions`
/// 0.1.0, installed by scripts/setup-peers.sh): its `read_file` joins paths unchecked, its
/// `write_file` and `execute_code` do what they say. In the sandbox, with its workspace the
/// scratch folder: ACT-02 proves the traversal, the writer and the runner are never called, and
/// nothing in the workspace changes.
#[test]
fn a_real_vulnerable_server_from_pypi_is_proven_and_its_writer_and_runner_never_called() {
    let program = installed_peer(".peers/vulnfs/bin/vuln-mcp-filesystem-workspace-actions");
    let dir = scratch();
    std::fs::write(
        dir.path().join("readme.txt"),
        "the workspace before the scan",
    )
    .expect("write");
    let before = snapshot(dir.path());
    let state = state_dir();
    let o = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .timeout(std::time::Duration::from_secs(120))
        .args([
            "scan",
            "--stdio",
            "--format",
            "json",
            "--no-config",
            "--include-unannotated",
        ])
        .args(GATE)
        .arg("--")
        .arg(root().join("tests/support/sandbox.sh"))
        .arg(dir.path())
        .arg(&program)
        .arg(dir.path())
        .output()
        .expect("runs");
    let report = stdout_json(&o);
    read_file_proven_and_refused(
        &report,
        &[
            "`write_file`: its name says it changes data",
            "`execute_code`: its name says it runs code, commands or processes",
        ],
    );
    called_only(state.path(), &["read_file", "list_directory"]);
    assert_eq!(snapshot(dir.path()), before, "the workspace changed");
}

/// A clone of the repository under /tmp, in a folder whose name holds spaces (a first try's
/// `git clone … "/tmp/mcp probe"`): the sandbox mounts a private /tmp, then binds the scratch
/// folder back (writable) and the repository (read-only), so its vulnerable server runs from
/// there, writes only the scratch folder, and leaves the host's /tmp alone.
#[test]
fn the_sandbox_runs_a_clone_under_tmp_with_spaces_in_its_path() {
    let tmp = tempfile::Builder::new()
        .prefix("mcp probe ")
        .tempdir_in("/tmp")
        .expect("a folder under /tmp");
    let repo = tmp.path().join("the clone");
    let support = repo.join("tests/support");
    std::fs::create_dir_all(&support).expect("mkdir");
    for f in ["sandbox.sh", "vuln_stdio.py"] {
        std::fs::copy(root().join("tests/support").join(f), support.join(f)).expect("copy");
    }
    let scratch = repo.join("target/tmp/s 1");
    std::fs::create_dir_all(&scratch).expect("mkdir");
    let readme = repo.join("README.md");
    std::fs::write(&readme, "the clone\n").expect("write");
    let marker = format!("mcpprobe-sandbox-{}", std::process::id());
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "lookup_host", "arguments": {"host": format!(
            "x; echo canary > written.txt; echo y >> \"{}\"; echo z > /tmp/{marker}; echo done",
            readme.display())}}});
    let input = format!(
        "{}\n{}\n{call}\n",
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
    );
    let o = assert_cmd::Command::new(support.join("sandbox.sh"))
        .arg(&scratch)
        .arg("python3")
        .arg(support.join("vuln_stdio.py"))
        .arg("vulnerable")
        .write_stdin(input)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("looking up x"), "the server answered: {out}");
    assert!(out.contains("done"), "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert_eq!(
        std::fs::read_to_string(scratch.join("written.txt"))
            .ok()
            .as_deref(),
        Some("canary\n"),
        "the scratch folder is writable"
    );
    assert_eq!(
        std::fs::read_to_string(&readme).ok().as_deref(),
        Some("the clone\n"),
        "the clone is read-only"
    );
    let outside = Path::new("/tmp").join(&marker);
    assert!(!outside.exists(), "wrote the host's {}", outside.display());
}

#[test]
fn the_sandbox_lets_its_server_write_only_its_scratch_folder_and_reach_only_loopback() {
    let dir = scratch();
    let probe = "echo in > inside.txt; \
        for p in /etc/mcpprobe-escape /var/tmp/mcpprobe-escape \"$ESCAPE\"; do \
          (echo x > \"$p\") 2>/dev/null && echo \"ESCAPED $p\"; done; \
        mount -o remount,bind,rw / 2>/dev/null && echo ESCAPED-remount; \
        ls /dev | tr '\\n' ' '; echo; grep CapEff /proc/self/status; \
        ls /sys/class/net | tr '\\n' ' '";
    let outside = root().join("target").join("mcpprobe-sandbox-escape");
    let o = std::process::Command::new(root().join("tests/support/sandbox.sh"))
        .arg(dir.path())
        .args(["sh", "-c", probe])
        .env("ESCAPE", &outside)
        .output()
        .expect("runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.contains("ESCAPED"), "{out}");
    assert!(!outside.exists(), "wrote {}", outside.display());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("inside.txt"))
            .ok()
            .as_deref(),
        Some("in\n")
    );
    assert!(out.contains("null random urandom zero"), "{out}");
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
    assert!(out.trim_end().ends_with("lo"), "only loopback: {out}");
}

#[test]
fn an_evaluator_is_not_mistaken_for_a_shell() {
    let dir = scratch();
    let mut args = GATE.to_vec();
    args.extend(["--checks", "ACT-01"]);
    let (_, report, _state) = scan_fixture("calc", dir.path(), &args);
    let act01 = findings(&report, "ACT-01");
    assert!(act01.iter().all(|f| f["severity"] == "info"), "{report}");
    assert!(
        act01
            .iter()
            .any(|f| f["subcode"] == "evaluator/indeterminate" && f["location"]["tool"].is_null()),
        "{report}"
    );
}

#[test]
fn a_server_that_answers_nothing_leaves_each_check_indeterminate_not_clean() {
    let dir = scratch();
    let mut args = GATE.to_vec();
    args.extend(["--checks", "ACT-05"]);
    let (_, report, _state) = scan_fixture("die", dir.path(), &args);
    let act05 = findings(&report, "ACT-05");
    assert_eq!(act05.len(), 1, "{report}");
    assert_eq!(act05[0]["subcode"], "calls/indeterminate");
    assert!(
        act05[0]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("indeterminate: none of its")
    );
}

#[test]
fn a_name_refused_once_is_refused_for_every_tool_listed_under_it() {
    let dir = scratch();
    let (_, report, state) = scan_fixture("dup", dir.path(), &GATE);
    let log = std::fs::read_to_string(dir.path().join("calls-forbidden.log")).unwrap_or_default();
    assert!(log.is_empty(), "called: {log}");
    let auth = authorisation(state.path());
    assert!(
        auth["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .all(|c| c["tool"] != "list_notes"),
        "{auth}"
    );
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("another tool of the same name is never called"),
        "{warnings}"
    );
}

/// `mcp-security-scanner`'s `insecure-mcp-server` 0.1.5 from PyPI (HTTP; a `shell=True` tool and
/// a reader of any file; installed by scripts/setup-peers.sh), in the sandbox, in a loopback-only
/// network namespace that mcpprobe shares to reach it: ACT-02 proves the file read outside its
/// folder, `exec_command` is never called (it runs commands), and the scratch folder is unchanged.
#[test]
fn the_insecure_mcp_server_from_pypi_is_proven_and_its_shell_never_called() {
    let server = installed_peer(".peers/insecure/bin/insecure-mcp-server");
    let dir = scratch();
    std::fs::write(dir.path().join("keep.txt"), "before").expect("write");
    let before = snapshot(dir.path());
    let state = state_dir();
    // Start the server in the sandbox, wait for its port, scan it, stop it. The script is the
    // first process of a PID namespace of its own: when it ends, the kernel kills whatever it
    // left, the server included (`kill $pid` reaches only the sandbox's `unshare`; the server,
    // its capabilities dropped, no longer has the signal its parent's death would send).
    let script = r#"set -eu
ip link set lo up
SANDBOX_NET=inherit "$1" "$2" "$3" --host 127.0.0.1 --port 9001 >/dev/null 2>&1 &
pid=$!
i=0
until (echo > /dev/tcp/127.0.0.1/9001) 2>/dev/null; do i=$((i+1)); [ $i -lt 100 ] || exit 70; sleep 0.1; done
shift 3
"$@" || true
kill $pid"#;
    let o = assert_cmd::Command::new("unshare")
        .args(["--net", "--pid", "--fork", "--kill-child", "--"])
        .args(["bash", "-c", script, "bash"])
        .arg(root().join("tests/support/sandbox.sh"))
        .arg(dir.path())
        .arg(&server)
        .arg(assert_cmd::cargo::cargo_bin("mcpprobe"))
        .args([
            "scan",
            "http://127.0.0.1:9001/rpc",
            "--rate",
            "10",
            "--no-config",
            "--format",
            "json",
        ])
        .args(["--include-unannotated"])
        .args(GATE)
        .env("MCPPROBE_STATE_DIR", state.path())
        .env_remove("MCPPROBE_TOKEN")
        .env_remove("MCPPROBE_RESOLVER")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    let report = stdout_json(&o);
    read_file_proven_and_refused(
        &report,
        &["`exec_command`: its name names the command `exec`"],
    );
    called_only(state.path(), &["read_file"]);
    assert_eq!(snapshot(dir.path()), before, "the scratch folder changed");
}

/// The calls `tests/support/trust_stdio.py` logged in its scratch folder: (tool, group).
fn trust_calls(scratch: &Path) -> Vec<(String, String)> {
    let log = std::fs::read_to_string(scratch.join("calls.log")).unwrap_or_default();
    log.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (
                v["tool"].as_str().unwrap_or_default().to_string(),
                v["group"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// `scan --stdio --active --scope '*'` of the call-rule fixture in the sandbox.
fn scan_trust_fixture(scratch: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let fixture = root()
        .join("tests/support/trust_stdio.py")
        .display()
        .to_string();
    let mut args = GATE.to_vec();
    args.extend(extra);
    let (code, report, _state) = scan_sandboxed(&["python3", &fixture], scratch, &args, false);
    (code, report)
}

/// Issue 22: 70 tools that claim readOnlyHint: true but change, delete, send, run or pay (by
/// name, Unix command, split, joined or camel-case name, inflection, title, a later clause of
/// the description, a parameter, a non-ASCII or digit spelling) and 7 whose schemas offer
/// destructive values get no call at all, counted at the server; the plain reads are called,
/// so the rule is not "call nothing"; and no argument sent is a value the server offered.
#[test]
fn the_call_rule_calls_no_tool_that_changes_anything_and_still_calls_the_reads() {
    let dir = scratch();
    let (code, report) = scan_trust_fixture(dir.path(), &[]);
    assert!(matches!(code, Some(0 | 1)), "{report}");
    let calls = trust_calls(dir.path());
    let forbidden: Vec<&(String, String)> = calls.iter().filter(|(_, g)| g != "read").collect();
    assert!(forbidden.is_empty(), "called: {forbidden:?}");
    let reads: std::collections::BTreeSet<&str> = calls
        .iter()
        .filter(|(_, g)| g == "read")
        .map(|(t, _)| t.as_str())
        .collect();
    assert!(
        reads.len() >= 6,
        "only {reads:?} of the 12 reads were called"
    );
    // Every refused tool is listed with its reason.
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("never called 77 tools"), "{warnings}");
    // The dry run plans the same: no call to any tool outside the reads.
    let dry = scratch();
    let (_, planned) = scan_trust_fixture(dry.path(), &["--dry-run"]);
    assert!(trust_calls(dry.path()).is_empty());
    let reasons: String = planned["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["kind"] == "active")
        .map(|c| c["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    for refused in [
        "erase_disk",
        "cachepurge",
        "get_items",
        "get_entries",
        "d3stroy_vm",
    ] {
        assert!(
            !reasons.contains(&format!("`{refused}` {{")),
            "{refused} planned: {reasons}"
        );
    }
}

/// No argument of any call is a value the server chose, and a boolean probe sends 0.
#[test]
fn arguments_are_mcpprobes_own() {
    let tool = serde_json::json!({"name": "get_x", "inputSchema": {"type": "object",
        "required": ["a", "b", "c", "d", "e", "f", "dry_run"],
        "properties": {
            "a": {"type": "string", "default": "delete"},
            "b": {"type": "string", "examples": ["DROP TABLE t"]},
            "c": {"type": "integer", "default": 99, "minimum": 0},
            "d": {"type": "boolean", "default": true},
            "e": {"type": "string", "format": "uri", "default": "https://evil.example/"},
            "f": {"type": "array", "examples": [["x"]]},
            "dry_run": {"type": "boolean", "default": false}}}});
    let args = mcpprobe::active::benign_arguments(&tool, &[]);
    assert_eq!(
        args,
        serde_json::json!({"a": "mcpprobe", "b": "mcpprobe", "c": 1, "d": false,
            "e": "https://mcpprobe.invalid/", "f": [], "dry_run": true})
    );
}

/// The real `mcp-server-fetch` from PyPI (installed by scripts/setup-peers.sh), in the sandbox:
/// its `fetch` tool's `url` is declared `format: uri` (pydantic's AnyUrl), which is what ACT-03
/// tests first. With `--allow-private-ips` it fetches mcpprobe's loopback listener (proven);
/// without it, it refuses the address and ACT-03 says nothing.
#[test]
fn ssrf_is_tested_through_a_format_uri_parameter_of_the_real_fetch_server() {
    let program = installed_peer(".peers/fetch/bin/mcp-server-fetch");
    let program = program.display().to_string();
    let mut args = GATE.to_vec();
    args.extend(["--checks", "ACT-03"]);
    for (flag, expect) in [(Some("--allow-private-ips"), 1), (None, 0)] {
        let dir = scratch();
        let mut server = vec![program.as_str(), "--ignore-robots-txt"];
        server.extend(flag);
        let (_, report, _state) = scan_sandboxed(&server, dir.path(), &args, true);
        assert_eq!(
            record(&report, "ACT-03")["status"],
            "ran",
            "{flag:?}: {report}"
        );
        let act03 = findings(&report, "ACT-03");
        assert_eq!(act03.len(), expect, "{flag:?}: {report}");
        if expect == 1 {
            assert_eq!(act03[0]["location"]["tool"], "fetch");
            assert_eq!(
                act03[0]["location"]["pointer"],
                "/tools/0/inputSchema/properties/url"
            );
        }
    }
}
