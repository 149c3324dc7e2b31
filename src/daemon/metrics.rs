//! Prometheus text format (SPEC §8.1): `mcpprobe_scans_total{outcome}`,
//! `mcpprobe_findings{severity}` of the latest runs, `mcpprobe_scan_duration_seconds`
//! (histogram), `mcpprobe_requests_total`, `mcpprobe_gate_refusals_total{reason}`,
//! `mcpprobe_targets`, and per target only when asked (`?per_target=1`). Counts come from the
//! store (they survive restarts); the duration histogram is this process's.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use super::store::{RunStatus, Totals};
use crate::finding::Severity;

/// Upper bounds of the duration buckets, in seconds.
const BUCKETS: [f64; 10] = [0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0, 300.0];

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// This process's scan durations.
#[derive(Debug, Default)]
pub struct Metrics {
    durations: Mutex<Histogram>,
}

impl Metrics {
    pub fn record(&self, _status: RunStatus, d: Duration) {
        if let Ok(mut h) = self.durations.lock() {
            let s = d.as_secs_f64();
            for (i, b) in BUCKETS.iter().enumerate() {
                if s <= *b {
                    h.counts[i] += 1;
                }
            }
            h.count += 1;
            h.sum += s;
        }
    }

    /// The exposition text.
    pub fn render(&self, totals: &Totals, per_target: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP mcpprobe_scans_total Finished scans by outcome.\n# TYPE mcpprobe_scans_total counter"
        );
        for status in [
            RunStatus::Complete,
            RunStatus::Refused,
            RunStatus::Incomplete,
            RunStatus::Interrupted,
        ] {
            let n = totals
                .runs_by_status
                .iter()
                .find(|(s, _)| *s == status)
                .map_or(0, |(_, n)| *n);
            let _ = writeln!(
                out,
                "mcpprobe_scans_total{{outcome=\"{}\"}} {n}",
                status.as_str()
            );
        }
        let _ = writeln!(
            out,
            "# HELP mcpprobe_findings Findings that count in each target's latest run, by severity.\n# TYPE mcpprobe_findings gauge"
        );
        for s in Severity::ALL_DESCENDING {
            let _ = writeln!(
                out,
                "mcpprobe_findings{{severity=\"{}\"}} {}",
                s.as_str(),
                totals.latest_findings.get(s)
            );
        }
        let _ = writeln!(
            out,
            "# HELP mcpprobe_scan_duration_seconds Scan durations in this process.\n# TYPE mcpprobe_scan_duration_seconds histogram"
        );
        let (counts, count, sum) = match self.durations.lock() {
            Ok(h) => (h.counts, h.count, h.sum),
            Err(_) => ([0; BUCKETS.len()], 0, 0.0),
        };
        for (b, n) in BUCKETS.iter().zip(counts) {
            let _ = writeln!(
                out,
                "mcpprobe_scan_duration_seconds_bucket{{le=\"{b}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "mcpprobe_scan_duration_seconds_bucket{{le=\"+Inf\"}} {count}\nmcpprobe_scan_duration_seconds_sum {sum}\nmcpprobe_scan_duration_seconds_count {count}"
        );
        let _ = writeln!(
            out,
            "# HELP mcpprobe_requests_total Requests sent by all scans.\n# TYPE mcpprobe_requests_total counter\nmcpprobe_requests_total {}",
            totals.requests
        );
        let _ = writeln!(
            out,
            "# HELP mcpprobe_gate_refusals_total Scans the gate stopped, by reason.\n# TYPE mcpprobe_gate_refusals_total counter"
        );
        for class in [
            "opted_out",
            "ownership",
            "private_address",
            "active_not_authorised",
        ] {
            let n = totals
                .refusals
                .iter()
                .find(|(c, _)| c == class)
                .map_or(0, |(_, n)| *n);
            let _ = writeln!(
                out,
                "mcpprobe_gate_refusals_total{{reason=\"{class}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP mcpprobe_targets Configured targets.\n# TYPE mcpprobe_targets gauge\nmcpprobe_targets {}",
            totals.targets
        );
        if per_target {
            let _ = writeln!(
                out,
                "# HELP mcpprobe_target_findings Findings that count in the target's latest run.\n# TYPE mcpprobe_target_findings gauge"
            );
            for r in &totals.latest {
                for s in Severity::ALL_DESCENDING {
                    let _ = writeln!(
                        out,
                        "mcpprobe_target_findings{{target=\"{}\",severity=\"{}\"}} {}",
                        label(&r.target),
                        s.as_str(),
                        r.counts.get(s)
                    );
                }
            }
            let _ = writeln!(
                out,
                "# HELP mcpprobe_target_last_run_timestamp_seconds When the target's latest run started.\n# TYPE mcpprobe_target_last_run_timestamp_seconds gauge"
            );
            for r in &totals.latest {
                let _ = writeln!(
                    out,
                    "mcpprobe_target_last_run_timestamp_seconds{{target=\"{}\"}} {}",
                    label(&r.target),
                    r.started_ms / 1000
                );
            }
        }
        out
    }
}

/// A label value escaped as the text format asks (`\`, `"` and line breaks).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
