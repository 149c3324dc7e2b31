//! The GitHub Action (SPEC §9), run here as GitHub would run it: `action.yml` is read, its
//! steps are taken in order, each `if:` is evaluated, each step's `env:` is resolved from the
//! inputs, and its `run:` is executed by bash; the `uses:` steps (the cache, the SARIF upload)
//! are recorded instead, with what they would have received. The scans run against the bundled
//! reference server and its safe twin on loopback.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::http::{Answer, TestHttp};
use crate::support::{root, state_dir};

fn action() -> Value {
    let text = std::fs::read_to_string(root().join("action.yml")).expect("action.yml");
    serde_norway::from_str(&text).expect("action.yml is YAML")
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn action_yml_has_the_spec_inputs_and_outputs_and_keeps_expressions_out_of_scripts() {
    let a = action();
    let mut inputs = keys(&a["inputs"]);
    inputs.sort();
    assert_eq!(
        inputs,
        [
            "args",
            "baseline",
            "config",
            "fail-on",
            "min-confidence",
            "sarif",
            "target",
            "token",
            "version"
        ]
    );
    let mut outputs = keys(&a["outputs"]);
    outputs.sort();
    assert_eq!(
        outputs,
        ["exit-code", "findings", "json-file", "sarif-file"]
    );
    assert_eq!(a["runs"]["using"], "composite");
    let steps = a["runs"]["steps"].as_array().expect("steps");
    for s in steps {
        if let Some(run) = s["run"].as_str() {
            assert!(
                !run.contains("${{"),
                "an expression inside run: is a script injection: {run}"
            );
            assert_eq!(s["shell"], "bash", "{s}");
        }
    }
    let upload = steps
        .iter()
        .position(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .expect("an upload step");
    assert_eq!(steps[upload]["with"]["category"], "mcpprobe");
    assert!(
        steps[upload]["if"]
            .as_str()
            .is_some_and(|c| c.starts_with("always()")),
        "the SARIF is uploaded whatever the scan found"
    );
    let last = steps.last().expect("steps");
    assert!(
        last["run"].as_str().is_some_and(|r| r.ends_with(" finish")),
        "the job fails only in the last step"
    );
    assert_eq!(last["if"], "always()");
    assert!(upload < steps.len() - 1);
}

/// One run of the composite action.
struct ActionRun {
    /// Each step's name and what happened: "ran: N", "skipped", "recorded".
    log: Vec<(String, String)>,
    /// The step outputs of `scan`.
    outputs: BTreeMap<String, String>,
    summary: String,
    /// What the upload step would have uploaded, and whether the file was there then.
    uploaded: Option<(String, bool)>,
    /// The exit status of the job: the first failing step's code.
    failed_at: Option<(String, i32)>,
    stderr: String,
    /// RUNNER_TEMP, where the files are; removed when the run is dropped.
    _temp: Option<tempfile::TempDir>,
}

fn read_outputs(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `${{ … }}` expressions of the kinds action.yml uses, resolved.
fn resolve(text: &str, ctx: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        let expr = rest[start + 3..end].trim();
        let value = ctx
            .get(expr)
            .unwrap_or_else(|| panic!("the local runner does not know `{expr}`"));
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// `always()`, `A == 'x'`, `A != 'x'`, joined by `&&`: what action.yml's conditions use.
fn condition(expr: Option<&str>, ctx: &BTreeMap<String, String>, failed: bool) -> bool {
    let Some(expr) = expr else {
        return !failed; // success() is the default
    };
    let mut always = false;
    let mut all = true;
    for term in expr.split("&&").map(str::trim) {
        if term == "always()" {
            always = true;
            continue;
        }
        let (lhs, rhs, eq) = if let Some((l, r)) = term.split_once("==") {
            (l.trim(), r.trim(), true)
        } else if let Some((l, r)) = term.split_once("!=") {
            (l.trim(), r.trim(), false)
        } else {
            panic!("the local runner does not evaluate `{term}`");
        };
        let lit = rhs
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .unwrap_or_else(|| panic!("not a string literal: {rhs}"));
        let value = ctx.get(lhs).map(String::as_str).unwrap_or("");
        all &= (value == lit) == eq;
    }
    all && (always || !failed)
}

fn run_action(inputs: &[(&str, &str)], extra_env: &[(&str, &str)], state: &Path) -> ActionRun {
    let a = action();
    let temp = tempfile::tempdir().expect("runner temp");
    let github_output = temp.path().join("github_output");
    let summary_file = temp.path().join("step_summary.md");
    let mut ctx = BTreeMap::new();
    for (name, spec) in a["inputs"].as_object().expect("inputs") {
        let given = inputs.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        let value = given
            .map(str::to_string)
            .or_else(|| spec["default"].as_str().map(str::to_string))
            .unwrap_or_default();
        ctx.insert(format!("inputs.{name}"), value);
    }
    let action_path = root().to_string_lossy().into_owned();
    ctx.insert(
        "runner.temp".into(),
        temp.path().to_string_lossy().into_owned(),
    );
    ctx.insert("github.action_path".into(), action_path.clone());
    ctx.insert("github.action_repository".into(), String::new());
    let bin = assert_cmd::cargo::cargo_bin("mcpprobe");
    let mut run = ActionRun {
        log: Vec::new(),
        outputs: BTreeMap::new(),
        summary: String::new(),
        uploaded: None,
        failed_at: None,
        stderr: String::new(),
        _temp: None,
    };
    for step in a["runs"]["steps"].as_array().expect("steps") {
        let name = step["name"].as_str().unwrap_or("?").to_string();
        if !condition(step["if"].as_str(), &ctx, run.failed_at.is_some()) {
            run.log.push((name, "skipped".into()));
            continue;
        }
        if let Some(uses) = step["uses"].as_str() {
            if uses.starts_with("github/codeql-action/upload-sarif@") {
                let file = resolve(step["with"]["sarif_file"].as_str().unwrap_or(""), &ctx);
                let there = Path::new(&file).is_file();
                run.uploaded = Some((file, there));
            }
            run.log.push((name, "recorded".into()));
            continue;
        }
        let script = step["run"].as_str().expect("a run step");
        let mut cmd = std::process::Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(temp.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", temp.path())
            .env("GITHUB_ACTION_PATH", &action_path)
            .env("GITHUB_OUTPUT", &github_output)
            .env("GITHUB_STEP_SUMMARY", &summary_file)
            .env(
                "GITHUB_WORKFLOW_REF",
                "acme/weather/.github/workflows/mcp.yml@refs/heads/main",
            )
            .env("RUNNER_TEMP", temp.path())
            .env("MCPPROBE_BIN", &bin)
            .env("MCPPROBE_STATE_DIR", state);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        if let Some(env) = step["env"].as_object() {
            for (k, v) in env {
                cmd.env(k, resolve(v.as_str().unwrap_or(""), &ctx));
            }
        }
        let out = cmd.output().expect("bash runs");
        run.stderr.push_str(&String::from_utf8_lossy(&out.stderr));
        let code = out.status.code().unwrap_or(-1);
        run.log.push((name.clone(), format!("ran: {code}")));
        if step["id"] == "scan" {
            run.outputs = read_outputs(&github_output);
            for (k, v) in &run.outputs {
                ctx.insert(format!("steps.scan.outputs.{k}"), v.clone());
            }
        }
        if code != 0 && run.failed_at.is_none() {
            run.failed_at = Some((name, code));
        }
    }
    run.summary = std::fs::read_to_string(&summary_file).unwrap_or_default();
    run._temp = Some(temp);
    run
}

#[test]
fn the_action_uploads_and_summarises_before_it_fails_on_a_vulnerable_server() {
    let rt = crate::support::runtime();
    let state = state_dir();
    let server = rt
        .block_on(mcpprobe::demo::server::start(
            mcpprobe::demo::vulnerable(),
            0,
        ))
        .expect("server");
    let url = server.url();
    let run = run_action(
        &[("target", &url), ("args", "--rate 10")],
        &[],
        state.path(),
    );
    let steps: Vec<&str> = run.log.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        steps,
        [
            "recorded", "ran: 0", "ran: 0", "recorded", "ran: 0", "ran: 1"
        ],
        "cache, install, scan, upload, summary, finish: {:?}\n{}",
        run.log,
        run.stderr
    );
    assert_eq!(run.outputs["exit-code"], "1");
    let (sarif, present) = run.uploaded.clone().expect("the SARIF upload ran");
    assert!(present, "the SARIF file existed when the upload step ran");
    assert_eq!(sarif, run.outputs["sarif-file"]);
    let log: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif).expect("sarif")).expect("sarif json");
    crate::support::assert_valid("tests/sarif-2.1.0.schema.json", &log);
    assert_eq!(
        log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        ".github/workflows/mcp.yml",
        "with no config or baseline, results sit on the workflow file"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&run.outputs["json-file"]).expect("json"))
            .expect("report");
    let counting = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f.get("suppressed").is_none())
        .count();
    assert_eq!(run.outputs["findings"], counting.to_string());
    assert!(
        run.summary
            .contains("| Severity | Check | Tool | Finding | Status |"),
        "{}",
        run.summary
    );
    assert!(run.summary.contains("exit code **1**"), "{}", run.summary);
    assert_eq!(
        run.failed_at,
        Some(("Fail on the scan's exit code".to_string(), 1)),
        "only the last step fails"
    );
    assert!(
        run.stderr
            .contains("findings at or above the fail-on severity"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_action_passes_on_the_safe_twin_with_its_token_and_honours_inputs() {
    let rt = crate::support::runtime();
    let state = state_dir();
    let server = rt
        .block_on(mcpprobe::demo::server::start(
            mcpprobe::demo::server::Behaviour::safe("action-twin-token"),
            0,
        ))
        .expect("server");
    let url = server.url();
    let run = run_action(
        &[
            ("target", &url),
            ("token", "action-twin-token"),
            ("args", "--rate 10"),
            ("sarif", "false"),
        ],
        &[],
        state.path(),
    );
    assert_eq!(run.outputs["exit-code"], "0", "{}", run.stderr);
    assert_eq!(run.failed_at, None, "{:?}", run.log);
    assert!(run.uploaded.is_none(), "sarif: false skips the upload");
    assert!(
        !run.stderr.contains("action-twin-token"),
        "the token never shows"
    );
    let json = std::fs::read_to_string(&run.outputs["json-file"]).expect("json");
    assert!(!json.contains("action-twin-token"));
    // fail-on low makes the safe twin's medium finding fail the job.
    let run = run_action(
        &[
            ("target", &url),
            ("token", "action-twin-token"),
            ("args", "--rate 10"),
            ("fail-on", "low"),
        ],
        &[],
        state.path(),
    );
    assert_eq!(run.outputs["exit-code"], "1", "{}", run.stderr);
    assert!(run.failed_at.is_some());
}

#[test]
fn the_action_explains_an_opt_out_and_a_usage_error() {
    let rt = crate::support::runtime();
    let state = state_dir();
    let opted = TestHttp::start(
        &rt,
        vec![(
            "GET /.well-known/mcpprobe-opt-out",
            Answer::new(200, "mcpprobe-opt-out=all"),
        )],
    );
    let run = run_action(&[("target", &opted.url("/mcp"))], &[], state.path());
    assert_eq!(run.outputs["exit-code"], "2", "{}", run.stderr);
    assert_eq!(run.failed_at.as_ref().map(|f| f.1), Some(2));
    assert!(
        run.stderr.contains("the target opted out of scanning"),
        "{}",
        run.stderr
    );
    assert_eq!(opted.count(), 1, "only the opt-out GET was sent");

    let run = run_action(
        &[
            ("target", "http://127.0.0.1:9/mcp"),
            ("fail-on", "sometimes"),
        ],
        &[],
        state.path(),
    );
    assert_eq!(run.outputs["exit-code"], "64");
    assert_eq!(run.outputs.get("json-file").map(String::as_str), Some(""));
    assert!(
        run.summary.contains("No report was written (exit code 64)"),
        "{}",
        run.summary
    );
    assert_eq!(run.failed_at.as_ref().map(|f| f.1), Some(64));
}

#[test]
fn the_action_scans_a_stdio_command() {
    let state = state_dir();
    // The fixture stdio server (plain Python, no SDK needed).
    let server: PathBuf = root().join("fixtures/servers/stdio_server.py");
    assert!(server.is_file());
    let target = format!("python3 {}", server.display());
    let run = run_action(
        &[("target", &target), ("args", "--rate 10")],
        &[],
        state.path(),
    );
    let code = run.outputs["exit-code"].clone();
    assert!(
        code == "0" || code == "1",
        "the stdio scan completed ({code}): {}",
        run.stderr
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&run.outputs["json-file"]).expect("json"))
            .expect("report");
    assert_eq!(report["outcome"], "complete", "{report}");
}

#[test]
fn the_action_scans_the_servers_the_repositorys_client_files_name() {
    // `target: discover`: the repository's .mcp.json names three servers whose exfiltration
    // path only the set shows; the job fails on it (critical).
    let state = state_dir();
    let repo = tempfile::tempdir().expect("a checkout");
    let script = root().join("tests/support/set_stdio.py");
    let s = script.to_str().expect("utf-8");
    std::fs::write(
        repo.path().join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "pages": {"command": "python3", "args": [s, "pages"]},
            "ledger": {"command": "python3", "args": [s, "ledger"]},
            "chat": {"command": "python3", "args": [s, "chat"]},
        }})
        .to_string(),
    )
    .expect("write");
    let project = format!("--project {}", repo.path().display());
    let run = run_action(
        &[("target", "discover"), ("args", &project)],
        &[],
        state.path(),
    );
    assert_eq!(run.outputs["exit-code"], "1", "{}", run.stderr);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&run.outputs["json-file"]).expect("json"))
            .expect("report");
    assert_eq!(report["outcome"], "complete", "{report}");
    let servers = report["discovery"]["servers"].as_array().expect("servers");
    assert!(
        servers.iter().all(|s| s["status"] == "scanned"),
        "{servers:?}"
    );
    assert!(
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["rule"] == "C1" && f["subcode"] == "cross-server"),
        "{report}"
    );
    assert!(run.summary.contains("C1"), "{}", run.summary);
    assert_eq!(run.failed_at.as_ref().map(|(_, c)| *c), Some(1));
}
