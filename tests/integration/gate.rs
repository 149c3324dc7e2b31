//! The gate against real parts: an authoritative DNS server on 127.0.0.1, HTTP servers on
//! loopback, and a non-loopback host in a network namespace. Every server counts what it
//! receives, and the counts are the assertions (SPEC §1).

use serde_json::{Value, json};

use crate::support::dns::TestDns;
use crate::support::http::{Answer, TestHttp};
use crate::support::netns::{NS_IP, NetnsHost, PORT};
use crate::support::{mcpprobe, runtime, state_dir, stdout_json};

const TARGET: &str = "http://mcp.test:8080/mcp";
const OPT_OUT_GET: &str = "GET /.well-known/mcpprobe-opt-out";

fn a_record() -> String {
    format!("mcp 60 IN A {NS_IP}")
}

/// Runs `mcpprobe scan` with the test resolver and state folder; returns (exit, JSON report).
fn scan(dns: &TestDns, state: &tempfile::TempDir, url: &str, extra: &[&str]) -> (i32, Value) {
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["scan", url, "--resolver", &dns.arg(), "--format", "json"])
        .args(extra)
        .output()
        .expect("mcpprobe runs");
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

fn write_proof(state: &tempfile::TempDir, host: &str, token: &str, verified: &str, expires: &str) {
    let dir = state.path().join("proofs");
    std::fs::create_dir_all(&dir).expect("proofs dir");
    let proof = json!({"host": host, "method": "dns-txt", "token": token, "verified_at": verified, "expires_at": expires});
    std::fs::write(dir.join(format!("{host}.json")), proof.to_string()).expect("write proof");
}

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// The namespace host is in 10.0.0.0/8: a name resolving to it is scanned only with this flag
/// (SPEC §7); the tests of what a remote host receives give it, so the rest of the gate runs.
const PRIVATE_OK: &str = "--allow-private-addresses";

/// A DNS-TXT proof of `host` made now, valid for 90 days.
fn fresh_proof(state: &tempfile::TempDir, host: &str) {
    let now = chrono::Utc::now();
    write_proof(
        state,
        host,
        TOKEN,
        &now.to_rfc3339(),
        &(now + chrono::Duration::days(90)).to_rfc3339(),
    );
}

#[test]
fn dns_opt_out_means_no_http_request_at_all() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let dns = TestDns::start(
        &rt,
        &[
            &a_record(),
            "_mcpprobe.mcp 60 IN TXT \"contact=ops@example.test\" \"mcpprobe-opt-out=all\"",
        ],
    );
    let state = state_dir();
    let (code, report) = scan(&dns, &state, TARGET, &[]);
    assert_eq!(code, 2);
    assert_eq!(report["outcome"], "refused");
    assert_eq!(report["refusal"], "opted_out");
    assert!(
        report["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("DNS TXT"),
        "{report}"
    );
    assert_eq!(report["requests_sent"], 0);
    assert_eq!(
        host.finish(),
        Vec::<String>::new(),
        "the opted-out host received HTTP requests"
    );
}

#[test]
fn opt_out_split_across_txt_strings_is_joined() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let dns = TestDns::start(
        &rt,
        &[
            &a_record(),
            "_mcpprobe.mcp 60 IN TXT \"mcpprobe-opt\" \"-out=all\"",
        ],
    );
    let (code, _) = scan(&dns, &state_dir(), TARGET, &[]);
    assert_eq!(code, 2);
    assert!(host.finish().is_empty());
}

#[test]
fn http_opt_out_gets_exactly_the_one_well_known_get() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![(OPT_OUT_GET, Answer::new(200, "opted out"))]);
    let dns = TestDns::start(&rt, &[]);
    let (code, report) = scan(&dns, &state_dir(), &server.url("/mcp"), &[]);
    assert_eq!(code, 2);
    assert_eq!(report["outcome"], "refused");
    assert_eq!(report["refusal"], "opted_out");
    let seen: Vec<String> = server
        .seen()
        .iter()
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    assert_eq!(seen, vec![OPT_OUT_GET.to_string()]);
    assert_eq!(report["requests_sent"], 1);
}

#[test]
fn unproven_remote_gets_nothing_beyond_the_opt_out_get() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let dns = TestDns::start(&rt, &[&a_record()]);
    let (code, report) = scan(&dns, &state_dir(), TARGET, &[PRIVATE_OK]);
    assert_eq!(code, 2, "{report}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("verify init"),
        "{report}"
    );
    assert_eq!(host.finish(), vec![OPT_OUT_GET.to_string()]);
}

#[test]
fn expired_proof_is_refused() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let record = format!("_mcpprobe.mcp 60 IN TXT \"mcpprobe-verify={TOKEN}\"");
    let dns = TestDns::start(&rt, &[&a_record(), &record]);
    let state = state_dir();
    write_proof(
        &state,
        "mcp.test",
        TOKEN,
        "2025-01-01T00:00:00Z",
        "2025-04-01T00:00:00Z",
    );
    let (code, report) = scan(&dns, &state, TARGET, &[PRIVATE_OK]);
    assert_eq!(code, 2);
    assert_eq!(report["refusal"], "ownership", "an expired proof");
    assert!(
        report["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("expired"),
        "{report}"
    );
    assert_eq!(host.finish(), vec![OPT_OUT_GET.to_string()]);
}

#[test]
fn corrupt_state_file_is_an_error_naming_it() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let dns = TestDns::start(&rt, &[&a_record()]);
    let state = state_dir();
    std::fs::create_dir_all(state.path().join("proofs")).expect("dir");
    std::fs::write(
        state.path().join("proofs/mcp.test.json"),
        "{\"host\": \"mcp.te",
    )
    .expect("write");
    let (code, report) = scan(&dns, &state, TARGET, &[PRIVATE_OK]);
    assert_eq!(code, 2);
    let reason = report["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("proofs/mcp.test.json") && reason.contains("corrupt"),
        "{reason}"
    );
    assert_eq!(host.finish(), vec![OPT_OUT_GET.to_string()]);
}

#[test]
fn verify_then_scan_then_record_removed() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let state = state_dir();

    // verify init: a 128-bit token and the record to publish.
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["verify", "init", "MCP.test."])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let pending: Value = crate::support::json_file(&state.path().join("pending/mcp.test.json"));
    let token = pending["token"].as_str().expect("token").to_string();
    assert_eq!(token.len(), 32, "128 bits, hex");
    assert!(
        printed.contains(&format!(
            "_mcpprobe.mcp.test  TXT  \"mcpprobe-verify={token}\""
        )),
        "{printed}"
    );

    // Not published yet: verify check fails with exit 2.
    let bare = TestDns::start(&rt, &[&a_record()]);
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["verify", "check", "mcp.test", "--resolver", &bare.arg()])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));

    // Published (split into two character-strings): verify check stores a 90-day proof.
    let (a, b) = token.split_at(10);
    let record = format!("_mcpprobe.mcp 60 IN TXT \"mcpprobe-verify={a}\" \"{b}\"");
    let published = TestDns::start(&rt, &[&a_record(), &record]);
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args([
            "verify",
            "check",
            "mcp.test",
            "--resolver",
            &published.arg(),
        ])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let proof: Value = crate::support::json_file(&state.path().join("proofs/mcp.test.json"));
    assert_eq!(proof["method"], "dns-txt");
    let verified =
        chrono::DateTime::parse_from_rfc3339(proof["verified_at"].as_str().expect("verified_at"))
            .expect("date");
    let expires =
        chrono::DateTime::parse_from_rfc3339(proof["expires_at"].as_str().expect("expires_at"))
            .expect("date");
    assert_eq!((expires - verified).num_days(), 90);
    let status = mcpprobe()
        .env("MCPPROBE_STATE_DIR", state.path())
        .args(["verify", "status"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&status.stdout).contains("mcp.test  dns-txt"));

    // With the record published, the gate passes (the host is private: allowed by the flag).
    let (code, report) = scan(&published, &state, TARGET, &[PRIVATE_OK]);
    assert_ne!(code, 2, "{report}");
    assert!(
        report["gate"]["ownership"]
            .as_str()
            .unwrap_or_default()
            .starts_with("dns-txt"),
        "{report}"
    );
    assert_eq!(report["gate"]["addresses"], json!([NS_IP]));

    // The record is removed: the next scan is refused, and the host gets only the opt-out GET.
    let before = host.finish();
    let host = NetnsHost::start(json!({}));
    let (code, report) = scan(&bare, &state, TARGET, &[PRIVATE_OK]);
    assert_eq!(code, 2, "{report}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("no longer published"),
        "{report}"
    );
    assert_eq!(host.finish(), vec![OPT_OUT_GET.to_string()]);
    assert!(
        before.first().is_some_and(|p| p == OPT_OUT_GET),
        "{before:?}"
    );
}

#[test]
fn ip_literal_that_is_not_loopback_cannot_be_proven() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let dns = TestDns::start(&rt, &[]);
    let (code, report) = scan(
        &dns,
        &state_dir(),
        &format!("http://{NS_IP}:{PORT}/mcp"),
        &[],
    );
    assert_eq!(code, 2);
    assert!(
        report["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("IP address"),
        "{report}"
    );
    assert_eq!(
        host.finish(),
        vec![OPT_OUT_GET.to_string()],
        "IP literals get the HTTP opt-out check only"
    );
}

#[test]
fn active_without_its_flags_sends_nothing() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![("* /mcp", Answer::new(200, "{}"))]);
    let dns = TestDns::start(&rt, &[]);
    for extra in [
        &["--active"][..],
        &["--active", "--authorised-by", "me"],
        &[
            "--active",
            "--authorised-by",
            "me",
            "--scope",
            "read-only tools",
        ],
    ] {
        let (code, report) = scan(&dns, &state_dir(), &server.url("/mcp"), extra);
        assert_eq!(code, 2);
        assert!(
            report["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("--verify"),
            "{report}"
        );
    }
    assert_eq!(server.count(), 0, "no request at all, so no tools/call");
}

#[test]
fn loopback_target_has_a_local_proof() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![]);
    let dns = TestDns::start(&rt, &[]);
    let (code, report) = scan(&dns, &state_dir(), &server.url("/mcp"), &[]);
    assert_ne!(code, 2, "{report}");
    assert!(
        report["gate"]["ownership"]
            .as_str()
            .unwrap_or_default()
            .starts_with("local"),
        "{report}"
    );
}

#[test]
fn usage_errors_exit_64() {
    let dns_arg = "127.0.0.1:1";
    for args in [
        vec!["scan", "http://127.0.0.1:1/mcp", "--rate", "11"],
        vec!["scan", "http://127.0.0.1:1/mcp", "--rate", "0"],
        vec!["scan", "http://127.0.0.1:1/mcp", "--resolver", "nonsense"],
        vec!["scan", "ftp://127.0.0.1:1/mcp", "--resolver", dns_arg],
        vec![
            "scan",
            "http://127.0.0.1:1/mcp",
            "--header",
            "no colon here",
        ],
    ] {
        mcpprobe()
            .env("MCPPROBE_STATE_DIR", "/nonexistent-state")
            .args(&args)
            .assert()
            .code(64);
    }
}

#[test]
fn authorised_active_run_leaves_a_record_and_calls_nothing() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![]);
    let dns = TestDns::start(&rt, &[]);
    let state = state_dir();
    let (code, report) = scan(
        &dns,
        &state,
        &server.url("/mcp"),
        &[
            "--active",
            "--authorised-by",
            "Ada Lovelace",
            "--scope",
            "read-only tools",
            "--verify",
            "--exclude-tool",
            "wipe",
        ],
    );
    assert_ne!(code, 2, "{report}");
    let records: Vec<_> = std::fs::read_dir(state.path().join("authorisations"))
        .expect("records")
        .collect();
    assert_eq!(records.len(), 1);
    let record = crate::support::json_file(&records[0].as_ref().expect("entry").path());
    assert_eq!(record["authorised_by"], "Ada Lovelace");
    assert_eq!(record["scope"], "read-only tools");
    assert_eq!(record["excluded_tools"], json!(["wipe"]));
    assert_eq!(
        record["checks_planned"],
        json!([
            "ACT-01", "ACT-02", "ACT-03", "ACT-04", "ACT-05", "ACT-06", "ACT-07", "ACT-08"
        ]),
        "the implemented active checks"
    );
    assert_eq!(record["status"], "finished");
    assert_eq!(record["calls"], json!([]));
    for check in report["checks"].as_array().expect("checks") {
        if check["kind"] == "active" {
            assert_ne!(check["status"], "ran", "{check}");
            assert_eq!(check["requests"], 0, "{check}");
        }
    }
    assert!(server.seen().iter().all(|s| !s.body.contains("tools/call")));
}

#[test]
fn every_report_lists_the_active_checks_as_not_authorised() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![(OPT_OUT_GET, Answer::new(200, ""))]);
    let dns = TestDns::start(&rt, &[]);
    let (code, report) = scan(&dns, &state_dir(), &server.url("/mcp"), &[]);
    assert_eq!(code, 2, "refused, and still:");
    let stubs: Vec<&Value> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["kind"] == "active")
        .collect();
    assert_eq!(stubs.len(), 8);
    // Every active check is implemented: without the gate's authorisation each says so.
    for c in stubs {
        let reason = c["reason"].as_str().unwrap_or_default();
        assert_eq!(c["status"], "skipped", "{c}");
        assert!(reason.starts_with("not authorised"), "{c}");
    }
}

#[test]
fn trans_02_plain_http_on_a_host_that_is_not_loopback() {
    let rt = runtime();
    let host = NetnsHost::start(json!({}));
    let record = format!("_mcpprobe.mcp 60 IN TXT \"mcpprobe-verify={TOKEN}\"");
    let dns = TestDns::start(&rt, &[&a_record(), &record]);
    let state = state_dir();
    let now = chrono::Utc::now();
    write_proof(
        &state,
        "mcp.test",
        TOKEN,
        &now.to_rfc3339(),
        &(now + chrono::Duration::days(90)).to_rfc3339(),
    );
    let (code, report) = scan(&dns, &state, TARGET, &[PRIVATE_OK]);
    assert_eq!(
        code, 3,
        "the host is not MCP: incomplete, but the checks that need no MCP still ran"
    );
    let trans02: Vec<&Value> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "TRANS-02")
        .collect();
    assert_eq!(trans02.len(), 1, "{report}");
    assert!(
        trans02[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("plain http://")
    );
    let seen = host.finish();
    assert!(seen.len() <= 40, "{} requests", seen.len());

    // Loopback over plain http is fine.
    let local = TestHttp::start(&rt, vec![]);
    let (_, report) = scan(&dns, &state_dir(), &local.url("/mcp"), &[]);
    assert!(
        report["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|f| f["check"] != "TRANS-02")
    );
}

/// The JSON report's reason, or "".
fn reason(report: &Value) -> &str {
    report["reason"].as_str().unwrap_or_default()
}

/// Asserts a refusal for the address rule: exit 2, `private_address`, the address and the
/// range named, nothing sent (no request counted by mcpprobe, none in the trace).
fn assert_address_refusal(
    code: i32,
    report: &Value,
    trace: &std::path::Path,
    addr: &str,
    range: &str,
) {
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["outcome"], "refused", "{report}");
    assert_eq!(report["refusal"], "private_address", "{report}");
    let why = reason(report);
    assert!(why.contains(addr) && why.contains(range), "{why}");
    assert!(why.contains("--allow-private-addresses"), "{why}");
    assert_eq!(report["requests_sent"], 0, "{report}");
    let check = report["gate"]["address_check"].as_str().unwrap_or_default();
    assert!(
        check.starts_with("refused") && check.contains(addr),
        "{report}"
    );
    assert_eq!(report["gate"]["exchanges"], json!([]), "{report}");
    assert!(report["gate"]["ownership"].is_null(), "{report}");
    let traced = std::fs::read_to_string(trace).unwrap_or_default();
    assert!(traced.trim().is_empty(), "requests traced: {traced}");
    crate::support::assert_valid("schema/report-v1.schema.json", report);
}

#[test]
fn a_proven_name_resolving_to_a_link_local_address_is_refused_and_sent_nothing() {
    let rt = runtime();
    // The metadata address itself, and the IPv6 forms that carry it.
    let names = [
        ("meta", "A 169.254.169.254", "169.254.169.254", "link-local"),
        (
            "mapped",
            "AAAA ::ffff:169.254.169.254",
            "::ffff:169.254.169.254",
            "IPv4-mapped",
        ),
        (
            "sixtofour",
            "AAAA 2002:a9fe:a9fe::1",
            "2002:a9fe:a9fe::1",
            "6to4",
        ),
        (
            "nat64",
            "AAAA 64:ff9b::a9fe:a9fe",
            "64:ff9b::a9fe:a9fe",
            "NAT64",
        ),
        ("v6ll", "AAAA fe80::1", "fe80::1", "link-local"),
    ];
    let mut records = Vec::new();
    for (name, rr, _, _) in names {
        records.push(format!("{name} 60 IN {rr}"));
        records.push(format!(
            "_mcpprobe.{name} 60 IN TXT \"mcpprobe-verify={TOKEN}\""
        ));
    }
    let refs: Vec<&str> = records.iter().map(String::as_str).collect();
    let dns = TestDns::start(&rt, &refs);
    for (name, _, addr, range) in names {
        let state = state_dir();
        let host = format!("{name}.test");
        fresh_proof(&state, &host);
        let trace = state.path().join("trace.jsonl");
        let trace_arg = trace.to_string_lossy().to_string();
        let url = format!("http://{host}/mcp");
        let (code, report) = scan(&dns, &state, &url, &["--trace-file", &trace_arg]);
        assert_address_refusal(code, &report, &trace, addr, range);
        assert!(reason(&report).contains("link-local"), "{report}");
        // Refused before the ownership check too: the active gate gets no further.
        let (code, report) = scan(
            &dns,
            &state,
            &url,
            &[
                "--active",
                "--authorised-by",
                "me",
                "--scope",
                "*",
                "--verify",
            ],
        );
        assert_eq!(
            (code, report["refusal"].as_str()),
            (2, Some("private_address")),
            "{report}"
        );
    }
}

#[test]
fn a_proven_name_resolving_to_a_private_address_is_refused_unless_allowed() {
    let rt = runtime();
    let record = format!("_mcpprobe.mcp 60 IN TXT \"mcpprobe-verify={TOKEN}\"");
    let dns = TestDns::start(&rt, &[&a_record(), &record]);
    let state = state_dir();
    fresh_proof(&state, "mcp.test");
    let trace = state.path().join("trace.jsonl");
    let trace_arg = trace.to_string_lossy().to_string();

    // Refused: the host in the namespace, counting, gets nothing (not even the opt-out GET).
    let host = NetnsHost::start(json!({}));
    let (code, report) = scan(&dns, &state, TARGET, &["--trace-file", &trace_arg]);
    assert_address_refusal(code, &report, &trace, NS_IP, "10.0.0.0/8");
    assert!(reason(&report).contains("private (RFC 1918)"), "{report}");
    assert_eq!(report["gate"]["addresses"], json!([NS_IP]));
    assert_eq!(
        host.finish(),
        Vec::<String>::new(),
        "the private host was reached"
    );

    // With --allow-private-addresses the scan runs, and reaches the host.
    let host = NetnsHost::start(json!({}));
    let (code, report) = scan(&dns, &state, TARGET, &[PRIVATE_OK]);
    assert_ne!(code, 2, "{report}");
    assert!(report["refusal"].is_null(), "{report}");
    let check = report["gate"]["address_check"].as_str().unwrap_or_default();
    assert!(
        check.contains(NS_IP) && check.contains("--allow-private-addresses"),
        "{report}"
    );
    assert!(
        report["gate"]["ownership"]
            .as_str()
            .unwrap_or_default()
            .starts_with("dns-txt"),
        "{report}"
    );
    let seen = host.finish();
    assert_eq!(
        seen.first().map(String::as_str),
        Some(OPT_OUT_GET),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|s| s == "POST /mcp"),
        "the scan went past the gate: {seen:?}"
    );
}

#[test]
fn a_mix_of_addresses_with_loopback_in_it_is_refused_and_loopback_gets_nothing() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![]);
    let port = server.addr.port();
    // A documentation address (IPv4, IPv6) beside 127.0.0.1: not every address is loopback, so
    // there is no local proof; the DNS-TXT proof holds, and the mix is refused. (A public
    // address beside loopback is refused the same way: the gate's unit tests, which send
    // nothing anywhere.)
    let dns = TestDns::start(
        &rt,
        &[
            "mixed 60 IN A 203.0.113.7",
            "mixed 60 IN A 127.0.0.1",
            &format!("_mcpprobe.mixed 60 IN TXT \"mcpprobe-verify={TOKEN}\""),
            "mixedv6 60 IN AAAA 2001:db8::7",
            "mixedv6 60 IN A 127.0.0.1",
            &format!("_mcpprobe.mixedv6 60 IN TXT \"mcpprobe-verify={TOKEN}\""),
        ],
    );
    for (name, other, range) in [
        ("mixed", "203.0.113.7", "203.0.113.0/24"),
        ("mixedv6", "2001:db8::7", "2001:db8::/32"),
    ] {
        let state = state_dir();
        let host = format!("{name}.test");
        fresh_proof(&state, &host);
        let trace = state.path().join("trace.jsonl");
        let trace_arg = trace.to_string_lossy().to_string();
        let url = format!("http://{host}:{port}/mcp");
        let (code, report) = scan(&dns, &state, &url, &["--trace-file", &trace_arg]);
        let addresses = report["gate"]["addresses"].to_string();
        assert!(
            addresses.contains("127.0.0.1") && addresses.contains(other),
            "{report}"
        );
        // Every address that is not public is named, with its range.
        let why = reason(&report);
        assert!(why.contains(other) && why.contains(range), "{why}");
        assert!(why.contains("documentation"), "{why}");
        assert_address_refusal(code, &report, &trace, "127.0.0.1", "127.0.0.0/8");
        assert!(why.contains("loopback"), "{why}");
    }
    assert_eq!(
        server.count(),
        0,
        "the loopback server was reached: {:?}",
        server.seen()
    );

    // The same server by a name that resolves only to loopback: the local proof, no flag.
    let local = TestDns::start(&rt, &["lo 60 IN A 127.0.0.1"]);
    let (code, report) = scan(
        &local,
        &state_dir(),
        &format!("http://lo.test:{port}/mcp"),
        &[],
    );
    assert_ne!(code, 2, "{report}");
    assert!(
        report["gate"]["ownership"]
            .as_str()
            .unwrap_or_default()
            .starts_with("local"),
        "{report}"
    );
    assert!(server.count() > 0);
}

#[test]
fn the_flag_is_explained_in_scan_help() {
    let out = mcpprobe()
        .args(["scan", "--help"])
        .output()
        .expect("mcpprobe runs");
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    let at = help
        .find("--allow-private-addresses")
        .expect("the flag is listed");
    let text = &help[at..];
    for word in [
        "private",
        "link-local",
        "exit 2",
        "DNS-TXT proof",
        "loopback",
    ] {
        assert!(text.contains(word), "{word:?} not in {text}");
    }
}
