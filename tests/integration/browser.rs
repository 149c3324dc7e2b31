//! The web page in headless Chromium (`support::browser`): a run page of a hostile server's
//! report, served with the daemon's Content-Security-Policy, shows the hostile description as
//! text and runs nothing. A control page proves the DOM dump would show a script that ran.

use std::net::SocketAddr;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use mcpprobe::baseline::Baseline;
use mcpprobe::daemon::page;
use mcpprobe::daemon::store::{Counts, RunStatus, RunSummary, TargetRow};
use mcpprobe::model::Report;
use mcpprobe::report::badge;

use crate::support::{browser, mcpprobe, root, runtime};

/// The description a hostile server sends: markup, an ANSI escape, a zero-width space and a
/// bidi override.
const HOSTILE: &str = "Adds two numbers.<script>document.body.setAttribute('data-pwned','1')</script>\
                       <img src=x onerror=\"document.title='pwned'\">\u{1b}[31mRED\u{200B}\u{202E}txt.exe";

fn tools(description: &str) -> serde_json::Value {
    serde_json::json!({"tools": [{
        "name": "add_numbers",
        "description": description,
        "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
    }]})
}

/// The JSON report of `mcpprobe check` on the hostile tool list (a real report, real findings).
fn hostile_report(dir: &std::path::Path) -> Report {
    let input = dir.join("tools.json");
    std::fs::write(&input, tools(HOSTILE).to_string()).expect("write");
    let out = dir.join("report.json");
    let status = mcpprobe()
        .current_dir(root())
        .args(["check", "--no-config", "--format", "json", "-o"])
        .arg(&out)
        .arg(&input)
        .output()
        .expect("check runs");
    assert!(matches!(status.status.code(), Some(0 | 1)), "{status:?}");
    let text = std::fs::read_to_string(&out).expect("the report");
    serde_json::from_str(&text).expect("a report")
}

/// Serves `pages` (path, HTML) with the daemon's CSP, and the stylesheet; returns the address.
fn serve(rt: &tokio::runtime::Runtime, pages: Vec<(&'static str, String, bool)>) -> SocketAddr {
    let mut app = Router::new().route(
        page::STYLE_PATH,
        get(|| async {
            (
                [
                    (header::CONTENT_TYPE, "text/css; charset=utf-8"),
                    (header::CONTENT_SECURITY_POLICY, page::CSP),
                ],
                page::STYLE_CSS,
            )
        }),
    );
    for (path, html, csp) in pages {
        app = app.route(
            path,
            get(move || {
                let html = html.clone();
                async move {
                    let mut headers = vec![(header::CONTENT_TYPE, "text/html; charset=utf-8")];
                    if csp {
                        headers.push((header::CONTENT_SECURITY_POLICY, page::CSP));
                    }
                    let headers: axum::http::HeaderMap = headers
                        .into_iter()
                        .map(|(k, v)| (k, axum::http::HeaderValue::from_static(v)))
                        .collect();
                    (headers, html).into_response()
                }
            }),
        );
    }
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        addr
    })
}

#[test]
fn hostile_run_page_in_chromium_is_inert_text() {
    let dir = tempfile::tempdir().expect("dir");
    let report = hostile_report(dir.path());
    assert!(
        !report.findings.is_empty(),
        "the hostile description has findings"
    );

    let at = chrono::DateTime::from_timestamp(0, 0).expect("epoch");
    let accepted = Baseline::from_inventory("prod", at, &tools("Adds two numbers."));
    let now = Baseline::from_inventory("prod", at, &tools(HOSTILE));
    let changes = page::tool_changes(Some(&accepted), &now);
    assert_eq!(changes.len(), 1);

    let target = TargetRow {
        name: "prod".into(),
        url: format!("http://127.0.0.1:1/mcp?{HOSTILE}"),
        every_ms: 3_600_000,
    };
    let run = RunSummary {
        id: 1,
        target: "prod".into(),
        slot: 0,
        started_ms: 1_764_590_400_000,
        finished_ms: Some(1_764_590_402_000),
        status: RunStatus::Complete,
        exit_code: Some(report.exit_code),
        counts: Counts::of(&report),
        tool_list_sha256: Some(now.tool_list_sha256.clone()),
        requests: 0,
        reason: None,
        worker: None,
        proof: None,
    };
    let html = page::run_page(&target, &run, Some(&report), &changes, &mut || false).into_string();

    let control = "<!DOCTYPE html><html><body><p>control</p>\
                   <script>document.body.setAttribute('data-ran','yes')</script></body></html>";
    let rt = runtime();
    let addr = serve(
        &rt,
        vec![
            ("/targets/prod/runs/1", html, true),
            ("/control", control.to_string(), false),
            ("/control-csp", control.to_string(), true),
        ],
    );
    let url = format!("http://{addr}/targets/prod/runs/1");

    // Controls: the dump shows what a script did, and the CSP header stops inline scripts.
    let ran = browser::dump_dom(&format!("http://{addr}/control"));
    assert!(
        ran.contains("data-ran=\"yes\""),
        "the control script did not run:\n{ran}"
    );
    let blocked = browser::dump_dom(&format!("http://{addr}/control-csp"));
    assert!(
        blocked.contains("<p>control</p>") && !blocked.contains("data-ran=\"yes\""),
        "the CSP did not stop an inline script:\n{blocked}"
    );

    let dom = browser::dump_dom(&url);
    let lower = dom.to_lowercase();
    assert!(
        !lower.contains("<script"),
        "a script element in the DOM:\n{dom}"
    );
    assert!(
        !lower.contains("<img src=\"x\""),
        "an injected element in the DOM"
    );
    assert!(!dom.contains("data-pwned") || dom.contains("setAttribute('data-pwned'"));
    assert!(!dom.contains("<title>pwned"), "a handler ran");
    // The description is there, as text, with its hidden characters shown.
    assert!(
        dom.contains("Adds two numbers.&lt;script&gt;document.body.setAttribute"),
        "the hostile description is not shown as text:\n{dom}"
    );
    assert!(
        dom.contains("[U+001B][31mRED[U+200B][U+202E]txt.exe"),
        "{dom}"
    );
    assert!(!dom.contains('\u{200B}') && !dom.contains('\u{202E}') && !dom.contains('\u{1b}'));
    assert!(dom.contains("Tools changed since the accepted baseline"));
    assert!(dom.contains("<ins>"), "the diff marks the new words");

    let shot = root().join("target/page-screenshot.png");
    browser::screenshot(&url, &shot);
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");

    // The badge the page links to renders as the daemon would serve it.
    let b = badge::of_report(Some(&report), None, None, chrono::Utc::now());
    assert!(badge::svg(&b).starts_with("<svg"));
}
