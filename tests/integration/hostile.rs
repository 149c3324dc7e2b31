//! Hostile servers (SPEC §10): one test per behaviour of `support::hostile`. Each scan must end
//! on its own (the binary runs under a generous timeout that only catches hangs) with a finding
//! or an `incomplete` outcome (exit 0, 1 or 3), never a crash, a raw control byte on the
//! terminal, or a request off scope (the trace file names every request; the other origin
//! counts its connections). Beyond that, each test asserts what its own scenario must produce:
//! the cap, the note or the finding that names what the scanner refused to read. Wall time and
//! memory are measured by `scripts/hostile.sh`.

use mcpprobe::net::{Limits, MAX_REDIRECTS};
use serde_json::Value;

use crate::support::hostile::{Hostile, Scenario};
use crate::support::{mcpprobe, runtime, state_dir};

struct Scan {
    code: i32,
    report: Value,
    /// Every request the trace file recorded (their URLs).
    urls: Vec<String>,
    terminal: String,
}

fn scan(server: &Hostile) -> Scan {
    let state = state_dir();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (json, trace) = (dir.path().join("r.json"), dir.path().join("t.jsonl"));
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["scan", &server.url(), "--rate", "10", "--json"])
        .arg(&json)
        .arg("--trace-file")
        .arg(&trace)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("mcpprobe runs");
    let code = out.status.code().unwrap_or(-1);
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): exit {code}, stderr {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let report: Value = serde_json::from_str(&text).expect("the report is JSON");
    let urls = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            v.pointer("/request/url")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    // Raw bytes first: a C1 control is two bytes in UTF-8 (C2 80–9F), ESC is 1B.
    let mut terminal = out.stdout.clone();
    terminal.extend_from_slice(&out.stderr);
    Scan {
        code,
        report,
        urls,
        terminal: String::from_utf8_lossy(&terminal).into_owned(),
    }
}

fn n1(r: &Value) -> Vec<&str> {
    r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "META-04" && f["rule"] == "N1")
        .filter_map(|f| f["message"].as_str())
        .collect()
}

/// What every hostile scan must hold to.
fn bounded(scenario: Scenario) -> (Hostile, Scan) {
    let rt = runtime();
    let server = Hostile::start(&rt, scenario);
    let s = scan(&server);
    let r = &s.report;
    assert!(
        [0, 1, 3].contains(&s.code),
        "{}: exit {} ({})",
        scenario.name(),
        s.code,
        s.terminal
    );
    assert_eq!(r["exit_code"], s.code, "{r}");
    let findings = r["findings"].as_array().map_or(0, Vec::len);
    assert!(
        r["outcome"] == "incomplete" || findings > 0,
        "{}: neither a finding nor an incomplete outcome: {r}",
        scenario.name()
    );
    let bad: Vec<char> = s
        .terminal
        .chars()
        .filter(|&c| (c < ' ' && c != '\n') || ('\u{7f}'..='\u{9f}').contains(&c))
        .collect();
    assert!(
        bad.is_empty(),
        "{}: raw control characters reached the terminal: {bad:?}",
        scenario.name()
    );
    let origin = server.origin();
    assert!(!s.urls.is_empty(), "the trace file recorded nothing");
    for u in &s.urls {
        assert!(
            u.starts_with(&origin),
            "{}: a request off scope: {u}",
            scenario.name()
        );
    }
    assert_eq!(server.other_hits(), 0, "the other origin was reached");
    assert!(r["requests_sent"].as_u64().unwrap_or(0) <= 60, "{r}");
    (server, s)
}

fn reason(s: &Scan) -> &str {
    s.report["reason"].as_str().unwrap_or_default()
}

/// The verdict of the ladder's rung whose step starts with `step`.
fn rung<'a>(r: &'a Value, step: &str) -> &'a str {
    r.pointer("/fingerprint/rungs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|g| g["step"].as_str().is_some_and(|s| s.starts_with(step)))
        .and_then(|g| g["verdict"].as_str())
        .unwrap_or_else(|| panic!("no rung {step}: {r}"))
}

/// Every exchange the findings show as evidence.
fn exchanges(r: &Value) -> impl Iterator<Item = &Value> {
    r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.pointer("/evidence/exchanges").and_then(Value::as_array))
        .flatten()
}

/// The notes of every exchange shown as evidence.
fn notes(r: &Value) -> Vec<&str> {
    exchanges(r).filter_map(|e| e["note"].as_str()).collect()
}

/// How many requests the server received whose "METHOD /path rpc" starts with `prefix`.
fn hits(server: &Hostile, prefix: &str) -> usize {
    server
        .seen()
        .iter()
        .filter(|p| p.starts_with(prefix))
        .count()
}

/// "body cut at the 8388608 byte cap", with the default cap.
fn body_cap() -> String {
    format!("body cut at the {} byte cap", Limits::default().max_body)
}

#[test]
fn hostile_endless_sse_spends_the_slow_budget_once() {
    let (server, s) = bounded(Scenario::EndlessSse);
    assert_eq!(s.report["outcome"], "incomplete");
    assert!(reason(&s).contains("too slow"), "{}", s.report);
    // The stream was read until its time cap, never to its (absent) end, and the reason names
    // the probe that spent the budget.
    assert!(
        rung(&s.report, "server/discover").contains("stopped reading at the time cap"),
        "{}",
        s.report
    );
    assert!(
        reason(&s).contains("server/discover (POST /mcp)")
            && reason(&s).contains("stopped at the time cap"),
        "names the slow probe: {}",
        reason(&s)
    );
    assert!(server.seen().len() <= 6, "{:?}", server.seen());
}

#[test]
fn hostile_huge_json_is_cut_at_the_body_cap() {
    let (_, s) = bounded(Scenario::HugeJson);
    let n = n1(&s.report);
    assert!(
        n.iter()
            .any(|m| m.contains("tools/list page 1 could not be read") && m.contains(&body_cap())),
        "{n:?}"
    );
}

#[test]
fn hostile_deep_json_is_refused_without_a_stack_overflow() {
    let (_, s) = bounded(Scenario::DeepJson);
    let n = n1(&s.report);
    assert!(
        n.iter()
            .any(|m| m.contains("tools/list page 1 could not be read")
                && m.contains("not JSON: recursion limit exceeded")),
        "{n:?}"
    );
}

#[test]
fn hostile_drip_gets_one_slow_budget_not_a_timeout_per_request() {
    let (server, s) = bounded(Scenario::Drip);
    assert_eq!(s.report["outcome"], "incomplete");
    assert!(reason(&s).contains("too slow"), "{}", s.report);
    assert!(
        reason(&s).contains("server/discover"),
        "names the slow probe: {}",
        reason(&s)
    );
    // Once the budget is spent, nothing more is sent but the gate's GET and the slow probes.
    assert!(server.seen().len() <= 6, "{:?}", server.seen());
}

#[test]
fn hostile_redirect_loop_is_not_followed() {
    let (server, s) = bounded(Scenario::RedirectLoop);
    // Every POST to /mcp is redirected to /loop1, then /loop2, then back to /loop1: the
    // client follows same-origin hops (at most MAX_REDIRECTS) but never a URL it has already
    // visited, so each redirected request costs exactly one hit on each /loop URL.
    let (posts, loop1, loop2) = (
        hits(&server, "POST /mcp"),
        hits(&server, "POST /loop1"),
        hits(&server, "POST /loop2"),
    );
    assert!(posts > 0, "{:?}", server.seen());
    assert_eq!(
        loop1,
        posts,
        "one /loop1 hit per redirected request: {:?}",
        server.seen()
    );
    assert_eq!(
        loop2,
        posts,
        "one /loop2 hit per redirected request: {:?}",
        server.seen()
    );
    assert!(loop1 + loop2 <= MAX_REDIRECTS * posts);
    assert!(
        notes(&s.report)
            .iter()
            .any(|n| n.starts_with("redirect loop not followed: ") && n.ends_with("/loop1")),
        "{:?}",
        notes(&s.report)
    );
}

#[test]
fn hostile_redirect_to_another_origin_is_never_followed() {
    let (server, s) = bounded(Scenario::RedirectOtherOrigin);
    assert_eq!(server.other_hits(), 0);
    assert!(!s.urls.iter().any(|u| u.contains(&server.other.to_string())));
    // SPEC §7: the redirect is recorded as evidence instead.
    let expected = format!(
        "redirect to another origin not followed: http://{}/mcp",
        server.other
    );
    assert!(
        notes(&s.report).contains(&expected.as_str()),
        "{:?}",
        notes(&s.report)
    );
}

#[test]
fn hostile_cyclic_cursor_stops_at_the_cycle() {
    let (_, s) = bounded(Scenario::CyclicCursor);
    let n = n1(&s.report);
    // Pages: first (cursor none), a, b; b's nextCursor "a" was seen before.
    assert!(
        n.iter()
            .any(|m| m.contains("cycle") && m.contains("stopped after page 3")),
        "{n:?}"
    );
}

#[test]
fn hostile_100000_tools_are_capped() {
    let (_, s) = bounded(Scenario::ManyTools);
    let n = n1(&s.report);
    assert!(
        n.iter().any(|m| m.contains("more than 10000 items")),
        "{n:?}"
    );
}

#[test]
fn hostile_8_mib_pages_stop_at_the_inventory_byte_budget() {
    let (server, s) = bounded(Scenario::BigPages);
    assert_eq!(s.report["outcome"], "incomplete", "{}", s.report);
    assert!(reason(&s).contains("truncated"), "{}", reason(&s));
    let n = n1(&s.report);
    assert!(n.iter().any(|m| m.contains("budget")), "{n:?}");
    let pages = server
        .seen()
        .iter()
        .filter(|p| p.ends_with("tools/list"))
        .count();
    assert!(pages < 20, "{pages} pages read");
}

#[test]
fn hostile_invalid_utf8_is_a_gap_not_a_crash() {
    let (_, s) = bounded(Scenario::InvalidUtf8);
    let n = n1(&s.report);
    assert!(
        n.iter()
            .any(|m| m.contains("tools/list page 1 could not be read")
                && m.contains("the body is not UTF-8")),
        "{n:?}"
    );
}

#[test]
fn hostile_control_characters_never_reach_the_terminal() {
    let (_, s) = bounded(Scenario::ControlChars);
    // The terminal report shows the server's strings, escaped.
    assert!(
        s.terminal.contains("read_note") || s.terminal.contains("evil"),
        "{}",
        s.terminal
    );
    assert!(!s.terminal.contains('\u{1b}') && !s.terminal.contains('\u{9b}'));
    // The scanner saw them: P5 on the description, the tool name and the instructions.
    let p5 = s.report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "META-02" && f["rule"] == "P5")
        .count();
    assert!(p5 >= 3, "{p5} P5 findings: {}", s.report);
}

#[test]
fn hostile_gzip_bomb_is_never_inflated() {
    let (_, s) = bounded(Scenario::GzipBomb);
    // mcpprobe decodes no content coding: the verdict says so, and the body it read is the
    // compressed one (gzip's magic 1f 8b, shown lossily), about 1.3 MB, never 200 MB of zeros
    // (which would have been cut at the body cap).
    let verdict = rung(&s.report, "server/discover");
    assert!(
        verdict.contains("Content-Encoding gzip, not decoded"),
        "{verdict}"
    );
    assert!(
        reason(&s).contains("Content-Encoding gzip, not decoded"),
        "{}",
        reason(&s)
    );
    let discover = exchanges(&s.report)
        .find(|e| {
            e.pointer("/request/body")
                .and_then(Value::as_str)
                .is_some_and(|b| b.contains("server/discover"))
        })
        .expect("the server/discover exchange is evidence");
    let body = discover
        .pointer("/response/body")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(body.starts_with("\u{1f}\u{fffd}\u{8}"), "{body:?}");
    assert!(
        !notes(&s.report).iter().any(|n| n.contains("body cut at")),
        "{:?}",
        notes(&s.report)
    );
}

#[test]
fn hostile_1_mb_header_is_refused() {
    let (_, s) = bounded(Scenario::HugeHeader);
    // The HTTP client refuses a head that large: no answer, so the target is unreachable.
    assert_eq!(s.report["outcome"], "incomplete", "{}", s.report);
    let unreachable = s
        .report
        .pointer("/fingerprint/unreachable")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        unreachable.contains("message head is too large"),
        "{}",
        s.report
    );
    assert!(
        reason(&s).contains("could not be reached: message head is too large"),
        "{}",
        reason(&s)
    );
}

#[test]
fn hostile_reset_mid_body_is_a_gap() {
    let (_, s) = bounded(Scenario::ResetMidBody);
    let n = n1(&s.report);
    assert!(
        n.iter()
            .any(|m| m.contains("tools/list page 1 could not be read")
                && m.contains("body read failed")),
        "{n:?}"
    );
}

#[test]
fn hostile_sse_without_line_breaks_is_cut() {
    let (_, s) = bounded(Scenario::SseNoLineBreaks);
    // One endless SSE line: no event ever completes, so the read stops at the body cap, and
    // no rung of the ladder takes it for an answer.
    assert_eq!(s.report["outcome"], "incomplete", "{}", s.report);
    for step in [
        "server/discover",
        "initialize 2025-11-25",
        "initialize 2025-06-18",
    ] {
        let v = rung(&s.report, step);
        assert!(
            v.contains("no reply: the answer was cut at a cap") && v.contains(&body_cap()),
            "{step}: {v}"
        );
    }
    assert!(reason(&s).contains(&body_cap()), "{}", reason(&s));
}

mod authorization_server {
    //! An authorization server advertised at 169.254.169.254 (cloud metadata, through a DNS
    //! name) and at 127.0.0.1, by a target that is neither: in a network namespace (10.x only
    //! there), proven by DNS TXT. Nothing is sent to either address; AUTH-03 names the URL.
    //! The target is private (10.x, scanned with `--allow-private-addresses`): its
    //! authorization server may be that same host, and no other host of its network.

    use serde_json::{Value, json};

    use crate::support::dns::TestDns;
    use crate::support::http::TestHttp;
    use crate::support::netns::{HOST_IP, NS_IP, NetnsHost};
    use crate::support::{mcpprobe, runtime, state_dir};

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";
    const TARGET: &str = "http://mcp.test:8080/mcp";

    /// Scans the namespace target advertising `as_url`; returns the report, the traced URLs
    /// and what the target received.
    fn scan_advertising(
        rt: &tokio::runtime::Runtime,
        as_url: &str,
    ) -> (Value, Vec<String>, Vec<String>) {
        let prm = "http://mcp.test:8080/.well-known/oauth-protected-resource/mcp";
        let host = NetnsHost::start(json!({
            "POST /mcp": {"status": 401, "body": "{}", "headers": {
                "WWW-Authenticate": format!("Bearer resource_metadata=\"{prm}\""),
                "Content-Type": "application/json"}},
            "GET /.well-known/oauth-protected-resource/mcp": {"status": 200,
                "headers": {"Content-Type": "application/json"},
                "body": json!({"resource": TARGET, "authorization_servers": [as_url]}).to_string()},
        }));
        let dns = TestDns::start(
            rt,
            &[
                &format!("mcp 60 IN A {NS_IP}"),
                &format!("_mcpprobe.mcp 60 IN TXT \"mcpprobe-verify={TOKEN}\""),
                "metadata 60 IN A 169.254.169.254",
                "lo 60 IN A 127.0.0.1",
                // The host side of the namespace's link: another host of the target's network.
                &format!("neighbour 60 IN A {HOST_IP}"),
            ],
        );
        let state = state_dir();
        let dir = std::path::PathBuf::from(state.path()).join("proofs");
        std::fs::create_dir_all(&dir).expect("proofs dir");
        let now = chrono::Utc::now();
        let proof = json!({"host": "mcp.test", "method": "dns-txt", "token": TOKEN,
            "verified_at": now.to_rfc3339(), "expires_at": (now + chrono::Duration::days(90)).to_rfc3339()});
        std::fs::write(dir.join("mcp.test.json"), proof.to_string()).expect("write proof");
        let trace = state.path().join("trace.jsonl");
        let out = mcpprobe()
            .env("MCPPROBE_STATE_DIR", state.path())
            .args([
                "scan",
                TARGET,
                "--resolver",
                &dns.arg(),
                "--format",
                "json",
                "--rate",
                "10",
                "--allow-private-addresses",
            ])
            .args(["--checks", "AUTH-02,AUTH-03", "--trace-file"])
            .arg(&trace)
            .output()
            .expect("mcpprobe runs");
        let code = out.status.code().unwrap_or(-1);
        assert!([0, 1, 3].contains(&code), "exit {code}");
        let report = crate::support::stdout_json(&out);
        let urls = std::fs::read_to_string(&trace)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                v.pointer("/request/url")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        (report, urls, host.finish())
    }

    fn auth_03(r: &Value) -> Vec<String> {
        r["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["check"] == "AUTH-03")
            .filter_map(|f| f["message"].as_str().map(str::to_string))
            .collect()
    }

    fn only_the_target(urls: &[String], seen: &[String]) {
        assert!(!urls.is_empty());
        for u in urls {
            assert!(
                u.starts_with("http://mcp.test:8080/"),
                "a request off scope: {u}"
            );
        }
        assert!(
            seen.iter()
                .all(|s| !s.contains("oauth-authorization-server")),
            "{seen:?}"
        );
    }

    #[test]
    fn hostile_authorization_server_at_cloud_metadata_is_refused_by_its_resolved_address() {
        let rt = runtime();
        let (r, urls, seen) = scan_advertising(&rt, "https://metadata.test/");
        let f = auth_03(&r);
        assert!(
            f.iter().any(|m| m
                .contains("https://metadata.test/.well-known/oauth-authorization-server")
                && m.contains("169.254.169.254")
                && m.contains("link-local")),
            "{r}"
        );
        only_the_target(&urls, &seen);
        // Plain http to the metadata address is refused for its scheme, before any lookup.
        let (r, urls, seen) = scan_advertising(&rt, "http://169.254.169.254/latest/");
        assert!(auth_03(&r).iter().any(|m| m.contains("only https")), "{r}");
        only_the_target(&urls, &seen);
    }

    #[test]
    fn hostile_authorization_server_on_loopback_for_a_remote_target_is_refused() {
        let rt = runtime();
        let local = TestHttp::start(&rt, vec![]);
        let (r, urls, seen) = scan_advertising(&rt, &format!("https://{}/", local.addr));
        assert!(
            auth_03(&r)
                .iter()
                .any(|m| m.contains("127.0.0.1") && m.contains("loopback")),
            "{r}"
        );
        only_the_target(&urls, &seen);
        // A name that resolves to loopback, with userinfo: refused, and the userinfo never shown.
        let (r, urls, seen) = scan_advertising(
            &rt,
            &format!("https://alice:hunter2@lo.test:{}/", local.addr.port()),
        );
        let f = auth_03(&r);
        assert!(f.iter().any(|m| m.contains("loopback")), "{r}");
        assert!(
            !r.to_string().contains("hunter2"),
            "the userinfo leaked: {r}"
        );
        only_the_target(&urls, &seen);
        assert_eq!(
            local.count(),
            0,
            "the loopback authorization server was reached"
        );
    }

    #[test]
    fn a_private_targets_authorization_server_may_be_that_same_host_only() {
        let rt = runtime();
        // Another host of the target's 10.x network: refused, naming it and its range.
        let (r, urls, seen) = scan_advertising(&rt, "https://neighbour.test/");
        let f = auth_03(&r);
        assert!(
            f.iter().any(|m| m.contains("was not fetched")
                && m.contains(HOST_IP)
                && m.contains("private (RFC 1918)")
                && m.contains("not the target's own host")),
            "{r}"
        );
        only_the_target(&urls, &seen);
        // The target's own host (another port, where nothing listens): the one GET is sent
        // there, and fails to connect.
        let (r, urls, _) = scan_advertising(&rt, "https://mcp.test:8443/");
        let f = auth_03(&r);
        assert!(f.iter().all(|m| !m.contains("was not fetched")), "{r}");
        assert!(
            f.iter().any(|m| m.contains("the one GET to")
                && m.contains("https://mcp.test:8443/.well-known/oauth-authorization-server")),
            "{r}"
        );
        let other: Vec<&String> = urls
            .iter()
            .filter(|u| !u.starts_with("http://mcp.test:8080/"))
            .collect();
        assert!(
            other
                .iter()
                .all(|u| u
                    .starts_with("https://mcp.test:8443/.well-known/oauth-authorization-server")),
            "{other:?}"
        );
    }
}
