//! The published-attack corpus (`../shared/corpus/wild-dev/`, SPEC §3.2): tool definitions other
//! people wrote, poisoned and benign. At least 36 of 39 poisoned files must get a META-02 P1–P5
//! finding, and at most 7 of 709 benign tools. The corpus texts are never copied here: the test
//! reads them from the shared folder, and fails (rather than passing) when the folder is absent.
//!
//! `cargo test --test integration corpus:: -- --nocapture` (or `scripts/corpus.sh`) prints the
//! figures per source and per family.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use mcpprobe::finding::{Confidence, Finding};
use mcpprobe::offline::check_report;
use mcpprobe::report::Policy;
use mcpprobe::rules::Input;
use std::fmt::Write as _;

use serde_json::Value;

use crate::support::root;

const POISONED_MIN: usize = 36;
const BENIGN_MAX: usize = 7;

fn corpus() -> PathBuf {
    let dir = root().join("../shared/corpus/wild-dev");
    assert!(
        dir.join("manifest.json").is_file(),
        "the corpus is missing: expected {}/manifest.json (the shared corpus sits next to the \
         checkout, `<repo>/../shared/corpus/wild-dev`); this test measures detection on it and \
         must not pass without it",
        dir.display()
    );
    dir
}

/// P1–P5 of META-02: what counts as "detected" (P6, long text, is advice to read, not detection).
fn counts(f: &Finding) -> bool {
    f.check == "META-02" && matches!(f.rule.as_deref(), Some("P1" | "P2" | "P3" | "P4" | "P5"))
}

/// The family a finding reports: the rule, and its sub-code when it has one.
fn family(f: &Finding) -> String {
    match (&f.rule, &f.subcode) {
        (Some(r), Some(s)) => format!("{r}/{s}"),
        (Some(r), None) => r.clone(),
        _ => f.check.clone(),
    }
}

fn findings(path: &std::path::Path) -> Vec<Finding> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let input = Input::parse(&text, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let policy = Policy {
        fail_on: None,
        min_confidence: Confidence::Low,
    };
    check_report(&input, "corpus", policy)
        .findings
        .into_iter()
        .filter(counts)
        .collect()
}

/// The figures, for `--nocapture` and `scripts/corpus.sh` (a test may print; the engine never does).
#[allow(clippy::print_stdout)]
fn show(report: &str) {
    print!("{report}");
}

#[derive(Default)]
struct Tally {
    poisoned: usize,
    detected: usize,
    benign_tools: usize,
    flagged: usize,
}

#[test]
fn published_attacks_are_detected_and_real_servers_stay_quiet() {
    let dir = corpus();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json reads"),
    )
    .expect("manifest.json is JSON");
    let entries = manifest.as_array().expect("the manifest is a list");
    let mut by_source: BTreeMap<String, Tally> = BTreeMap::new();
    // family -> (poisoned files it fired on, benign tools it flagged)
    let mut by_family: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let (mut poisoned, mut detected, mut benign_tools) = (0, 0, 0);
    let mut misses = Vec::new();
    let mut false_positives = Vec::new();
    for e in entries {
        let file = e["file"].as_str().expect("file");
        let source = e["source"].as_str().unwrap_or("?").to_string();
        let label = e["label"].as_str().unwrap_or("?");
        let found = findings(&dir.join(file));
        let tally = by_source.entry(source).or_default();
        let families: BTreeSet<String> = found.iter().map(family).collect();
        if label == "poisoned" {
            poisoned += 1;
            tally.poisoned += 1;
            if found.is_empty() {
                misses.push(format!("{file} ({})", e["kind"].as_str().unwrap_or("?")));
            } else {
                detected += 1;
                tally.detected += 1;
            }
            for f in families {
                by_family.entry(f).or_default().0 += 1;
            }
        } else {
            let n = e["n_tools"].as_u64().unwrap_or(0) as usize;
            benign_tools += n;
            tally.benign_tools += n;
            let mut tools: BTreeMap<String, Vec<&Finding>> = BTreeMap::new();
            for f in &found {
                let tool = f.location.tool.clone().unwrap_or_else(|| "-".into());
                tools.entry(tool).or_default().push(f);
            }
            tally.flagged += tools.len();
            let mut fams: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (tool, fs) in &tools {
                for f in fs {
                    fams.entry(family(f)).or_default().insert(tool.clone());
                }
                let first = fs[0];
                false_positives.push(format!(
                    "{file} tool {tool}: {} {} at {} — {:?}",
                    family(first),
                    first.message.as_deref().unwrap_or(""),
                    first.location.pointer.as_deref().unwrap_or("-"),
                    first.evidence.text.as_deref().unwrap_or("")
                ));
            }
            for (f, t) in fams {
                by_family.entry(f).or_default().1 += t.len();
            }
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "corpus wild-dev: per source (poisoned detected / files, benign tools flagged / tools)"
    );
    for (source, t) in &by_source {
        let _ = writeln!(
            out,
            "  {source:40} poisoned {:>2}/{:<2}  benign flagged {:>2}/{}",
            t.detected, t.poisoned, t.flagged, t.benign_tools
        );
    }
    let _ = writeln!(
        out,
        "per family (poisoned files it fires on, benign tools it flags):"
    );
    for (f, (p, b)) in &by_family {
        let _ = writeln!(out, "  {f:32} poisoned {p:>2}  benign {b:>2}");
    }
    let flagged = false_positives.len();
    let _ = writeln!(
        out,
        "total: {detected} of {poisoned} poisoned files detected, {flagged} of {benign_tools} \
         benign tools flagged (P1–P5)"
    );
    for m in &misses {
        let _ = writeln!(out, "  miss: {m}");
    }
    for f in &false_positives {
        let _ = writeln!(out, "  flagged: {f}");
    }
    show(&out);
    assert!(
        detected >= POISONED_MIN && flagged <= BENIGN_MAX,
        "{detected} of {poisoned} poisoned files detected (at least {POISONED_MIN} needed), \
         {flagged} of {benign_tools} benign tools flagged (at most {BENIGN_MAX} allowed)\n\
         misses:\n  {}\nfalse positives:\n  {}",
        misses.join("\n  "),
        false_positives.join("\n  ")
    );
}
