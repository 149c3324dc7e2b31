//! Hostile stdio servers (issue 11): a stdout flood, an endless line, a server that never reads
//! its stdin, one that never answers, an `npx`-style wrapper whose grandchild must not outlive
//! the scan, and the child's environment allow-list. Every scan is bounded by a tokio timeout
//! and must end on its own with a finding or an `incomplete` outcome; each also names the bound
//! its server ran into (the rung verdicts of the ladder say why nothing answered).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpprobe::engine::{ScanRequest, Scanner, ScannerConfig, Target};
use mcpprobe::model::{Report, RunOutcome};
use mcpprobe::protocol::stdio::{MAX_LINE, MAX_STDOUT, SILENCE_BUDGET, WRITE_TIMEOUT};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::support::{root, runtime, state_dir};

/// A scan that does not end within this is a hang (the SPEC's budget is 30 s).
const BOUND: Duration = Duration::from_secs(40);

fn hostile() -> PathBuf {
    root().join("fixtures/servers/hostile_stdio.py")
}

/// The real interpreter behind `python3` (a pyenv shim is a shell script that would add its own
/// variables, such as PWD, to the child's environment).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn python_target(args: &[&str]) -> Target {
    let mut command = vec![python(), hostile().display().to_string()];
    command.extend(args.iter().map(|a| a.to_string()));
    // The tests pass the allow-list's PATH themselves, as a host does.
    let env = mcpprobe::engine::request::stdio_env::<&str>(&[], |n| std::env::var(n).ok())
        .expect("the base environment");
    Target::stdio_with_env(&command, env).expect("a command")
}

/// Scans `target` through the engine, bounded.
fn scan(state: &Path, target: Target) -> Report {
    let rt = runtime();
    rt.block_on(async {
        let scanner = Scanner::new(ScannerConfig::new(state)).expect("a scanner");
        let req = ScanRequest::new(target);
        tokio::time::timeout(BOUND, scanner.scan(&req, CancellationToken::new()))
            .await
            .expect("the scan ends on its own within the bound")
            .expect("the scan runs")
    })
}

/// The scan ended with a finding or as `incomplete`, with an exit code of 0, 1 or 3.
fn assert_bounded_outcome(r: &Report) {
    assert!(
        r.outcome == RunOutcome::Incomplete || !r.findings.is_empty(),
        "a finding or incomplete: {:?} {:?}",
        r.outcome,
        r.reason
    );
    assert!([0, 1, 3].contains(&r.exit_code), "exit {}", r.exit_code);
}

/// The verdicts of the ladder's rungs, by step.
fn rungs(r: &Report) -> Vec<(String, String)> {
    r.fingerprint
        .iter()
        .filter_map(|f| f.extra.get("rungs").and_then(Value::as_array))
        .flatten()
        .map(|g| {
            let text = |k: &str| g[k].as_str().unwrap_or_default().to_string();
            (text("step"), text("verdict"))
        })
        .collect()
}

/// No rung answered: the scan is incomplete because the process is not (usably) MCP.
fn assert_no_answer(r: &Report) {
    assert_eq!(r.outcome, RunOutcome::Incomplete, "{:?}", r.reason);
    assert!(r.fingerprint.as_ref().is_some_and(|f| f.eras.is_empty()));
    let reason = r.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("answered neither server/discover nor initialize"),
        "{reason}"
    );
}

#[test]
fn stdio_flood_of_junk_lines_is_bounded() {
    let dir = state_dir();
    let r = scan(dir.path(), python_target(&["flood"]));
    assert_bounded_outcome(&r);
    assert_no_answer(&r);
    // The junk notifications are never taken for a reply: every rung waited until its timeout
    // (within the silence budget) or the stdout cap, whichever the machine's speed reached
    // first.
    let cap = format!(
        "the server wrote more than {} MiB to stdout",
        MAX_STDOUT / (1024 * 1024)
    );
    // Once spent, calls fail at once ("… for 20 s in all").
    let silence = format!("for {} s in all", SILENCE_BUDGET.as_secs());
    let rungs = rungs(&r);
    assert!(!rungs.is_empty());
    for (step, v) in &rungs {
        assert!(
            v.contains("no reply within") || v.contains(&cap) || v.contains(&silence),
            "{step}: {v}"
        );
    }
}

#[test]
fn stdio_endless_line_is_bounded() {
    let dir = state_dir();
    let r = scan(dir.path(), python_target(&["flood-line"]));
    assert_bounded_outcome(&r);
    assert_no_answer(&r);
    // The first rung meets the line cap (the line is dropped, never held whole).
    let rungs = rungs(&r);
    let first = rungs.first().map(|(_, v)| v.as_str()).unwrap_or_default();
    assert!(
        first.contains(&format!(
            "the server wrote a line longer than {MAX_LINE} bytes"
        )),
        "{rungs:?}"
    );
}

#[test]
fn stdio_server_that_never_reads_stdin_is_bounded() {
    let dir = state_dir();
    let r = scan(dir.path(), python_target(&["deaf"]));
    assert_bounded_outcome(&r);
    assert_no_answer(&r);
    // Its stdin pipe is full: a write times out (the first message may still have slipped in
    // before the server filled its pipe: then it is the cancellation after that message's
    // silence), stdin is closed, and every later rung names that write as the reason.
    let rungs = rungs(&r);
    let timeout = format!(
        "the server did not read its stdin within {} s",
        WRITE_TIMEOUT.as_secs()
    );
    let last = rungs.last().map(|(_, v)| v.as_str()).unwrap_or_default();
    assert!(last.contains(&timeout), "{rungs:?}");
    for (step, v) in &rungs {
        assert!(
            v.contains(&timeout) || v.contains("no reply within"),
            "{step}: {v}"
        );
    }
}

#[test]
fn stdio_server_that_never_answers_is_bounded() {
    let dir = state_dir();
    let r = scan(dir.path(), python_target(&["silent"]));
    assert_bounded_outcome(&r);
    assert_no_answer(&r);
    // Each rung waited its own timeout (together within the silence budget), no more.
    let rungs = rungs(&r);
    assert!(!rungs.is_empty());
    for (step, v) in &rungs {
        assert!(v.contains("no reply within"), "{step}: {v}");
    }
}

/// Whether `pid` is gone: no such process, or a zombie waiting for a reaper that is not ours.
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

#[test]
fn stdio_wrapper_grandchild_does_not_survive_the_scan() {
    let dir = state_dir();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let pid_file = tmp.path().join("grandchild.pid");
    let r = scan(
        dir.path(),
        python_target(&["wrapper", &pid_file.display().to_string()]),
    );
    assert_eq!(r.outcome, RunOutcome::Complete, "{:?}", r.reason);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the wrapper recorded its grandchild")
        .trim()
        .parse()
        .expect("a pid");
    // SIGKILL was sent before the scan returned; its delivery is asynchronous, so wait for it
    // within a bound (a poll, not a sleep standing in for an event).
    let rt = runtime();
    let dead = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !gone(pid) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .is_ok()
    });
    assert!(dead, "the grandchild {pid} outlived the scan");
}

/// Waits (a bounded poll: the kill's delivery is asynchronous) until `pid` is gone; kills it
/// if it is not, so that a failing test leaves nothing running.
fn dies_soon(pid: u32) -> bool {
    let rt = runtime();
    let dead = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !gone(pid) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .is_ok()
    });
    if !dead {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    dead
}

fn recorded_pid(file: &Path) -> u32 {
    std::fs::read_to_string(file)
        .expect("the fixture recorded its grandchild")
        .trim()
        .parse()
        .expect("a pid")
}

/// A grandchild in a session of its own (setsid), whose parent is the server: it is not in the
/// server's process group, so only the end's look at the server's descendants finds it (the
/// library here: this test process is no subreaper). It ignores SIGTERM: SIGKILL follows.
#[test]
fn stdio_setsid_grandchild_does_not_survive_the_scan() {
    let dir = state_dir();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let pid_file = tmp.path().join("grandchild.pid");
    let r = scan(
        dir.path(),
        python_target(&["setsid-child", &pid_file.display().to_string()]),
    );
    assert_eq!(r.outcome, RunOutcome::Complete, "{:?}", r.reason);
    let pid = recorded_pid(&pid_file);
    assert!(
        dies_soon(pid),
        "the setsid grandchild {pid} outlived the scan"
    );
}

/// A daemonised grandchild (double fork: its parent called setsid, forked it and exited before
/// the scan began): an orphan in a session and group of its own. The CLI is a child subreaper,
/// so it adopted it; the session's end kills it (SIGTERM ignored: SIGKILL) and reaps it.
#[test]
fn stdio_daemonised_grandchild_is_adopted_killed_and_reaped_by_the_cli() {
    let state = state_dir();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let pid_file = tmp.path().join("grandchild.pid");
    let script = hostile().display().to_string();
    let file = pid_file.display().to_string();
    let state_path = state.path().display().to_string();
    let python = python();
    let out = run_cli(
        &[
            "scan",
            "--format",
            "json",
            "--no-config",
            "--stdio",
            "--",
            &python,
            &script,
            "daemonise",
            &file,
        ],
        &[("MCPPROBE_STATE_DIR", &state_path)],
    );
    let code = out.status.code().unwrap_or(-1);
    let pid = recorded_pid(&pid_file);
    let dead = dies_soon(pid);
    assert!(
        [0, 1, 3].contains(&code),
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dead, "the daemonised grandchild {pid} outlived the scan");
}

/// The CLI, bounded by a tokio timeout.
fn run_cli(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("mcpprobe");
    let rt = runtime();
    rt.block_on(async {
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(args)
            .env_remove("MCPPROBE_TOKEN")
            .env_remove("MCPPROBE_STATE_DIR")
            .envs(env.iter().copied())
            .kill_on_drop(true);
        tokio::time::timeout(BOUND, cmd.output())
            .await
            .expect("mcpprobe ends within the bound")
            .expect("mcpprobe runs")
    })
}

#[test]
fn stdio_child_sees_only_the_allow_listed_environment() {
    let state = state_dir();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let env_file = tmp.path().join("env.json");
    let script = hostile().display().to_string();
    let file = env_file.display().to_string();
    let state_path = state.path().display().to_string();
    let python = python();
    let out = run_cli(
        &[
            "scan",
            "--format",
            "json",
            "--env",
            "MCPPROBE_TEST_PASSED",
            "--stdio",
            "--",
            &python,
            &script,
            "env",
            &file,
        ],
        &[
            ("MCPPROBE_STATE_DIR", &state_path),
            ("MCPPROBE_TOKEN", "tok-must-not-leak"),
            ("MCPPROBE_TEST_SECRET", "secret-must-not-leak"),
            ("MCPPROBE_TEST_PASSED", "passed-on-purpose"),
        ],
    );
    let code = out.status.code().unwrap_or(-1);
    assert!(
        [0, 1, 3].contains(&code),
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = crate::support::json_file(&env_file);
    let seen = seen.as_object().expect("an object");
    assert_eq!(seen["MCPPROBE_TEST_PASSED"], "passed-on-purpose");
    assert!(seen.contains_key("PATH"));
    assert!(!seen.contains_key("MCPPROBE_TOKEN"));
    assert!(!seen.contains_key("MCPPROBE_TEST_SECRET"));
    // Python itself may add LC_CTYPE (PEP 538); nothing else beyond the allow-list.
    let allowed = ["PATH", "HOME", "LANG", "LC_CTYPE", "MCPPROBE_TEST_PASSED"];
    for name in seen.keys() {
        assert!(
            allowed.contains(&name.as_str()),
            "{name} leaked to the child"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("passed-on-purpose"),
        "env values stay out of reports"
    );
}

#[test]
fn stdio_env_refuses_mcpprobe_token() {
    let out = run_cli(
        &[
            "scan",
            "--env",
            "MCPPROBE_TOKEN",
            "--stdio",
            "--",
            "python3",
            "-c",
            "pass",
        ],
        &[("MCPPROBE_TOKEN", "tok-must-not-leak")],
    );
    assert_eq!(out.status.code(), Some(64), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MCPPROBE_TOKEN"), "{err}");
    assert!(!err.contains("tok-must-not-leak"));
}

#[test]
fn stdio_env_names_are_validated_in_the_engine() {
    assert!(
        Target::stdio_with_env(
            &["x".to_string()],
            vec![(
                "MCPPROBE_TOKEN".to_string(),
                mcpprobe::engine::SecretString::from("t")
            )]
        )
        .is_err()
    );
    assert!(mcpprobe::engine::request::stdio_env(&["A=B"], |_| Some(String::new())).is_err());
    let env = mcpprobe::engine::request::stdio_env(&["PATH", "EXTRA"], |n| {
        (n != "HOME").then(|| format!("v-{n}"))
    })
    .expect("names are fine");
    let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["PATH", "LANG", "EXTRA"]);
    assert!(
        !format!("{env:?}").contains("v-EXTRA"),
        "values are redacted in Debug"
    );
}
