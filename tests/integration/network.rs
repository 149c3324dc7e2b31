//! The one outbound client, through the library: scope, redirects, the rate limit measured at
//! the server, and redaction of the user's secrets in evidence and the trace file.

use std::sync::Mutex;
use std::time::Duration;

use mcpprobe::gate::state::StateDir;
use mcpprobe::gate::{self, HttpTarget};
use mcpprobe::model::GateRecord;
use mcpprobe::net::dns::Dns;
use mcpprobe::net::{Client, NetError, Network, Request, Settings};
use url::Url;

use crate::support::http::{Answer, TestHttp};
use crate::support::runtime;

/// Passes the gate for a loopback server (local proof) and returns its client.
async fn client_for(url: &str, settings: Settings) -> (Network, Client) {
    let (net, owned) = owned_for(url, settings).await;
    let client = owned.client(&net).expect("client");
    (net, client)
}

/// Passes the gate for a loopback server and returns the gate's proof of it (what an active
/// run's authorisation is made from).
async fn owned_for(url: &str, settings: Settings) -> (Network, gate::Owned) {
    let politeness =
        std::sync::Arc::new(mcpprobe::net::Politeness::new(settings.rate).expect("a valid rate"));
    let net = Network::new(
        settings,
        politeness,
        tokio_util::sync::CancellationToken::new(),
    )
    .expect("network");
    let dns = Dns::new(Some("127.0.0.1:9".parse().expect("addr"))).expect("dns");
    let target = HttpTarget::parse(url).expect("target");
    let cleared = gate::clear_opt_out(target, &dns, &net, GateRecord::default())
        .await
        .map_err(|h| h.stop)
        .expect("not opted out");
    let state = StateDir {
        root: std::env::temp_dir().join("mcpprobe-unused-state"),
    };
    let owned = gate::prove_ownership(cleared, &dns, &state, chrono::Utc::now())
        .await
        .map_err(|h| h.stop)
        .expect("local proof");
    (net, owned)
}

#[test]
fn a_redirect_to_another_origin_is_not_followed() {
    let rt = runtime();
    let other = TestHttp::start(
        &rt,
        vec![("* /landing", Answer::new(200, "you followed me"))],
    );
    let target = TestHttp::start(
        &rt,
        vec![
            (
                "GET /mcp",
                Answer::new(302, "").header("Location", &other.url("/landing")),
            ),
            (
                "GET /hop",
                Answer::new(307, "").header("Location", "/final"),
            ),
            ("GET /final", Answer::new(200, "same origin")),
        ],
    );
    rt.block_on(async {
        let (_, client) = client_for(
            &target.url("/mcp"),
            Settings {
                rate: 10,
                ..Settings::default()
            },
        )
        .await;
        let resp = client
            .send(Request::get(Url::parse(&target.url("/mcp")).expect("url")))
            .await
            .map_err(|(e, _)| e)
            .expect("answer");
        assert_eq!(resp.status, 302);
        let note = resp.exchange.note.clone().unwrap_or_default();
        assert!(
            note.contains("not followed") && note.contains("/landing"),
            "{note}"
        );
        // Same-origin redirects are followed.
        let resp = client
            .send(Request::get(Url::parse(&target.url("/hop")).expect("url")))
            .await
            .map_err(|(e, _)| e)
            .expect("answer");
        assert_eq!((resp.status, resp.text().as_str()), (200, "same origin"));
        // Another origin is out of scope outright.
        let err = client
            .send(Request::get(
                Url::parse(&other.url("/landing")).expect("url"),
            ))
            .await
            .map_err(|(e, _)| e)
            .err();
        assert!(matches!(err, Some(NetError::OutOfScope(_))), "{err:?}");
    });
    assert_eq!(other.count(), 0, "the other origin was contacted");
}

#[test]
fn the_rate_is_never_exceeded_at_the_server() {
    let rt = runtime();
    let server = TestHttp::start(&rt, vec![("* /mcp", Answer::new(200, "ok"))]);
    let sent = rt.block_on(async {
        let (net, client) = client_for(&server.url("/mcp"), Settings::default()).await;
        for _ in 0..39 {
            client
                .send(Request::get(Url::parse(&server.url("/mcp")).expect("url")))
                .await
                .map_err(|(e, _)| e)
                .expect("answer");
        }
        net.requests_sent()
    });
    let at: Vec<_> = server.seen().iter().map(|s| s.at).collect();
    assert_eq!(
        (at.len(), sent),
        (40, 40),
        "the opt-out GET and 39 requests"
    );
    // SPEC §7: at 5/s with a burst of one, no one-second window holds more than the rate plus
    // the request at its edge.
    for (i, start) in at.iter().enumerate() {
        let in_window = at[i..]
            .iter()
            .take_while(|t| t.duration_since(*start) < Duration::from_secs(1))
            .count();
        assert!(
            in_window <= 6,
            "{in_window} requests within one second starting at request {i}"
        );
    }
    let span = at.last().expect("last").duration_since(at[0]);
    assert!(
        span >= Duration::from_millis(39 * 190),
        "40 requests in {span:?}: faster than 5/s"
    );
}

#[test]
fn secrets_never_reach_evidence_or_the_trace_file() {
    let rt = runtime();
    let token = "tok-7f3a9c1e-SECRET";
    let server = TestHttp::start(
        &rt,
        vec![(
            "* /mcp",
            Answer {
                status: 200,
                echo: true,
                ..Answer::default()
            }
            .header("Set-Cookie", &format!("session={token}")),
        )],
    );
    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let settings = Settings {
        token: Some(token.into()),
        headers: vec![("X-Tenant-Key".into(), "tenant-secret-42".into())],
        trace_file: Some(trace.path().to_path_buf()),
        ..Settings::default()
    };
    let exchange = rt.block_on(async {
        let (_, client) = client_for(&server.url("/mcp"), settings).await;
        let url = Url::parse(&server.url(&format!("/mcp?token={token}"))).expect("url");
        let resp = client
            .send(Request::get(url))
            .await
            .map_err(|(e, _)| e)
            .expect("answer");
        assert!(
            resp.text().contains(token),
            "the echo server saw the token (the client sent it)"
        );
        // The anonymous client never carries credentials.
        let anon = client.without_credentials();
        let resp = anon
            .send(Request::get(Url::parse(&server.url("/mcp")).expect("url")))
            .await
            .map_err(|(e, _)| e)
            .expect("answer");
        assert!(
            !resp.text().to_lowercase().contains("authorization"),
            "{}",
            resp.text()
        );
        resp.exchange
    });
    let seen = server.seen();
    let auth = seen[1]
        .headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth.as_deref(), Some(format!("Bearer {token}").as_str()));
    assert!(seen.iter().all(|s| {
        s.headers
            .iter()
            .any(|(n, v)| n == "user-agent" && v.starts_with("mcpprobe/"))
    }));
    let traceparents: Vec<String> = seen
        .iter()
        .filter_map(|s| {
            s.headers
                .iter()
                .find(|(n, _)| n == "traceparent")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(traceparents.len(), 3);
    let trace_ids: std::collections::BTreeSet<&str> =
        traceparents.iter().map(|t| &t[3..35]).collect();
    assert_eq!(
        trace_ids.len(),
        1,
        "one trace id per scan: {traceparents:?}"
    );

    let trace_text = std::fs::read_to_string(trace.path()).expect("trace");
    assert_eq!(trace_text.lines().count(), 3, "every exchange is traced");
    for text in [
        trace_text.as_str(),
        &serde_json::to_string(&exchange).expect("json"),
    ] {
        assert!(!text.contains(token), "token leaked: {text}");
        assert!(
            !text.contains("tenant-secret-42"),
            "header value leaked: {text}"
        );
    }
    assert!(trace_text.contains("[REDACTED]"));
}

/// An active check that calls every tool it is given once, and keeps what it was given and
/// what each call got.
#[derive(Default)]
struct CallEach {
    planned: Mutex<Vec<String>>,
    answers: Mutex<Vec<(String, mcpprobe::active::Answer)>>,
}

impl mcpprobe::active::ActiveCheck for CallEach {
    fn plan(
        &self,
        tools: &[mcpprobe::active::Callable<'_>],
        budget: usize,
        _env: &mcpprobe::active::StageEnv,
    ) -> Vec<mcpprobe::active::PlannedCall> {
        let planned: Vec<_> = tools
            .iter()
            .take(budget)
            .map(|t| mcpprobe::active::PlannedCall {
                tool: t.name.to_string(),
                arguments: serde_json::json!({}),
                kind: mcpprobe::active::CallKind::Tool,
                canary: None,
                purpose: "the guard's test".into(),
                pointer: None,
                tag: String::new(),
            })
            .collect();
        if let Ok(mut p) = self.planned.lock() {
            p.extend(planned.iter().map(|c| c.tool.clone()));
        }
        planned
    }

    fn judge(
        &self,
        calls: &[mcpprobe::active::MadeCall],
        _env: &mcpprobe::active::StageEnv,
    ) -> mcpprobe::checks::Outcome {
        if let Ok(mut a) = self.answers.lock() {
            a.extend(
                calls
                    .iter()
                    .map(|c| (c.planned.tool.clone(), c.answer.clone())),
            );
        }
        mcpprobe::checks::Outcome::Ran(Vec::new())
    }
}

#[test]
fn tools_call_of_a_guarded_tool_is_refused_by_the_client() {
    // The client's guard holds even inside an active check's permit that names the tool (the
    // gate's authorisation, the call rule's set and the check's plan all allow it): the permit
    // is real (the other tool's call reaches the server under it) and the refusal is the
    // guard's own, not the permit's.
    let rt = runtime();
    let replies: Vec<serde_json::Value> = (1..=200)
        .map(|id| serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
        .collect();
    let server = TestHttp::start(
        &rt,
        vec![(
            "* /mcp",
            Answer::new(200, &serde_json::Value::Array(replies).to_string())
                .header("Content-Type", "application/json"),
        )],
    );
    let check: &'static CallEach = Box::leak(Box::default());
    let stage = rt.block_on(async {
        let (net, owned) = owned_for(
            &server.url("/mcp"),
            Settings {
                rate: 10,
                ..Settings::default()
            },
        )
        .await;
        let client = owned.client(&net).expect("client");
        client.guard().exclude("read_notes");
        let authorised = owned
            .authorise_active(&mcpprobe::engine::ActiveRequest {
                authorised_by: Some("the guard's test".into()),
                scope: Some("*".into()),
                verify: true,
                ..Default::default()
            })
            .expect("the gate authorises an active run of its own loopback server");
        let tool = |name: &str| {
            serde_json::json!({"name": name, "description": "Returns today's list.",
                "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}})
        };
        let tools = [tool("read_notes"), tool("read_weather")];
        let policy = mcpprobe::active::CallPolicy {
            scope: vec!["*".into()],
            ..Default::default()
        };
        let url = Url::parse(&server.url("/mcp")).expect("url");
        let session = mcpprobe::protocol::session::Session::modern(client, url);
        mcpprobe::active::run(
            &authorised,
            &policy,
            &session,
            &tools,
            &[("ACT-01", 2, check as &dyn mcpprobe::active::ActiveCheck)],
            &mcpprobe::active::StageEnv::default(),
            false,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
    });
    assert_eq!(
        *check.planned.lock().expect("planned"),
        ["read_notes", "read_weather"],
        "the call rule allowed both, so the permit names both"
    );
    let answers = check.answers.lock().expect("answers").clone();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(
        answers[0],
        (
            "read_notes".to_string(),
            mcpprobe::active::Answer::Failed(
                "refused by mcpprobe: tools/call of `read_notes` (excluded, or annotated destructiveHint: true)"
                    .into()
            )
        ),
        "the guard's own refusal"
    );
    assert_eq!(answers[1].0, "read_weather");
    assert!(
        matches!(answers[1].1, mcpprobe::active::Answer::Result(_)),
        "the permit let the other call through: {:?}",
        answers[1].1
    );
    assert_eq!(
        stage
            .calls
            .iter()
            .map(|c| (c.tool.as_str(), c.answered))
            .collect::<Vec<_>>(),
        [("read_notes", false), ("read_weather", true)]
    );
    let calls: Vec<String> = server
        .seen()
        .iter()
        .filter(|s| s.body.contains("tools/call"))
        .map(|s| s.body.clone())
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("read_weather") && !calls[0].contains("read_notes"));
}

#[test]
fn a_check_budget_counts_logical_requests_not_redirect_hops_and_never_refuses_a_session_end() {
    let rt = runtime();
    let target = TestHttp::start(
        &rt,
        vec![
            (
                "GET /hop",
                Answer::new(307, "").header("Location", "/final"),
            ),
            ("GET /final", Answer::new(200, "same origin")),
            ("DELETE /mcp", Answer::new(200, "")),
        ],
    );
    rt.block_on(async {
        let (_, client) = client_for(
            &target.url("/mcp"),
            Settings {
                rate: 10,
                ..Settings::default()
            },
        )
        .await;
        let hop = Url::parse(&target.url("/hop")).expect("url");
        let (sent, used) = mcpprobe::net::with_budget("TEST-01", 1, async {
            let first = client
                .send(Request::get(hop.clone()))
                .await
                .map(|r| r.status);
            let second = client
                .send(Request::get(hop.clone()))
                .await
                .map(|r| r.status);
            let mut end = Request::get(Url::parse(&target.url("/mcp")).expect("url"));
            end.method = reqwest::Method::DELETE;
            end.closing = true;
            let closing = client.send(end).await.map(|r| r.status);
            (first, second, closing)
        })
        .await;
        assert_eq!(
            sent.0.map_err(|(e, _)| e),
            Ok(200),
            "a redirected request is one request"
        );
        assert!(
            matches!(sent.1, Err((NetError::OverBudget { budget: 1, .. }, _))),
            "the second is over the budget"
        );
        assert_eq!(
            sent.2.map_err(|(e, _)| e),
            Ok(200),
            "a session end is never refused for budget"
        );
        assert_eq!((used.sent, used.exceeded), (1, true));
    });
}

#[test]
fn a_stalling_server_spends_one_slow_budget_then_requests_fail_fast() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let rt = runtime();
    rt.block_on(async {
        // Answers the gate's opt-out GET at once; holds every other request open, unanswered.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if String::from_utf8_lossy(&buf[..n]).contains("mcpprobe-opt-out") {
                        let _ = conn
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                        return;
                    }
                    std::future::pending::<()>().await;
                });
            }
        });
        let settings = Settings {
            rate: 10,
            limits: mcpprobe::net::Limits {
                response_timeout: Duration::from_secs(1),
                slow_budget: Duration::from_millis(1500),
                max_capped: 3,
                ..mcpprobe::net::Limits::default()
            },
            ..Settings::default()
        };
        let url = format!("http://{addr}/mcp");
        let (net, client) = client_for(&url, settings).await;
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let mut errors = Vec::new();
        for _ in 0..5 {
            let req = Request::post_json(Url::parse(&url).expect("url"), &msg);
            let sent = tokio::time::timeout(Duration::from_secs(30), client.send(req))
                .await
                .expect("every request ends within the caps");
            errors.push(sent.err().map(|(e, _)| e));
        }
        // The first waits its full timeout, the second only what is left of the budget; the
        // rest are never sent.
        assert!(matches!(errors[0], Some(NetError::Timeout(_))), "{errors:?}");
        assert!(matches!(errors[1], Some(NetError::Timeout(d)) if d < Duration::from_secs(1)), "{errors:?}");
        assert!(
            errors[2..]
                .iter()
                .all(|e| matches!(e, Some(NetError::SlowServer(_)))),
            "{errors:?}"
        );
        let why = net.slow_stop().expect("the slow-server budget is spent");
        assert!(why.contains("tools/list (POST /mcp)"), "{why}");
        assert_eq!(net.requests_sent(), 3, "the opt-out GET and the two slow probes");
    });
}
