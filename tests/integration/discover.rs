//! `mcpprobe discover` and `scan --discover` (issue 26): client files of every major client
//! (fixtures in each client's layout, a Linux home and a Windows profile), the set of three
//! stdio servers whose exfiltration path and shadowing appear only together, a remote URL
//! without a proof that is listed and never contacted, real SDK servers started through a
//! client file, and the whole set's baseline.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{assert_valid, mcpprobe, root, state_dir, stdout_json};

fn fixtures() -> PathBuf {
    root().join("fixtures/discover")
}

/// A copy of the fixture folders in a temporary folder: the home and project each test reads
/// are its own, wherever the repository is.
fn temp_fixtures() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("fixture folder") {
            let e = e.expect("entry");
            let target = to.join(e.file_name());
            if e.path().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).expect("copy");
            }
        }
    }
    let dir = tempfile::tempdir().expect("tmp");
    copy(&fixtures(), dir.path());
    dir
}

/// `discover --format json` with `home` as the home folder.
fn listing(home: &Path, extra: &[&str], envs: &[(&str, &Path)]) -> (Value, i32) {
    let mut cmd = mcpprobe();
    cmd.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("APPDATA")
        .env_remove("USERPROFILE")
        .args(["discover", "--format", "json"])
        .args(extra);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("runs");
    (stdout_json(&out), out.status.code().unwrap_or(-1))
}

fn server<'a>(l: &'a Value, name: &str) -> &'a Value {
    l["servers"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no server {name} in {l:#}"))
}

#[test]
fn every_clients_file_is_found_read_leniently_and_listed() {
    let tmp = temp_fixtures();
    let f = tmp.path();
    let project = f.join("project");
    let (l, code) = listing(
        &f.join("home"),
        &["--project", project.to_str().expect("utf-8")],
        &[],
    );
    let clients: Vec<(&str, &str)> = l["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .map(|c| {
            (
                c["client"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for want in [
        ("claude-desktop", "read"),
        ("claude-code", "read"),
        ("cursor", "read"),
        ("windsurf", "read"),
        ("zed", "read"),
        ("continue", "read"),
        ("codex", "read"),
        ("vscode", "read"),
        ("gemini", "unreadable"),
    ] {
        assert!(clients.contains(&want), "{want:?} not in {clients:?}");
    }
    // Claude Code's user file and the project's .mcp.json: two files of one client.
    assert_eq!(clients.iter().filter(|c| c.0 == "claude-code").count(), 2);
    // The broken file says where.
    let gemini = l["configs"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["client"] == "gemini"))
        .expect("gemini listed");
    assert!(
        gemini["error"]
            .as_str()
            .is_some_and(|e| e.contains("line 4")),
        "{gemini}"
    );
    // Comments and trailing commas (Cursor, Zed), both Zed command forms, YAML, TOML.
    assert_eq!(server(&l, "search")["command"][0], "uvx");
    assert_eq!(
        server(&l, "git-old")["command"],
        json!(["git-mcp", "--repo", "."])
    );
    assert_eq!(server(&l, "sqlite")["client"], "continue");
    assert_eq!(server(&l, "calendar")["client"], "codex");
    // Kinds, and a per-project server of ~/.claude.json.
    assert_eq!(server(&l, "tracker")["kind"], "http");
    assert_eq!(server(&l, "docs")["kind"], "http");
    assert_eq!(
        server(&l, "db")["pointer"],
        "/projects/~1work~1app/mcpServers/db"
    );
    assert_eq!(server(&l, "old-tool")["disabled"], true);
    // Where variables are referenced.
    let refs = &server(&l, "tracker")["references"];
    assert_eq!(
        refs,
        &json!([{"name": "TRACKER_TOKEN", "pointer": "/mcpServers/tracker/headers/Authorization"}])
    );
    assert_eq!(
        server(&l, "github")["references"][0]["name"],
        "input:gh-token"
    );
    assert_eq!(
        server(&l, "sqlite")["references"][0]["name"],
        "secrets.SLACK_BOT_TOKEN"
    );
    // Secrets written inline: found by file and key, never shown.
    let secrets: Vec<(&str, &str)> = l["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            assert_eq!(
                (f["check"].as_str(), f["rule"].as_str()),
                (Some("META-03"), Some("C12"))
            );
            (
                f["location"]["server"].as_str().unwrap_or(""),
                f["location"]["pointer"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        secrets,
        [
            ("db", "/projects/~1work~1app/mcpServers/db/env/DB_PASSWORD"),
            ("search", "/mcpServers/search/args/2"),
            ("docs", "/mcpServers/docs/serverUrl"),
            ("calendar", "/mcp_servers/calendar/env/CALENDAR_TOKEN"),
        ]
    );
    let text = l.to_string();
    for value in [
        "fixture-pass-7Qw2-not-real",
        "k3y-fixture-0000-literal",
        "fixtureAccessToken123",
        "fixture-calendar-token-9d",
    ] {
        assert!(!text.contains(value), "{value} shown");
    }
    // A file could not be read: the listing is incomplete.
    assert_eq!(code, 3);
}

#[test]
fn a_windows_profile_is_searched_under_appdata() {
    let tmp = temp_fixtures();
    let win = tmp.path().join("windows");
    let appdata = win.join("AppData/Roaming");
    let (l, code) = listing(
        Path::new("/nonexistent-home"),
        &["--test-platform", "windows", "--no-project"],
        &[("USERPROFILE", &win), ("APPDATA", &appdata)],
    );
    let names: Vec<(&str, &str)> = l["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| {
            (
                s["client"].as_str().unwrap_or(""),
                s["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("claude-desktop", "filesystem"),
            ("vscode", "jira"),
            ("zed", "todo")
        ]
    );
    assert_eq!(server(&l, "jira")["kind"], "sse");
    // `%APPDATA%` in a value is a reference, not a secret.
    assert_eq!(server(&l, "filesystem")["references"][0]["name"], "APPDATA");
    assert_eq!(code, 0);
}

#[test]
fn a_given_file_is_read_and_a_missing_one_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("team-mcp.toml");
    std::fs::write(&file, "[mcp_servers.ci]\ncommand = \"ci-mcp\"\n").expect("write");
    let (l, _) = listing(
        dir.path(),
        &[
            "--no-project",
            "--client-config",
            file.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(server(&l, "ci")["client"], "other");
    let out = mcpprobe()
        .env("HOME", dir.path())
        .args(["discover", "--client-config", "/nonexistent/mcp.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/mcp.json"));
}

/// `--client-config`, `--project` and `--no-project` say where discovery looks: on a scan of one
/// named server they are a usage error that names `--discover`, not silently ignored (and the
/// server, on a port where nothing listens, is never asked).
#[test]
fn discovery_places_without_discover_are_a_usage_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("mcp.json");
    std::fs::write(&file, "{}").expect("write");
    let project = dir.path().to_str().expect("utf-8");
    let given = file.to_str().expect("utf-8");
    for extra in [
        vec!["--project", project],
        vec!["--client-config", given],
        vec!["--no-project"],
    ] {
        let out = mcpprobe()
            .env("MCPPROBE_STATE_DIR", dir.path().join("state"))
            .args(["scan", "http://127.0.0.1:1/mcp"])
            .args(&extra)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(64), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("only with --discover"), "{extra:?}: {err}");
    }
}

/// A home whose Cursor file runs the three servers of `tests/support/set_stdio.py` (with
/// `ledger_role` as the ledger's role), plus `extra` entries.
fn set_home(ledger_role: &str, extra: Value) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tmp home");
    let script = root().join("tests/support/set_stdio.py");
    let s = script.to_str().expect("utf-8");
    let mut servers = json!({
        "pages": {"command": "python3", "args": [s, "pages"]},
        "ledger": {"command": "python3", "args": [s, ledger_role],
                   "env": {"LEDGER_TOKEN": "ledger-fixture-secret-5150"}},
        "chat": {"command": "python3", "args": [s, "chat"]},
    });
    if let (Some(m), Some(e)) = (servers.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    std::fs::create_dir_all(home.path().join(".cursor")).expect("mkdir");
    std::fs::write(
        home.path().join(".cursor/mcp.json"),
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).expect("json"),
    )
    .expect("write");
    home
}

fn scan_set(home: &Path, state: &Path, extra: &[&str]) -> (Value, std::process::Output) {
    let out = mcpprobe()
        .env("HOME", home)
        .env("MCPPROBE_STATE_DIR", state)
        .env_remove("XDG_CONFIG_HOME")
        .args([
            "scan",
            "--discover",
            "--no-project",
            "--format",
            "json",
            "--no-config",
        ])
        .args(extra)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    (stdout_json(&out), out)
}

fn rules_of(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|f| {
                    (
                        format!(
                            "{}/{}",
                            f["check"].as_str().unwrap_or(""),
                            f["rule"].as_str().unwrap_or("-")
                        ),
                        f["location"]["server"].as_str().unwrap_or("-").to_string(),
                        f["severity"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn three_servers_show_a_flow_and_shadowing_only_together() {
    let script = root().join("tests/support/set_stdio.py");
    // Each alone: no exfiltration path, no shadowing.
    for role in ["pages", "ledger", "chat"] {
        let state = state_dir();
        let out = mcpprobe()
            .env("MCPPROBE_STATE_DIR", state.path())
            .args(["scan", "--no-config", "--format", "json", "--stdio", "--"])
            .arg("python3")
            .arg(&script)
            .arg(role)
            .output()
            .expect("runs");
        let r = stdout_json(&out);
        assert_eq!(r["outcome"], "complete", "{role}: {r:#}");
        let rules = rules_of(&r);
        assert!(
            !rules
                .iter()
                .any(|(id, _, _)| id == "META-03/C1" || id == "META-02/P4"),
            "{role} alone: {rules:?}"
        );
    }
    // Together.
    let home = set_home("ledger", json!({}));
    let state = state_dir();
    let (r, out) = scan_set(home.path(), state.path(), &[]);
    assert_valid("schema/report-v1.schema.json", &r);
    assert_eq!(r["outcome"], "complete", "{r:#}");
    let rules = rules_of(&r);
    let has = |id: &str, server: &str, sev: &str| {
        rules
            .iter()
            .any(|(i, s, v)| i == id && s == server && v == sev)
    };
    assert!(has("META-03/C1", "chat", "critical"), "{rules:?}");
    assert!(has("META-02/P4", "ledger", "high"), "{rules:?}");
    assert!(
        has("META-04/S2", "ledger", "medium") && has("META-04/S2", "chat", "medium"),
        "{rules:?}"
    );
    assert!(has("META-03/C12", "ledger", "high"), "{rules:?}");
    let c1 = r["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["rule"] == "C1"))
        .expect("C1");
    assert_eq!(
        c1["evidence"]["text"],
        "pages/fetch_page → ledger/lookup_customer → chat/post_message"
    );
    // Every server scanned, with its fingerprint; the ledger's secret withheld.
    let servers = r["discovery"]["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 3);
    for s in servers {
        assert_eq!(s["status"], "scanned", "{s}");
        assert!(
            s["tool_list_sha256"]
                .as_str()
                .is_some_and(|h| h.len() == 64),
            "{s}"
        );
    }
    let ledger = servers
        .iter()
        .find(|s| s["name"] == "ledger")
        .expect("ledger");
    assert_eq!(
        ledger["env_withheld"],
        json!(["LEDGER_TOKEN (not allowed with --env)"])
    );
    // Exit 1: findings at or above high; the secret never printed.
    assert_eq!(out.status.code(), Some(1));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("ledger-fixture-secret-5150"));
}

#[test]
fn an_allowed_variable_reaches_the_server_and_is_redacted_everywhere() {
    // The echo server prints the environment it got into its tool descriptions.
    let dir = tempfile::tempdir().expect("tmp");
    let home = dir.path();
    let echo = root().join("tests/support/echo_secrets.py");
    std::fs::write(
        home.join(".mcp.json"),
        json!({"mcpServers": {"echo": {"command": "python3", "args": [echo.to_str().expect("utf-8"), "stdio"],
              "env": {"ECHO_TOKEN": "${env:HOST_SIDE_TOKEN}"}}}})
        .to_string(),
    )
    .expect("write");
    let state = state_dir();
    let out = mcpprobe()
        .env("HOME", "/nonexistent-home")
        .env("MCPPROBE_STATE_DIR", state.path())
        .env("HOST_SIDE_TOKEN", "host-side-secret-value-8086")
        .args(["scan", "--discover", "--project"])
        .arg(home)
        .args([
            "--env",
            "HOST_SIDE_TOKEN",
            "--trust-project",
            "--format",
            "json",
            "--no-config",
        ])
        .output()
        .expect("runs");
    let r = stdout_json(&out);
    let echo_server = &r["discovery"]["servers"][0];
    assert_eq!(echo_server["env_passed"], json!(["ECHO_TOKEN"]), "{r:#}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("host-side-secret-value-8086"));
}

#[test]
fn a_remote_url_without_a_proof_is_listed_and_never_contacted() {
    use crate::support::dns::TestDns;
    use crate::support::netns::{NS_IP, NetnsHost, PORT};
    let rt = crate::support::runtime();
    // A host that is not loopback, answering every path as an MCP server would, and counting.
    let host = NetnsHost::start(json!({"* /mcp": {"status": 200, "body": "{}"}}));
    let dns = TestDns::start(&rt, &[&format!("mcp 60 IN A {NS_IP}")]);
    let home = set_home(
        "ledger",
        json!({
            "by-name": {"url": format!("http://mcp.test:{PORT}/mcp")},
            "by-address": {"type": "http", "url": format!("http://{NS_IP}:{PORT}/mcp")},
        }),
    );
    let state = state_dir();
    let (r, out) = scan_set(home.path(), state.path(), &["--resolver", &dns.arg()]);
    let seen = host.finish();
    assert!(seen.is_empty(), "the remote host was contacted: {seen:?}");
    let servers = r["discovery"]["servers"].as_array().expect("servers");
    let by_name = servers
        .iter()
        .find(|s| s["name"] == "by-name")
        .expect("listed");
    assert_eq!(by_name["status"], "not_scanned");
    assert!(
        by_name["reason"]
            .as_str()
            .is_some_and(|w| w.starts_with("no proof")),
        "{by_name}"
    );
    assert_eq!(
        by_name["to_allow"],
        json!([
            "mcpprobe verify init mcp.test",
            "mcpprobe verify check mcp.test"
        ])
    );
    let by_address = servers
        .iter()
        .find(|s| s["name"] == "by-address")
        .expect("listed");
    assert_eq!(by_address["status"], "not_scanned");
    // The stdio servers were scanned; the unproven remotes do not make the run incomplete.
    assert_eq!(r["outcome"], "complete", "{r:#}");
    assert_eq!(out.status.code(), Some(1));
    // Terminal output says it too.
    let state = state_dir();
    let text = mcpprobe()
        .env("HOME", home.path())
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "scan",
            "--discover",
            "--no-project",
            "--no-config",
            "--resolver",
            &dns.arg(),
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("not scanned: no proof"), "{text}");
    assert!(
        text.contains("to allow it: mcpprobe verify init mcp.test"),
        "{text}"
    );
}

#[test]
fn a_dry_run_lists_what_would_start_and_starts_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let marker = dir.path().join("started");
    let cmd = format!("touch {}", marker.display());
    std::fs::write(
        dir.path().join(".mcp.json"),
        json!({"mcpServers": {"toucher": {"command": "sh", "args": ["-c", cmd]}}}).to_string(),
    )
    .expect("write");
    let run = |extra: &[&str]| {
        let state = state_dir();
        let out = mcpprobe()
            .env("HOME", "/nonexistent-home")
            .env("MCPPROBE_STATE_DIR", state.path())
            .args([
                "scan",
                "--discover",
                "--no-config",
                "--format",
                "json",
                "--project",
            ])
            .arg(dir.path())
            .args(extra)
            .output()
            .expect("runs");
        (stdout_json(&out), out.status.code())
    };
    let (r, code) = run(&["--dry-run", "--trust-project"]);
    assert_eq!(
        r["discovery"]["servers"][0]["status"], "would_scan",
        "{r:#}"
    );
    assert_eq!(r["requests_sent"], 0);
    assert!(!marker.exists(), "the dry run started the server");
    assert_eq!(code, Some(0));
    // A project's command is not started without --trust-project: it may be someone else's
    // repository.
    let (r, _) = run(&[]);
    let s = &r["discovery"]["servers"][0];
    assert_eq!(s["status"], "not_scanned", "{r:#}");
    assert_eq!(
        s["to_allow"],
        json!(["mcpprobe scan --discover --trust-project"])
    );
    assert!(
        !marker.exists(),
        "a project's server started without --trust-project"
    );
    // With it, it is.
    let _ = run(&["--trust-project"]);
    assert!(
        marker.exists(),
        "--trust-project did not start the project's server"
    );
}

#[test]
fn real_sdk_servers_start_through_a_client_file() {
    use crate::support::peers::{Peer, everything_stdio, peers_dir};
    let http = Peer::TsV1.start();
    let everything = everything_stdio();
    let py = peers_dir().join("py1/bin/python");
    let py_server = root().join("tests/peers/py1_stdio_server.py");
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join(".vscode")).expect("mkdir");
    // VS Code's layout, with a comment: npm's server-everything (TypeScript SDK) and a FastMCP
    // server (Python SDK) over stdio, and the TypeScript SDK v1 server by URL on loopback.
    let file = format!(
        "{{\n  // real servers\n  \"servers\": {{\n    \"everything\": {{\"type\": \"stdio\", \"command\": {}, \"args\": {}}},\n    \"fastmcp\": {{\"type\": \"stdio\", \"command\": {}, \"args\": [{}]}},\n    \"ts-http\": {{\"type\": \"http\", \"url\": {}}},\n  }}\n}}\n",
        json!(everything[0]),
        json!(everything[1..]),
        json!(py.display().to_string()),
        json!(py_server.display().to_string()),
        json!(http.url),
    );
    std::fs::write(dir.path().join(".vscode/mcp.json"), file).expect("write");
    let state = state_dir();
    let out = mcpprobe()
        .env("HOME", "/nonexistent-home")
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "scan",
            "--discover",
            "--trust-project",
            "--no-config",
            "--format",
            "json",
            "--project",
        ])
        .arg(dir.path())
        .timeout(std::time::Duration::from_secs(180))
        .output()
        .expect("runs");
    let r = stdout_json(&out);
    assert_valid("schema/report-v1.schema.json", &r);
    let servers = r["discovery"]["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 3, "{r:#}");
    for s in servers {
        assert_eq!(s["status"], "scanned", "{s}");
        assert_eq!(s["outcome"], "complete", "{s}");
        assert!(s["tools"].as_u64().is_some_and(|n| n > 0), "{s}");
    }
    assert_eq!(r["outcome"], "complete");
    // SARIF and Markdown of the set render, each result naming its server.
    let sarif_dir = tempfile::tempdir().expect("tmp");
    let sarif = sarif_dir.path().join("set.sarif");
    let md = sarif_dir.path().join("set.md");
    let state = state_dir();
    let out = mcpprobe()
        .env("HOME", "/nonexistent-home")
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "scan",
            "--discover",
            "--trust-project",
            "--no-config",
            "--fail-on",
            "none",
            "--sarif",
        ])
        .arg(&sarif)
        .arg("--markdown")
        .arg(&md)
        .arg("--project")
        .arg(dir.path())
        .timeout(std::time::Duration::from_secs(180))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let s = crate::support::json_file(&sarif);
    assert_valid("tests/sarif-2.1.0.schema.json", &s);
    let modules: Vec<&str> = s["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["locations"][0]["logicalLocations"][0]["name"].as_str())
        .collect();
    assert!(
        modules.contains(&"everything") && modules.contains(&"fastmcp"),
        "{modules:?}"
    );
    let md = std::fs::read_to_string(&md).expect("markdown");
    assert!(md.contains("everything/"), "{md}");
}

#[test]
fn the_sets_baseline_names_the_server_whose_tools_changed() {
    let dir = tempfile::tempdir().expect("tmp");
    let baseline = dir.path().join("mcp-set.baseline.json");
    let b = baseline.to_str().expect("utf-8");
    let home = set_home("ledger", json!({}));
    let state = state_dir();
    let (first, out) = scan_set(home.path(), state.path(), &["--baseline", b]);
    assert!(baseline.exists(), "{first:#}");
    assert!(
        !rules_of(&first)
            .iter()
            .any(|(id, _, _)| id.starts_with("BASE-01/"))
    );
    let pinned = crate::support::json_file(&baseline);
    assert_eq!(pinned["kind"], "discovered");
    let names: Vec<&String> = pinned["servers"]
        .as_object()
        .expect("servers")
        .keys()
        .collect();
    assert_eq!(names, ["chat", "ledger", "pages"]);
    assert!(out.status.code() == Some(1));
    // The ledger's tools change (a rug pull); the others do not.
    let changed = set_home("ledger-changed", json!({}));
    let (second, _) = scan_set(changed.path(), state.path(), &["--baseline", b]);
    let base: Vec<(String, String, String)> = rules_of(&second)
        .into_iter()
        .filter(|(id, _, _)| id.starts_with("BASE-01"))
        .collect();
    assert!(!base.is_empty(), "{second:#}");
    assert!(
        base.iter().all(|(_, server, _)| server == "ledger"),
        "{base:?}"
    );
    // A server added to the files since (B7), one gone (B8).
    let script = root().join("tests/support/set_stdio.py");
    let grown = set_home(
        "ledger",
        json!({"chat-2": {"command": "python3", "args": [script.to_str().expect("utf-8"), "chat"],
                          "env": {"CHANNEL": "ops"}}}),
    );
    let (third, _) = scan_set(grown.path(), state.path(), &["--baseline", b]);
    let rules = rules_of(&third);
    assert!(
        rules
            .iter()
            .any(|(id, server, sev)| id == "BASE-01/B7" && server == "chat-2" && sev == "medium"),
        "{rules:?}"
    );
    // A server of the baseline gone from the files (B8, info).
    let shrunk = tempfile::tempdir().expect("tmp home");
    std::fs::create_dir_all(shrunk.path().join(".cursor")).expect("mkdir");
    let s = script.to_str().expect("utf-8");
    std::fs::write(
        shrunk.path().join(".cursor/mcp.json"),
        json!({"mcpServers": {
            "ledger": {"command": "python3", "args": [s, "ledger"],
                       "env": {"LEDGER_TOKEN": "ledger-fixture-secret-5150"}},
            "chat": {"command": "python3", "args": [s, "chat"]},
        }})
        .to_string(),
    )
    .expect("write");
    let (fourth, _) = scan_set(shrunk.path(), state.path(), &["--baseline", b]);
    let rules = rules_of(&fourth);
    assert!(
        rules
            .iter()
            .any(|(id, server, sev)| id == "BASE-01/B8" && server == "pages" && sev == "info"),
        "{rules:?}"
    );
    // A corrupt set baseline is a usage error and is left as it was.
    std::fs::write(
        &baseline,
        "{\"version\": 1, \"kind\": \"discovered\", \"servers\": 3}",
    )
    .expect("write");
    let out = mcpprobe()
        .env("HOME", home.path())
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "scan",
            "--discover",
            "--no-project",
            "--no-config",
            "--baseline",
            b,
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mcp-set.baseline.json"));
    assert_eq!(
        std::fs::read_to_string(&baseline).expect("kept"),
        "{\"version\": 1, \"kind\": \"discovered\", \"servers\": 3}"
    );
}

#[test]
fn a_server_planned_as_loopback_is_never_contacted_at_another_address() {
    // DNS rebinding: discovery planned `mcp.test` as loopback (the local proof); at scan time
    // the name answers a non-loopback address. The scan is refused before anything is sent.
    use crate::support::dns::TestDns;
    use crate::support::netns::{NS_IP, NetnsHost, PORT};
    use mcpprobe::engine::{ScanRequest, Scanner, ScannerConfig, Target};
    let rt = crate::support::runtime();
    let host = NetnsHost::start(json!({"* /mcp": {"status": 200, "body": "{}"}}));
    let dns = TestDns::start(&rt, &[&format!("mcp 60 IN A {NS_IP}")]);
    let state = state_dir();
    let report = rt.block_on(async {
        let mut config = ScannerConfig::new(state.path());
        config.resolver = Some(dns.arg().parse().expect("IP:PORT"));
        let scanner = Scanner::new(config).expect("a scanner");
        let mut req =
            ScanRequest::new(Target::http(&format!("http://mcp.test:{PORT}/mcp")).expect("a URL"));
        req.loopback_only = true;
        scanner
            .scan(&req, tokio_util::sync::CancellationToken::new())
            .await
            .expect("a report")
    });
    let seen = host.finish();
    assert!(seen.is_empty(), "contacted: {seen:?}");
    assert_eq!(report.outcome, mcpprobe::model::RunOutcome::Refused);
    let check = report
        .gate
        .as_ref()
        .and_then(|g| g.address_check.clone())
        .unwrap_or_default();
    assert!(check.contains("planned as loopback"), "{check}");
}
