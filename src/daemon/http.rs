//! The status endpoint (SPEC §8, §8.1), on 127.0.0.1:9464 by default: `/healthz`, `/targets`,
//! `/targets/{name}/runs`, `/targets/{name}/runs/{id}`, `/targets/{name}/report`,
//! `POST /targets/{name}/accept`, `POST /targets` (an import: a JSON array of target objects,
//! or one per line), `DELETE /targets/{name}` (an imported target), `/badge/{name}.svg|.json`,
//! `/metrics`, and the web page (`/`, `/targets/{name}`, and the run pages when a browser asks
//! for HTML). Every answer has a strict Content-Security-Policy; with `api_token_env`, every
//! request but `/healthz` and the badges must show the bearer token (`Authorization: Bearer
//! …`, the scheme in any case, the token compared in constant time). Accepting a baseline,
//! importing and removing targets over HTTP need that token even on loopback; without one
//! they are refused, and `mcpprobe daemon accept NAME` / `mcpprobe daemon targets import FILE`
//! do it on this machine. The targets listed are the configuration's and the imported ones
//! ([`super::targets`]). Served by hyper directly ([`serve`]) so that a client that opens a
//! connection and dribbles its headers is dropped after [`HEADER_READ_TIMEOUT`].

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use secrecy::ExposeSecret as _;
use serde_json::{Value, json};

use super::page;
use super::store::{RunSummary, Store};
use super::{DaemonConfig, DaemonError, db, now_ms};
use crate::engine::Scanner;
use crate::report::badge::Badge;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<DaemonConfig>,
    pub store: Arc<dyn Store>,
    pub scanner: Arc<Scanner>,
    pub metrics: Arc<super::metrics::Metrics>,
    /// The targets shown: the configuration's and the imported ones.
    pub targets: Arc<super::targets::LiveTargets>,
    /// The time a run page may spend on its diff work ([`DIFF_BUDGET`] unless a test changes
    /// it): parsing the stored report and baselines, then word-diffing the changed tools.
    pub diff_budget: Duration,
    /// How long `/healthz` waits for the store ([`HEALTH_TIMEOUT`] unless a test changes it).
    pub health_timeout: Duration,
    /// `/healthz`'s store reads that may be waiting at once ([`HEALTH_PROBES`]): a store that
    /// hangs holds that many blocking threads at most, not one more per probe.
    pub health_probes: Arc<tokio::sync::Semaphore>,
}

impl AppState {
    /// The state of a daemon's endpoint, with the default budgets (the targets shown: the
    /// configuration's, and those imported into `store`).
    pub fn new(
        config: Arc<DaemonConfig>,
        store: Arc<dyn Store>,
        scanner: Arc<Scanner>,
        metrics: Arc<super::metrics::Metrics>,
    ) -> AppState {
        AppState {
            targets: Arc::new(super::targets::LiveTargets::new(config.clone())),
            config,
            store,
            scanner,
            metrics,
            diff_budget: DIFF_BUDGET,
            health_timeout: HEALTH_TIMEOUT,
            health_probes: Arc::new(tokio::sync::Semaphore::new(HEALTH_PROBES)),
        }
    }

    /// The state of `daemon`'s endpoint (sharing its list of targets).
    pub fn of(daemon: &super::Daemon) -> AppState {
        AppState {
            targets: daemon.targets.clone(),
            ..AppState::new(
                daemon.config.clone(),
                daemon.store.clone(),
                daemon.scanner.clone(),
                daemon.metrics.clone(),
            )
        }
    }

    /// The targets as they are now (read again from the store at most every few seconds).
    async fn targets(&self) -> Arc<super::targets::TargetSet> {
        self.targets
            .current(&self.store, now_ms(&self.scanner))
            .await
    }
}

/// The time a run page spends on its diff work at most, on a blocking thread; the tools left
/// when it runs out are shown unmarked, and the page says which.
pub const DIFF_BUDGET: Duration = Duration::from_secs(2);

/// How long `/healthz` waits for the store before it answers that the store is unreachable.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// `/healthz` store reads waiting at once at most; beyond, the answer is "unreachable" at once.
pub const HEALTH_PROBES: usize = 4;

/// The CSP of every answer: nothing runs, nothing loads from elsewhere.
pub use super::page::CSP;

/// Most runs a list returns.
const RUNS_LIMIT: usize = 200;

/// How long a client has to send a request's whole head (request line and headers), from the
/// moment the connection waits for one (also between keep-alive requests); then it is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long connections still open at shutdown get to finish their answers.
const DRAIN: Duration = Duration::from_secs(5);

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

async fn known(state: &AppState, name: &str) -> bool {
    state.targets().await.get(name).is_some()
}

/// A run as the API shows it (serialised straight from the summary: `/targets` lists
/// thousands).
#[derive(serde::Serialize)]
struct RunJson<'a> {
    id: i64,
    slot: i64,
    started_at: Option<String>,
    finished_at: Option<String>,
    outcome: &'static str,
    exit_code: Option<i32>,
    counts: &'a super::store::Counts,
    tool_list_sha256: Option<&'a str>,
    requests: u64,
    reason: Option<&'a str>,
}

fn rfc3339(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

fn run_json(r: &RunSummary) -> RunJson<'_> {
    RunJson {
        id: r.id,
        slot: r.slot,
        started_at: rfc3339(r.started_ms),
        finished_at: r.finished_ms.and_then(rfc3339),
        outcome: r.status.as_str(),
        exit_code: r.exit_code,
        counts: &r.counts,
        tool_list_sha256: r.tool_list_sha256.as_deref(),
        requests: r.requests,
        reason: r.reason.as_deref(),
    }
}

/// The ownership proof a run relied on (never a token).
#[derive(serde::Serialize)]
struct ProofJson<'a> {
    method: &'a str,
    host: &'a str,
    verified_at: Option<String>,
    expires_at: Option<String>,
}

/// A run with the proof it relied on, as the per-target answers show it (`/targets` lists
/// thousands of runs and leaves it out).
#[derive(serde::Serialize)]
struct RunDetailJson<'a> {
    #[serde(flatten)]
    run: RunJson<'a>,
    proof: Option<ProofJson<'a>>,
}

fn run_detail_json(r: &RunSummary) -> RunDetailJson<'_> {
    RunDetailJson {
        run: run_json(r),
        proof: r.proof.as_ref().map(|p| ProofJson {
            method: &p.method,
            host: &p.host,
            verified_at: p.verified_ms.and_then(rfc3339),
            expires_at: p.expires_ms.and_then(rfc3339),
        }),
    }
}

#[derive(serde::Serialize)]
struct TargetJson<'a> {
    name: &'a str,
    url: &'a str,
    every_seconds: i64,
    latest: Option<RunJson<'a>>,
}

fn html(markup: maud::Markup) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        markup.into_string(),
    )
        .into_response()
}

fn row(t: &super::TargetSpec) -> super::store::TargetRow {
    super::store::TargetRow {
        name: t.name.clone(),
        url: t.url.clone(),
        every_ms: t.every_ms,
    }
}

fn at(ms: Option<i64>) -> Option<chrono::DateTime<chrono::Utc>> {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
}

/// A target's badge from its latest run's summary (no report parsed).
fn badge_of(
    run: Option<&RunSummary>,
    clean_first: (Option<i64>, Option<i64>),
    now: chrono::DateTime<chrono::Utc>,
) -> Badge {
    use super::store::RunStatus;
    use crate::model::RunOutcome;
    let outcome = run.and_then(|r| match r.status {
        RunStatus::Complete => Some(RunOutcome::Complete),
        RunStatus::Refused => Some(RunOutcome::Refused),
        RunStatus::Incomplete => Some(RunOutcome::Incomplete),
        RunStatus::Running | RunStatus::Interrupted => None,
    });
    let worst = run.and_then(|r| r.counts.worst().map(|w| (w, r.counts.get(w) as usize)));
    crate::report::badge::of_outcome(
        outcome,
        worst,
        run.and_then(|r| at(Some(r.started_ms))),
        at(clean_first.0),
        at(clean_first.1),
        now,
    )
}

/// The latest finished run of a target (a running or interrupted one says nothing about its
/// state).
fn finished(runs: Vec<RunSummary>) -> Option<RunSummary> {
    use super::store::RunStatus;
    runs.into_iter()
        .find(|r| !matches!(r.status, RunStatus::Running | RunStatus::Interrupted))
}

async fn dashboard(State(s): State<AppState>) -> Response {
    let latest = match db(&s.store, |st| st.latest_runs()).await {
        Ok(l) => l,
        Err(e) => return internal(e),
    };
    let mut by_name: std::collections::HashMap<String, RunSummary> =
        latest.into_iter().map(|r| (r.target.clone(), r)).collect();
    let now = s.scanner.now();
    let set = s.targets().await;
    let cards: Vec<page::TargetCard> = set
        .targets
        .iter()
        .map(|t| {
            let latest = by_name.remove(&t.name);
            let badge = badge_of(latest.as_ref(), (None, None), now);
            page::TargetCard {
                target: row(t),
                latest,
                badge,
            }
        })
        .collect();
    html(page::dashboard(&cards))
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("text/css"))],
        page::STYLE_CSS,
    )
        .into_response()
}

async fn target(
    State(s): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let set = s.targets().await;
    let Some(t) = set.get(&name) else {
        return error(StatusCode::NOT_FOUND, "no such target");
    };
    let n = name.clone();
    let found = db(&s.store, move |st| {
        Ok((st.runs(&n, RUNS_LIMIT)?, st.last_clean_and_first(&n)?))
    })
    .await;
    let (runs, clean_first) = match found {
        Ok(f) => f,
        Err(e) => return internal(e),
    };
    let latest = finished(runs.clone());
    let badge = badge_of(latest.as_ref(), clean_first, s.scanner.now());
    if wants_html(&headers) {
        return html(page::target_page(&row(t), &badge, &runs));
    }
    axum::Json(json!({
        "name": t.name,
        "url": t.url,
        "every_seconds": t.every_ms / 1000,
        "latest": runs.first().map(run_detail_json),
        "badge": crate::report::badge::endpoint_json(&badge),
    }))
    .into_response()
}

async fn badge(State(s): State<AppState>, Path(file): Path<String>) -> Response {
    let (name, svg) = match (file.strip_suffix(".svg"), file.strip_suffix(".json")) {
        (Some(n), _) => (n.to_string(), true),
        (None, Some(n)) => (n.to_string(), false),
        _ => return error(StatusCode::NOT_FOUND, "badges are NAME.svg or NAME.json"),
    };
    if !known(&s, &name).await {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    let n = name.clone();
    let found = db(&s.store, move |st| {
        Ok((st.runs(&n, 20)?, st.last_clean_and_first(&n)?))
    })
    .await;
    let (runs, clean_first) = match found {
        Ok(f) => f,
        Err(e) => return internal(e),
    };
    let b = badge_of(finished(runs).as_ref(), clean_first, s.scanner.now());
    if svg {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("image/svg+xml"),
            )],
            crate::report::badge::svg(&b),
        )
            .into_response()
    } else {
        axum::Json(crate::report::badge::endpoint_json(&b)).into_response()
    }
}

/// `/healthz`: which worker this is and whether its store answers (one primary-key read,
/// within [`AppState::health_timeout`]): 200 with `"store": "ok"`, or 503 with
/// `"store": "unreachable"`. Nothing else: no address, no path, no error text.
async fn healthz(State(s): State<AppState>) -> Response {
    let reachable = match s.health_probes.clone().try_acquire_owned() {
        Ok(permit) => {
            // The cheapest question only the database can answer: a baseline by its key (no
            // row has id 0). The permit is held until the read returns, timed out or not.
            let read = db(&s.store, move |st| {
                let _permit = permit;
                st.baseline(0).map(|_| ())
            });
            match tokio::time::timeout(s.health_timeout, read).await {
                Ok(Ok(())) => true,
                Ok(Err(e)) => {
                    tracing::warn!(target: "mcpprobe::daemon", "health check: {e}");
                    false
                }
                Err(_) => {
                    tracing::warn!(target: "mcpprobe::daemon", "health check: the state database did not answer within {:?}", s.health_timeout);
                    false
                }
            }
        }
        // Earlier checks are still waiting for the store.
        Err(_) => false,
    };
    let (code, status, store) = if reachable {
        (StatusCode::OK, "ok", "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "unreachable",
        )
    };
    (
        code,
        axum::Json(json!({ "status": status, "worker": s.config.worker, "store": store })),
    )
        .into_response()
}

async fn targets(State(s): State<AppState>) -> Response {
    let latest = match db(&s.store, |st| st.latest_runs()).await {
        Ok(l) => l,
        Err(e) => return internal(e),
    };
    let by_name: std::collections::HashMap<&str, &RunSummary> =
        latest.iter().map(|r| (r.target.as_str(), r)).collect();
    let set = s.targets().await;
    let list: Vec<TargetJson<'_>> = set
        .targets
        .iter()
        .map(|t| TargetJson {
            name: &t.name,
            url: &t.url,
            every_seconds: t.every_ms / 1000,
            latest: by_name.get(t.name.as_str()).map(|r| run_json(r)),
        })
        .collect();
    #[derive(serde::Serialize)]
    struct Targets<'a> {
        targets: Vec<TargetJson<'a>>,
    }
    match serde_json::to_string(&Targets { targets: list }) {
        Ok(text) => json_text(text),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn runs(State(s): State<AppState>, Path(name): Path<String>) -> Response {
    if !known(&s, &name).await {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    match db(&s.store, move |st| st.runs(&name, RUNS_LIMIT)).await {
        Ok(r) => axum::Json(json!({ "runs": r.iter().map(run_detail_json).collect::<Vec<_>>() }))
            .into_response(),
        Err(e) => internal(e),
    }
}

async fn run(
    State(s): State<AppState>,
    Path((name, id)): Path<(String, i64)>,
    headers: HeaderMap,
) -> Response {
    let set = s.targets().await;
    let Some(t) = set.get(&name) else {
        return error(StatusCode::NOT_FOUND, "no such target");
    };
    let as_page = wants_html(&headers);
    let found = db(&s.store, move |st| {
        let Some(run) = st.run(&name, id)? else {
            return Ok(None);
        };
        let docs = st.run_documents(&name, id)?;
        // The accepted baseline the run was compared with, for the side-by-side view.
        let old = match docs.as_ref().and_then(|d| d.compared_with) {
            Some(b) if as_page => st.baseline(b)?,
            _ => None,
        };
        Ok(Some((run, docs, old)))
    })
    .await;
    let (r, docs, old) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return error(StatusCode::NOT_FOUND, "no such run"),
        Err(e) => return internal(e),
    };
    let (target, budget) = (row(t), s.diff_budget);
    // Parsing the documents and diffing the tools is CPU work of any length: on a blocking
    // thread, the diff within its budget.
    let answer = tokio::task::spawn_blocking(move || {
        if as_page {
            return html(run_page_html(
                &target,
                &r,
                docs.as_ref(),
                old.as_ref(),
                budget,
            ));
        }
        let report = docs
            .and_then(|d| serde_json::from_str::<Value>(&d.report_json).ok())
            .unwrap_or(Value::Null);
        axum::Json(json!({ "run": run_detail_json(&r), "report": report })).into_response()
    })
    .await;
    answer.unwrap_or_else(|e| internal(DaemonError::Blocking(e.to_string())))
}

/// A run's page from its stored documents and the baseline it was compared with: the report
/// and both states parsed, the changed tools word-diffed while `budget` lasts (counted from
/// the call), the tools left shown unmarked and named. For a blocking thread.
fn run_page_html(
    target: &super::store::TargetRow,
    run: &RunSummary,
    docs: Option<&super::store::RunDocuments>,
    old: Option<&super::store::StoredBaseline>,
    budget: Duration,
) -> maud::Markup {
    let deadline = std::time::Instant::now().checked_add(budget);
    let mut spent = move || deadline.is_some_and(|d| std::time::Instant::now() >= d);
    let report =
        docs.and_then(|d| serde_json::from_str::<crate::model::Report>(&d.report_json).ok());
    let parse =
        |json: &str| crate::baseline::parse(json.as_bytes(), std::path::Path::new("stored")).ok();
    let new = docs
        .and_then(|d| d.observed_json.as_deref())
        .and_then(parse);
    let old = old.and_then(|b| parse(&b.json));
    let changes = match (&new, &old) {
        (Some(n), Some(o)) => page::tool_changes(Some(o), n),
        _ => Vec::new(),
    };
    page::run_page(target, run, report.as_ref(), &changes, &mut spent)
}

async fn report(State(s): State<AppState>, Path(name): Path<String>) -> Response {
    if !known(&s, &name).await {
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

async fn accept_run(
    State(s): State<AppState>,
    Path((name, id)): Path<(String, i64)>,
    headers: HeaderMap,
) -> Response {
    accept_state(s, name, Some(id), headers).await
}

async fn accept(
    State(s): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    accept_state(s, name, None, headers).await
}

/// Accepts the state run `id` observed (the one the reviewer read), or the latest run's.
async fn accept_state(s: AppState, name: String, id: Option<i64>, headers: HeaderMap) -> Response {
    if !known(&s, &name).await {
        return error(StatusCode::NOT_FOUND, "no such target");
    }
    // A state change needs the API token whatever the address (the guard checked it when one
    // is configured); without one, any local process could accept, so it is refused here.
    if s.config.api_token.is_none() {
        return error(
            StatusCode::FORBIDDEN,
            &format!(
                "accepting a baseline over HTTP needs api_token_env; on this machine run `mcpprobe daemon accept {name}` instead"
            ),
        );
    }
    // A state change: refused from other origins (a web page cannot make a browser accept).
    if headers.contains_key(header::ORIGIN) {
        return error(
            StatusCode::FORBIDDEN,
            "accept is an API call: requests carrying an Origin header are refused",
        );
    }
    let now = now_ms(&s.scanner);
    let accepted = db(&s.store, move |st| match id {
        Some(run) => st.accept_run(&name, run, now),
        None => st.accept_latest(&name, now),
    })
    .await;
    match accepted {
        Ok(id) => axum::Json(json!({ "accepted_baseline": id })).into_response(),
        Err(DaemonError::Store(
            e @ (super::store::StoreError::NothingToAccept(_)
            | super::store::StoreError::NoSuchRunToAccept(..)),
        )) => error(StatusCode::CONFLICT, &e.to_string()),
        Err(e) => internal(e),
    }
}

/// Refuses a state change made without the API token (none configured: any local process
/// could make it; `cli` says what to run on this machine instead) or from a web page (an
/// `Origin` header: a page cannot make a browser change the daemon's state).
fn state_change_refused(
    s: &AppState,
    headers: &HeaderMap,
    what: &str,
    cli: &str,
) -> Option<Response> {
    // The guard checked the token when one is configured.
    if s.config.api_token.is_none() {
        return Some(error(
            StatusCode::FORBIDDEN,
            &format!("{what} over HTTP needs api_token_env; on this machine run `{cli}` instead"),
        ));
    }
    if headers.contains_key(header::ORIGIN) {
        return Some(error(
            StatusCode::FORBIDDEN,
            &format!("{what} is an API call: requests carrying an Origin header are refused"),
        ));
    }
    None
}

/// `POST /targets`: imports the targets of the body (a JSON array of target objects, or one
/// per line), all or none, in one transaction.
async fn import(State(s): State<AppState>, headers: HeaderMap, body: axum::body::Body) -> Response {
    if let Some(refused) = state_change_refused(
        &s,
        &headers,
        "importing targets",
        "mcpprobe daemon targets import FILE",
    ) {
        return refused;
    }
    let bytes = match axum::body::to_bytes(body, super::targets::MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the body is larger than {} bytes: import in parts, or with `mcpprobe daemon targets import FILE`",
                    super::targets::MAX_BODY_BYTES
                ),
            );
        }
    };
    let parsed =
        tokio::task::spawn_blocking(move || super::targets::parse_body(bytes.to_vec())).await;
    let targets = match parsed {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return import_error(&e),
        Err(e) => return internal(DaemonError::Blocking(e.to_string())),
    };
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let now = now_ms(&s.scanner);
    let summary = match db(&s.store, move |st| st.import_targets(&targets, now)).await {
        Ok(summary) => summary,
        Err(e) => return internal(e),
    };
    // This daemon schedules them at once; the others within their next reading.
    s.targets.invalidate();
    let set = s.targets().await;
    let wanted: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
    let not_scheduled: Vec<Value> = set
        .skipped
        .iter()
        .filter(|(name, _)| wanted.contains(name.as_str()))
        .map(|(name, why)| json!({ "name": name, "reason": why }))
        .collect();
    axum::Json(json!({
        "added": summary.added,
        "updated": summary.updated,
        "unchanged": summary.unchanged,
        "shadowed": summary.shadowed,
        "not_scheduled_here": not_scheduled,
    }))
    .into_response()
}

/// An import refused, as JSON naming where (line, column, index) and which key.
fn import_error(e: &super::targets::ImportError) -> Response {
    use super::targets::ImportError;
    let status = match e {
        ImportError::TooLarge { .. } | ImportError::TooMany { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    let mut body = json!({ "error": e.to_string() });
    if let ImportError::Invalid {
        line,
        column,
        index,
        key,
        message,
        ..
    } = e
    {
        body["line"] = json!(line);
        body["column"] = json!(column);
        body["index"] = json!(index);
        body["key"] = json!(key);
        body["message"] = json!(message);
    }
    (status, axum::Json(body)).into_response()
}

/// `DELETE /targets/{name}`: an imported target is no longer listed or scheduled (its history
/// stays).
async fn remove(
    State(s): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let cli = format!("mcpprobe daemon targets remove {name}");
    if let Some(refused) = state_change_refused(&s, &headers, "removing a target", &cli) {
        return refused;
    }
    let n = name.clone();
    match db(&s.store, move |st| st.remove_target(&n)).await {
        Ok(()) => {
            s.targets.invalidate();
            axum::Json(json!({ "removed": name })).into_response()
        }
        Err(DaemonError::Store(e @ super::store::StoreError::UnknownTarget(_))) => {
            error(StatusCode::NOT_FOUND, &e.to_string())
        }
        Err(DaemonError::Store(e @ super::store::StoreError::ConfiguredTarget(_))) => {
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
                HeaderValue::from_static(super::metrics::CONTENT_TYPE),
            )],
            s.metrics.render(&t, per_target, &s.config.worker),
        )
            .into_response(),
        Err(e) => internal(e),
    }
}

/// Security headers on every answer; the bearer token where the config asks for one.
async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    // Without a token the endpoint relies on being reachable from this machine only: a page
    // whose name was re-bound to 127.0.0.1 (DNS rebinding) is refused by its Host.
    if s.config.api_token.is_none() && !local_host(req.headers(), s.config.listen) {
        return secure(error(
            StatusCode::FORBIDDEN,
            "the Host header names another host (set api_token_env to serve other names)",
        ));
    }
    let open = path == "/healthz" || path.starts_with("/badge/");
    if let (Some(token), false) = (&s.config.api_token, open) {
        let shown = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer(v.as_bytes()));
        if !shown.is_some_and(|t| token_matches(t, token.expose_secret().as_bytes())) {
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

/// Whether the request's Host is this machine: `localhost`, a loopback address, or the
/// listen address itself.
fn local_host(headers: &HeaderMap, listen: std::net::SocketAddr) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let name = match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip == listen.ip())
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

/// The credentials of an `Authorization: Bearer TOKEN` value: the scheme is matched in any
/// case (RFC 9110 §11.1), one or more spaces after it.
pub fn bearer(value: &[u8]) -> Option<&[u8]> {
    let scheme = value.get(..6)?;
    let rest = value.get(6..)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Whether `shown` is the token, in constant time: both are hashed first, so neither the
/// bytes nor the length of the token leak through timing.
pub fn token_matches(shown: &[u8], token: &[u8]) -> bool {
    crate::gate::state::secret_matches(shown, token)
}

/// The router.
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route(page::HOME_PATH, get(dashboard))
        .route(page::STYLE_PATH, get(style))
        .route("/healthz", get(healthz))
        .route("/targets/{name}", get(target).delete(remove))
        .route("/badge/{file}", get(badge))
        .route("/targets", get(targets).post(import))
        .route("/targets/{name}/runs", get(runs))
        .route("/targets/{name}/runs/{id}", get(run))
        .route("/targets/{name}/report", get(report))
        .route("/targets/{name}/accept", post(accept))
        .route("/targets/{name}/runs/{id}/accept", post(accept_run))
        .route("/metrics", get(metrics))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Serves the router on `listener` until `shutdown` fires (HTTP/1.1, each connection's
/// request heads bounded by [`HEADER_READ_TIMEOUT`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    serve_app(listener, router(state), shutdown, HEADER_READ_TIMEOUT).await
}

/// Serves `app` on `listener` until `shutdown` fires; a connection whose request head has not
/// arrived `header_timeout` after it began waiting for one is closed. At shutdown no new
/// connection is taken and open ones get [`DRAIN`] to finish.
pub async fn serve_app(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: tokio_util::sync::CancellationToken,
    header_timeout: Duration,
) -> std::io::Result<()> {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: the listener stays, the next
                    // accept is tried a little later (as axum::serve does).
                    tracing::warn!(target: "mcpprobe::daemon", "cannot accept a connection: {e}");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                        () = shutdown.cancelled() => break,
                    }
                }
            },
            () = shutdown.cancelled() => break,
        };
        while conns.try_join_next().is_some() {}
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        conns.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                () = shutdown.cancelled() => conn.as_mut().graceful_shutdown(),
            }
            let _ = tokio::time::timeout(DRAIN, conn).await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN, async { while conns.join_next().await.is_some() {} }).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"BEARER   abc "), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Bearerabc"), None);
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer "), None);
        assert_eq!(bearer(b"Bear"), None);
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!token_matches(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!token_matches(b"0123456789abcde", b"0123456789abcdef"));
        assert!(!token_matches(b"", b"0123456789abcdef"));
    }
}
