//! The status endpoint (SPEC §8, §8.1), on 127.0.0.1:9464 by default: `/healthz`, `/targets`,
//! `/targets/{name}/runs`, `/targets/{name}/runs/{id}`, `/targets/{name}/report`,
//! `POST /targets/{name}/accept`, `/badge/{name}.svg|.json`, `/metrics`, and the web page
//! (`/`, `/targets/{name}`, and the run pages when a browser asks for HTML). Every answer has a
//! strict Content-Security-Policy; with `api_token_env`, every request but `/healthz` and the
//! badges must show the bearer token.

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::store::{RunSummary, Store};
use super::{DaemonConfig, DaemonError, db, now_ms};
use crate::engine::Scanner;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<DaemonConfig>,
    pub store: Arc<dyn Store>,
    pub scanner: Arc<Scanner>,
    pub metrics: Arc<super::metrics::Metrics>,
}

/// The CSP of every answer: nothing runs, nothing loads from elsewhere.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Most runs a list returns.
const RUNS_LIMIT: usize = 200;

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({ "error": message }))).into_response()
}

fn internal(e: DaemonError) -> Response {
    tracing::error!(target: "mcpprobe::daemon", "{e}");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the state database could not answer",
    )
}

fn json_text(text: String) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}

/// Whether a browser asked for the page rather than the JSON.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

fn known(state: &AppState, name: &str) -> bool {
    state.config.targets.iter().any(|t| t.name == name)
}

fn run_json(r: &RunSummary) -> Value {
    json!({
        "id": r.id,
        "slot": r.slot,
        "started_at": chrono::DateTime::from_timestamp_millis(r.started_ms).map(|t| t.to_rfc3339()),
        "finished_at": r.finished_ms.and_then(chrono::DateTime::from_timestamp_millis).map(|t| t.to_rfc3339()),
        "outcome": r.status.as_str(),
        "exit_code": r.exit_code,
        "counts": r.counts,
        "tool_list_sha256": r.tool_list_sha256,
        "requests": r.requests,
        "reason": r.reason,
    })
}

async fn healthz() -> Response {
    axum::Json(json!({ "status": "ok" })).into_response()
}

async fn targets(State(s): State<AppState>) -> Response {
    let latest = match db(&s.store, |st| st.latest_runs()).await {
        Ok(l) => l,
        Err(e) => return internal(e),
    };
    let mut by_name: std::collections::HashMap<String, RunSummary> = latest
        .into_iter()
        .map(|r| (r.target.clone(), r))
        .collect();
    let list: Vec<Value> = s
        .config
        .targets
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "url": t.url,
                "every_seconds": t.every_ms / 1000,
                "latest": by_name.remove(&t.name).as_ref().map(run_json),
            })
        })
        .collect();
    axum::Json(json!({ "targets": list })).into_response()
}

async fn runs(State(s): State<AppState>, Path(name): Path<String>) -> Response {
    if !known(&s, &name) {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    match db(&s.store, move |st| st.runs(&name, RUNS_LIMIT)).await {
        Ok(r) => axum::Json(json!({ "runs": r.iter().map(run_json).collect::<Vec<_>>() }))
            .into_response(),
        Err(e) => internal(e),
    }
}

async fn run(State(s): State<AppState>, Path((name, id)): Path<(String, i64)>) -> Response {
    if !known(&s, &name) {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    let found = db(&s.store, move |st| {
        Ok((st.run(&name, id)?, st.run_documents(&name, id)?))
    })
    .await;
    match found {
        Ok((Some(r), docs)) => {
            let report = docs
                .and_then(|d| serde_json::from_str::<Value>(&d.report_json).ok())
                .unwrap_or(Value::Null);
            axum::Json(json!({ "run": run_json(&r), "report": report })).into_response()
        }
        Ok((None, _)) => error(StatusCode::NOT_FOUND, "no such run"),
        Err(e) => internal(e),
    }
}

async fn report(State(s): State<AppState>, Path(name): Path<String>) -> Response {
    if !known(&s, &name) {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    match db(&s.store, move |st| st.latest_report(&name)).await {
        Ok(Some(r)) => json_text(r),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            "no run of this target has finished yet",
        ),
        Err(e) => internal(e),
    }
}

async fn accept(
    State(s): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !known(&s, &name) {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    // A state change: refused from other origins (a web page cannot make a browser accept).
    if headers.contains_key(header::ORIGIN) {
        return error(
            StatusCode::FORBIDDEN,
            "accept is an API call: requests carrying an Origin header are refused",
        );
    }
    let now = now_ms(&s.scanner);
    match db(&s.store, move |st| st.accept_latest(&name, now)).await {
        Ok(id) => axum::Json(json!({ "accepted_baseline": id })).into_response(),
        Err(DaemonError::Store(e @ super::store::StoreError::NothingToAccept(_))) => {
            error(StatusCode::CONFLICT, &e.to_string())
        }
        Err(e) => internal(e),
    }
}

#[derive(serde::Deserialize)]
struct MetricsQuery {
    per_target: Option<String>,
}

async fn metrics(State(s): State<AppState>, Query(q): Query<MetricsQuery>) -> Response {
    let per_target = q
        .per_target
        .as_deref()
        .is_some_and(|v| v == "1" || v == "true");
    match db(&s.store, |st| st.totals()).await {
        Ok(t) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4"),
            )],
            s.metrics.render(&t, per_target),
        )
            .into_response(),
        Err(e) => internal(e),
    }
}

/// Security headers on every answer; the bearer token where the config asks for one.
async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let open = path == "/healthz" || path.starts_with("/badge/");
    if let (Some(token), false) = (&s.config.api_token, open) {
        let shown = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !shown.is_some_and(|t| constant_time_eq(t.as_bytes(), token.expose().as_bytes())) {
            let mut r = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcpprobe\""),
            );
            return secure(r);
        }
    }
    secure(next.run(req).await)
}

fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The router.
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/targets", get(targets))
        .route("/targets/{name}/runs", get(runs))
        .route("/targets/{name}/runs/{id}", get(run))
        .route("/targets/{name}/report", get(report))
        .route("/targets/{name}/accept", post(accept))
        .route("/metrics", get(metrics))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Serves the router on `listener` until `shutdown` fires.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
