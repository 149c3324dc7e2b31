//! A Markdown summary of a report: the Action's job summary (SPEC §9). GitHub renders it as
//! HTML, so every string from a server is made visible ([`escape`]) and then has each
//! character that Markdown or HTML would read as markup written as an entity.

use std::fmt::Write as _;

use crate::model::{Report, RunOutcome};
use crate::util::escape::escape_trimmed;

/// Most findings listed in the table (the JSON report and SARIF have them all).
const MAX_ROWS: usize = 100;

/// `text` made inert for a Markdown table cell: visible control characters, at most `max`
/// characters, and no markup.
pub fn cell(text: &str, max: usize) -> String {
    let visible = escape_trimmed(text, max);
    let mut out = String::with_capacity(visible.len());
    for c in visible.chars() {
        match c {
            // `:` and `.` are written as entities too: GitHub links `https://…` and `www.…`
            // in plain text, and a tool description must not put a link in the summary.
            'a'..='z'
            | 'A'..='Z'
            | '0'..='9'
            | ' '
            | ','
            | ';'
            | '/'
            | '\''
            | '"'
            | '='
            | '?'
            | '%'
            | '-' => out.push(c),
            c if c.is_ascii() => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### mcpprobe {}\n", cell(&report.tool.version, 40));
    let outcome = match report.outcome {
        RunOutcome::Complete => "complete",
        RunOutcome::Refused => "refused by the gate",
        RunOutcome::Incomplete => "incomplete",
    };
    let _ = writeln!(
        out,
        "Target {} · scan {outcome} · exit code **{}**\n",
        cell(&report.target, 200),
        report.exit_code
    );
    if let Some(reason) = &report.reason {
        let _ = writeln!(out, "> {}\n", cell(reason, 500));
    }
    let (n, by_sev, notes) = report.findings_summary();
    let mut line = format!("**{n} finding(s) count** ({by_sev})");
    for note in notes {
        let _ = write!(line, " · {}", cell(&note, 200));
    }
    let _ = writeln!(out, "{line}\n");
    for w in &report.warnings {
        let _ = writeln!(out, "- ⚠️ {}", cell(w, 500));
    }
    if !report.warnings.is_empty() {
        out.push('\n');
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out, "| Severity | Check | Tool | Finding | Status |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for f in report.findings.iter().take(MAX_ROWS) {
            let id = match &f.rule {
                Some(r) => format!("{}/{}", f.check, r),
                None => f.check.clone(),
            };
            let mut finding = cell(&f.title, 120);
            if let Some(m) = &f.message {
                let _ = write!(finding, ": {}", cell(m, 200));
            }
            let status = match (&f.suppressed, f.new) {
                (Some(s), _) => format!("suppressed: {}", cell(&s.reason, 160)),
                (None, Some(true)) => "**new**".to_string(),
                (None, Some(false)) => "known".to_string(),
                (None, None) => "counts".to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {finding} | {status} |",
                f.severity,
                cell(&id, 40),
                match (&f.location.server, &f.location.tool) {
                    (Some(s), Some(t)) => cell(&format!("{s}/{t}"), 80),
                    (Some(s), None) => cell(s, 80),
                    (None, Some(t)) => cell(t, 80),
                    (None, None) => String::new(),
                }
            );
        }
        if report.findings.len() > MAX_ROWS {
            let _ = writeln!(
                out,
                "\n… and {} more in the JSON report and the SARIF file.",
                report.findings.len() - MAX_ROWS
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Checks: {} · requests sent: {}",
        report.checks_line(),
        report.requests_sent
    );
    out
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn cells_carry_no_markup() {
        let c = cell(
            "a|b <img src=x> [l](http://x) `c` *d* \u{1b}[31m @team www.evil.example https://evil.example\n",
            200,
        );
        for bad in [
            '|', '<', '>', '[', ']', '(', ')', '`', '*', '@', '\u{1b}', '\n', ':',
        ] {
            assert!(!c.contains(bad), "{bad:?} in {c}");
        }
        assert!(c.contains("&#124;") && c.contains("&#60;img"), "{c}");
        assert!(
            !c.contains("www.") && !c.contains("://"),
            "no autolink: {c}"
        );
    }
}
