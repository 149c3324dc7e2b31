//! The daemon's web page (SPEC §8.1): server-rendered HTML, no JavaScript at all, made to be
//! served with [`CSP`] (so no inline style either: the look is [`STYLE_CSS`], served at
//! [`STYLE_PATH`]).
//!
//! Everything on these pages came from servers that may be hostile: target URLs, tool names and
//! definitions, finding titles, messages, evidence and exchanges, reasons. Each such string is
//! first shown with its control, ANSI, bidi and invisible characters made visible as
//! `[U+200B]` ([`crate::util::escape`], the terminal's escaper), then HTML-escaped by maud.
//!
//! Pure functions: documents in, full HTML documents out (as [`Markup`]; `into_string()` gives
//! the text). No store, no clock, no network: the run page's word diffs are bounded by size
//! ([`MAX_DIFF_CHARS`], [`MAX_DIFF_TOKENS`], [`MAX_DIFF_EDITS`]) and by a budget the caller
//! gives as a question (`spent`), asked before each tool and at every step of each diff. The
//! link targets are the constants below.

use std::collections::{BTreeMap, HashMap};

use maud::{DOCTYPE, Markup, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;

use crate::baseline::Baseline;
use crate::daemon::store::{Counts, RunStatus, RunSummary, TargetRow};
use crate::finding::{Exchange, Finding, Message, Severity};
use crate::model::Report;
use crate::report::badge::Badge;
use crate::util::escape::{escape, escape_multiline, escape_trimmed};

/// The dashboard (the list of targets).
pub const HOME_PATH: &str = "/";
/// Where the stylesheet is served.
pub const STYLE_PATH: &str = "/style.css";
/// HTML pages of a target: `{TARGETS_PREFIX}/{name}` and `{TARGETS_PREFIX}/{name}/runs/{id}`.
pub const TARGETS_PREFIX: &str = "/targets";
/// Badges: `{BADGE_PREFIX}/{name}.svg`.
pub const BADGE_PREFIX: &str = "/badge";

/// The Content-Security-Policy these pages are made for: no script, no inline style.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                       base-uri 'none'; frame-ancestors 'none'";

/// The longest body of an exchange shown (bodies are capped when recorded; this caps the page).
pub const MAX_BODY_CHARS: usize = 16 * 1024;

/// The longest tool definition diffed word by word; longer ones are shown whole, unmarked.
pub const MAX_DIFF_CHARS: usize = 64 * 1024;

/// The most words and spaces a word diff compares on each side, once the common start and end
/// are set aside; a longer changed part is marked whole.
pub const MAX_DIFF_TOKENS: usize = 8 * 1024;

/// The most words and spaces a word diff removes and adds (the edit distance it searches up
/// to): beyond, the changed part is marked whole. Bounds a diff's time by
/// O(`MAX_DIFF_TOKENS` × `MAX_DIFF_EDITS`) and its memory by O(`MAX_DIFF_EDITS`²).
pub const MAX_DIFF_EDITS: usize = 1000;

/// The stylesheet of every page (served at [`STYLE_PATH`]).
pub const STYLE_CSS: &str = r#":root {
  --fg: #1f2328; --muted: #656d76; --bg: #ffffff; --line: #d0d7de; --panel: #f6f8fa;
  --critical: #b42318; --high: #c4501a; --medium: #9a6700; --low: #5f7d0e; --info: #0969da;
  --del-bg: #ffd7d5; --del-fg: #82071e; --ins-bg: #ccffd8; --ins-fg: #055d20;
}
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header.top { padding: 12px 24px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top a { color: var(--fg); text-decoration: none; font-weight: 600; }
nav.crumbs { color: var(--muted); }
main { padding: 16px 24px 48px; max-width: 1400px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 24px 0 8px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
a { color: #0969da; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.url, .url { overflow-wrap: anywhere; }
.muted, .empty { color: var(--muted); }
.status { font-weight: 600; }
.status-complete { color: #1a7f37; }
.status-refused, .status-incomplete, .status-interrupted { color: var(--medium); }
.status-running { color: var(--info); }
.counts span { display: inline-block; min-width: 2.2em; margin-right: 4px; padding: 0 4px; border-radius: 4px; text-align: center; }
.counts .zero { color: var(--muted); }
.sev-critical { color: var(--critical); }
.sev-high { color: var(--high); }
.sev-medium { color: var(--medium); }
.sev-low { color: var(--low); }
.sev-info { color: var(--info); }
section.severity, article.finding { color: var(--fg); }
.counts span.sev-critical:not(.zero) { background: #fee4e2; }
.counts span.sev-high:not(.zero) { background: #fdead7; }
.counts span.sev-medium:not(.zero) { background: #fef7c3; }
.counts span.sev-low:not(.zero) { background: #ecfccb; }
.badge { vertical-align: middle; }
.meta { color: var(--muted); margin: 2px 0 12px; }
.meta dt { display: inline; font-weight: 600; }
.meta dd { display: inline; margin: 0 16px 0 4px; }
article.finding { border: 1px solid var(--line); border-left: 4px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
article.finding.sev-critical { border-left-color: var(--critical); }
article.finding.sev-high { border-left-color: var(--high); }
article.finding.sev-medium { border-left-color: var(--medium); }
article.finding.sev-low { border-left-color: var(--low); }
article.finding.sev-info { border-left-color: var(--info); }
article.finding.suppressed { opacity: .75; }
article.finding h3 { margin: 0 0 4px; color: var(--fg); }
.mark { display: inline-block; font-size: 11px; font-weight: 600; padding: 0 6px; border-radius: 10px; border: 1px solid var(--line); margin-left: 6px; color: var(--muted); }
.mark-new { color: #8250df; border-color: #8250df; }
.mark-suppressed { color: var(--muted); }
.mark-not-diffed { color: var(--medium); border-color: var(--medium); }
.exchange { margin: 6px 0 10px; }
.exchange h4 { margin: 6px 0 2px; font-size: 13px; }
details > summary { cursor: pointer; color: var(--muted); }
.diff { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.diff h4 { margin: 4px 0; }
del { background: var(--del-bg); color: var(--del-fg); text-decoration: line-through; }
ins { background: var(--ins-bg); color: var(--ins-fg); text-decoration: none; }
.warning { border: 1px solid #d4a72c; background: #fff8c5; border-radius: 6px; padding: 6px 10px; margin: 8px 0; }
"#;

/// A target as the dashboard shows it.
#[derive(Debug, Clone)]
pub struct TargetCard {
    pub target: TargetRow,
    pub latest: Option<RunSummary>,
    pub badge: Badge,
}

/// A tool whose definition differs from the accepted baseline: the pretty JSON of its
/// definition before and after (`None`: it was added, or removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolChange {
    pub name: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// The page of one target: `{TARGETS_PREFIX}/{name}`.
pub fn target_href(name: &str) -> String {
    format!("{TARGETS_PREFIX}/{}", path_segment(name))
}

/// The page of one run: `{TARGETS_PREFIX}/{name}/runs/{id}`.
pub fn run_href(name: &str, id: i64) -> String {
    format!("{TARGETS_PREFIX}/{}/runs/{id}", path_segment(name))
}

/// A target's badge: `{BADGE_PREFIX}/{name}.svg`.
pub fn badge_href(name: &str) -> String {
    format!("{BADGE_PREFIX}/{}.svg", path_segment(name))
}

/// `name` as one URL path segment: configured names are `[A-Za-z0-9_-]` and pass unchanged;
/// any other byte is percent-encoded, so no name can leave its segment.
fn path_segment(name: &str) -> String {
    /// RFC 3986's unreserved characters: the only bytes a segment keeps as they are.
    const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    utf8_percent_encode(name, UNRESERVED).to_string()
}

/// The dashboard (`/`): every target with its URL, latest run (outcome, when, exit code, counts
/// by severity) and badge, each linking to its page. A full HTML document.
pub fn dashboard(targets: &[TargetCard]) -> Markup {
    let body = html! {
        h1 { "Targets" }
        @if targets.is_empty() {
            p.empty { "No targets are configured." }
        } @else {
            table.targets {
                thead { tr {
                    th { "Target" } th { "URL" } th { "Latest run" } th { "Exit" }
                    th { "Findings" } th { "Badge" }
                } }
                tbody {
                    @for card in targets {
                        @let name = &card.target.name;
                        tr {
                            td { a href=(target_href(name)) { (escape(name)) } }
                            td.url { (escape(&card.target.url)) }
                            @match &card.latest {
                                Some(run) => {
                                    td {
                                        a href=(run_href(name, run.id)) { (status(run.status)) }
                                        " " span.muted { (when(run.started_ms)) }
                                        @if let Some(reason) = &run.reason {
                                            div.muted { (escape_trimmed(reason, 200)) }
                                        }
                                    }
                                    td { (exit_code(run.exit_code)) }
                                    td { (counts(&run.counts)) }
                                }
                                None => {
                                    td.muted colspan="3" { "not run yet" }
                                }
                            }
                            td { (badge_img(name, &card.badge)) }
                        }
                    }
                }
            }
        }
    };
    document("mcpprobe: targets", html! {}, body)
}

/// A target's page (`{TARGETS_PREFIX}/{name}`): its badge and run history (time, status, exit
/// code, counts by severity, requests, tool-list hash), newest first as given, each run linking
/// to its page. A full HTML document.
pub fn target_page(target: &TargetRow, badge: &Badge, runs: &[RunSummary]) -> Markup {
    let name = &target.name;
    let crumbs = html! { " / " (escape(name)) };
    let body = html! {
        h1 { (escape(name)) " " (badge_img(name, badge)) }
        dl.meta {
            dt { "URL" } dd.url { (escape(&target.url)) }
            dt { "Every" } dd { (interval(target.every_ms)) }
        }
        h2 { "Runs" }
        @if runs.is_empty() {
            p.empty { "No runs yet." }
        } @else {
            table.runs {
                thead { tr {
                    th { "Run" } th { "Started" } th { "Took" } th { "Status" } th { "Exit" }
                    th { "Findings" } th { "Requests" } th { "Tool list" }
                } }
                tbody {
                    @for run in runs {
                        tr {
                            td { a href=(run_href(name, run.id)) { "#" (run.id) } }
                            td { (when(run.started_ms)) }
                            td { (took(run)) }
                            td {
                                (status(run.status))
                                @if let Some(reason) = &run.reason {
                                    div.muted { (escape_trimmed(reason, 200)) }
                                }
                            }
                            td { (exit_code(run.exit_code)) }
                            td { (counts(&run.counts)) }
                            td { (run.requests) }
                            td { (hash(run.tool_list_sha256.as_deref())) }
                        }
                    }
                }
            }
        }
    };
    document(
        &format!("mcpprobe: {}", escape_trimmed(name, 80)),
        crumbs,
        body,
    )
}

/// A run's page (`{TARGETS_PREFIX}/{name}/runs/{id}`): what the run recorded, its findings
/// grouped by severity with their evidence (the text that fired, the exchanges: method, URL,
/// status, headers, bodies capped at [`MAX_BODY_CHARS`]), suppressed and new marks, the checks'
/// statuses; and when `changes` is not empty, "Tools changed since the accepted baseline" with
/// old and new definitions side by side, the changed words marked `<del>` / `<ins>`.
/// `report` is `None` when no report was stored (a run still running or interrupted).
/// `spent` says when the diff work's budget is used up: it is asked before each changed tool
/// and at every step of its diff; from its first `true` on, the tools left are shown whole,
/// unmarked, and the page names them. A full HTML document.
pub fn run_page(
    target: &TargetRow,
    run: &RunSummary,
    report: Option<&Report>,
    changes: &[ToolChange],
    spent: &mut dyn FnMut() -> bool,
) -> Markup {
    let name = &target.name;
    let crumbs = html! {
        " / " a href=(target_href(name)) { (escape(name)) } " / run #" (run.id)
    };
    let body = html! {
        h1 { (escape(name)) ": run #" (run.id) " " (status(run.status)) }
        dl.meta {
            dt { "URL" } dd.url { (escape(&target.url)) }
            dt { "Started" } dd { (when(run.started_ms)) }
            dt { "Took" } dd { (took(run)) }
            dt { "Exit code" } dd { (exit_code(run.exit_code)) }
            dt { "Requests" } dd { (run.requests) }
            dt { "Tool list" } dd { (hash(run.tool_list_sha256.as_deref())) }
            dt { "Ownership proof" } dd.proof { (proof(run.proof.as_ref())) }
        }
        @if let Some(reason) = &run.reason {
            p.warning { (escape(reason)) }
        }
        p { (counts(&run.counts)) }
        @if !changes.is_empty() {
            (tool_changes_section(changes, spent))
        }
        @match report {
            Some(report) => (report_body(report)),
            None => p.empty { "No report is stored for this run." },
        }
    };
    document(
        &format!("mcpprobe: {} run {}", escape_trimmed(name, 80), run.id),
        crumbs,
        body,
    )
}

/// The tools whose definitions differ between the accepted baseline `old` (none: every tool
/// is new) and `new`, paired by name, in name order, each as pretty JSON.
pub fn tool_changes(old: Option<&Baseline>, new: &Baseline) -> Vec<ToolChange> {
    let old = old.map(|b| by_name(&b.tools)).unwrap_or_default();
    let new = by_name(&new.tools);
    let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (o, n) = (old.get(name), new.get(name));
            (o != n).then(|| ToolChange {
                name: name.clone(),
                old: o.cloned(),
                new: n.cloned(),
            })
        })
        .collect()
}

/// Tools by name, as pretty JSON (a second tool of one name is keyed `name (2)`, a third
/// `name (3)`, skipping any key a tool already has). Linear: each name remembers the last
/// suffix it gave, so no duplicate walks the ones before it again.
fn by_name(tools: &[serde_json::Value]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut last_suffix: HashMap<&str, usize> = HashMap::new();
    for tool in tools {
        let base = tool
            .get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("(unnamed)");
        let mut key = base.to_string();
        if out.contains_key(&key) {
            let n = last_suffix.entry(base).or_insert(1);
            loop {
                *n += 1;
                key = format!("{base} ({n})");
                if !out.contains_key(&key) {
                    break;
                }
            }
        }
        let text = serde_json::to_string_pretty(tool).unwrap_or_else(|_| tool.to_string());
        out.insert(key, text);
    }
    out
}

/// The HTML document around a page's body.
fn document(title: &str, crumbs: Markup, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) }
                link rel="stylesheet" href=(STYLE_PATH);
            }
            body {
                header.top {
                    nav.crumbs { a href=(HOME_PATH) { "mcpprobe" } (crumbs) }
                }
                main { (body) }
            }
        }
    }
}

fn badge_img(name: &str, badge: &Badge) -> Markup {
    let alt = format!("{}: {}", escape(&badge.label), escape(&badge.message));
    html! { img.badge src=(badge_href(name)) alt=(alt) height="20"; }
}

fn status(s: RunStatus) -> Markup {
    html! { span class={ "status status-" (s.as_str()) } { (s.as_str()) } }
}

fn exit_code(code: Option<i32>) -> Markup {
    html! {
        @match code {
            Some(c) => span.mono { (c) },
            None => span.muted { "–" },
        }
    }
}

/// Counts by severity, critical first (`3 C` …), zeros dimmed.
fn counts(c: &Counts) -> Markup {
    html! {
        span.counts {
            @for s in Severity::ALL_DESCENDING {
                @let n = c.get(s);
                span class={ "sev-" (s.as_str()) @if n == 0 { " zero" } } title=(s.as_str()) {
                    (n) " " (s.as_str())
                }
            }
        }
    }
}

fn hash(h: Option<&str>) -> Markup {
    html! {
        @match h {
            Some(h) => code title=(escape(h)) { (escape_trimmed(h, 13)) },
            None => span.muted { "–" },
        }
    }
}

/// The ownership proof a run relied on: `dns-txt for example.com, verified …, valid until …`.
fn proof(p: Option<&super::store::ProofRecord>) -> Markup {
    html! {
        @match p {
            Some(p) => {
                (escape(&p.method)) " for " (escape(&p.host))
                @if let Some(v) = p.verified_ms { ", verified " (when(v)) }
                @if let Some(e) = p.expires_ms { ", valid until " (when(e)) }
            }
            None => span.muted { "none (the gate stopped the run, or it did not reach the gate)" },
        }
    }
}

/// A unix-millisecond time as `2026-12-01 12:00:00 UTC`.
fn when(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        None => format!("{ms} ms"),
    }
}

fn took(run: &RunSummary) -> String {
    match run.finished_ms {
        Some(f) => {
            let ms = f.saturating_sub(run.started_ms).max(0);
            if ms < 10_000 {
                format!("{:.1} s", ms as f64 / 1000.0)
            } else {
                interval(ms)
            }
        }
        None => "–".into(),
    }
}

/// An interval in the config's units (`30s`, `15m`, `24h`, `7d`), rounded down.
fn interval(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s >= 3_600 => format!("{}h", s / 3_600),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// The recorded part of a run page.
fn report_body(report: &Report) -> Markup {
    let suppressed = report.suppressed_count();
    html! {
        dl.meta {
            dt { "Outcome" } dd { (serde_name(&report.outcome)) }
            dt { "Requests sent" } dd { (report.requests_sent) }
            dt { "Checks" } dd { (report.checks.len()) }
            @if suppressed > 0 { dt { "Suppressed" } dd { (suppressed) } }
            @if report.below_min_confidence > 0 {
                dt { "Below the confidence floor" } dd { (report.below_min_confidence) }
            }
        }
        @if let Some(reason) = &report.reason {
            p.warning { (escape(reason)) }
        }
        @for w in &report.warnings {
            p.warning { (escape(w)) }
        }
        h2 { "Findings (" (report.findings.len()) ")" }
        @if report.findings.is_empty() {
            p.empty { "No findings." }
        }
        @for sev in Severity::ALL_DESCENDING {
            @let group: Vec<&Finding> = report.findings.iter().filter(|f| f.severity == sev).collect();
            @if !group.is_empty() {
                section class={ "severity sev-" (sev.as_str()) } {
                    h2 class={ "sev-" (sev.as_str()) } {
                        (capitalised(sev.as_str())) " (" (group.len()) ")"
                    }
                    @for f in group { (finding(f)) }
                }
            }
        }
        details.checks {
            summary { "Checks (" (report.checks.len()) ")" }
            table {
                thead { tr { th { "Check" } th { "Kind" } th { "Status" } th { "Findings" } th { "Requests" } th { "Reason" } } }
                tbody {
                    @for c in &report.checks {
                        tr {
                            td.mono { (escape(&c.id)) }
                            td { (c.kind.as_str()) }
                            td { (serde_name(&c.status)) }
                            td { (c.findings) }
                            td { (c.requests) }
                            td { @if let Some(r) = &c.reason { (escape(r)) } }
                        }
                    }
                }
            }
        }
    }
}

/// The name serde gives a unit variant (`not_implemented`): the page shows what the JSON
/// report says, never a `Debug` name.
fn serde_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "?".into(),
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// One finding: its ids and title, marks, message, location, evidence, fix and references.
fn finding(f: &Finding) -> Markup {
    let sev = f.severity.as_str();
    let id = match &f.rule {
        Some(rule) => format!("{}/{}", escape(&f.check), escape(rule)),
        None => escape(&f.check),
    };
    html! {
        article class={ "finding sev-" (sev) @if f.suppressed.is_some() { " suppressed" } } {
            h3 {
                code { (id) } " " (escape(&f.title))
                span.mark { (sev) }
                span.mark { "confidence " (f.confidence.as_str()) }
                @if f.new == Some(true) { span.mark.mark-new { "new" } }
                @if f.new == Some(false) { span.mark { "known" } }
                @if f.suppressed.is_some() { span.mark.mark-suppressed { "suppressed" } }
                @if let Some(d) = f.default_severity { span.mark { "catalogue: " (d.as_str()) } }
            }
            @if let Some(s) = &f.suppressed {
                p.muted {
                    "Suppressed: " (escape(&s.reason))
                    @if let Some(until) = &s.until { " (until " (escape(until)) ")" }
                }
            }
            @if let Some(m) = &f.message { p { (escape(m)) } }
            @if f.location.tool.is_some() || f.location.pointer.is_some() {
                p.muted {
                    @if let Some(t) = &f.location.tool { "Tool " code { (escape(t)) } " " }
                    @if let Some(p) = &f.location.pointer { "at " code { (escape(p)) } }
                }
            }
            @if let Some(t) = &f.evidence.text {
                h4 { "Evidence" }
                pre.evidence { (escape_multiline(t)) }
            }
            @for (i, x) in f.evidence.exchanges.iter().enumerate() {
                (exchange(i + 1, x))
            }
            p { strong { "Fix: " } (escape(&f.fix)) }
            @if !f.references.is_empty() {
                p.muted {
                    "References: "
                    @for (i, r) in f.references.iter().enumerate() {
                        @if i > 0 { ", " }
                        (escape(r))
                    }
                }
            }
        }
    }
}

/// One exchange of a finding's evidence: request and response, bodies capped.
fn exchange(n: usize, x: &Exchange) -> Markup {
    let req = &x.request;
    let line = format!(
        "{} {}",
        escape(req.method.as_deref().unwrap_or("")),
        escape(req.url.as_deref().unwrap_or(""))
    );
    let status = x
        .response
        .as_ref()
        .and_then(|r| r.status)
        .map(|s| format!(" → {s}"))
        .unwrap_or_else(|| {
            if x.response.is_some() {
                String::new()
            } else {
                " → no response".into()
            }
        });
    html! {
        details.exchange {
            summary { "Exchange " (n) ": " span.mono { (line) (status) } }
            @if let Some(note) = &x.note { p.muted { (escape(note)) } }
            h4 { "Request" }
            (message(req))
            @if let Some(resp) = &x.response {
                h4 { "Response" }
                (message(resp))
            }
        }
    }
}

/// A message's start line, headers and body, as text.
fn message(m: &Message) -> Markup {
    let mut head = String::new();
    if let Some(method) = &m.method {
        head.push_str(method);
        head.push(' ');
    }
    if let Some(url) = &m.url {
        head.push_str(url);
    }
    if let Some(status) = m.status {
        head.push_str(&format!("HTTP {status}"));
    }
    for (k, v) in &m.headers {
        if !head.is_empty() {
            head.push('\n');
        }
        head.push_str(&format!("{k}: {v}"));
    }
    let body = capped(&m.body, MAX_BODY_CHARS);
    let truncated = m.truncated || body.len() < m.body.len();
    html! {
        pre.message {
            (escape_multiline(&head))
            @if !m.body.is_empty() { "\n\n" (escape_multiline(body)) }
        }
        @if truncated { p.muted { "(body truncated)" } }
    }
}

/// At most `max` characters of `s`.
fn capped(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// What a word diff made of one token (a word, or a run of white space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// On both sides.
    Equal,
    /// Only on the old side.
    Delete,
    /// Only on the new side.
    Insert,
}

/// Why a word diff gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The changed part is longer than [`MAX_DIFF_TOKENS`], or needs more than
    /// [`MAX_DIFF_EDITS`] edits: it is marked whole.
    TooDifferent,
    /// The budget was spent: this tool (and the ones after it) are not diffed.
    OutOfTime,
}

/// One side of a word diff (`marked` is `Delete` for the old side, `Insert` for the new):
/// the equal words and the marked ones, consecutive marked words in one `<del>` / `<ins>`.
fn side(changes: &[(Tag, &str)], marked: Tag) -> Markup {
    let mut runs: Vec<(bool, String)> = Vec::new();
    for (tag, text) in changes {
        let is_marked = *tag == marked;
        if !is_marked && *tag != Tag::Equal {
            continue;
        }
        match runs.last_mut() {
            Some((m, run)) if *m == is_marked => run.push_str(text),
            _ => runs.push((is_marked, (*text).to_string())),
        }
    }
    html! {
        pre {
            @for (is_marked, run) in &runs {
                @let shown = escape_multiline(run);
                @if !*is_marked {
                    (shown)
                } @else if marked == Tag::Delete {
                    del { (shown) }
                } @else {
                    ins { (shown) }
                }
            }
        }
    }
}

/// "Tools changed since the accepted baseline": each change side by side, changed words marked.
/// The diffs are made first, while `spent` says no; the tools left once it says yes are shown
/// whole, unmarked, named above them all.
fn tool_changes_section(changes: &[ToolChange], spent: &mut dyn FnMut() -> bool) -> Markup {
    let mut out_of_time = false;
    let diffs: Vec<Option<(Markup, Markup)>> = changes
        .iter()
        .map(|c| {
            // An added or removed tool needs no diff: it is shown as it is, budget or not.
            if out_of_time && c.old.is_some() && c.new.is_some() {
                return None;
            }
            match word_diff(c.old.as_deref(), c.new.as_deref(), spent) {
                Ok(sides) => Some(sides),
                Err(_) => {
                    out_of_time = true;
                    None
                }
            }
        })
        .collect();
    let not_diffed: Vec<&str> = changes
        .iter()
        .zip(&diffs)
        .filter(|(_, d)| d.is_none())
        .map(|(c, _)| c.name.as_str())
        .collect();
    html! {
        section.changes {
            h2 { "Tools changed since the accepted baseline (" (changes.len()) ")" }
            @if !not_diffed.is_empty() {
                p.warning.cut-short {
                    "The word diff was cut short (its time budget ran out): "
                    (not_diffed.len()) " of the " (changes.len())
                    " changed tools are not diffed, shown whole and unmarked: "
                    @for (i, name) in not_diffed.iter().enumerate() {
                        @if i > 0 { ", " }
                        code { (escape_trimmed(name, 80)) }
                    }
                }
            }
            @for (c, diff) in changes.iter().zip(diffs) {
                @let kind = match (&c.old, &c.new) {
                    (None, Some(_)) => "added",
                    (Some(_), None) => "removed",
                    _ => "changed",
                };
                h3 {
                    code { (escape(&c.name)) } " " span.mark { (kind) }
                    @if diff.is_none() { " " span.mark.mark-not-diffed { "not diffed" } }
                }
                @let (old, new) = diff.unwrap_or_else(|| unmarked(c.old.as_deref(), c.new.as_deref()));
                div.diff {
                    div.old { h4 { "Accepted" } (old) }
                    div.new { h4 { "Now" } (new) }
                }
            }
        }
    }
}

/// Both sides of a change shown whole, nothing marked (a diff that was not made).
fn unmarked(old: Option<&str>, new: Option<&str>) -> (Markup, Markup) {
    let one = |text: Option<&str>| match text {
        Some(t) => html! { pre { (escape_multiline(t)) } },
        None => html! { p.empty { "(none)" } },
    };
    (one(old), one(new))
}

/// The two sides of a word diff: removed words in `<del>` on the old side, added ones in
/// `<ins>` on the new side. A missing side says so; texts above [`MAX_DIFF_CHARS`] are shown
/// whole, unmarked; a changed part too long or too different to diff word by word
/// ([`MAX_DIFF_TOKENS`], [`MAX_DIFF_EDITS`]) is marked whole. `Err` when `spent` said the
/// budget is used up (before the diff, or at one of its steps): nothing was marked.
fn word_diff(
    old: Option<&str>,
    new: Option<&str>,
    spent: &mut dyn FnMut() -> bool,
) -> Result<(Markup, Markup), Cut> {
    let missing = |what: &str| html! { p.empty { (what) } };
    Ok(match (old, new) {
        (None, None) => (missing("(none)"), missing("(none)")),
        (None, Some(n)) => (
            missing("(not in the accepted baseline)"),
            html! { pre { ins { (escape_multiline(n)) } } },
        ),
        (Some(o), None) => (
            html! { pre { del { (escape_multiline(o)) } } },
            missing("(removed)"),
        ),
        (Some(o), Some(n)) if o.len() > MAX_DIFF_CHARS || n.len() > MAX_DIFF_CHARS => (
            html! { p.muted { "(too long to mark)" } pre { (escape_multiline(o)) } },
            html! { p.muted { "(too long to mark)" } pre { (escape_multiline(n)) } },
        ),
        (Some(o), Some(n)) => {
            if spent() {
                return Err(Cut::OutOfTime);
            }
            let (a, b) = (words(o), words(n));
            let (changes, whole) = match diff_words(&a, &b, spent) {
                Ok(changes) => (changes, false),
                Err(Cut::TooDifferent) => (marked_whole(&a, &b), true),
                Err(Cut::OutOfTime) => return Err(Cut::OutOfTime),
            };
            let note = html! {
                @if whole { p.muted { "(too different to mark word by word: the changed part is marked whole)" } }
            };
            (
                html! { (note) (side(&changes, Tag::Delete)) },
                html! { (note) (side(&changes, Tag::Insert)) },
            )
        }
    })
}

/// `text` as tokens: each word (a run of characters that are not white space) and each run of
/// white space, in order; joined they are `text`.
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut space = None;
    for (i, c) in text.char_indices() {
        let is_space = c.is_whitespace();
        if space.is_some_and(|s| s != is_space) {
            out.push(&text[start..i]);
            start = i;
        }
        space = Some(is_space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// How many tokens `a` and `b` share at their start, and then at their end.
fn common_ends(a: &[&str], b: &[&str]) -> (usize, usize) {
    let start = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let end = a[start..]
        .iter()
        .rev()
        .zip(b[start..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (start, end)
}

/// The coarse diff: the common start and end equal, everything between removed and added.
fn marked_whole<'t>(a: &[&'t str], b: &[&'t str]) -> Vec<(Tag, &'t str)> {
    let (start, end) = common_ends(a, b);
    let mut out: Vec<(Tag, &str)> = a[..start].iter().map(|t| (Tag::Equal, *t)).collect();
    out.extend(a[start..a.len() - end].iter().map(|t| (Tag::Delete, *t)));
    out.extend(b[start..b.len() - end].iter().map(|t| (Tag::Insert, *t)));
    out.extend(a[a.len() - end..].iter().map(|t| (Tag::Equal, *t)));
    out
}

/// The word diff of token lists `a` (old) and `b` (new): the common start and end set aside
/// (linear), the part between diffed by [`myers`] within [`MAX_DIFF_TOKENS`] and
/// [`MAX_DIFF_EDITS`].
fn diff_words<'t>(
    a: &[&'t str],
    b: &[&'t str],
    spent: &mut dyn FnMut() -> bool,
) -> Result<Vec<(Tag, &'t str)>, Cut> {
    let (start, end) = common_ends(a, b);
    let (am, bm) = (&a[start..a.len() - end], &b[start..b.len() - end]);
    if am.len() > MAX_DIFF_TOKENS || bm.len() > MAX_DIFF_TOKENS {
        return Err(Cut::TooDifferent);
    }
    // Tokens as numbers: the diff compares integers, not strings.
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut id = |t: &'t str| {
        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        *ids.entry(t).or_insert(next)
    };
    let ai: Vec<u32> = am.iter().map(|t| id(t)).collect();
    let bi: Vec<u32> = bm.iter().map(|t| id(t)).collect();
    let script = myers(&ai, &bi, MAX_DIFF_EDITS, spent)?;
    let mut out: Vec<(Tag, &str)> = a[..start].iter().map(|t| (Tag::Equal, *t)).collect();
    let (mut i, mut j) = (0, 0);
    for tag in script {
        let token = match tag {
            Tag::Equal => {
                j += 1;
                i += 1;
                am.get(i - 1)
            }
            Tag::Delete => {
                i += 1;
                am.get(i - 1)
            }
            Tag::Insert => {
                j += 1;
                bm.get(j - 1)
            }
        };
        out.push((tag, token.ok_or(Cut::TooDifferent)?));
    }
    if (i, j) != (am.len(), bm.len()) {
        return Err(Cut::TooDifferent);
    }
    out.extend(a[a.len() - end..].iter().map(|t| (Tag::Equal, *t)));
    Ok(out)
}

/// A shortest edit script from `a` to `b` (Myers' O(ND) greedy algorithm, "An O(ND)
/// Difference Algorithm and Its Variations", 1986), in order: one [`Tag`] per token kept,
/// removed or added. At most `max_edits` removals and additions ([`Cut::TooDifferent`]
/// beyond): its time is O((N + M) · max_edits) and it keeps O(max_edits²) numbers. `spent` is
/// asked at every step (one more edit); [`Cut::OutOfTime`] when it says yes.
fn myers(
    a: &[u32],
    b: &[u32],
    max_edits: usize,
    spent: &mut dyn FnMut() -> bool,
) -> Result<Vec<Tag>, Cut> {
    let (n, m) = (a.len() as i64, b.len() as i64);
    let limit = max_edits.min(a.len() + b.len());
    // trace[d]: after step d, the furthest x reached on each diagonal k = x - y, for k in
    // -d..=d (at index k + d; the diagonals of the other parity stay 0, unused).
    let mut trace: Vec<Vec<i64>> = Vec::new();
    for d in 0..=limit {
        if spent() {
            return Err(Cut::OutOfTime);
        }
        let di = d as i64;
        let mut v = vec![0i64; 2 * d + 1];
        let prev = trace.last();
        let at = |k: i64| -> i64 {
            prev.and_then(|p| usize::try_from(k + di - 1).ok().and_then(|i| p.get(i)))
                .copied()
                .unwrap_or(0)
        };
        for k in (-di..=di).step_by(2) {
            let mut x = if d == 0 {
                0
            } else if k == -di || (k != di && at(k - 1) < at(k + 1)) {
                at(k + 1)
            } else {
                at(k - 1) + 1
            };
            let mut y = x - k;
            while x < n && y >= 0 && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(k + di) as usize] = x;
            if x >= n && y >= m {
                trace.push(v);
                return backtrack(&trace, n, m);
            }
        }
        trace.push(v);
    }
    Err(Cut::TooDifferent)
}

/// The edit script of the path [`myers`] found to (n, m), read back through its `trace`.
fn backtrack(trace: &[Vec<i64>], n: i64, m: i64) -> Result<Vec<Tag>, Cut> {
    let mut script = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..trace.len()).rev() {
        let di = d as i64;
        let prev = &trace[d - 1];
        let at = |k: i64| -> Result<i64, Cut> {
            usize::try_from(k + di - 1)
                .ok()
                .and_then(|i| prev.get(i))
                .copied()
                .ok_or(Cut::TooDifferent)
        };
        let k = x - y;
        let down = k == -di || (k != di && at(k - 1)? < at(k + 1)?);
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k)?;
        let prev_y = prev_x - prev_k;
        // Where the move of step d ended; the snake after it is equal tokens.
        let (mx, my) = if down {
            (prev_x, prev_y + 1)
        } else {
            (prev_x + 1, prev_y)
        };
        while x > mx && y > my {
            script.push(Tag::Equal);
            x -= 1;
            y -= 1;
        }
        script.push(if down { Tag::Insert } else { Tag::Delete });
        (x, y) = (prev_x, prev_y);
    }
    while x > 0 && y > 0 {
        script.push(Tag::Equal);
        x -= 1;
        y -= 1;
    }
    if (x, y) != (0, 0) {
        return Err(Cut::TooDifferent);
    }
    script.reverse();
    Ok(script)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Confidence, Evidence, Location};
    use crate::model::Policy;
    use crate::report::badge::{self, BadgeColor};

    const HOSTILE: &str =
        "Adds.<script>alert(1)</script>\u{1b}[31mred\u{200B}zw\u{202E}evil\"'&<img src=x>";

    fn target(name: &str) -> TargetRow {
        TargetRow {
            name: name.into(),
            url: format!("http://127.0.0.1:1/{name}?<script>"),
            every_ms: 86_400_000,
        }
    }

    fn run(id: i64) -> RunSummary {
        RunSummary {
            id,
            target: "prod".into(),
            slot: 0,
            started_ms: 1_764_590_400_000,
            finished_ms: Some(1_764_590_401_500),
            status: RunStatus::Complete,
            exit_code: Some(1),
            counts: Counts {
                high: 1,
                ..Counts::default()
            },
            tool_list_sha256: Some("ab".repeat(32)),
            requests: 12,
            reason: Some(format!("reason {HOSTILE}")),
            worker: None,
            proof: None,
        }
    }

    fn hostile_report() -> Report {
        let mut r = Report::new("http://127.0.0.1:1/mcp", Policy::default());
        r.findings.push(Finding {
            check: "META-02".into(),
            rule: Some("P2".into()),
            subcode: None,
            title: format!("Title {HOSTILE}"),
            message: Some(format!("Message {HOSTILE}")),
            severity: Severity::High,
            confidence: Confidence::High,
            location: Location {
                pointer: Some("/tools/0/description".into()),
                tool: Some(format!("tool{HOSTILE}")),
                server: None,
            },
            evidence: Evidence {
                text: Some(HOSTILE.into()),
                exchanges: vec![Exchange {
                    request: Message {
                        method: Some("POST".into()),
                        url: Some("http://127.0.0.1:1/mcp".into()),
                        status: None,
                        headers: vec![("content-type".into(), "application/json".into())],
                        body: r#"{"method":"tools/list"}"#.into(),
                        truncated: false,
                    },
                    response: Some(Message {
                        method: None,
                        url: None,
                        status: Some(200),
                        headers: vec![("x-evil".into(), HOSTILE.into())],
                        body: format!("{HOSTILE}\n</pre><script>alert(2)</script>"),
                        truncated: true,
                    }),
                    note: None,
                }],
            },
            references: vec!["MCP03 Tool Poisoning".into()],
            fix: "Remove it.".into(),
            fingerprint: String::new(),
            suppressed: None,
            default_severity: None,
            new: Some(true),
        });
        r
    }

    fn assert_inert(html: &str) {
        let lower = html.to_lowercase();
        assert!(!lower.contains("<script"), "a script element:\n{html}");
        assert!(
            !lower.contains("<img src=x"),
            "an injected element:\n{html}"
        );
        assert!(!html.contains('\u{1b}'), "a raw ESC");
        assert!(!html.contains('\u{200B}'), "a raw zero-width space");
        assert!(!html.contains('\u{202E}'), "a raw bidi override");
        assert!(!lower.contains("style="), "an inline style");
    }

    fn diff_text(old: &str, new: &str) -> String {
        let changes = [ToolChange {
            name: "add".into(),
            old: Some(old.into()),
            new: Some(new.into()),
        }];
        run_page(&target("prod"), &run(1), None, &changes, &mut || false).into_string()
    }

    #[test]
    fn hostile_text_is_shown_inert() {
        let changes = [ToolChange {
            name: format!("evil{HOSTILE}"),
            old: Some(format!("\"{HOSTILE}\"")),
            new: Some("\"plain\"".into()),
        }];
        let report = hostile_report();
        let html = run_page(
            &target("prod"),
            &run(7),
            Some(&report),
            &changes,
            &mut || false,
        )
        .into_string();
        assert_inert(&html);
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("[U+001B][31mred[U+200B]zw[U+202E]evil"),
            "{html}"
        );
        assert!(
            html.contains("&lt;/pre&gt;&lt;script&gt;alert(2)"),
            "{html}"
        );
        assert!(html.contains("HTTP 200"));
        assert!(html.contains("(body truncated)"));
        assert!(html.contains("mark-new"));

        let page = target_page(
            &target("prod"),
            &badge::of_report(None, None, None, chrono::Utc::now()),
            &[run(1), run(2)],
        )
        .into_string();
        assert_inert(&page);
        assert!(page.contains("reason Adds.&lt;script&gt;"));
    }

    #[test]
    fn the_run_page_names_the_proof_the_run_relied_on() {
        let mut r = run(4);
        r.proof = Some(crate::daemon::store::ProofRecord {
            method: "dns-txt".into(),
            host: format!("mcp.example.com{HOSTILE}"),
            verified_ms: Some(1_764_504_000_000),
            expires_ms: Some(1_772_280_000_000),
        });
        let html = run_page(&target("prod"), &r, None, &[], &mut || false).into_string();
        assert_inert(&html);
        assert!(
            html.contains("dns-txt for mcp.example.comAdds.&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains(
                ", verified 2025-11-30 12:00:00 UTC, valid until 2026-02-28 12:00:00 UTC"
            ),
            "{html}"
        );
        let html = run_page(&target("prod"), &run(5), None, &[], &mut || false).into_string();
        assert!(html.contains("none (the gate stopped the run"), "{html}");
    }

    #[test]
    fn findings_are_grouped_by_severity_with_marks() {
        let mut report = hostile_report();
        let mut low = report.findings[0].clone();
        low.severity = Severity::Low;
        low.new = None;
        low.suppressed = Some(crate::finding::Suppressed {
            reason: "accepted risk".into(),
            until: Some("2027-03-01".into()),
        });
        report.findings.push(low);
        let html =
            run_page(&target("prod"), &run(3), Some(&report), &[], &mut || false).into_string();
        let high = html.find("High (1)").expect("a high group");
        let low = html.find("Low (1)").expect("a low group");
        assert!(high < low);
        assert!(html.contains("Suppressed: accepted risk (until 2027-03-01)"));
        assert!(!html.contains("Tools changed since"));
    }

    #[test]
    fn word_diff_marks_changed_words_only() {
        let html = diff_text(
            "{\n  \"description\": \"Adds two numbers.\"\n}",
            "{\n  \"description\": \"Adds two numbers, then reads ~/.ssh/id_rsa.\"\n}",
        );
        assert!(
            html.contains("Tools changed since the accepted baseline"),
            "{html}"
        );
        assert!(html.contains("<del>numbers.&quot;</del>"), "{html}");
        assert!(
            html.contains("<ins>numbers, then reads ~/.ssh/id_rsa.&quot;</ins>"),
            "{html}"
        );
        assert!(!html.contains("<del>Adds</del>") && !html.contains("<ins>Adds</ins>"));
        assert_inert(&html);
        // A hidden character in a changed word is marked and visible.
        let html = diff_text("\"a b\"", "\"a b\u{200B}\"");
        assert!(html.contains("<ins>b[U+200B]&quot;</ins>"), "{html}");
    }

    #[test]
    fn added_and_removed_tools_show_one_side() {
        let changes = [
            ToolChange {
                name: "new_tool".into(),
                old: None,
                new: Some("{}".into()),
            },
            ToolChange {
                name: "gone".into(),
                old: Some("{}".into()),
                new: None,
            },
        ];
        let html = run_page(&target("prod"), &run(1), None, &changes, &mut || false).into_string();
        assert!(html.contains("(not in the accepted baseline)"));
        assert!(html.contains("<ins>{}</ins>") && html.contains("<del>{}</del>"));
        assert!(html.contains("No report is stored for this run."));
    }

    #[test]
    fn tool_changes_pairs_by_name_and_keeps_only_differences() {
        let at = chrono::DateTime::from_timestamp(0, 0).expect("epoch");
        let inv = |tools: serde_json::Value| {
            Baseline::from_inventory("t", at, &serde_json::json!({ "tools": tools }))
        };
        let old = inv(serde_json::json!([
            {"name": "same", "description": "unchanged"},
            {"name": "edit", "description": "before"},
            {"name": "gone", "description": "x"},
        ]));
        let new = inv(serde_json::json!([
            {"name": "edit", "description": "after"},
            {"name": "same", "description": "unchanged"},
            {"name": "added", "description": "y"},
        ]));
        let changes = tool_changes(Some(&old), &new);
        let names: Vec<&str> = changes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["added", "edit", "gone"]);
        assert!(changes[0].old.is_none() && changes[0].new.is_some());
        assert!(
            changes[1]
                .old
                .as_deref()
                .is_some_and(|t| t.contains("\"before\""))
        );
        assert!(
            changes[1]
                .new
                .as_deref()
                .is_some_and(|t| t.contains("\"after\"") && t.contains('\n'))
        );
        assert!(changes[2].new.is_none());
        // No accepted baseline: every tool is new.
        assert_eq!(tool_changes(None, &new).len(), 3);
        assert!(tool_changes(Some(&new), &new).is_empty());
    }

    #[test]
    fn dashboard_lists_every_target() {
        let cards: Vec<TargetCard> = ["prod", "staging", "dev-1"]
            .into_iter()
            .enumerate()
            .map(|(i, name)| TargetCard {
                target: target(name),
                latest: (i != 2).then(|| run(i as i64 + 1)),
                badge: Badge {
                    label: "mcpprobe".into(),
                    message: "1 high".into(),
                    color: BadgeColor::Orange,
                },
            })
            .collect();
        let html = dashboard(&cards).into_string();
        for name in ["prod", "staging", "dev-1"] {
            assert!(
                html.contains(&format!("href=\"/targets/{name}\"")),
                "{name}: {html}"
            );
            assert!(
                html.contains(&format!("src=\"/badge/{name}.svg\"")),
                "{name}"
            );
        }
        assert!(html.contains("href=\"/targets/prod/runs/1\""));
        assert!(html.contains("not run yet"));
        assert!(html.contains("href=\"/style.css\""));
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_inert(&html);
        assert!(
            dashboard(&[])
                .into_string()
                .contains("No targets are configured.")
        );
    }

    #[test]
    fn names_stay_in_their_path_segment() {
        assert_eq!(target_href("prod-1_a"), "/targets/prod-1_a");
        assert_eq!(
            run_href("a/../b?x#\"", 3),
            "/targets/a%2F..%2Fb%3Fx%23%22/runs/3"
        );
        assert_eq!(badge_href("é"), "/badge/%C3%A9.svg");
    }

    #[test]
    fn stylesheet_styles_the_diff_marks() {
        assert!(STYLE_CSS.contains("del {") && STYLE_CSS.contains("ins {"));
        assert!(!STYLE_CSS.contains("</"));
    }

    /// A text of `n` words `w{seed}_{i}`, one space apart (no two seeds share a word).
    fn distinct_words(seed: u32, n: usize) -> String {
        (0..n)
            .map(|i| format!("w{seed}_{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A budget that is spent from its `allowed + 1`-th question on; counts the questions.
    fn after(allowed: usize) -> (impl FnMut() -> bool, std::rc::Rc<std::cell::Cell<usize>>) {
        let asked = std::rc::Rc::new(std::cell::Cell::new(0));
        let counter = asked.clone();
        let spent = move || {
            counter.set(counter.get() + 1);
            counter.get() > allowed
        };
        (spent, asked)
    }

    fn changed(name: &str, old: String, new: String) -> ToolChange {
        ToolChange {
            name: name.into(),
            old: Some(old),
            new: Some(new),
        }
    }

    #[test]
    fn a_diff_cut_short_inside_its_loop_says_so_and_names_the_tools_left() {
        // One tool whose diff takes hundreds of steps: a budget asked only before each tool
        // would let it run to the end.
        let big = changed("big", distinct_words(1, 300), distinct_words(2, 300));
        let (mut spent, asked) = after(10);
        let html = run_page(
            &target("prod"),
            &run(1),
            None,
            std::slice::from_ref(&big),
            &mut spent,
        )
        .into_string();
        assert!(asked.get() > 10, "asked inside the diff: {}", asked.get());
        assert!(
            asked.get() < 20,
            "and not asked again once spent: {}",
            asked.get()
        );
        assert!(
            html.contains("The word diff was cut short (its time budget ran out): 1 of the 1 changed tools are not diffed"),
            "{html}"
        );
        assert!(html.contains("mark-not-diffed"), "{html}");
        assert!(!html.contains("<del>") && !html.contains("<ins>"), "{html}");
        assert!(
            html.contains("w1_299") && html.contains("w2_299"),
            "shown whole"
        );

        // Three tools, the budget spent during the second: the first is marked, the second
        // and third are named and shown whole; an added tool needs no diff and is shown as it is.
        let changes = [
            changed("a_small", "\"one two\"".into(), "\"one three\"".into()),
            big.clone(),
            changed("c_small", "\"x y\"".into(), "\"x z\"".into()),
            ToolChange {
                name: "d_added".into(),
                old: None,
                new: Some("\"fresh\"".into()),
            },
        ];
        let (mut spent, _) = after(10);
        let html = run_page(&target("prod"), &run(1), None, &changes, &mut spent).into_string();
        assert!(
            html.contains("2 of the 4 changed tools are not diffed, shown whole and unmarked: <code>big</code>, <code>c_small</code>"),
            "{html}"
        );
        assert!(html.contains("<del>two&quot;</del>"), "{html}");
        assert!(html.contains("<ins>three&quot;</ins>"), "{html}");
        assert!(!html.contains("<ins>z"), "{html}");
        assert!(html.contains("<ins>&quot;fresh&quot;</ins>"), "{html}");
        assert_eq!(html.matches("mark-not-diffed").count(), 2, "{html}");

        // With the budget never spent, nothing is said.
        let html = run_page(&target("prod"), &run(1), None, &changes, &mut || false).into_string();
        assert!(!html.contains("cut short") && !html.contains("mark-not-diffed"));
        assert!(html.contains("<ins>z&quot;</ins>"), "{html}");
    }

    #[test]
    fn a_diff_too_different_or_too_long_to_mark_word_by_word_is_marked_whole() {
        // Every word changed: more than MAX_DIFF_EDITS edits.
        let (o, n) = (distinct_words(1, 2000), distinct_words(2, 2000));
        let (a, b) = (words(&o), words(&n));
        assert_eq!(
            diff_words(&a, &b, &mut || false).err(),
            Some(Cut::TooDifferent)
        );
        // Beyond MAX_DIFF_TOKENS on a side once the common ends are set aside.
        let (o, n) = (
            format!("start {} end", distinct_words(3, 5000)),
            format!("start {} end", distinct_words(3, 4000)),
        );
        let (a, b) = (words(&o), words(&n));
        assert!(a.len() > MAX_DIFF_TOKENS);
        assert_eq!(
            diff_words(&a, &b, &mut || false).err(),
            Some(Cut::TooDifferent)
        );
        let html = diff_text(
            &format!("\"keep {} tail\"", distinct_words(1, 2000)),
            &format!("\"keep {} tail\"", distinct_words(2, 2000)),
        );
        assert!(
            html.contains("(too different to mark word by word"),
            "{html}"
        );
        assert!(html.contains("<del>w1_0 "), "{html}");
        assert!(html.contains("<ins>w2_0 "), "{html}");
        assert!(!html.contains("<del>&quot;keep") && !html.contains("tail&quot;</del>"));
        assert!(!html.contains("cut short"));
    }

    /// A small xorshift generator: the same sequences on every run.
    fn sequence(state: &mut u64, len: usize, alphabet: u64) -> Vec<u32> {
        (0..len)
            .map(|_| {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                (*state % alphabet) as u32
            })
            .collect()
    }

    /// The length of the longest common subsequence (quadratic; for the check only).
    fn lcs(a: &[u32], b: &[u32]) -> usize {
        let mut row = vec![0usize; b.len() + 1];
        for x in a {
            let mut diag = 0;
            for (j, y) in b.iter().enumerate() {
                let up = row[j + 1];
                row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
                diag = up;
            }
        }
        row[b.len()]
    }

    #[test]
    fn myers_finds_a_shortest_edit_script() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for round in 0..400 {
            let (la, lb) = (round % 23, (round * 7) % 19);
            let alphabet = 1 + (round as u64 % 5);
            let a = sequence(&mut state, la, alphabet);
            let b = sequence(&mut state, lb, alphabet);
            let script = myers(&a, &b, MAX_DIFF_EDITS, &mut || false).expect("a script");
            // The script rebuilds both sides…
            let (mut i, mut j) = (0, 0);
            let (mut old, mut new) = (Vec::new(), Vec::new());
            for tag in &script {
                match tag {
                    Tag::Equal => {
                        assert_eq!(a[i], b[j], "{a:?} {b:?} {script:?}");
                        old.push(a[i]);
                        new.push(b[j]);
                        i += 1;
                        j += 1;
                    }
                    Tag::Delete => {
                        old.push(a[i]);
                        i += 1;
                    }
                    Tag::Insert => {
                        new.push(b[j]);
                        j += 1;
                    }
                }
            }
            assert_eq!((old, new), (a.clone(), b.clone()));
            // …with as few edits as can be.
            let edits = script.iter().filter(|t| **t != Tag::Equal).count();
            assert_eq!(edits, la + lb - 2 * lcs(&a, &b), "{a:?} {b:?}");
        }
        // A cap below the edit distance gives up; one at it does not.
        let (a, b) = ([1, 2, 3], [4, 5]);
        assert_eq!(
            myers(&a, &b, 4, &mut || false).err(),
            Some(Cut::TooDifferent)
        );
        assert!(myers(&a, &b, 5, &mut || false).is_ok());
    }

    #[test]
    fn by_name_keeps_every_tool_of_a_duplicated_name() {
        let tools = serde_json::json!([
            {"name": "x", "description": "first"},
            {"name": "x (2)", "description": "named so"},
            {"name": "x", "description": "second"},
            {"name": "x", "description": "third"},
            {"description": "no name"},
            {"name": "y"},
        ]);
        let tools = tools.as_array().expect("an array");
        let keyed = by_name(tools);
        let keys: Vec<&str> = keyed.keys().map(String::as_str).collect();
        assert_eq!(keys, ["(unnamed)", "x", "x (2)", "x (3)", "x (4)", "y"]);
        let text = |k: &str| keyed.get(k).map(String::as_str).unwrap_or_default();
        assert!(text("x").contains("first"));
        assert!(
            text("x (2)").contains("named so"),
            "a real name keeps its key"
        );
        assert!(text("x (3)").contains("second"));
        assert!(text("x (4)").contains("third"));

        // 20,000 tools of one name: each is kept, in linear time (quadratic took minutes).
        let many: Vec<serde_json::Value> = (0..20_000)
            .map(|i| serde_json::json!({"name": "dup", "description": i}))
            .collect();
        let started = std::time::Instant::now();
        let keyed = by_name(&many);
        let took = started.elapsed();
        assert_eq!(keyed.len(), 20_000);
        assert!(
            keyed
                .get("dup (20000)")
                .is_some_and(|t| t.contains("19999"))
        );
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn statuses_use_the_serialised_names() {
        use crate::catalogue::Kind;
        use crate::model::{CheckRecord, CheckStatus, RunOutcome};
        let mut report = hostile_report();
        report.checks = [
            CheckStatus::Ran,
            CheckStatus::Skipped,
            CheckStatus::NotImplemented,
            CheckStatus::Error,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, status)| CheckRecord {
            id: format!("C-{i}"),
            kind: Kind::Active,
            status,
            reason: None,
            findings: 0,
            requests: 0,
        })
        .collect();
        for outcome in [
            RunOutcome::Complete,
            RunOutcome::Refused,
            RunOutcome::Incomplete,
        ] {
            report.outcome = outcome;
            let json = serde_json::to_value(&report).expect("json");
            let html =
                run_page(&target("prod"), &run(1), Some(&report), &[], &mut || false).into_string();
            let named = json["outcome"].as_str().expect("outcome");
            assert!(
                html.contains(&format!("<dd>{named}</dd>")),
                "{named}: {html}"
            );
            for check in json["checks"].as_array().expect("checks") {
                for key in ["status", "kind"] {
                    let name = check[key].as_str().expect("name");
                    assert!(html.contains(&format!("<td>{name}</td>")), "{name}: {html}");
                }
            }
        }
        let html =
            run_page(&target("prod"), &run(1), Some(&report), &[], &mut || false).into_string();
        assert!(html.contains("<td>not_implemented</td>"), "{html}");
        assert!(!html.contains("notimplemented"), "{html}");
    }
}
