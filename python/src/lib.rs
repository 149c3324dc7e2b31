//! `mcpprobe._native`: the engine for the Python package (SPEC §12). A thin host, like the CLI:
//! it turns arguments into the engine's requests, runs them on one tokio runtime with the GIL
//! released, and answers with the JSON report (SPEC §4); `mcpprobe/__init__.py` makes Python
//! objects and exceptions of it. A Python judge is called back from the engine's threads.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcpprobe::checks::BoxFuture;
use mcpprobe::engine::{
    BaselineRequest, ConfigError, Credentials, ScanLimits, ScanRequest, Scanner, ScannerConfig,
    SecretString, Selection, Target,
};
use mcpprobe::finding::{Confidence, Severity};
use mcpprobe::judge::{
    Judge, JudgeConfig, JudgeError, JudgeLimits, Reviewer, Verdict, parse_answer,
};
use mcpprobe::model::{Policy, Report};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pyo3::create_exception!(
    _native,
    NativeUsageError,
    PyException,
    "A usage error (exit 64); `mcpprobe.UsageError` is what callers see."
);

fn usage(e: impl std::fmt::Display) -> PyErr {
    NativeUsageError::new_err(e.to_string())
}

fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Runs `fut` to its end with the GIL released (a Python judge is called back from the
/// engine's threads). Ctrl-C is looked for every 100 ms: it cancels the scan, which then ends
/// promptly (its sessions closed), and `KeyboardInterrupt` is raised after.
fn block_on<F>(py: Python<'_>, cancel: &CancellationToken, fut: F) -> PyResult<F::Output>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    py.detach(|| {
        let mut fut = std::pin::pin!(fut);
        let mut interrupted: Option<PyErr> = None;
        loop {
            let step = runtime().block_on(async {
                tokio::select! {
                    out = &mut fut => Some(out),
                    () = tokio::time::sleep(Duration::from_millis(100)) => None,
                }
            });
            if let Some(out) = step {
                return match interrupted {
                    Some(e) => Err(e),
                    None => Ok(out),
                };
            }
            if interrupted.is_none()
                && let Err(e) = Python::attach(|py| py.check_signals())
            {
                cancel.cancel();
                interrupted = Some(e);
            }
        }
    })
}

/// A judge written in Python: `call(tool_json) -> answer_json` (the package's adapter around
/// the user's callable), and for `scan_async` an `async def` twin awaited on the caller's loop.
struct PyJudge {
    name: String,
    call: Py<PyAny>,
    awaited: Option<(Py<PyAny>, pyo3_async_runtimes::TaskLocals)>,
}

struct PyReviewer(Arc<PyJudge>);

struct SharedJudge(Arc<PyJudge>);

impl Judge for SharedJudge {
    fn name(&self) -> String {
        self.0.name.clone()
    }

    fn start(&self) -> Result<Box<dyn Reviewer>, JudgeError> {
        Ok(Box::new(PyReviewer(self.0.clone())))
    }
}

fn raised(e: PyErr) -> JudgeError {
    // An exception's message can be anything: at most 500 characters of it, escaped.
    JudgeError::Raised(mcpprobe::util::escape::escape_trimmed(&e.to_string(), 500))
}

impl PyReviewer {
    async fn ask(judge: Arc<PyJudge>, text: String) -> Result<String, JudgeError> {
        if let Some((awaited, locals)) = &judge.awaited {
            let fut = Python::attach(|py| -> PyResult<_> {
                let coro = awaited.bind(py).call1((text,))?;
                pyo3_async_runtimes::into_future_with_locals(locals, coro)
            })
            .map_err(raised)?;
            let out = fut.await.map_err(raised)?;
            return Python::attach(|py| out.extract::<String>(py)).map_err(raised);
        }
        // The package's adapter runs the judge on a Python daemon thread of its own (a judge
        // past its budget cannot be interrupted: the engine stops waiting, the thread ends when
        // the judge returns, and the interpreter may exit meanwhile) and reports through `done`.
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<String, JudgeError>>();
        let slot = std::sync::Mutex::new(Some(tx));
        Python::attach(|py| -> PyResult<()> {
            let done = pyo3::types::PyCFunction::new_closure(
                py,
                Some(c"mcpprobe_judge_done"),
                None,
                move |args: &Bound<'_, pyo3::types::PyTuple>,
                      _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>|
                      -> PyResult<()> {
                    let (ok, text): (bool, String) = args.extract()?;
                    let answer = if ok {
                        Ok(text)
                    } else {
                        Err(JudgeError::Raised(mcpprobe::util::escape::escape_trimmed(
                            &text, 500,
                        )))
                    };
                    if let Some(tx) = slot.lock().ok().and_then(|mut s| s.take()) {
                        let _ = tx.send(answer);
                    }
                    Ok(())
                },
            )?;
            judge.call.bind(py).call1((text, done))?;
            Ok(())
        })
        .map_err(raised)?;
        rx.await
            .map_err(|_| JudgeError::Gone("the judge's thread ended without an answer".into()))?
    }
}

impl Reviewer for PyReviewer {
    fn review<'a>(
        &'a mut self,
        tool: &'a Value,
    ) -> BoxFuture<'a, Result<Vec<Verdict>, JudgeError>> {
        let judge = self.0.clone();
        Box::pin(async move {
            let answer = PyReviewer::ask(judge, tool.to_string()).await?;
            parse_answer(answer.as_bytes(), tool)
        })
    }
}

/// `(name, call, awaited)` from the package, with its budgets, as the engine's judge.
fn judge_config(
    judge: Option<(String, Py<PyAny>, Option<Py<PyAny>>)>,
    locals: Option<pyo3_async_runtimes::TaskLocals>,
    timeout: f64,
    budget: f64,
) -> PyResult<Option<JudgeConfig>> {
    let Some((name, call, awaited)) = judge else {
        return Ok(None);
    };
    let secs = |s: f64, what: &str| {
        Duration::try_from_secs_f64(s)
            .map_err(|_| usage(format!("{what} must be a number of seconds, not {s}")))
    };
    let limits = JudgeLimits {
        per_tool: secs(timeout, "judge_timeout")?,
        total: secs(budget, "judge_budget")?,
    };
    limits.validate().map_err(usage)?;
    let awaited = match (awaited, locals) {
        (Some(a), Some(l)) => Some((a, l)),
        _ => None,
    };
    Ok(Some(JudgeConfig {
        judge: Arc::new(SharedJudge(Arc::new(PyJudge {
            name: mcpprobe::judge::clean_name(&name),
            call,
            awaited,
        }))),
        limits,
    }))
}

fn policy(fail_on: Option<&str>, min_confidence: Option<&str>) -> PyResult<Policy> {
    let mut p = Policy::default();
    if let Some(f) = fail_on {
        p.fail_on = if f.eq_ignore_ascii_case("none") {
            None
        } else {
            Some(Severity::parse(f).ok_or_else(|| {
                usage(format!(
                    "fail_on={f:?}: one of info, low, medium, high, critical, none"
                ))
            })?)
        };
    }
    if let Some(c) = min_confidence {
        p.min_confidence = Confidence::parse(c)
            .ok_or_else(|| usage(format!("min_confidence={c:?}: one of low, medium, high")))?;
    }
    Ok(p)
}

fn selection(checks: Option<Vec<String>>, skip: Option<Vec<String>>) -> PyResult<Selection> {
    Selection::new(&checks.unwrap_or_default(), &skip.unwrap_or_default()).map_err(usage)
}

fn input_kind(raw: Option<&str>) -> PyResult<Option<mcpprobe::rules::InputKind>> {
    // The CLI's `--kind` values (tools, server-card, agent-card).
    raw.map(|k| {
        k.parse::<mcpprobe::rules::InputKind>()
            .map_err(|_| usage(format!("kind={k:?}: one of tools, server-card, agent-card")))
    })
    .transpose()
}

fn to_json(report: &Report) -> String {
    report.to_json()
}

/// `mcpprobe check`: the metadata rules (and the judge) over one document; the report's JSON.
#[pyfunction]
#[pyo3(signature = (tools, *, target, kind=None, checks=None, skip_checks=None, fail_on=None, min_confidence=None, judge=None, judge_timeout=30.0, judge_budget=300.0, time_cap=60.0))]
#[allow(clippy::too_many_arguments)]
fn check(
    py: Python<'_>,
    tools: &[u8],
    target: String,
    kind: Option<&str>,
    checks: Option<Vec<String>>,
    skip_checks: Option<Vec<String>>,
    fail_on: Option<&str>,
    min_confidence: Option<&str>,
    judge: Option<(String, Py<PyAny>, Option<Py<PyAny>>)>,
    judge_timeout: f64,
    judge_budget: f64,
    time_cap: f64,
) -> PyResult<String> {
    let policy = policy(fail_on, min_confidence)?;
    let selection = selection(checks, skip_checks)?;
    let judge = judge_config(judge, None, judge_timeout, judge_budget)?;
    let kind = input_kind(kind)?;
    let cap = Duration::try_from_secs_f64(time_cap)
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(3600))
        .ok_or_else(|| usage("time_cap must be between 0 and 3600 seconds"))?;
    let input = mcpprobe::offline::parse(&target, tools, kind).map_err(usage)?;
    let cancel = CancellationToken::new();
    let report = block_on(py, &cancel, async {
        let mut doc = input.document();
        let mut report = mcpprobe::offline::check_capped(
            &input,
            &mut doc,
            &target,
            Policy::default(),
            &selection,
            cap,
        );
        drop(doc);
        if let Some(j) = &judge {
            mcpprobe::offline::judge(&mut report, &input, j, &selection, &cancel).await;
        }
        report
    })?;
    let mut report = report;
    report.apply_policy(policy);
    Ok(to_json(&report))
}

/// What `scan` and `scan_async` take besides the target and the judge: the package passes every
/// key (`mcpprobe._scan_kwargs`), so one definition serves both.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct ScanOptions {
    token: Option<String>,
    headers: Option<Vec<String>>,
    env: Option<Vec<String>>,
    rate: i64,
    checks: Option<Vec<String>>,
    skip_checks: Option<Vec<String>>,
    baseline: Option<PathBuf>,
    update_baseline: bool,
    exclude_tools: Option<Vec<String>>,
    follow_authorization_server: bool,
    allow_private_addresses: bool,
    trace_file: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    resolver: Option<String>,
    fail_on: Option<String>,
    min_confidence: Option<String>,
    judge_timeout: f64,
    judge_budget: f64,
}

/// What `scan` and `scan_async` share: the request, and the scanner it runs on.
fn prepare(
    target: Bound<'_, PyAny>,
    o: ScanOptions,
    judge: Option<JudgeConfig>,
) -> PyResult<(ScanRequest, Arc<Scanner>)> {
    let target = if let Ok(url) = target.extract::<String>() {
        if o.env.is_some() {
            return Err(usage(
                "env= is for a stdio command (a list of strings), not a URL",
            ));
        }
        Target::http(&url).map_err(usage)?
    } else if let Ok(command) = target.extract::<Vec<String>>() {
        let names = o.env.unwrap_or_default();
        let env = mcpprobe::engine::request::stdio_env(&names, |n| std::env::var(n).ok())
            .map_err(usage)?;
        Target::stdio_with_env(&command, env).map_err(usage)?
    } else {
        return Err(usage(
            "the target is a URL (str) or a stdio command (a list of str)",
        ));
    };
    let rate = u32::try_from(o.rate).map_err(|_| {
        usage(format!(
            "rate={}: mcpprobe sends 1 to 10 requests per second",
            o.rate
        ))
    })?;
    let mut req = ScanRequest::new(target);
    req.credentials = Credentials {
        // Like the CLI's --token: MCPPROBE_TOKEN when no token is given.
        token: o
            .token
            .filter(|t| !t.is_empty())
            .or_else(|| std::env::var(MCPPROBE_TOKEN).ok().filter(|t| !t.is_empty()))
            .map(SecretString::from),
        headers: o
            .headers
            .unwrap_or_default()
            .iter()
            .map(|h| Credentials::parse_header(h))
            .collect::<Result<_, ConfigError>>()
            .map_err(usage)?,
    };
    req.checks = selection(o.checks, o.skip_checks)?;
    req.limits = ScanLimits {
        rate,
        ..ScanLimits::default()
    };
    req.follow_authorization_server = o.follow_authorization_server;
    req.allow_private_addresses = o.allow_private_addresses;
    req.exclude_tools = o.exclude_tools.unwrap_or_default();
    req.trace_file = o.trace_file;
    req.baseline = o.baseline.map(|path| BaselineRequest {
        path,
        update: o.update_baseline,
    });
    req.judge = judge;
    let state = match o.state_dir {
        Some(d) => d,
        None => mcpprobe::gate::state::StateDir::locate(|n| std::env::var_os(n)).map_err(usage)?,
    };
    let resolver = match o
        .resolver
        .or_else(|| std::env::var("MCPPROBE_RESOLVER").ok())
    {
        Some(r) if !r.is_empty() => Some(
            r.parse::<SocketAddr>()
                .map_err(|_| usage(format!("resolver {r:?} is not IP:PORT")))?,
        ),
        _ => None,
    };
    Ok((req, scanner(state, resolver)?))
}

/// The environment variable of the token (the CLI's `--token` default).
const MCPPROBE_TOKEN: &str = "MCPPROBE_TOKEN";

/// One scanner per state folder and resolver in this process, whatever the scans' rates: scans
/// that share one share its host-keyed rate limit (SPEC §7), as the CLI's and the daemon's do.
/// Its per-host rate is the highest there is; each scan's own `rate` lowers it for the hosts
/// it uses while it runs (two scans of one host at 5 and 10 send at most 5 a second to it in
/// all: `mcpprobe::net::politeness`).
fn scanner(state: PathBuf, resolver: Option<SocketAddr>) -> PyResult<Arc<Scanner>> {
    type Key = (PathBuf, Option<SocketAddr>);
    static SCANNERS: OnceLock<Mutex<HashMap<Key, Arc<Scanner>>>> = OnceLock::new();
    let mut all = SCANNERS
        .get_or_init(Mutex::default)
        .lock()
        .map_err(|_| usage("the scanner table is poisoned by an earlier panic"))?;
    let key = (state.clone(), resolver);
    if let Some(s) = all.get(&key) {
        return Ok(s.clone());
    }
    let mut config = ScannerConfig::new(state);
    config.resolver = resolver;
    config.host_rate = mcpprobe::net::MAX_RATE;
    let _inside = runtime().enter();
    let s = Arc::new(Scanner::new(config).map_err(usage)?);
    all.insert(key, s.clone());
    Ok(s)
}

/// The whole pipeline, gate first, blocking (the GIL released); the report's JSON.
#[pyfunction]
#[pyo3(signature = (target, options, *, judge=None))]
fn scan(
    py: Python<'_>,
    target: Bound<'_, PyAny>,
    options: ScanOptions,
    judge: Option<(String, Py<PyAny>, Option<Py<PyAny>>)>,
) -> PyResult<String> {
    let policy = policy(
        options.fail_on.as_deref(),
        options.min_confidence.as_deref(),
    )?;
    let judge = judge_config(judge, None, options.judge_timeout, options.judge_budget)?;
    let (req, scanner) = prepare(target, options, judge)?;
    let cancel = CancellationToken::new();
    let mut report = block_on(py, &cancel, scanner.scan(&req, cancel.clone()))?.map_err(usage)?;
    report.apply_policy(policy);
    Ok(to_json(&report))
}

/// [`scan`] as an awaitable; an `async def` judge is awaited on the caller's event loop.
#[pyfunction]
#[pyo3(signature = (target, options, *, judge=None))]
fn scan_async<'py>(
    py: Python<'py>,
    target: Bound<'py, PyAny>,
    options: ScanOptions,
    judge: Option<(String, Py<PyAny>, Option<Py<PyAny>>)>,
) -> PyResult<Bound<'py, PyAny>> {
    let policy = policy(
        options.fail_on.as_deref(),
        options.min_confidence.as_deref(),
    )?;
    let locals = pyo3_async_runtimes::tokio::get_current_locals(py)?;
    let judge = judge_config(
        judge,
        Some(locals.clone()),
        options.judge_timeout,
        options.judge_budget,
    )?;
    let (req, scanner) = prepare(target, options, judge)?;
    pyo3_async_runtimes::tokio::future_into_py_with_locals(py, locals, async move {
        // Cancelling the awaitable drops this future; the token then stops what it started.
        let cancel = CancellationToken::new();
        let _stop = cancel.clone().drop_guard();
        let mut report = scanner.scan(&req, cancel).await.map_err(usage)?;
        report.apply_policy(policy);
        Ok(to_json(&report))
    })
}

/// The folders discovery searches: the given ones, else this process's environment's.
fn places(
    home: Option<PathBuf>,
    project: Option<PathBuf>,
    platform: Option<&str>,
) -> PyResult<mcpprobe::discover::Places> {
    use mcpprobe::discover::{Places, Platform};
    let platform = match platform {
        None => Platform::current(),
        Some(p) => p
            .parse()
            .map_err(|_| usage(format!("platform={p:?}: linux, macos or windows")))?,
    };
    let mut places = Places::from_env(platform, |n| std::env::var_os(n), project);
    if home.is_some() {
        places.home = home;
    }
    Ok(places)
}

/// Where `discover` and `scan_discovered` look: the package passes every key.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct PlacesOptions {
    home: Option<PathBuf>,
    project: Option<PathBuf>,
    client_configs: Vec<PathBuf>,
    platform: Option<String>,
}

fn discovered(p: &PlacesOptions) -> PyResult<mcpprobe::discover::Discovery> {
    for f in &p.client_configs {
        if !f.is_file() {
            return Err(usage(format!(
                "client_configs: {}: no such file",
                f.display()
            )));
        }
    }
    let places = places(p.home.clone(), p.project.clone(), p.platform.as_deref())?;
    Ok(mcpprobe::discover::discover(&places, &p.client_configs))
}

/// `mcpprobe discover --format json`: the client files and their servers (values never shown).
#[pyfunction]
fn discover(py: Python<'_>, places: PlacesOptions) -> PyResult<String> {
    py.detach(|| {
        let found = discovered(&places)?;
        serde_json::to_string(&found.listing()).map_err(usage)
    })
}

/// `mcpprobe scan --discover`: the report of the whole set (blocking, the GIL released).
#[pyfunction]
#[pyo3(signature = (options, places, *, dry_run=false, trust_project=false))]
fn scan_discovered(
    py: Python<'_>,
    options: ScanOptions,
    places: PlacesOptions,
    dry_run: bool,
    trust_project: bool,
) -> PyResult<String> {
    use mcpprobe::discover::scan::DiscoverOptions;
    let policy = policy(
        options.fail_on.as_deref(),
        options.min_confidence.as_deref(),
    )?;
    let found = discovered(&places)?;
    let project = places.project;
    let allowed = options.env.clone().unwrap_or_default();
    // The request every server gets; its target is replaced per server.
    let mut stdio_options = options;
    stdio_options.env = None;
    let placeholder = pyo3::types::PyList::new(py, ["mcpprobe-discovered-server"])?;
    let (mut template, scanner) = prepare(placeholder.into_any(), stdio_options, None)?;
    let baseline = template.baseline.take();
    // The project whose files were read fills `${workspaceFolder}`; none was read without one.
    let mut opts = DiscoverOptions::new(template, allowed, |n| std::env::var(n).ok(), project)
        .map_err(usage)?;
    opts.dry_run = dry_run;
    opts.trust_project = trust_project;
    opts.baseline = baseline;
    let sources = opts.secret_sources(&found);
    opts.template.secrets.extend(sources.iter().cloned());
    let secrets = mcpprobe::net::redact::Secrets::from_sources(&sources);
    let cancel = CancellationToken::new();
    let mut report = block_on(
        py,
        &cancel,
        mcpprobe::discover::scan::scan_discovered(&scanner, &found, &opts, cancel.clone()),
    )?
    .map_err(usage)?;
    report.redact(|s| secrets.redact(s));
    report.apply_policy(policy);
    Ok(to_json(&report))
}

/// The tool list's SHA-256, as `mcpprobe fingerprint` prints it; parsed and hashed with the GIL
/// released (the bytes are immutable and held by the caller's frame).
#[pyfunction]
fn fingerprint(py: Python<'_>, tools: &[u8]) -> PyResult<String> {
    py.detach(|| {
        let input =
            mcpprobe::offline::parse("tools", tools, Some(mcpprobe::rules::InputKind::Tools))
                .map_err(usage)?;
        Ok(input.tools_sha256().to_string())
    })
}

/// `mcpprobe diff --format json`: what changed between two tool lists, with the GIL released.
#[pyfunction]
fn diff(py: Python<'_>, old: &[u8], new: &[u8]) -> PyResult<String> {
    py.detach(|| diff_json(old, new))
}

fn diff_json(old: &[u8], new: &[u8]) -> PyResult<String> {
    let load = |name: &str, bytes: &[u8]| -> PyResult<Vec<Value>> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| usage(format!("{name}: not valid JSON: {e}")))?;
        let input =
            mcpprobe::rules::Input::from_value(value, Some(mcpprobe::rules::InputKind::Tools))
                .map_err(|e| usage(format!("{name}: {e}")))?;
        Ok(input
            .into_tools()
            .into_iter()
            .map(mcpprobe::rules::Json::into_value)
            .collect())
    };
    let d = mcpprobe::rules::fingerprint::diff(&load("old", old)?, &load("new", new)?);
    serde_json::to_string(&d).map_err(usage)
}

/// A report's exit code judged by another policy (SPEC §4).
#[pyfunction]
#[pyo3(signature = (report, *, fail_on=None, min_confidence=None))]
fn exit_code(report: &str, fail_on: Option<&str>, min_confidence: Option<&str>) -> PyResult<i32> {
    let report: Report =
        serde_json::from_str(report).map_err(|e| usage(format!("not an mcpprobe report: {e}")))?;
    let mut p = report.policy;
    if fail_on.is_some() || min_confidence.is_some() {
        let given = policy(fail_on, min_confidence)?;
        if fail_on.is_some() {
            p.fail_on = given.fail_on;
        }
        if min_confidence.is_some() {
            p.min_confidence = given.min_confidence;
        }
    }
    Ok(report.exit_code(&p).code())
}

/// The check catalogue's ids.
#[pyfunction]
fn check_ids() -> Vec<String> {
    mcpprobe::catalogue::catalogue()
        .metas()
        .map(|m| m.id.clone())
        .collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeUsageError", m.py().get_type::<NativeUsageError>())?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(scan_async, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(discover, m)?)?;
    m.add_function(wrap_pyfunction!(scan_discovered, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(exit_code, m)?)?;
    m.add_function(wrap_pyfunction!(check_ids, m)?)?;
    Ok(())
}
