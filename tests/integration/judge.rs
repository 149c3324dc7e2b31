//! `--judge-command` (SPEC §12): the external META-01 judge, run by the real binary.

use std::path::Path;

use serde_json::Value;

use crate::support::{mcpprobe, root, state_dir};

const TOOLS: &str = "fixtures/judge/tools.json";

/// `mcpprobe check TOOLS --judge-command CMD …` → (exit code, JSON report).
fn check(judge: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let o = mcpprobe()
        .current_dir(root())
        .args([
            "check",
            TOOLS,
            "--no-config",
            "--format",
            "json",
            "--judge-command",
            judge,
        ])
        .args(extra)
        .output()
        .expect("runs");
    let report = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), report)
}

fn meta01(report: &Value) -> (&str, Option<&str>) {
    let rec = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "META-01"))
        .expect("META-01 is in every report");
    (
        rec["status"].as_str().unwrap_or_default(),
        rec["reason"].as_str(),
    )
}

fn judge_findings(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .map(|f| f.iter().filter(|f| f["check"] == "META-01").collect())
        .unwrap_or_default()
}

#[test]
fn the_example_judge_flags_one_tool_and_the_finding_names_it() {
    let (code, report) = check("python3 scripts/keyword-judge.py", &["--fail-on", "none"]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(meta01(&report).0, "ran", "{report}");
    let found = judge_findings(&report);
    assert_eq!(found.len(), 1, "{report}");
    let f = found[0];
    assert_eq!(f["rule"], "KW1");
    assert_eq!(f["severity"], "medium");
    assert_eq!(f["confidence"], "low");
    assert_eq!(f["location"]["tool"], "export_notes");
    assert_eq!(f["location"]["pointer"], "/tools/1/description");
    assert_eq!(f["subcode"], "keyword-judge.py");
    let message = f["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("judge keyword-judge.py: says 'keep this secret'"),
        "{message}"
    );
    assert!(
        f["evidence"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Keep this secret"),
        "{f}"
    );
    crate::support::assert_valid("schema/report-v1.schema.json", &report);
}

#[test]
fn a_judge_rule_code_gets_its_own_sarif_rule() {
    let dir = tempfile::tempdir().expect("dir");
    let sarif = dir.path().join("out.sarif");
    let sarif_arg = sarif.display().to_string();
    let (_, report) = check(
        "python3 scripts/keyword-judge.py",
        &["--fail-on", "none", "--sarif", &sarif_arg],
    );
    assert_eq!(judge_findings(&report).len(), 1, "{report}");
    let log = crate::support::json_file(&sarif);
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    let result = run["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["ruleId"] == "META-01/KW1"))
        .expect("the judge's result");
    let index = result["ruleIndex"].as_u64().expect("ruleIndex") as usize;
    assert_eq!(rules[index]["id"], "META-01/KW1", "{}", rules[index]);
    assert_eq!(rules.iter().filter(|r| r["id"] == "META-01/KW1").count(), 1);
}

#[test]
fn without_a_judge_meta_01_says_it_was_not_configured() {
    let o = mcpprobe()
        .current_dir(root())
        .args([
            "check",
            TOOLS,
            "--no-config",
            "--format",
            "json",
            "--fail-on",
            "none",
        ])
        .output()
        .expect("runs");
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let (status, reason) = meta01(&report);
    assert_eq!(status, "skipped");
    assert!(
        reason
            .unwrap_or_default()
            .starts_with("no judge configured"),
        "{reason:?}"
    );
}

#[test]
fn a_judge_that_prints_garbage_is_an_error_never_a_clean_result() {
    let judge =
        "python3 -c \"import sys\nfor l in sys.stdin: print('I think it is fine', flush=True)\"";
    let (code, report) = check(judge, &["--fail-on", "none"]);
    assert_eq!(code, Some(3), "{report}");
    let (status, reason) = meta01(&report);
    assert_eq!(status, "error");
    let reason = reason.unwrap_or_default();
    assert!(
        reason.contains("not a list of verdicts: not JSON"),
        "{reason}"
    );
    // Each tool got its answer, each answer was garbage: both are named, none was judged.
    assert!(
        reason.contains("0 of 2 tools reviewed; 2 errors: tool `lookup_order`"),
        "{reason}"
    );
    assert!(reason.contains("tool `export_notes`"), "{reason}");
    assert_eq!(report["outcome"], "incomplete");
    crate::support::assert_valid("schema/report-v1.schema.json", &report);
}

#[test]
fn a_judge_that_hangs_is_stopped_at_its_budget_with_its_process_group() {
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("child.pid");
    // The judge starts a grandchild that would outlive it, then never answers.
    let judge = format!(
        "sh -c 'sleep 600 & echo $! > {}; read line; sleep 600'",
        pidfile.display()
    );
    let (code, report) = check(&judge, &["--judge-timeout", "1"]);
    assert_eq!(code, Some(3), "{report}");
    let (status, reason) = meta01(&report);
    assert_eq!(status, "error");
    assert!(
        reason
            .unwrap_or_default()
            .contains("stopped at tool `lookup_order`: the judge did not answer within its 1-second budget per tool"),
        "{reason:?}"
    );
    let pid = std::fs::read_to_string(&pidfile).expect("the judge wrote its child's pid");
    let proc = Path::new("/proc").join(pid.trim());
    // Killed with SIGKILL before mcpprobe exited: gone, or at most a zombie awaiting its reaper.
    let alive = std::fs::read_to_string(proc.join("stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false);
    assert!(!alive, "the judge's grandchild {} survived", pid.trim());
}

#[test]
fn a_judge_that_cannot_start_is_an_error() {
    let (code, report) = check("/nonexistent/judge --x", &[]);
    assert_eq!(code, Some(3), "{report}");
    let (status, reason) = meta01(&report);
    assert_eq!(status, "error");
    assert!(
        reason.unwrap_or_default().contains("could not be started"),
        "{reason:?}"
    );
}

#[test]
fn bad_judge_flags_are_usage_errors() {
    for (args, says) in [
        (
            vec!["--judge-command", "python3 'open"],
            "unbalanced quotes",
        ),
        (vec!["--judge-timeout", "5"], "--judge-command"),
    ] {
        let o = mcpprobe()
            .current_dir(root())
            .args(["check", TOOLS, "--no-config"])
            .args(&args)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(64), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A live scan: the judge reviews the server's tools after the sessions are closed, and its
/// environment holds neither mcpprobe's variables nor the scan's token.
#[test]
fn a_live_scan_judges_every_tool_and_the_judge_sees_no_secret() {
    let rt = crate::support::runtime();
    let token = "judge-test-token-5b1f";
    let server = rt
        .block_on(mcpprobe::demo::server::start(
            mcpprobe::demo::server::Behaviour {
                // A server that echoes the caller's token into what the judge reads.
                tools: Some({
                    let mut t = mcpprobe::demo::server::safe_tools();
                    t.push(serde_json::json!({"name": "whoami", "description": format!("You called with Bearer {token}."),
                        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                        "annotations": {"readOnlyHint": true}}));
                    t
                }),
                ..mcpprobe::demo::server::Behaviour::safe(token)
            },
            0,
        ))
        .expect("the server starts");
    let dir = tempfile::tempdir().expect("dir");
    let seen = dir.path().join("seen.json");
    let script = dir.path().join("judge.py");
    std::fs::write(
        &script,
        format!(
            "import json, os, sys\nnames = []\nfor line in sys.stdin:\n    names.append(json.loads(line))\n    print('[]', flush=True)\njson.dump({{'env': dict(os.environ), 'tools': names}}, open({:?}, 'w'))\n",
            seen.display().to_string()
        ),
    )
    .expect("write the judge");
    let state = state_dir();
    let o = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .env("MCPPROBE_TOKEN", token)
        .env("COPY_OF_THE_TOKEN", format!("Bearer {token}"))
        .env("JUDGE_API_KEY", "the-judge-may-have-this")
        .args([
            "scan",
            &server.url(),
            "--rate",
            "10",
            "--no-config",
            "--format",
            "json",
        ])
        .args(["--judge-command", &format!("python3 {}", script.display())])
        .output()
        .expect("runs");
    rt.block_on(server.stop());
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(meta01(&report).0, "ran", "{report}");
    let seen = crate::support::json_file(&seen);
    let env = seen["env"].as_object().expect("the environment");
    assert!(env.keys().all(|k| !k.starts_with("MCPPROBE_")), "{env:?}");
    assert!(!env.contains_key("COPY_OF_THE_TOKEN"), "{env:?}");
    assert_eq!(env["JUDGE_API_KEY"], "the-judge-may-have-this");
    let tools = seen["tools"].as_array().expect("tools");
    let listed = report["fingerprint"].clone();
    assert!(!tools.is_empty(), "{listed}");
    let mut expected: Vec<String> = mcpprobe::demo::server::safe_tools()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    expected.push("whoami".into());
    let shown = seen["tools"].to_string();
    assert!(
        !shown.contains(token),
        "the judge was shown the token: {shown}"
    );
    assert!(shown.contains("[REDACTED]"), "{shown}");
    let judged: Vec<String> = tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert_eq!(judged, expected);
    for t in tools {
        let keys: Vec<&str> = t
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert!(
            keys.iter().all(|k| mcpprobe::judge::TOOL_KEYS.contains(k)),
            "the judge was shown {keys:?}"
        );
    }
}

#[test]
fn answers_out_of_step_with_the_tools_are_an_error_not_findings_on_the_wrong_tool() {
    // Two lines for the first tool: the second would be read as the answer for the next one.
    // Both go out in one write, so both are in the pipe before the next question: the engine
    // reads the pipe itself before each question and must see the extra line. (A judge that
    // writes its extra line later is caught when it exits — META-01 still errors — but what it
    // said for the next tool cannot be told from a real answer before then.)
    let dir = tempfile::tempdir().expect("dir");
    let script = dir.path().join("twice.py");
    std::fs::write(
        &script,
        "import sys\nfor line in sys.stdin:\n    sys.stdout.write('[]\\n[{\"severity\": \"critical\", \"reason\": \"about the first tool\"}]\\n')\n    sys.stdout.flush()\n",
    )
    .expect("write the judge");
    let judge = format!("python3 {}", script.display());
    let judge = judge.as_str();
    let (code, report) = check(judge, &[]);
    assert_eq!(code, Some(3), "{report}");
    let (status, reason) = meta01(&report);
    assert_eq!(status, "error");
    assert!(
        reason.unwrap_or_default().contains("out of step"),
        "{reason:?}"
    );
    assert!(
        judge_findings(&report)
            .iter()
            .all(|f| f["severity"] != "critical"),
        "{report}"
    );
}

#[test]
fn one_tool_the_judge_cannot_be_shown_does_not_blind_it_to_the_others() {
    let dir = tempfile::tempdir().expect("dir");
    let tools = dir.path().join("tools.json");
    let mut doc = crate::support::json_file(&root().join(TOOLS));
    let huge = "x".repeat(mcpprobe::judge::MAX_TOOL_BYTES + 10);
    doc["tools"].as_array_mut().expect("tools").insert(
        0,
        serde_json::json!({"name": "bloated", "description": huge}),
    );
    std::fs::write(&tools, doc.to_string()).expect("write");
    let o = mcpprobe()
        .current_dir(root())
        .args([
            "check",
            tools.to_str().expect("utf-8 path"),
            "--no-config",
            "--format",
            "json",
        ])
        .args(["--judge-command", "python3 scripts/keyword-judge.py"])
        .output()
        .expect("runs");
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(o.status.code(), Some(3), "{report}");
    let (status, reason) = meta01(&report);
    assert_eq!(status, "error");
    let reason = reason.unwrap_or_default();
    assert!(reason.contains("2 of 3 tools reviewed"), "{reason}");
    assert!(reason.contains("tool `bloated`"), "{reason}");
    let found = judge_findings(&report);
    assert_eq!(found.len(), 1, "{report}");
    assert_eq!(found[0]["location"]["pointer"], "/tools/2/description");
}
