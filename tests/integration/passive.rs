//! Every passive check against the bundled reference server, with each weakness switched on
//! (it must fire, with its evidence) and off (it must stay quiet); the safe twin; the demo.

use serde_json::{Value, json};

use mcpprobe::demo::server::{self, Behaviour, Running, safe_tools};

use crate::support::http::{Answer, TestHttp};
use crate::support::{mcpprobe, runtime, state_dir};

const TOKEN: &str = "reference-token-1f2e3d";

/// An authorization server (a counting test server) whose metadata names its own origin.
fn authorization_server(rt: &tokio::runtime::Runtime, good: bool) -> (TestHttp, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let issuer = format!("http://127.0.0.1:{port}");
    let meta = if good {
        json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
               "token_endpoint": format!("{issuer}/token"), "code_challenge_methods_supported": ["S256"]})
    } else {
        json!({"issuer": "https://someone-else.example", "authorization_endpoint": "https://as.example.com/authorize",
               "token_endpoint": "http://as.example.com/token", "code_challenge_methods_supported": ["plain"]})
    };
    let server = TestHttp::start_on(
        rt,
        &issuer,
        vec![(
            "GET /.well-known/oauth-authorization-server",
            Answer::new(200, &meta.to_string()),
        )],
    );
    (server, issuer)
}

fn start(rt: &tokio::runtime::Runtime, b: Behaviour) -> Running {
    rt.block_on(server::start(b, 0))
        .expect("the reference server starts")
}

/// Scans `url`; returns the exit code and the JSON report, and checks the request budget.
fn scan(url: &str, extra: &[&str]) -> (i32, Value) {
    let state = state_dir();
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["scan", url, "--format", "json", "--rate", "10"])
        .args(extra)
        .output()
        .expect("mcpprobe runs");
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let sent = r["requests_sent"].as_u64().expect("requests_sent");
    assert!(sent <= 40, "{sent} requests: over the SPEC §10 budget");
    (out.status.code().unwrap_or(-1), r)
}

fn findings<'r>(r: &'r Value, check: &str) -> Vec<&'r Value> {
    r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == check)
        .collect()
}

fn status<'r>(r: &'r Value, check: &str) -> &'r Value {
    r["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == check)
        .map(|c| &c["status"])
        .expect("check listed")
}

fn message(f: &Value) -> String {
    f["message"].as_str().unwrap_or_default().to_string()
}

/// The vulnerable server with all of its weaknesses but the ones a test turns off.
fn quiet() -> Behaviour {
    Behaviour {
        poisoned_tools: false,
        accept_forged_origin: false,
        cors_wildcard: false,
        sequential_sessions: false,
        accept_unknown_sessions: false,
        stack_trace: false,
        ..Behaviour::default()
    }
}

#[test]
fn proto_01_legacy_sse() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            legacy_sse: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let f = findings(&r, "PROTO-01");
    assert_eq!(f.len(), 1, "{r}");
    assert!(message(f[0]).contains("beside Streamable HTTP"));
    assert_eq!(
        f[0]["evidence"]["exchanges"][0]["request"]["url"]
            .as_str()
            .map(|u| u.ends_with("/sse")),
        Some(true)
    );
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(findings(&r, "PROTO-01").is_empty());
    assert_eq!(status(&r, "PROTO-01"), "ran");
}

#[test]
fn proto_02_unknown_method() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            answer_unknown_methods: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let f = findings(&r, "PROTO-02");
    assert_eq!(f.len(), 1);
    assert!(
        f[0]["evidence"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("\"result\"")
    );
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(findings(&r, "PROTO-02").is_empty());
    assert_eq!(status(&r, "PROTO-02"), "ran");
}

#[test]
fn proto_03_malformed_requests() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            stack_trace: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let f = findings(&r, "PROTO-03");
    let trace = f
        .iter()
        .find(|f| message(f).contains("stack trace"))
        .expect("the stack trace is reported");
    assert_eq!(trace["severity"], "medium");
    assert!(
        trace["evidence"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("node_modules")
    );
    // The same server lets a request without its JSON-RPC version through: low.
    let lax = f
        .iter()
        .find(|f| message(f).starts_with("no `jsonrpc` version"))
        .expect("the lax answer is reported");
    assert_eq!(lax["severity"], "low");
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(
        findings(&r, "PROTO-03").is_empty(),
        "{:?}",
        findings(&r, "PROTO-03")
    );
}

#[test]
fn proto_04_bait_and_switch() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            bait_and_switch: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let f = findings(&r, "PROTO-04");
    assert!(!f.is_empty(), "{r}");
    assert!(
        message(f[0]).contains("as client `claude-code`") && message(f[0]).contains("run_command"),
        "{}",
        message(f[0])
    );
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(findings(&r, "PROTO-04").is_empty());
    assert_eq!(status(&r, "PROTO-04"), "ran");
}

#[test]
fn auth_01_by_what_the_tools_can_do() {
    let rt = runtime();
    let dangerous = start(&rt, Behaviour::default());
    let (_, r) = scan(&dangerous.url(), &[]);
    let f = findings(&r, "AUTH-01");
    assert_eq!((f.len(), f[0]["severity"].as_str()), (1, Some("high")));
    assert!(message(f[0]).contains("send_email"));
    let harmless = start(&rt, quiet());
    let (_, r) = scan(&harmless.url(), &[]);
    assert_eq!(findings(&r, "AUTH-01")[0]["severity"], "medium");
    let guarded = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            ..quiet()
        },
    );
    let (_, r) = scan(&guarded.url(), &["--token", TOKEN]);
    assert!(
        findings(&r, "AUTH-01").is_empty(),
        "{:?}",
        findings(&r, "AUTH-01")
    );
    assert_eq!(status(&r, "AUTH-01"), "ran");
    assert!(
        !r.to_string().contains(TOKEN),
        "the token leaked into the report"
    );
}

#[test]
fn auth_02_and_03_protected_resource_and_authorization_server() {
    let rt = runtime();
    // A weak authorization server: no S256, another issuer, a plain-http token endpoint.
    let (weak, weak_issuer) = authorization_server(&rt, false);
    let target = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            authorization_server: Some(weak_issuer),
            ..quiet()
        },
    );
    let (_, r) = scan(&target.url(), &["--token", TOKEN]);
    assert_distinct(&r);
    assert!(
        findings(&r, "AUTH-02").is_empty(),
        "{:?}",
        findings(&r, "AUTH-02")
    );
    let f: Vec<String> = findings(&r, "AUTH-03").iter().map(|f| message(f)).collect();
    assert!(f.iter().any(|m| m.contains("no S256")), "{f:?}");
    assert!(f.iter().any(|m| m.contains("issuer")), "{f:?}");
    assert!(
        f.iter()
            .any(|m| m.contains("token_endpoint = http://as.example.com/token")),
        "{f:?}"
    );
    assert_eq!(
        weak.count(),
        1,
        "exactly one GET to the authorization server"
    );

    // AUTH-03 alone: OAuth discovery is a stage of its own, not AUTH-02's side effect.
    let (_, alone) = scan(&target.url(), &["--token", TOKEN, "--checks", "AUTH-03"]);
    assert_eq!(status(&alone, "AUTH-02"), "skipped");
    assert_eq!(status(&alone, "AUTH-03"), "ran", "{alone}");
    assert!(
        findings(&alone, "AUTH-03")
            .iter()
            .any(|f| message(f).contains("no S256")),
        "{alone}"
    );
    assert_eq!(
        weak.count(),
        2,
        "one GET to the authorization server per scan"
    );

    // --no-follow-as: not even that one.
    let (_, r) = scan(&target.url(), &["--token", TOKEN, "--no-follow-as"]);
    assert_eq!(status(&r, "AUTH-03"), "skipped");
    assert_eq!(weak.count(), 2);

    // AUTH-02 fires: no metadata document, then a wrong resource, then no challenge.
    let no_doc = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            prm_document: false,
            ..quiet()
        },
    );
    let (_, r) = scan(&no_doc.url(), &["--token", TOKEN]);
    assert!(
        findings(&r, "AUTH-02")
            .iter()
            .any(|f| message(f).contains("no protected-resource metadata")),
        "{r}"
    );
    let wrong = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            prm_resource: Some("https://elsewhere.example/mcp".into()),
            ..quiet()
        },
    );
    let (_, r) = scan(&wrong.url(), &["--token", TOKEN]);
    let m: Vec<String> = findings(&r, "AUTH-02").iter().map(|f| message(f)).collect();
    assert!(
        m.iter().any(|m| m.contains("elsewhere.example"))
            && m.iter().any(|m| m.contains("authorization_servers")),
        "{m:?}"
    );
    let bare = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            prm_challenge: false,
            ..quiet()
        },
    );
    let (_, r) = scan(&bare.url(), &["--token", TOKEN]);
    assert!(
        findings(&r, "AUTH-02")
            .iter()
            .any(|f| message(f).contains("no `Bearer resource_metadata")),
        "{r}"
    );

    // A server that asks for nothing: AUTH-02 has nothing to judge.
    let open = start(&rt, quiet());
    let (_, r) = scan(&open.url(), &[]);
    assert_eq!(status(&r, "AUTH-02"), "skipped");
}

#[test]
fn auth_03_good_authorization_server_is_quiet() {
    let rt = runtime();
    let (good, issuer) = authorization_server(&rt, true);
    let target = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            authorization_server: Some(issuer.clone()),
            ..quiet()
        },
    );
    let (_, r) = scan(&target.url(), &["--token", TOKEN]);
    assert!(
        findings(&r, "AUTH-03").is_empty(),
        "{:?}",
        findings(&r, "AUTH-03")
    );
    assert_eq!(status(&r, "AUTH-03"), "ran");
    assert_eq!(good.count(), 1);
}

#[test]
fn trans_01_forged_origin_and_host() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            accept_forged_origin: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let f = findings(&r, "TRANS-01");
    // The forged Origin accepted is enough for a rebinding page: high, and no Host test.
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0]["subcode"].as_str(), f[0]["severity"].as_str()),
        (Some("origin"), Some("high"))
    );
    assert!(
        message(f[0]).contains("tested header: Origin: https://evil.example"),
        "{f:?}"
    );
    // The Origin refused, the Host accepted, on loopback: medium, and the message says why.
    let host = start(
        &rt,
        Behaviour {
            accept_forged_host: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&host.url(), &[]);
    let f = findings(&r, "TRANS-01");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0]["subcode"].as_str(), f[0]["severity"].as_str()),
        (Some("host"), Some("medium"))
    );
    assert!(
        message(f[0]).contains("tested header: Host: evil.example")
            && message(f[0]).contains("GET event stream"),
        "{f:?}"
    );
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(
        findings(&r, "TRANS-01").is_empty(),
        "{:?}",
        findings(&r, "TRANS-01")
    );
    assert_eq!(status(&r, "TRANS-01"), "ran");
    // 401 before the Origin test: indeterminate, never a pass or a fail.
    let auth = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            accept_forged_origin: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&auth.url(), &[]);
    let f = findings(&r, "TRANS-01");
    assert!(
        !f.is_empty()
            && f.iter()
                .all(|f| f["severity"] == "info" && message(f).starts_with("indeterminate")),
        "{f:?}"
    );
}

#[test]
fn trans_03_cors() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            cors_wildcard: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let f = findings(&r, "TRANS-03");
    assert_eq!(f.len(), 1);
    assert!(message(f[0]).contains("Access-Control-Allow-Origin: *"));
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(findings(&r, "TRANS-03").is_empty());
}

#[test]
fn sess_01_session_ids() {
    let rt = runtime();
    let on = start(
        &rt,
        Behaviour {
            sequential_sessions: true,
            accept_unknown_sessions: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let m: Vec<String> = findings(&r, "SESS-01").iter().map(|f| message(f)).collect();
    assert!(
        m.iter().any(|m| m.contains("sequential or related")),
        "{m:?}"
    );
    assert!(m.iter().any(|m| m.contains("bits of randomness")), "{m:?}");
    assert!(
        m.iter()
            .any(|m| m.contains("forged session id was accepted")),
        "{m:?}"
    );
    assert!(m.iter().any(|m| m.contains("ended session id")), "{m:?}");
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert!(
        findings(&r, "SESS-01").is_empty(),
        "{:?}",
        findings(&r, "SESS-01")
    );
    assert_eq!(status(&r, "SESS-01"), "ran");
}

#[test]
fn card_01_server_card() {
    let rt = runtime();
    let card = json!({"$schema": "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json",
        "serverInfo": {"name": "weather", "version": "1"},
        "transport": {"type": "streamable-http", "endpoint": "http://mcp.example.com/mcp"},
        "authentication": {"required": true, "apiKey": "sk-live-abcdefghijklmnopqrstuvwxyz"},
        "tools": [{"name": "get_forecast", "description": "d", "inputSchema": {"type": "object"}}, {"name": "secret_tool", "description": "d", "inputSchema": {"type": "object"}}]});
    let on = start(
        &rt,
        Behaviour {
            server_card: Some(card),
            ..quiet()
        },
    );
    let (_, r) = scan(&on.url(), &[]);
    let rules: Vec<&str> = findings(&r, "CARD-01")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    for want in ["SC5", "SC6", "SC11"] {
        assert!(rules.contains(&want), "{want} missing from {rules:?}");
    }
    let good = json!({"$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json", "name": "com.example/weather",
        "version": "1.0.0", "description": "Weather.", "remotes": [{"type": "streamable-http", "url": on.url()}]});
    let ok = start(
        &rt,
        Behaviour {
            server_card: Some(good),
            ..quiet()
        },
    );
    let (_, r) = scan(&ok.url(), &[]);
    let fired: Vec<&Value> = findings(&r, "CARD-01");
    assert!(
        fired.iter().all(|f| f["rule"] == "SC7"),
        "only the loopback address note may fire: {fired:?}"
    );
    let none = start(&rt, quiet());
    let (_, r) = scan(&none.url(), &[]);
    assert_eq!(status(&r, "CARD-01"), "skipped");
}

#[test]
fn card_02_agent_card() {
    let rt = runtime();
    let on = start(&rt, mcpprobe::demo::vulnerable());
    let (_, r) = scan(&on.url(), &[]);
    let rules: Vec<&str> = findings(&r, "CARD-02")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    for want in ["A2", "A4", "A6", "A8", "A10"] {
        assert!(rules.contains(&want), "{want} missing from {rules:?}");
    }
    let off = start(&rt, quiet());
    let (_, r) = scan(&off.url(), &[]);
    assert_eq!(status(&r, "CARD-02"), "skipped");
}

#[test]
fn metadata_checks_on_the_live_inventory() {
    let rt = runtime();
    let on = start(&rt, Behaviour::default());
    let (_, r) = scan(&on.url(), &[]);
    let rules: Vec<String> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            f["rule"]
                .as_str()
                .map(|x| format!("{}/{x}", f["check"].as_str().unwrap_or("")))
        })
        .collect();
    for want in [
        "META-02/P2",
        "META-02/P3",
        "META-03/C1",
        "META-03/C2",
        "META-03/C3",
        "META-04/S4",
    ] {
        assert!(
            rules.contains(&want.to_string()),
            "{want} missing from {rules:?}"
        );
    }
    let off = start(
        &rt,
        Behaviour {
            tools: Some(safe_tools()),
            ..quiet()
        },
    );
    let (_, r) = scan(&off.url(), &[]);
    for c in ["META-02", "META-03", "META-04"] {
        assert!(
            findings(&r, c).iter().all(|f| f["severity"] == "info"),
            "{c}: {:?}",
            findings(&r, c)
        );
    }
}

#[test]
fn the_safe_twin_has_no_finding_at_medium_or_above() {
    let rt = runtime();
    let (_as, issuer) = authorization_server(&rt, true);
    let twin = start(
        &rt,
        Behaviour {
            authorization_server: Some(issuer),
            ..Behaviour::safe(TOKEN)
        },
    );
    let (code, r) = scan(&twin.url(), &["--token", TOKEN, "--fail-on", "medium"]);
    let serious: Vec<String> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| !matches!(f["severity"].as_str(), Some("info" | "low")))
        .map(|f| format!("{} {:?}: {}", f["check"], f["rule"], message(f)))
        .collect();
    assert!(serious.is_empty(), "{serious:#?}");
    assert_eq!(code, 0);
    assert_eq!(r["outcome"], "complete");
    assert_eq!(
        r["fingerprint"]["eras"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18"])
    );
}

#[test]
fn demo_reports_at_least_six_checks_and_exits_1() {
    let out = mcpprobe()
        .args(["demo", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let checks: std::collections::BTreeSet<&str> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] != "info")
        .filter_map(|f| f["check"].as_str())
        .collect();
    assert!(checks.len() >= 6, "{checks:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("reference server was stopped"));
}

#[test]
fn checks_and_skip_checks_select() {
    let rt = runtime();
    let on = start(&rt, Behaviour::default());
    let (_, r) = scan(&on.url(), &["--checks", "META-02,TRANS-03"]);
    assert_eq!(status(&r, "META-02"), "ran");
    assert_eq!(status(&r, "TRANS-03"), "ran");
    assert_eq!(status(&r, "SESS-01"), "skipped");
    assert_eq!(status(&r, "INFO-01"), "ran", "INFO checks always run");
    let (_, r) = scan(&on.url(), &["--skip-checks", "SESS-01"]);
    assert_eq!(status(&r, "SESS-01"), "skipped");
    assert_eq!(status(&r, "TRANS-03"), "ran");
}

#[test]
fn hostile_answers_end_within_the_caps() {
    let rt = runtime();
    // A pagination cycle: detected, reported as N1, and the scan stays within budget.
    let cyclic = start(
        &rt,
        Behaviour {
            cyclic_cursor: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&cyclic.url(), &[]);
    let n1: Vec<String> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["rule"] == "N1")
        .map(message)
        .collect();
    assert!(n1.iter().any(|m| m.contains("cycle")), "{n1:?}");
    // Control characters in what a server sends never reach the terminal raw.
    let hostile = start(
        &rt,
        Behaviour {
            tools: Some(vec![
                json!({"name": "x\u{1b}[2Jy", "description": "clear\u{1b}[2J the screen\u{7}\r\u{202e}",
                                "inputSchema": {"type": "object"}}),
            ]),
            ..quiet()
        },
    );
    let state = state_dir();
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["scan", &hostile.url(), "--rate", "10"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains('\u{1b}')
            && !text.contains('\u{7}')
            && !text.contains('\r')
            && !text.contains('\u{202e}')
    );
    assert!(text.contains("[U+001B][2J"), "{text}");
}

#[test]
fn a_missing_config_or_previous_report_is_a_usage_error_before_anything_is_sent() {
    for (flag, says) in [
        (
            &["--fail-on-new", "old.json"][..],
            "cannot read the previous report old.json",
        ),
        (
            &["--config", "mcpprobe-missing.toml"],
            "cannot read mcpprobe-missing.toml",
        ),
    ] {
        let out = mcpprobe()
            .args(["scan", "http://127.0.0.1:9/mcp"])
            .args(flag)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(64));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn secrets_echoed_by_a_server_never_reach_the_report_or_the_trace() {
    let rt = runtime();
    let echo = TestHttp::start(
        &rt,
        vec![(
            "* /mcp",
            Answer {
                status: 400,
                echo_header: Some("authorization".into()),
                ..Answer::default()
            },
        )],
    );
    let dir = state_dir();
    let trace = dir.path().join("trace.jsonl");
    let json_out = dir.path().join("r.json");
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", dir.path())
        .env("MCPPROBE_TOKEN", TOKEN)
        .args([
            "scan",
            &echo.url("/mcp"),
            "--rate",
            "10",
            "--header",
            "X-Api-Tenant: tenant-secret-99",
            "--trace-file",
        ])
        .arg(&trace)
        .arg("--json")
        .arg(&json_out)
        .output()
        .expect("runs");
    assert!(
        echo.seen().iter().any(|s| s
            .headers
            .iter()
            .any(|(n, v)| n == "authorization" && v.contains(TOKEN))),
        "the token was sent"
    );
    for text in [
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        std::fs::read_to_string(&trace).expect("trace"),
        std::fs::read_to_string(&json_out).expect("json"),
    ] {
        assert!(
            !text.contains(TOKEN) && !text.contains("tenant-secret-99"),
            "a secret leaked: {text}"
        );
    }
}

#[test]
fn live_reports_validate_against_the_schemas() {
    let dir = state_dir();
    let (json_out, sarif_out) = (dir.path().join("demo.json"), dir.path().join("demo.sarif"));
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", dir.path())
        .arg("demo")
        .arg("--json")
        .arg(&json_out)
        .arg("--sarif")
        .arg(&sarif_out)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let report = crate::support::json_file(&json_out);
    crate::support::assert_valid("schema/report-v1.schema.json", &report);
    let sarif = crate::support::json_file(&sarif_out);
    crate::support::assert_valid("tests/sarif-2.1.0.schema.json", &sarif);
    assert!(
        sarif["runs"][0]["results"]
            .as_array()
            .is_some_and(|r| r.len() > 10)
    );
}

#[test]
fn redirect_loops_and_huge_bodies_are_bounded() {
    let rt = runtime();
    let looping = TestHttp::start(
        &rt,
        vec![("* /mcp", Answer::new(307, "").header("Location", "/mcp"))],
    );
    let (code, r) = scan(&looping.url("/mcp"), &[]);
    assert_eq!(
        (code, r["outcome"].as_str()),
        (3, Some("incomplete")),
        "{}",
        r["reason"]
    );
    let huge = "A".repeat(9 * 1024 * 1024);
    let big = TestHttp::start(&rt, vec![("* /mcp", Answer::new(200, &huge))]);
    let (code, r) = scan(&big.url("/mcp"), &[]);
    assert_eq!(code, 3);
    assert!(
        r["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("not an MCP endpoint"),
        "{}",
        r["reason"]
    );
    let cut = r["fingerprint"]["rungs"][0]["verdict"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(cut.len() < 1000, "evidence is capped: {} bytes", cut.len());
}

#[test]
fn card_01_probes_the_advertised_endpoints() {
    let rt = runtime();
    // The card names the endpoints of the server that serves it: pick the port first.
    let rules = |paths: &[&str]| -> Vec<String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let base = format!("http://127.0.0.1:{port}");
        let remotes: Vec<Value> = paths
            .iter()
            .map(|p| json!({"type": "streamable-http", "url": format!("{base}{p}")}))
            .collect();
        let card = json!({"$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json", "name": "com.example/w",
                          "version": "1", "description": "d", "remotes": remotes});
        let running = rt
            .block_on(server::start(
                Behaviour {
                    server_card: Some(card),
                    ..quiet()
                },
                port,
            ))
            .expect("start on the port");
        let (_, r) = scan(&running.url(), &[]);
        findings(&r, "CARD-01")
            .iter()
            .filter_map(|f| f["rule"].as_str().map(str::to_string))
            .collect()
    };
    let mixed = rules(&["/mcp", "/health"]);
    assert!(
        mixed.contains(&"SC3".to_string()) && mixed.contains(&"SC8".to_string()),
        "{mixed:?}"
    );
    let gone = rules(&["/gone", "/also-gone"]);
    assert!(gone.contains(&"SC4".to_string()), "{gone:?}");
    let fine = rules(&["/mcp"]);
    assert!(
        !fine
            .iter()
            .any(|r| ["SC3", "SC4", "SC8"].contains(&r.as_str())),
        "{fine:?}"
    );
}

/// The one finding of `check` with this sub-code.
fn sub<'r>(r: &'r Value, check: &str, subcode: &str) -> Option<&'r Value> {
    findings(r, check)
        .into_iter()
        .find(|f| f["subcode"] == subcode)
}

/// An indeterminate finding: info, confidence low, "indeterminate:", with its exchange.
fn assert_indeterminate(f: Option<&Value>, r: &Value) {
    let f = f.unwrap_or_else(|| panic!("no indeterminate finding: {r}"));
    assert_eq!(
        (f["severity"].as_str(), f["confidence"].as_str()),
        (Some("info"), Some("low")),
        "{f}"
    );
    assert!(message(f).starts_with("indeterminate:"), "{f}");
    assert!(
        f["evidence"]["exchanges"]
            .as_array()
            .is_some_and(|x| !x.is_empty()),
        "no exchange: {f}"
    );
}

#[test]
fn trans_01_a_404_to_the_forged_origin_is_indeterminate() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            origin_refusal_status: 404,
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    assert_indeterminate(sub(&r, "TRANS-01", "origin/indeterminate"), &r);
    assert!(
        message(sub(&r, "TRANS-01", "origin/indeterminate").expect("origin"))
            .contains("answered 404")
    );
    // The Host test still ran and was refused with 403.
    assert!(
        sub(&r, "TRANS-01", "host").is_none()
            && sub(&r, "TRANS-01", "host/indeterminate").is_none(),
        "{r}"
    );
}

#[test]
fn auth_01_and_02_a_500_without_credentials_is_indeterminate() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            anonymous_failure: Some(500),
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &["--token", TOKEN]);
    assert_eq!(status(&r, "AUTH-01"), "ran");
    assert_indeterminate(sub(&r, "AUTH-01", "anonymous/indeterminate"), &r);
    assert!(
        message(findings(&r, "AUTH-02")[0]).starts_with("indeterminate:"),
        "{r}"
    );
}

#[test]
fn auth_02_and_03_accept_a_403_challenge() {
    let rt = runtime();
    let (good, issuer) = authorization_server(&rt, true);
    let s = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            unauthorized_status: 403,
            authorization_server: Some(issuer),
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &["--token", TOKEN]);
    assert_eq!(status(&r, "AUTH-02"), "ran", "{r}");
    assert!(
        findings(&r, "AUTH-02").is_empty(),
        "{:?}",
        findings(&r, "AUTH-02")
    );
    assert_eq!(status(&r, "AUTH-03"), "ran");
    assert!(
        findings(&r, "AUTH-03").is_empty(),
        "{:?}",
        findings(&r, "AUTH-03")
    );
    assert_eq!(good.count(), 1);
    assert!(
        findings(&r, "AUTH-01").is_empty(),
        "{:?}",
        findings(&r, "AUTH-01")
    );
}

#[test]
fn proto_02_an_answer_that_is_not_json_rpc_is_indeterminate() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            unknown_method_502: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    assert_eq!(status(&r, "PROTO-02"), "ran");
    assert_indeterminate(sub(&r, "PROTO-02", "unknown-method/indeterminate"), &r);
}

#[test]
fn proto_03_lenient_params_are_info() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            lenient_params: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    let f = sub(&r, "PROTO-03", "wrong-params").unwrap_or_else(|| panic!("{r}"));
    assert_eq!(f["severity"], "info", "{f}");
    assert_eq!(
        findings(&r, "PROTO-03").len(),
        1,
        "{:?}",
        findings(&r, "PROTO-03")
    );
}

#[test]
fn trans_03_a_failed_preflight_is_indeterminate() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            preflight_status: Some(500),
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    assert_indeterminate(sub(&r, "TRANS-03", "preflight/indeterminate"), &r);
}

#[test]
fn sess_01_and_proto_03_a_session_that_does_not_open_is_indeterminate() {
    let rt = runtime();
    // The ladder's two handshakes get sessions; every later one gets 503.
    let s = start(
        &rt,
        Behaviour {
            max_sessions: Some(2),
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    assert_indeterminate(sub(&r, "SESS-01", "ended/indeterminate"), &r);
    assert_indeterminate(sub(&r, "PROTO-03", "session/indeterminate"), &r);
    // The forged-id probe still ran, and was refused.
    assert!(
        sub(&r, "SESS-01", "forged").is_none()
            && sub(&r, "SESS-01", "forged/indeterminate").is_none(),
        "{r}"
    );
}

#[test]
fn card_01_a_500_at_a_card_location_is_indeterminate() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            server_card_status: Some(500),
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    assert_eq!(status(&r, "CARD-01"), "ran");
    assert_indeterminate(sub(&r, "CARD-01", "location/indeterminate"), &r);
}

#[test]
fn sess_01_latin1_session_ids_are_echoed_byte_for_byte() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            latin1_sessions: true,
            ended_session_400: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    let charset = sub(&r, "SESS-01", "charset").unwrap_or_else(|| panic!("{r}"));
    assert!(message(charset).contains("\\x"), "{charset}");
    // The ended id, sent back exactly, was recognised: 400 instead of 404 is low.
    let ended = sub(&r, "SESS-01", "ended-status").unwrap_or_else(|| panic!("{r}"));
    assert_eq!(ended["severity"], "low");
    assert!(message(ended).contains("answered 400"), "{ended}");
    // Nothing was indeterminate: every request of the Latin-1 sessions was answered.
    let unknown: Vec<&Value> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| message(f).starts_with("indeterminate"))
        .collect();
    assert!(unknown.is_empty(), "{unknown:?}");
    assert!(
        findings(&r, "PROTO-02").is_empty() && sub(&r, "SESS-01", "forged").is_none(),
        "{r}"
    );
    // The evidence shows the real bytes, escaped.
    let shown = ended["evidence"]["exchanges"][0]["request"]["headers"].to_string();
    assert!(shown.contains("\\\\x"), "{shown}");
}

#[test]
fn sess_01_an_ended_id_answered_400_is_low() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            ended_session_400: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    let f = findings(&r, "SESS-01");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0]["subcode"].as_str(), f[0]["severity"].as_str()),
        (Some("ended-status"), Some("low"))
    );
}

#[test]
fn sess_01_entropy_of_short_structured_ids_is_estimated_from_the_samples() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            sequential_sessions: true,
            ..quiet()
        },
    );
    let (_, r) = scan(&s.url(), &[]);
    let f = sub(&r, "SESS-01", "entropy").unwrap_or_else(|| panic!("{r}"));
    assert!(
        message(f).contains("about 0 bits") && message(f).contains("counts up"),
        "{f}"
    );
}

/// Fingerprints of a report, sorted, and whether two findings share one.
fn fingerprints(r: &Value) -> Vec<String> {
    let mut fps: Vec<String> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["fingerprint"].as_str().map(str::to_string))
        .collect();
    fps.sort();
    fps
}

fn assert_distinct(r: &Value) {
    let fps = fingerprints(r);
    let all: Vec<&Value> = r["findings"].as_array().into_iter().flatten().collect();
    for w in fps.windows(2) {
        assert_ne!(
            w[0],
            w[1],
            "two findings share a fingerprint: {:?}",
            all.iter()
                .filter(|f| f["fingerprint"] == w[0].as_str())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn fingerprints_are_distinct_within_a_report_and_stable_across_runs() {
    let demo = || -> Value {
        let out = mcpprobe()
            .args(["demo", "--format", "json"])
            .output()
            .expect("runs");
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let (a, b) = (demo(), demo());
    assert_distinct(&a);
    assert_eq!(
        fingerprints(&a),
        fingerprints(&b),
        "the demo's fingerprints changed between runs"
    );
    let rt = runtime();
    let every = Behaviour {
        latin1_sessions: true,
        bait_and_switch: false,
        lenient_params: true,
        server_card: Some(
            json!({"serverInfo": {"name": "w", "version": "1"}, "authentication": {"apiKey": "sk-live-abcdefghijklmnopqrstuvwxyz"}}),
        ),
        ..mcpprobe::demo::vulnerable()
    };
    let one = start(&rt, every.clone());
    let two = start(&rt, every);
    let (_, r1) = scan(&one.url(), &[]);
    let (_, r2) = scan(&two.url(), &[]);
    assert_distinct(&r1);
    assert_eq!(
        fingerprints(&r1),
        fingerprints(&r2),
        "fingerprints depend on the port or the session ids"
    );
}

#[test]
fn trans_02_tls_failures_are_told_by_kind() {
    let rt = runtime();
    // https:// to a plain-HTTP port: rustls fails the handshake (not English error text).
    let plain = start(&rt, quiet());
    let url = plain.url().replace("http://", "https://");
    let (_, r) = scan(&url, &["--checks", "TRANS-02"]);
    let f = sub(&r, "TRANS-02", "tls").unwrap_or_else(|| panic!("{r}"));
    assert!(message(f).starts_with("the TLS handshake failed"), "{f}");
    // Plain http:// on loopback is no TLS failure and no plaintext finding.
    let (_, r) = scan(&plain.url(), &["--checks", "TRANS-02"]);
    assert!(findings(&r, "TRANS-02").is_empty(), "{r}");
}

/// The response timeout of the scans against a server that never answers one probe: long
/// enough for every other loopback request on a loaded machine, and each hang costs it once.
const HANG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Scans `url` through the library with the response timeout set to [`HANG_TIMEOUT`] (the
/// command line keeps its default), and returns the JSON report.
fn scan_with_timeout(rt: &tokio::runtime::Runtime, url: &str, token: Option<&str>) -> Value {
    scan_with_timeout_of(rt, url, token, &[])
}

/// [`scan_with_timeout`] of the checks `only` (empty: every check).
fn scan_with_timeout_of(
    rt: &tokio::runtime::Runtime,
    url: &str,
    token: Option<&str>,
    only: &[&str],
) -> Value {
    use mcpprobe::engine::{
        ScanLimits, ScanRequest, Scanner, ScannerConfig, SecretString, Selection, Target,
    };
    let state = state_dir();
    let mut config = ScannerConfig::new(state.path());
    config.host_rate = 10;
    let scanner = Scanner::new(config).expect("a scanner");
    let mut req = ScanRequest::new(Target::http(url).expect("a URL"));
    req.limits = ScanLimits {
        rate: 10,
        response_timeout: HANG_TIMEOUT,
        ..ScanLimits::default()
    };
    req.credentials.token = token.map(SecretString::from);
    req.checks = Selection::new(only, &[]).expect("known check ids");
    let report = rt
        .block_on(scanner.scan(&req, tokio_util::sync::CancellationToken::new()))
        .expect("no configuration error");
    serde_json::from_str(&report.to_json()).expect("the report is JSON")
}

/// An indeterminate finding whose probe timed out: the message and the exchange's note say so.
fn assert_timed_out(f: Option<&Value>, r: &Value) {
    assert_indeterminate(f, r);
    let f = f.expect("checked above");
    assert!(message(f).contains("timed out after 3 s"), "{f}");
    let x = &f["evidence"]["exchanges"][0];
    assert!(
        x["note"].as_str().is_some_and(|n| n.contains("timed out"))
            && x["response"].is_null()
            && x["request"]["url"].is_string(),
        "{x}"
    );
}

/// One probe hung; the scan went on and is complete.
fn assert_complete(r: &Value) {
    assert_eq!(r["outcome"], "complete", "{}", r["reason"]);
}

fn hanging(hang: server::Hang) -> Behaviour {
    Behaviour {
        hang: Some(hang),
        ..quiet()
    }
}

#[test]
fn proto_02_a_timeout_on_the_unknown_method_is_indeterminate() {
    let rt = runtime();
    let s = start(&rt, hanging(server::Hang::UnknownMethod));
    let r = scan_with_timeout(&rt, &s.url(), None);
    assert_eq!(status(&r, "PROTO-02"), "ran");
    assert_timed_out(sub(&r, "PROTO-02", "unknown-method/indeterminate"), &r);
    assert_complete(&r);
    assert_eq!(findings(&r, "PROTO-02").len(), 1, "{r}");
}

#[test]
fn proto_03_a_timeout_on_a_malformed_request_is_indeterminate() {
    let rt = runtime();
    let s = start(&rt, hanging(server::Hang::BadJson));
    let r = scan_with_timeout(&rt, &s.url(), None);
    assert_eq!(status(&r, "PROTO-03"), "ran");
    assert_timed_out(sub(&r, "PROTO-03", "bad-json/indeterminate"), &r);
    assert_complete(&r);
    // The two other malformed requests were answered with clean errors: nothing else.
    assert_eq!(
        findings(&r, "PROTO-03").len(),
        1,
        "{:?}",
        findings(&r, "PROTO-03")
    );
}

#[test]
fn auth_01_a_timeout_without_credentials_is_indeterminate() {
    let rt = runtime();
    let s = start(
        &rt,
        Behaviour {
            require_token: Some(TOKEN.into()),
            ..hanging(server::Hang::Anonymous)
        },
    );
    let r = scan_with_timeout(&rt, &s.url(), Some(TOKEN));
    assert_eq!(status(&r, "AUTH-01"), "ran");
    let f = sub(&r, "AUTH-01", "anonymous/indeterminate");
    assert_timed_out(f, &r);
    assert_complete(&r);
    // A separate client without the token could not even open its session.
    assert!(
        message(f.expect("anonymous")).contains("the session could not be opened"),
        "{r}"
    );
    assert_eq!(findings(&r, "AUTH-01").len(), 1, "{r}");
    // OAuth discovery's anonymous handshake hung too: AUTH-02 cannot say either.
    assert!(
        findings(&r, "AUTH-02")
            .iter()
            .all(|f| message(f).starts_with("indeterminate:"))
            && !findings(&r, "AUTH-02").is_empty(),
        "{r}"
    );
    assert!(!r.to_string().contains(TOKEN), "the token leaked");
}

#[test]
fn auth_01_a_timeout_on_the_anonymous_inventory_is_indeterminate() {
    let rt = runtime();
    // No credentials: the inventory itself is the anonymous request, and its tools/list hangs.
    let s = start(&rt, hanging(server::Hang::ToolsList));
    let r = scan_with_timeout_of(&rt, &s.url(), None, &["AUTH-01"]);
    assert_eq!(status(&r, "AUTH-01"), "ran");
    assert_timed_out(sub(&r, "AUTH-01", "anonymous/indeterminate"), &r);
    assert_eq!(findings(&r, "AUTH-01").len(), 1, "{r}");
}

#[test]
fn trans_01_a_timeout_on_the_forged_origin_is_indeterminate() {
    let rt = runtime();
    let s = start(&rt, hanging(server::Hang::ForgedOrigin));
    let r = scan_with_timeout(&rt, &s.url(), None);
    assert_eq!(status(&r, "TRANS-01"), "ran");
    let f = sub(&r, "TRANS-01", "origin/indeterminate");
    assert_timed_out(f, &r);
    assert_complete(&r);
    assert!(
        message(f.expect("origin")).contains("tested header: Origin: https://evil.example"),
        "{r}"
    );
    // The Host test still ran, and was refused with 403.
    assert!(
        sub(&r, "TRANS-01", "host").is_none()
            && sub(&r, "TRANS-01", "host/indeterminate").is_none(),
        "{r}"
    );
}

#[test]
fn trans_01_a_429_5xx_or_3xx_to_the_forged_origin_is_indeterminate() {
    let rt = runtime();
    for code in [429, 500, 503, 302] {
        let s = start(
            &rt,
            Behaviour {
                origin_refusal_status: code,
                ..quiet()
            },
        );
        let (_, r) = scan(&s.url(), &["--checks", "TRANS-01"]);
        assert_eq!(status(&r, "TRANS-01"), "ran", "{code}: {r}");
        let f = sub(&r, "TRANS-01", "origin/indeterminate");
        assert_indeterminate(f, &r);
        let f = f.expect("origin");
        assert!(
            message(f).contains(&format!("answered {code}, which is not a refusal")),
            "{code}: {f}"
        );
        assert_eq!(
            f["evidence"]["exchanges"][0]["response"]["status"], code,
            "{f}"
        );
        // Never a pass or a fail: the only TRANS-01 finding is the indeterminate one.
        assert_eq!(findings(&r, "TRANS-01").len(), 1, "{code}: {r}");
    }
}

#[test]
fn card_01_a_timeout_at_a_card_location_is_indeterminate() {
    let rt = runtime();
    let s = start(&rt, hanging(server::Hang::ServerCard));
    let r = scan_with_timeout(&rt, &s.url(), None);
    assert_eq!(status(&r, "CARD-01"), "ran");
    let f = sub(&r, "CARD-01", "location/indeterminate");
    assert_timed_out(f, &r);
    assert_complete(&r);
    assert!(
        message(f.expect("location")).contains("/mcp/server-card got no answer (timed out"),
        "{r}"
    );
}
