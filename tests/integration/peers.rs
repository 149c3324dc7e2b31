//! Fingerprint and inventory against real SDK servers written by others (SPEC §2): each report
//! names the eras the server really answers and lists its real tools with a stable fingerprint,
//! within the request budget of SPEC §10.

use serde_json::Value;

use crate::support::peers::{Peer, everything_stdio};
use crate::support::{mcpprobe, rmcp_peer, runtime, state_dir};

/// The request budget of a passive scan of a local server (SPEC §10).
const BUDGET: u64 = 40;

fn scan(url: &str) -> Value {
    let state = state_dir();
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "scan",
            url,
            "--format",
            "json",
            "--rate",
            "10",
            "--fail-on",
            "none",
        ])
        .output()
        .expect("mcpprobe runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn eras(r: &Value) -> Vec<String> {
    r["fingerprint"]["eras"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn tool_names(r: &Value) -> Vec<String> {
    let msg = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == "INFO-02")
        .map(|f| f["message"].clone());
    assert!(msg.is_some(), "no INFO-02 in {r}");
    // The names come from the INFO-02 evidence: the first tools/list response body.
    let body = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == "INFO-02")
        .and_then(|f| {
            f["evidence"]["exchanges"][0]["response"]["body"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default();
    let mut names: Vec<String> = crate::support::tool_names_in(&body);
    names.sort();
    names
}

/// The checks with a finding above info, and which forged header TRANS-01 saw accepted.
fn serious(r: &Value) -> Vec<String> {
    let mut out: Vec<String> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] != "info")
        .map(|f| {
            let check = f["check"].as_str().unwrap_or_default().to_string();
            let m = f["message"].as_str().unwrap_or_default();
            match check.as_str() {
                "TRANS-01" if m.contains("tested header: Host") => "TRANS-01(Host)".to_string(),
                "TRANS-01" => "TRANS-01(Origin)".to_string(),
                _ => check,
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What a real server is expected to answer.
struct Expect<'a> {
    eras: &'a [&'a str],
    transport: &'a str,
    /// Tool names, when the evidence holds the whole list.
    tools: Option<&'a [&'a str]>,
    /// The checks with findings above info (the README's table of real servers).
    fired: &'a [&'a str],
}

const ECHO: Option<&[&str]> = Some(&["echo"]);
const ALL_ERAS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18"];
const ERAS_2025: &[&str] = &["2025-11-25", "2025-06-18"];

/// Scans twice; asserts the eras, the transport, the tools, what fires, a stable fingerprint
/// and the request budget. Returns the fingerprint.
fn assert_peer(url: &str, want: Expect<'_>) -> String {
    let first = scan(url);
    let second = scan(url);
    assert_eq!(first["outcome"], "complete", "{first}");
    assert_eq!(
        eras(&first),
        want.eras,
        "eras of {url}: {}",
        first["fingerprint"]
    );
    assert_eq!(first["fingerprint"]["transport"], want.transport);
    let fired: Vec<String> = first["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] != "info")
        .map(|f| format!("{} {} {}", f["check"], f["message"], f["evidence"]["text"]))
        .collect();
    assert_eq!(
        serious(&first),
        want.fired,
        "what fires on {url}: {fired:#?}"
    );
    let sha = first["tool_list_sha256"]
        .as_str()
        .expect("a tool-list fingerprint")
        .to_string();
    assert_eq!(
        second["tool_list_sha256"],
        sha.as_str(),
        "the fingerprint changed between two scans"
    );
    assert_eq!(eras(&second), want.eras);
    if let Some(tools) = want.tools {
        assert_eq!(tool_names(&first), tools, "tools of {url}");
    }
    // Finding fingerprints: distinct within a report, the same set in two scans.
    let fingerprints = |r: &Value| -> Vec<String> {
        let mut f: Vec<String> = r["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["fingerprint"].as_str().map(str::to_string))
            .collect();
        f.sort();
        f
    };
    let (fa, fb) = (fingerprints(&first), fingerprints(&second));
    let distinct: std::collections::BTreeSet<&String> = fa.iter().collect();
    assert_eq!(
        distinct.len(),
        fa.len(),
        "two findings of {url} share a fingerprint: {fired:#?}"
    );
    assert_eq!(
        fa, fb,
        "the finding fingerprints of {url} changed between two scans"
    );
    for r in [&first, &second] {
        let sent = r["requests_sent"].as_u64().expect("requests_sent");
        assert!(sent <= BUDGET, "{sent} requests to {url}, budget {BUDGET}");
        for c in r["checks"].as_array().expect("checks") {
            if c["id"] == "INFO-01" || c["id"] == "INFO-02" {
                assert_eq!(c["status"], "ran", "{c}");
            }
        }
    }
    sha
}

const EVERYTHING_TOOLS: usize = 13;

#[test]
fn server_everything_over_streamable_http_sse_and_stdio() {
    let http = Peer::EverythingHttp.start();
    let http_sha = assert_peer(
        &http.url,
        Expect {
            eras: ERAS_2025,
            transport: "streamable-http",
            tools: None,
            // The forged Origin accepted, the Host is not tested separately; an ended session
            // id gets 400 instead of 404 (SESS-01 low); get-env hands out the environment
            // (META-03 C10) and gzip-file-as-resource reads any URL (C11).
            fired: &[
                "AUTH-01",
                "META-03",
                "SESS-01",
                "TRANS-01(Origin)",
                "TRANS-03",
            ],
        },
    );
    let report = scan(&http.url);
    let inventory = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == "INFO-02");
    assert!(inventory.is_some_and(|f| {
        f["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("{EVERYTHING_TOOLS} tools"))
    }));

    let sse = Peer::EverythingSse.start();
    let sse_sha = assert_peer(
        &sse.url,
        Expect {
            eras: &["2024-11-05"],
            transport: "http+sse",
            tools: None,
            fired: &[
                "AUTH-01",
                "META-03",
                "PROTO-01",
                "TRANS-01(Origin)",
                "TRANS-03",
            ],
        },
    );
    // Given the streamable path, the ladder still finds the legacy transport at /sse.
    let fallback = scan(&sse.url.replace("/sse", "/mcp"));
    assert_eq!(eras(&fallback), ["2024-11-05"]);

    let state = state_dir();
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "scan",
            "--format",
            "json",
            "--fail-on",
            "none",
            "--stdio",
            "--",
        ])
        .args(everything_stdio())
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdio: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(eras(&stdio), ["2025-11-25"]);
    assert_eq!(stdio["fingerprint"]["transport"], "stdio");
    assert_eq!(
        stdio["gate"]["ownership"]
            .as_str()
            .map(|s| s.starts_with("local")),
        Some(true)
    );

    // One server, three transports, one tool list.
    assert_eq!(http_sha, sse_sha);
    assert_eq!(stdio["tool_list_sha256"], http_sha.as_str());
}

#[test]
fn typescript_sdk_v1_speaks_2025_only() {
    let p = Peer::TsV1.start();
    assert_peer(
        &p.url,
        Expect {
            eras: ERAS_2025,
            transport: "streamable-http",
            tools: ECHO,
            fired: &["AUTH-01", "PROTO-03", "TRANS-01(Origin)"],
        },
    );
}

#[test]
fn typescript_sdk_v2_speaks_2026_and_2025_unless_told_to_reject() {
    let p = Peer::TsV2.start();
    let a = assert_peer(
        &p.url,
        Expect {
            eras: ALL_ERAS,
            transport: "streamable-http",
            tools: ECHO,
            fired: &["AUTH-01"],
        },
    );
    let r = Peer::TsV2Reject.start();
    let b = assert_peer(
        &r.url,
        Expect {
            eras: &["2026-07-28"],
            transport: "streamable-http",
            tools: ECHO,
            fired: &["AUTH-01"],
        },
    );
    assert_eq!(a, b, "the same tools whatever the legacy mode");
}

#[test]
fn python_sdk_2_speaks_both_eras_stateful_and_stateless() {
    let p = Peer::Py2.start();
    let a = assert_peer(
        &p.url,
        Expect {
            eras: ALL_ERAS,
            transport: "streamable-http",
            tools: ECHO,
            fired: &["AUTH-01"],
        },
    );
    let s = Peer::Py2Stateless.start();
    let b = assert_peer(
        &s.url,
        Expect {
            eras: ALL_ERAS,
            transport: "streamable-http",
            tools: ECHO,
            fired: &["AUTH-01"],
        },
    );
    assert_eq!(a, b);
}

#[test]
fn python_sdk_1_speaks_2025_only() {
    let p = Peer::Py1.start();
    assert_peer(
        &p.url,
        Expect {
            eras: ERAS_2025,
            transport: "streamable-http",
            tools: ECHO,
            fired: &["AUTH-01"],
        },
    );
}

#[test]
fn rmcp_stateful_and_stateless() {
    let rt = runtime();
    // rmcp answers an unparsable body with 415 and plain text "fail to deserialize request body".
    let fired: &[&str] = &["AUTH-01", "PROTO-03", "TRANS-01(Origin)"];
    let stateful = rmcp_peer::start(&rt, false);
    let a = assert_peer(
        &stateful,
        Expect {
            eras: ALL_ERAS,
            transport: "streamable-http",
            tools: ECHO,
            fired,
        },
    );
    let stateless = rmcp_peer::start(&rt, true);
    let b = assert_peer(
        &stateless,
        Expect {
            eras: ALL_ERAS,
            transport: "streamable-http",
            tools: ECHO,
            fired,
        },
    );
    assert_eq!(a, b);
}

/// The SARIF multitool (npm `@microsoft/sarif-multitool-linux`, installed by setup-peers.sh):
/// the GitHub code-scanning ingestion rules and the SARIF rules, as (rule id, message) pairs.
fn multitool_problems(sarif: &std::path::Path) -> Vec<String> {
    let tool = crate::support::peers::peers_dir()
        .join("node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool");
    assert!(
        tool.is_file(),
        "{} is missing: run scripts/setup-peers.sh",
        tool.display()
    );
    let out_dir = tempfile::tempdir().expect("dir");
    let out = out_dir.path().join("validation.sarif");
    let status = std::process::Command::new(&tool)
        .arg("validate")
        .arg(sarif)
        .arg("-o")
        .arg(&out)
        .args(["--rule-kind", "Gh;Sarif"])
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("the multitool runs");
    assert!(
        status.success(),
        "the multitool failed on {}",
        sarif.display()
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("its output"))
        .expect("its output is SARIF");
    v["runs"][0]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["level"] != "note")
        .map(|r| format!("{} {}", r["ruleId"], r["message"]))
        .collect()
}

#[test]
fn sarif_of_real_scans_passes_the_github_ingestion_rules() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("mcp.yml"), "on: push\n").expect("write");
    let state = state_dir();
    let p = Peer::TsV1.start();
    let demo = dir.path().join("demo.sarif");
    let real = dir.path().join("ts-v1.sarif");
    for (args, file) in [
        (vec!["demo".to_string()], &demo),
        (
            vec![
                "scan".to_string(),
                p.url.clone(),
                "--rate".into(),
                "10".into(),
            ],
            &real,
        ),
    ] {
        let out = mcpprobe()
            .current_dir(dir.path())
            .env("MCPPROBE_STATE_DIR", state.path())
            .args(&args)
            .args(["--fail-on", "none", "--format", "json", "--sarif"])
            .arg(file)
            .args(["--sarif-artifact", "mcp.yml"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let log: Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("sarif")).expect("json");
        crate::support::assert_valid("tests/sarif-2.1.0.schema.json", &log);
        let results = log["runs"][0]["results"].as_array().expect("results");
        assert!(!results.is_empty(), "{args:?} found something to place");
        assert!(
            results.iter().all(
                |r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "mcp.yml"
            ),
            "every result has a location in the repository"
        );
        assert_eq!(multitool_problems(file), Vec::<String>::new(), "{args:?}");
    }
    // Suppressed, expired and severity-changed findings (the config fixture's tools).
    std::fs::write(
        dir.path().join("mcpprobe.toml"),
        "[severity]\n\"META-04\" = \"info\"\n[[suppress]]\ncheck = \"META-02\"\nreason = \"reviewed\"\nuntil = \"2099-01-01\"\n[[suppress]]\ncheck = \"META-03\"\nrule = \"C4\"\nreason = \"lapsed\"\nuntil = \"2020-01-01\"\n",
    )
    .expect("write");
    let suppressed = dir.path().join("suppressed.sarif");
    let out = mcpprobe()
        .current_dir(dir.path())
        .arg("check")
        .arg(crate::support::root().join("fixtures/config/tools.json"))
        .args(["--fail-on", "none", "--format", "sarif", "--output"])
        .arg(&suppressed)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let log: Value =
        serde_json::from_str(&std::fs::read_to_string(&suppressed).expect("sarif")).expect("json");
    assert!(log.to_string().contains("\"justification\":\"reviewed\""));
    assert!(
        log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("file:///") && u.ends_with("fixtures/config/tools.json")),
        "check's results sit on the checked file (outside the working folder: a file URI)"
    );
    assert_eq!(multitool_problems(&suppressed), Vec::<String>::new());

    // The control: a result without a location is what GitHub rejects, and the tool says so.
    let mut broken: Value =
        serde_json::from_str(&std::fs::read_to_string(&real).expect("sarif")).expect("json");
    if let Some(r) = broken["runs"][0]["results"][0].as_object_mut() {
        r.remove("locations");
    }
    let broken_file = dir.path().join("broken.sarif");
    std::fs::write(&broken_file, broken.to_string()).expect("write");
    let problems = multitool_problems(&broken_file);
    assert!(
        problems.iter().any(|p| p.contains("GH1015")),
        "the multitool checks GitHub's rules: {problems:?}"
    );
}
