//! `mcpprobe badge REPORT.json`: the status badge of a JSON report, as the daemon serves it at
//! `/badge/{name}.svg` (SVG) or `.json` (shields.io's endpoint schema).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::cli::{print_out, usage_error};
use crate::model::{REPORT_VERSION, Report};
use crate::report::badge::{self, Badge};

/// What `badge --format` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BadgeFormat {
    /// A flat shields.io-style SVG.
    Svg,
    /// shields.io's endpoint schema (`{"schemaVersion": 1, "label", "message", "color"}`).
    Json,
}

/// The largest report read.
const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Renders the badge of the report at `path`; 64 when it cannot be read, is not an mcpprobe
/// JSON report, or the output cannot be written; 0 otherwise (findings do not fail it).
pub fn run(path: &Path, format: BadgeFormat, output: Option<&PathBuf>) -> i32 {
    let report = match load(path) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let b: Badge = badge::of_report(Some(&report), None, None, chrono::Utc::now());
    let text = match format {
        BadgeFormat::Svg => badge::svg(&b) + "\n",
        BadgeFormat::Json => badge::endpoint_json(&b).to_string() + "\n",
    };
    match output {
        Some(out) => match std::fs::write(out, text) {
            Ok(()) => 0,
            Err(e) => usage_error(format!("cannot write {}: {e}", out.display())),
        },
        None => print_out(&text),
    }
}

/// Reads a JSON report written by `scan`/`check` (`--json` or `--format json`).
fn load(path: &Path) -> Result<Report, String> {
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read the report {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(format!(
            "the report {shown} is larger than {MAX_REPORT_BYTES} bytes"
        ));
    }
    let not_ours = |why: String| {
        format!("{shown} is not an mcpprobe JSON report (version {REPORT_VERSION}): {why}")
    };
    let report: Report = serde_json::from_slice(&bytes).map_err(|e| not_ours(e.to_string()))?;
    if report.version != REPORT_VERSION || report.tool.name != "mcpprobe" {
        return Err(not_ours(format!(
            "written by {:?}, report version {}",
            crate::util::escape::escape_trimmed(&report.tool.name, 60),
            report.version
        )));
    }
    Ok(report)
}
