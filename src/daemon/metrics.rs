//! Prometheus text format (SPEC §8.1): `mcpprobe_scans_total{outcome}`,
//! `mcpprobe_findings{severity}` of the latest runs, `mcpprobe_scan_duration_seconds`
//! (histogram), `mcpprobe_requests_total`, `mcpprobe_gate_refusals_total{reason}`,
//! `mcpprobe_targets`, and per target only when asked (`?per_target=1`). Counts come from the
//! store (they survive restarts), so they are written as constant metrics of one scrape; the
//! duration histogram is this process's. Every series carries the `worker` label (the
//! daemon's [`super::DaemonConfig::worker`]), so that the scrapes of several workers sharing a
//! store stay apart. `prometheus-client` writes the text (names, `_total`, label escaping) in
//! the classic format (version 0.0.4).

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::store::{RunStatus, Totals};
use crate::finding::Severity;
use crate::model::Refusal;

/// The `Content-Type` of what [`Metrics::render`] writes.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Upper bounds of the duration buckets, in seconds.
const BUCKETS: [f64; 10] = [0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0, 300.0];

/// The outcomes counted, in this order.
const OUTCOMES: [RunStatus; 4] = [
    RunStatus::Complete,
    RunStatus::Refused,
    RunStatus::Incomplete,
    RunStatus::Interrupted,
];

/// The refusal classes counted (the report's `refusal`, by its name), in this order.
const REFUSALS: [Refusal; 4] = [
    Refusal::OptedOut,
    Refusal::Ownership,
    Refusal::PrivateAddress,
    Refusal::ActiveNotAuthorised,
];

/// This process's scan durations.
#[derive(Debug)]
pub struct Metrics {
    durations: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            durations: Histogram::new(BUCKETS),
        }
    }
}

impl Metrics {
    pub fn record(&self, _status: RunStatus, d: Duration) {
        self.durations.observe(d.as_secs_f64());
    }

    /// The exposition text, every series labelled `worker="{worker}"`.
    pub fn render(&self, totals: &Totals, per_target: bool, worker: &str) -> String {
        let mut registry = Registry::with_labels(std::iter::once((
            Cow::Borrowed("worker"),
            Cow::Owned(worker.to_string()),
        )));
        registry.register_collector(Box::new(Scrape {
            totals: totals.clone(),
            per_target,
            durations: self.durations.clone(),
        }));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
        out
    }
}

/// One scrape: the store's totals and this process's histogram, in the order they are shown.
#[derive(Debug)]
struct Scrape {
    totals: Totals,
    per_target: bool,
    durations: Histogram,
}

impl Collector for Scrape {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), fmt::Error> {
        let t = &self.totals;
        let mut m = e.encode_descriptor(
            "mcpprobe_scans",
            "Finished scans by outcome.",
            None,
            MetricType::Counter,
        )?;
        for status in OUTCOMES {
            let n = t
                .runs_by_status
                .iter()
                .find(|(s, _)| *s == status)
                .map_or(0, |(_, n)| *n);
            ConstCounter::new(n).encode(m.encode_family(&[("outcome", status.as_str())])?)?;
        }
        let mut m = e.encode_descriptor(
            "mcpprobe_findings",
            "Findings that count in each target's latest run, by severity.",
            None,
            MetricType::Gauge,
        )?;
        for s in Severity::ALL_DESCENDING {
            ConstGauge::new(t.latest_findings.get(s))
                .encode(m.encode_family(&[("severity", s.as_str())])?)?;
        }
        self.durations.encode(e.encode_descriptor(
            "mcpprobe_scan_duration_seconds",
            "Scan durations in this process.",
            None,
            MetricType::Histogram,
        )?)?;
        ConstCounter::new(t.requests).encode(e.encode_descriptor(
            "mcpprobe_requests",
            "Requests sent by all scans.",
            None,
            MetricType::Counter,
        )?)?;
        let mut m = e.encode_descriptor(
            "mcpprobe_gate_refusals",
            "Scans the gate stopped, by reason.",
            None,
            MetricType::Counter,
        )?;
        for class in REFUSALS.map(Refusal::as_str) {
            let n = t
                .refusals
                .iter()
                .find(|(c, _)| c == class)
                .map_or(0, |(_, n)| *n);
            ConstCounter::new(n).encode(m.encode_family(&[("reason", class)])?)?;
        }
        ConstGauge::new(t.targets).encode(e.encode_descriptor(
            "mcpprobe_targets",
            "Configured targets.",
            None,
            MetricType::Gauge,
        )?)?;
        if !self.per_target {
            return Ok(());
        }
        let mut m = e.encode_descriptor(
            "mcpprobe_target_findings",
            "Findings that count in the target's latest run.",
            None,
            MetricType::Gauge,
        )?;
        for r in &t.latest {
            for s in Severity::ALL_DESCENDING {
                ConstGauge::new(r.counts.get(s)).encode(
                    m.encode_family(&[("target", r.target.as_str()), ("severity", s.as_str())])?,
                )?;
            }
        }
        let mut m = e.encode_descriptor(
            "mcpprobe_target_last_run_timestamp_seconds",
            "When the target's latest run started.",
            None,
            MetricType::Gauge,
        )?;
        for r in &t.latest {
            ConstGauge::new(r.started_ms / 1000)
                .encode(m.encode_family(&[("target", r.target.as_str())])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::store::{Counts, RunSummary};

    fn totals() -> Totals {
        Totals {
            runs_by_status: vec![(RunStatus::Complete, 3), (RunStatus::Refused, 1)],
            requests: 42,
            refusals: vec![("ownership".into(), 1)],
            latest_findings: Counts {
                high: 2,
                ..Counts::default()
            },
            targets: 1,
            latest: vec![RunSummary {
                id: 1,
                target: "a\"b\\c".into(),
                slot: 0,
                started_ms: 1_700_000_000_123,
                finished_ms: Some(1_700_000_001_000),
                status: RunStatus::Complete,
                exit_code: Some(1),
                counts: Counts {
                    high: 2,
                    ..Counts::default()
                },
                tool_list_sha256: None,
                requests: 42,
                reason: None,
                worker: None,
                proof: None,
            }],
        }
    }

    #[test]
    fn the_text_keeps_its_names_types_and_values() {
        let m = Metrics::default();
        m.record(RunStatus::Complete, Duration::from_millis(700));
        m.record(RunStatus::Complete, Duration::from_secs(400));
        let text = m.render(&totals(), false, "w1");
        let lines: Vec<&str> = text.lines().collect();
        for want in [
            "# HELP mcpprobe_scans_total Finished scans by outcome.",
            "# TYPE mcpprobe_scans_total counter",
            "mcpprobe_scans_total{worker=\"w1\",outcome=\"complete\"} 3",
            "mcpprobe_scans_total{worker=\"w1\",outcome=\"refused\"} 1",
            "mcpprobe_scans_total{worker=\"w1\",outcome=\"interrupted\"} 0",
            "# TYPE mcpprobe_findings gauge",
            "mcpprobe_findings{worker=\"w1\",severity=\"high\"} 2",
            "mcpprobe_findings{worker=\"w1\",severity=\"info\"} 0",
            "# TYPE mcpprobe_scan_duration_seconds histogram",
            "mcpprobe_scan_duration_seconds_bucket{worker=\"w1\",le=\"0.5\"} 0",
            "mcpprobe_scan_duration_seconds_bucket{worker=\"w1\",le=\"1\"} 1",
            "mcpprobe_scan_duration_seconds_bucket{worker=\"w1\",le=\"300\"} 1",
            "mcpprobe_scan_duration_seconds_bucket{worker=\"w1\",le=\"+Inf\"} 2",
            "mcpprobe_scan_duration_seconds_count{worker=\"w1\"} 2",
            "# TYPE mcpprobe_requests_total counter",
            "mcpprobe_requests_total{worker=\"w1\"} 42",
            "# TYPE mcpprobe_gate_refusals_total counter",
            "mcpprobe_gate_refusals_total{worker=\"w1\",reason=\"ownership\"} 1",
            "mcpprobe_gate_refusals_total{worker=\"w1\",reason=\"active_not_authorised\"} 0",
            "# TYPE mcpprobe_targets gauge",
            "mcpprobe_targets{worker=\"w1\"} 1",
        ] {
            assert!(lines.contains(&want), "no {want:?} in\n{text}");
        }
        // One HELP and one TYPE per family, no OpenMetrics EOF, nothing per target.
        assert_eq!(text.matches("# TYPE ").count(), 6, "{text}");
        assert_eq!(text.matches("# HELP ").count(), 6, "{text}");
        assert!(
            !text.contains("# EOF") && !text.contains("target="),
            "{text}"
        );
        let sum = lines
            .iter()
            .find_map(|l| l.strip_prefix("mcpprobe_scan_duration_seconds_sum{worker=\"w1\"} "))
            .and_then(|v| v.parse::<f64>().ok());
        assert_eq!(sum, Some(400.7));
    }

    /// Every sample line of `text` (not the comments) carries `worker="{escaped}"` first.
    fn assert_every_series_has_the_worker(text: &str, escaped: &str) {
        let want = format!("{{worker=\"{escaped}\"");
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(samples.len() > 20, "{text}");
        for line in samples {
            assert!(line.contains(&want), "no worker label: {line}\n{text}");
        }
    }

    #[test]
    fn every_series_names_its_worker_escaped() {
        let m = Metrics::default();
        m.record(RunStatus::Complete, Duration::from_millis(700));
        for per_target in [false, true] {
            let text = m.render(&totals(), per_target, "host-a-42");
            assert_every_series_has_the_worker(&text, "host-a-42");
        }
        // A name the host did not sanitise still cannot break out of its label.
        let text = m.render(&totals(), true, "a\"b\\c\nd");
        assert_every_series_has_the_worker(&text, "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn per_target_series_escape_the_name() {
        let text = Metrics::default().render(&totals(), true, "w");
        assert!(
            text.contains(
                "mcpprobe_target_findings{worker=\"w\",target=\"a\\\"b\\\\c\",severity=\"high\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "mcpprobe_target_last_run_timestamp_seconds{worker=\"w\",target=\"a\\\"b\\\\c\"} 1700000000\n"
            ),
            "{text}"
        );
    }
}
