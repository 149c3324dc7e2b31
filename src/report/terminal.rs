//! The terminal summary: findings grouped by severity, each with its evidence and fix.
//!
//! Every string that came from a server (or from a file the user checked) goes through
//! [`escape`](crate::util::escape::escape); colour is only added when the caller says the output is a
//! TTY without `NO_COLOR`.

use std::fmt::Write as _;

use crate::catalogue::catalogue;
use crate::finding::{Finding, Severity};
use crate::model::{CheckStatus, Report, RunOutcome};
use crate::util::escape::{escape, escape_trimmed};

/// Longest evidence excerpt shown in the terminal (the JSON report has it all).
const EVIDENCE_CHARS: usize = 240;
/// Most lines of a baseline change shown in the terminal.
const EVIDENCE_LINES: usize = 18;

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn severity(&self, s: Severity, text: &str) -> String {
        let code = match s {
            Severity::Critical => "1;35",
            Severity::High => "1;31",
            Severity::Medium => "1;33",
            Severity::Low => "1;34",
            Severity::Info => "1;36",
        };
        self.wrap(code, text)
    }
    fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }
    fn dim(&self, text: &str) -> String {
        self.wrap("2", text)
    }
}

pub fn render(report: &Report, color: bool) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} · target {}",
        p.bold("mcpprobe"),
        report.tool.version,
        escape(&report.target)
    );
    if let Some(fp) = &report.fingerprint {
        let eras: Vec<String> = fp.eras.iter().map(|e| escape(e)).collect();
        let _ = writeln!(
            out,
            "eras: {} · transport: {}",
            if eras.is_empty() {
                "none".to_string()
            } else {
                eras.join(", ")
            },
            fp.transport
                .as_deref()
                .map(escape)
                .unwrap_or_else(|| "unknown".into())
        );
    }
    if let Some(sha) = &report.tool_list_sha256 {
        let _ = writeln!(out, "tool list sha256: {}", escape(sha));
    }
    if let Some(d) = &report.discovery {
        render_discovery(&mut out, &p, d);
    }
    if let Some(reason) = &report.reason {
        let label = match report.outcome {
            RunOutcome::Refused => "refused",
            RunOutcome::Incomplete => "incomplete",
            RunOutcome::Complete => "note",
        };
        let _ = writeln!(out, "{}: {}", p.bold(label), escape(reason));
    }

    for sev in Severity::ALL_DESCENDING {
        // Suppressed findings are only counted; known ones (--fail-on-new) are shown, marked.
        let group: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.suppressed.is_none() && f.severity == sev)
            .collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out);
        let header = format!("── {} ({}) ──", sev.as_str().to_uppercase(), group.len());
        let _ = writeln!(out, "{}", p.severity(sev, &header));
        for f in group {
            render_finding(&mut out, &p, f);
        }
    }

    let errored: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::Error)
        .collect();
    if !errored.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", p.bold("checks that failed:"));
        for c in errored {
            let _ = writeln!(
                out,
                "  {}: {}",
                c.id,
                escape(c.reason.as_deref().unwrap_or("no reason recorded"))
            );
        }
    }

    let plans: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::NotImplemented)
        .filter_map(|c| {
            c.reason
                .as_deref()
                .and_then(|r| r.split_once("; plan: "))
                .map(|(_, p)| (c, p))
        })
        .collect();
    if !plans.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            p.bold("active checks (not implemented in v0.1; nothing was sent), their plans:")
        );
        for (c, plan) in plans {
            let _ = writeln!(out, "  {}: {}", c.id, escape_trimmed(plan, 300));
        }
    }

    let _ = writeln!(out);
    let _ = writeln!(out, "checks: {}", report.checks_line());
    let (n, by_sev, notes) = report.findings_summary();
    let mut line = format!("findings: {n} ({by_sev})");
    for note in notes {
        let _ = write!(line, "; {note}");
    }
    let _ = writeln!(out, "{line}");
    if let Some(prev) = &report.previous_report {
        let _ = writeln!(out, "compared with {}", escape(&prev.file));
    }
    for w in &report.warnings {
        let _ = writeln!(out, "{} {}", p.bold("warning:"), escape(w));
    }
    if report.requests_sent > 0 {
        let _ = writeln!(out, "requests sent: {}", report.requests_sent);
    }
    let verdict = match (report.exit_code, report.policy.fail_on) {
        (0, Some(t)) => format!("exit 0: nothing at or above {t}"),
        (0, None) => "exit 0: --fail-on none".to_string(),
        (1, Some(t)) => format!("exit 1: findings at or above {t}"),
        (2, _) => "exit 2: stopped by the gate".to_string(),
        (3, _) => "exit 3: scan incomplete".to_string(),
        (n, _) => format!("exit {n}"),
    };
    let _ = writeln!(out, "{}", p.bold(&verdict));
    out
}

/// The client files read and what became of each server (`scan --discover`).
fn render_discovery(out: &mut String, p: &Paint, d: &crate::model::DiscoveryRecord) {
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", p.bold("client files:"));
    for c in &d.configs {
        let what = match &c.error {
            Some(e) => format!("not read: {}", escape(e)),
            None => format!("{} servers", c.servers),
        };
        let _ = writeln!(
            out,
            "  {} ({}) {}: {what}",
            escape(&c.client),
            escape(&c.scope),
            escape(&c.path)
        );
        for problem in c.problems.iter().take(8) {
            let _ = writeln!(out, "    entry not read: {}", escape_trimmed(problem, 200));
        }
    }
    if d.configs.is_empty() {
        let _ = writeln!(
            out,
            "  none found ({} documented locations searched)",
            d.absent
        );
    }
    let _ = writeln!(out, "{}", p.bold("servers:"));
    for s in &d.servers {
        let how = match (&s.command, &s.url) {
            (Some(c), _) => c.join(" "),
            (None, Some(u)) => u.clone(),
            (None, None) => String::new(),
        };
        let clients: Vec<String> = s.entries.iter().map(|e| escape(&e.client)).collect();
        let status = s.status.replace('_', " ");
        let _ = writeln!(
            out,
            "  {} [{}] {} ({}): {}{}",
            p.bold(&escape_trimmed(&s.name, 80)),
            escape(&s.kind),
            escape_trimmed(&how, 160),
            clients.join(", "),
            status,
            s.reason
                .as_deref()
                .map(|r| format!(": {}", escape_trimmed(r, 240)))
                .unwrap_or_default()
        );
        if s.status == "scanned" {
            let _ = writeln!(
                out,
                "    {} · {} · {}",
                count(s.tools.unwrap_or(0), "tool"),
                count(s.findings, "finding"),
                count(
                    usize::try_from(s.requests_sent).unwrap_or(usize::MAX),
                    "request"
                )
            );
        }
        for cmd in &s.to_allow {
            let _ = writeln!(out, "    to allow it: {}", escape(cmd));
        }
        if !s.env_withheld.is_empty() {
            let _ = writeln!(
                out,
                "    withheld: {}",
                escape_trimmed(&s.env_withheld.join(", "), 300)
            );
        }
    }
}

/// "1 tool", "3 tools".
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn render_finding(out: &mut String, p: &Paint, f: &Finding) {
    let id = match &f.rule {
        Some(rule) => format!("{}/{}", f.check, rule),
        None => f.check.clone(),
    };
    let mark = match f.new {
        Some(true) => format!(" {}", p.bold("[new]")),
        Some(false) => format!(" {}", p.dim("(known: in the previous report, not counted)")),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "{} {}{mark}",
        p.severity(f.severity, &format!("{}[{}]", f.severity, id)),
        p.bold(&escape(&f.title))
    );
    if let Some(default) = f.default_severity {
        let _ = writeln!(
            out,
            "   = severity {} set by the configuration (the catalogue says {default})",
            f.severity
        );
    }
    let mut place = Vec::new();
    if let Some(server) = &f.location.server {
        place.push(format!("server `{}`", escape_trimmed(server, 80)));
    }
    if let Some(tool) = &f.location.tool {
        place.push(format!("tool `{}`", escape_trimmed(tool, 80)));
    }
    if let Some(ptr) = &f.location.pointer {
        place.push(format!("at {}", escape_trimmed(ptr, 120)));
    }
    if !place.is_empty() {
        let _ = writeln!(out, "  --> {}", place.join(" "));
    }
    if let Some(msg) = &f.message {
        let _ = writeln!(out, "   = {}", escape(msg));
    }
    if let Some(text) = &f.evidence.text {
        if f.check.starts_with("BASE-") {
            // A baseline change is a block of lines (pointer, old, new); every value in it is a
            // JSON literal, so the line breaks are the block's own.
            let lines: Vec<&str> = text.lines().collect();
            for line in lines.iter().take(EVIDENCE_LINES) {
                let _ = writeln!(out, "   | {}", escape_trimmed(line, EVIDENCE_CHARS));
            }
            if lines.len() > EVIDENCE_LINES {
                let _ = writeln!(
                    out,
                    "   | … {} more lines in the JSON report",
                    lines.len() - EVIDENCE_LINES
                );
            }
        } else {
            let _ = writeln!(out, "   | \"{}\"", escape_trimmed(text, EVIDENCE_CHARS));
        }
    }
    for x in f.evidence.exchanges.iter().take(3) {
        let req = &x.request;
        let status = match &x.response {
            Some(r) => r
                .status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "reply".into()),
            None => x.note.clone().unwrap_or_else(|| "no response".into()),
        };
        let _ = writeln!(
            out,
            "   | {} {}→ {}",
            escape(req.method.as_deref().unwrap_or("?")),
            req.url
                .as_deref()
                .map(|u| format!("{} ", escape_trimmed(u, 120)))
                .unwrap_or_default(),
            escape_trimmed(&status, 80)
        );
    }
    if f.evidence.exchanges.len() > 3 {
        let _ = writeln!(
            out,
            "   | … {} more exchanges in the JSON report",
            f.evidence.exchanges.len() - 3
        );
    }
    let refs: Vec<String> = f
        .references
        .iter()
        .map(|r| catalogue().taxonomy.describe(r))
        .collect();
    let _ = writeln!(
        out,
        "   {}",
        p.dim(&format!(
            "confidence {} · {}",
            f.confidence,
            refs.join(" · ")
        ))
    );
    let _ = writeln!(out, "   help: {}", escape(f.fix.trim()));
}
