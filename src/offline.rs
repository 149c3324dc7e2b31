//! What the offline commands (`check`, `fingerprint`, `diff`) compute. They send nothing over
//! the network and print nothing: the CLI renders their results.

use std::fmt::Write as _;
use std::io::Read as _;

use crate::catalogue::catalogue;
use crate::model::Report;
use crate::rules::fingerprint::ToolDiff;
use crate::rules::{Input, InputKind};
use crate::util::escape::escape;

/// The largest document `check`, `fingerprint` and `diff` read.
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The reason a check gives when its rules were stopped before they read every text.
pub const RULES_STOPPED: &str =
    "the metadata rules were stopped (time cap or interruption) before they read every text";

/// One check over a document read offline. Stopped rules found only part of what is there:
/// that is an error, not a result (`check` and a live scan's rules stage both judge so).
pub fn run_offline(
    check: &dyn crate::checks::Check,
    input: &Input<'_>,
    doc: &crate::rules::Document<'_>,
) -> crate::checks::Outcome {
    match check.offline(input, doc) {
        crate::checks::Outcome::Ran(_) if doc.stopped() => {
            crate::checks::Outcome::Error(RULES_STOPPED.into())
        }
        o => o,
    }
}

/// Why an offline document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error("cannot read {name}: {source}")]
    Read {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} is larger than {MAX_INPUT_BYTES} bytes")]
    TooLarge { name: String },
    #[error("{name}: {detail}")]
    Document { name: String, detail: String },
}

/// Reads `reader` (named `name` in errors: a path, or `stdin` as the host calls it) up to
/// [`MAX_INPUT_BYTES`]; `size` is what the host knows of its length, to read it in one piece.
pub fn read_from(
    reader: impl std::io::Read,
    name: &str,
    size: Option<u64>,
) -> Result<Vec<u8>, OfflineError> {
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES + 1;
    // Sized from the file's length: growing by doubling would hold two copies at once.
    let len = size.unwrap_or(0).min(limit);
    bytes.reserve_exact(usize::try_from(len).unwrap_or(0).saturating_add(1));
    reader
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|source| OfflineError::Read {
            name: name.to_string(),
            source,
        })?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(OfflineError::TooLarge {
            name: name.to_string(),
        });
    }
    Ok(bytes)
}

/// Reads the file at `path` with [`read_from`].
pub fn read_file(path: &str) -> Result<Vec<u8>, OfflineError> {
    let read = |source| OfflineError::Read {
        name: path.to_string(),
        source,
    };
    let f = std::fs::File::open(path).map_err(read)?;
    let size = f.metadata().map(|m| m.len()).ok();
    read_from(f, path, size)
}

/// Parses one offline document named `name` (a path, or `stdin`); the input borrows its
/// strings from `text`.
pub fn parse<'a>(
    name: &str,
    text: &'a [u8],
    kind: Option<InputKind>,
) -> Result<Input<'a>, OfflineError> {
    Input::parse(text, kind).map_err(|e| OfflineError::Document {
        name: name.to_string(),
        detail: e.to_string(),
    })
}

/// The runs of `mcpprobe check`: every catalogue check, over one offline document.
pub fn check_report(input: &Input<'_>, target: &str, policy: crate::model::Policy) -> Report {
    check_document(input, &input.document(), target, policy)
}

/// [`check_report`] over a document model already built from `input`.
pub fn check_document(
    input: &Input<'_>,
    doc: &crate::rules::Document<'_>,
    target: &str,
    policy: crate::model::Policy,
) -> Report {
    check_selected(
        input,
        doc,
        target,
        policy,
        &crate::catalogue::Selection::all(),
    )
}

/// [`check_document`] of the checks `selection` includes (the others are skipped, saying so).
pub fn check_selected(
    input: &Input,
    doc: &crate::rules::Document<'_>,
    target: &str,
    policy: crate::model::Policy,
    selection: &crate::catalogue::Selection,
) -> Report {
    let mut report = Report::new(target, policy);
    for entry in &catalogue().entries {
        let outcome = if selection.includes(&entry.meta.id) {
            match crate::checks::get(&entry.meta.id) {
                Some(check) => run_offline(check, input, doc),
                None => crate::checks::Outcome::Error(crate::checks::NO_IMPLEMENTATION.into()),
            }
        } else {
            crate::checks::Outcome::Skipped(crate::catalogue::NOT_SELECTED.into())
        };
        report.record(&entry.meta.id, outcome);
    }
    if input.kind == InputKind::Tools || !doc.tools.is_empty() {
        report.tool_list_sha256 = Some(input.tools_sha256().to_string());
    }
    report.finish();
    report
}

/// META-01 over an offline document: `config`'s judge reads each tool (SPEC §12) and its
/// verdicts (or its error) replace the check's "no judge configured".
pub async fn judge(
    report: &mut Report,
    input: &Input<'_>,
    config: &crate::judge::JudgeConfig,
    selection: &crate::catalogue::Selection,
    cancel: &tokio_util::sync::CancellationToken,
) {
    let judged = crate::catalogue::catalogue()
        .in_stage(crate::catalogue::Stage::Judge)
        .any(|m| selection.includes(&m.id));
    if !judged {
        return;
    }
    let tools: Vec<serde_json::Value> = input.tools().iter().map(|t| t.to_value()).collect();
    // An offline document holds no secret of a scan: nothing to redact.
    crate::judge::review(config, &tools, &|s: &str| s.to_string(), cancel)
        .await
        .record(report);
    report.finish();
}

/// [`check_selected`] with a time cap: a timer thread stops the rules at `cap` (they look
/// between texts), and what they had not read makes the report incomplete.
pub fn check_capped(
    input: &Input<'_>,
    doc: &mut crate::rules::Document<'_>,
    target: &str,
    policy: crate::model::Policy,
    selection: &crate::catalogue::Selection,
    cap: std::time::Duration,
) -> Report {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    doc.stop = Some(stop.clone());
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let timer = std::thread::spawn(move || {
        if finished.recv_timeout(cap).is_err() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let report = check_selected(input, doc, target, policy, selection);
    let _ = done.send(());
    let _ = timer.join();
    report
}

/// The terminal form of a diff; every server-controlled string escaped.
pub fn render_diff(d: &ToolDiff) -> String {
    let mut out = String::new();
    if d.identical {
        let _ = writeln!(out, "identical tool lists (sha256 {})", d.old_sha256);
        return out;
    }
    let _ = writeln!(
        out,
        "tools: {} added, {} removed, {} renamed, {} changed",
        d.added.len(),
        d.removed.len(),
        d.renamed.len(),
        d.changed.len()
    );
    for name in &d.added {
        let _ = writeln!(out, "+ added    `{}`", escape(name));
    }
    for name in &d.removed {
        let _ = writeln!(out, "- removed  `{}`", escape(name));
    }
    for r in &d.renamed {
        let _ = writeln!(
            out,
            "~ renamed  `{}` → `{}` (same content)",
            escape(&r.from),
            escape(&r.to)
        );
    }
    for c in &d.changed {
        let _ = writeln!(out, "~ changed  `{}`", escape(&c.tool));
        for f in &c.fields {
            let show = |v: &Option<String>| match v {
                Some(s) => format!("\"{}\"", escape(s)),
                None => "(absent)".into(),
            };
            let _ = writeln!(
                out,
                "    {}",
                escape(if f.pointer.is_empty() {
                    "/"
                } else {
                    &f.pointer
                })
            );
            let _ = writeln!(out, "      old: {}", show(&f.old));
            let _ = writeln!(out, "      new: {}", show(&f.new));
        }
    }
    let _ = writeln!(
        out,
        "old sha256 {}\nnew sha256 {}",
        d.old_sha256, d.new_sha256
    );
    out
}
