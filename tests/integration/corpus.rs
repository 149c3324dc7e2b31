//! The published-attack corpora (SPEC §3.2): tool definitions other people wrote, poisoned and
//! benign. Two are measured:
//!
//! - the shared one (`../shared/corpus/wild-dev/`): all 39 poisoned files must get a
//!   META-02 P1–P5 finding, and at most 3 of 709 benign tools (0.5 %). Its texts are never copied here: the
//!   test reads them from the shared folder, and fails (rather than passing) when it is absent;
//! - the project's own (`fixtures/corpus/`, issue 23, built by `scripts/corpus/build.py`), required
//!   too; it is judged with the shared one, on the combined figures.
//!
//! `cargo test --test integration corpus:: -- --nocapture` (or `scripts/corpus.sh`) prints the
//! figures per source and per family for each corpus and combined, and every miss and every
//! flagged benign tool by file and tool.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use mcpprobe::finding::{Confidence, Finding};
use mcpprobe::model::Policy;
use mcpprobe::offline::check_report;
use mcpprobe::rules::Input;
use std::fmt::Write as _;

use serde_json::Value;

use crate::support::root;

const POISONED_MIN: usize = 39;
const BENIGN_MAX: usize = 3;

/// Both corpora together: the share of poisoned files detected, at least, and of benign tools
/// flagged, at most (issue 23: every poisoned file, at most 0.5 % of benign tools). Measured
/// 2026-12-02 with the tool-level signals (src/rules/signals.toml): wild-dev 39 of 39 detected,
/// 2 of 709 flagged; fixtures/corpus 51 of 51, 37 of 7,641; combined 90 of 90 (100 %), 39 of
/// 8,350 (0.47 %). Before them: 41 of 90 (45.6 %), 66 of 8,350 (0.79 %). With the sentence
/// reading (src/rules/intent.toml, 2026-12-06): 90 of 90, 38 of 8,350 (0.46 %).
const COMBINED_DETECTED_MIN_PERCENT: f64 = 100.0;
const COMBINED_BENIGN_MAX_PERCENT: f64 = 0.5;

/// The project's own corpus (`fixtures/corpus/`), required like the shared one.
fn own_corpus() -> PathBuf {
    let dir = root().join("fixtures/corpus");
    assert!(
        dir.join("manifest.json").is_file(),
        "the project's corpus is missing: expected {}/manifest.json (scripts/corpus/build.py)",
        dir.display()
    );
    dir
}

/// The shared corpus: `$MCPPROBE_SHARED_CORPUS` when set, else next to the checkout
/// (`<repo>/../shared/corpus/wild-dev`), else next to the repository this one was cloned from
/// when that is a folder on this machine (a clean clone in /tmp of /work/main finds
/// /work/shared). Absent everywhere, the test fails: it must not pass without measuring.
fn corpus() -> PathBuf {
    let mut tried = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("MCPPROBE_SHARED_CORPUS") {
        candidates.push(PathBuf::from(d));
    }
    candidates.push(root().join("../shared/corpus/wild-dev"));
    let origin = std::process::Command::new("git")
        .args(["config", "--get", "remote.origin.url"])
        .current_dir(root())
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().trim_start_matches("file://").to_string())
        .filter(|s| s.starts_with('/'));
    if let Some(o) = origin {
        candidates.push(PathBuf::from(o).join("../shared/corpus/wild-dev"));
    }
    for dir in candidates {
        if dir.join("manifest.json").is_file() {
            return dir;
        }
        tried.push(dir.display().to_string());
    }
    panic!(
        "the shared corpus is missing: no manifest.json in {} (set MCPPROBE_SHARED_CORPUS, or \
         keep `shared/corpus/wild-dev` next to the checkout); this test measures detection on \
         it and must not pass without it",
        tried.join(", ")
    );
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

/// The policy the corpus figures are measured under: every finding, at any confidence.
fn every_finding() -> Policy {
    Policy {
        fail_on: None,
        min_confidence: Confidence::Low,
    }
}

fn findings(path: &std::path::Path) -> Vec<Finding> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let input = Input::parse(&text, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let policy = every_finding();
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

#[derive(Default, Clone)]
struct Tally {
    poisoned: usize,
    detected: usize,
    benign_tools: usize,
    flagged: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.poisoned += o.poisoned;
        self.detected += o.detected;
        self.benign_tools += o.benign_tools;
        self.flagged += o.flagged;
    }
}

/// One corpus measured: totals, per source, per family, and every miss and false alarm.
#[derive(Default)]
struct Measure {
    total: Tally,
    by_source: BTreeMap<String, Tally>,
    /// family -> (poisoned files it fired on, benign tools it flagged)
    by_family: BTreeMap<String, (usize, usize)>,
    misses: Vec<String>,
    false_positives: Vec<String>,
}

impl Measure {
    fn add(&mut self, o: &Measure, prefix: &str) {
        self.total.add(&o.total);
        for (s, t) in &o.by_source {
            self.by_source
                .entry(format!("{prefix}{s}"))
                .or_default()
                .add(t);
        }
        for (f, (p, b)) in &o.by_family {
            let e = self.by_family.entry(f.clone()).or_default();
            e.0 += p;
            e.1 += b;
        }
        self.misses
            .extend(o.misses.iter().map(|m| format!("{prefix}{m}")));
        self.false_positives
            .extend(o.false_positives.iter().map(|m| format!("{prefix}{m}")));
    }
}

fn measure(dir: &std::path::Path) -> Measure {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json reads"),
    )
    .expect("manifest.json is JSON");
    let entries = manifest.as_array().expect("the manifest is a list");
    let mut m = Measure::default();
    for e in entries {
        let file = e["file"].as_str().expect("file");
        let source = e["source"].as_str().unwrap_or("?").to_string();
        let label = e["label"].as_str().unwrap_or("?");
        let found = findings(&dir.join(file));
        let tally = m.by_source.entry(source).or_default();
        let families: BTreeSet<String> = found.iter().map(family).collect();
        if label == "poisoned" {
            m.total.poisoned += 1;
            tally.poisoned += 1;
            if found.is_empty() {
                let tools: Vec<&str> = e["poisoned_tools"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                m.misses.push(format!(
                    "{file} tools {} ({})",
                    tools.join(", "),
                    e["kind"].as_str().unwrap_or("?")
                ));
            } else {
                m.total.detected += 1;
                tally.detected += 1;
            }
            for f in families {
                m.by_family.entry(f).or_default().0 += 1;
            }
        } else {
            let n = e["n_tools"].as_u64().unwrap_or(0) as usize;
            m.total.benign_tools += n;
            tally.benign_tools += n;
            let mut tools: BTreeMap<String, Vec<&Finding>> = BTreeMap::new();
            for f in &found {
                let tool = f.location.tool.clone().unwrap_or_else(|| "-".into());
                tools.entry(tool).or_default().push(f);
            }
            tally.flagged += tools.len();
            m.total.flagged += tools.len();
            let mut fams: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (tool, fs) in &tools {
                for f in fs {
                    fams.entry(family(f)).or_default().insert(tool.clone());
                }
                let first = fs[0];
                m.false_positives.push(format!(
                    "{file} tool {tool}: {} {} at {} — {:?}",
                    family(first),
                    first.message.as_deref().unwrap_or(""),
                    first.location.pointer.as_deref().unwrap_or("-"),
                    first.evidence.text.as_deref().unwrap_or("")
                ));
            }
            for (f, t) in fams {
                m.by_family.entry(f).or_default().1 += t.len();
            }
        }
    }
    m
}

fn percent(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

fn report(out: &mut String, name: &str, m: &Measure) {
    let _ = writeln!(
        out,
        "corpus {name}: per source (poisoned detected / files, benign tools flagged / tools)"
    );
    for (source, t) in &m.by_source {
        let _ = writeln!(
            out,
            "  {source:48} poisoned {:>3}/{:<3}  benign flagged {:>3}/{}",
            t.detected, t.poisoned, t.flagged, t.benign_tools
        );
    }
    let _ = writeln!(
        out,
        "  per family (poisoned files it fires on, benign tools it flags):"
    );
    for (f, (p, b)) in &m.by_family {
        let _ = writeln!(out, "    {f:32} poisoned {p:>3}  benign {b:>3}");
    }
    let t = &m.total;
    let _ = writeln!(
        out,
        "  total {name}: {} of {} poisoned files detected ({:.1} %), {} of {} benign tools flagged \
         ({:.2} %) (P1–P5)",
        t.detected,
        t.poisoned,
        percent(t.detected, t.poisoned),
        t.flagged,
        t.benign_tools,
        percent(t.flagged, t.benign_tools)
    );
}

#[test]
fn published_attacks_are_detected_and_real_servers_stay_quiet() {
    let shared = measure(&corpus());
    let own = measure(&own_corpus());
    let mut combined = Measure::default();
    combined.add(&shared, "wild-dev/");
    combined.add(&own, "fixtures/");
    let mut out = String::new();
    report(&mut out, "wild-dev", &shared);
    report(&mut out, "fixtures/corpus", &own);
    report(&mut out, "combined", &combined);
    for m in &combined.misses {
        let _ = writeln!(out, "  miss: {m}");
    }
    for f in &combined.false_positives {
        let _ = writeln!(out, "  flagged: {f}");
    }
    show(&out);
    let (detected, poisoned) = (shared.total.detected, shared.total.poisoned);
    let (flagged, benign_tools) = (shared.total.flagged, shared.total.benign_tools);
    assert!(
        detected >= POISONED_MIN && flagged <= BENIGN_MAX,
        "wild-dev: {detected} of {poisoned} poisoned files detected (at least {POISONED_MIN} \
         needed), {flagged} of {benign_tools} benign tools flagged (at most {BENIGN_MAX} allowed)\n\
         misses:\n  {}\nfalse positives:\n  {}",
        shared.misses.join("\n  "),
        shared.false_positives.join("\n  ")
    );
    let c = &combined.total;
    let (dp, bp) = (
        percent(c.detected, c.poisoned),
        percent(c.flagged, c.benign_tools),
    );
    assert!(
        dp >= COMBINED_DETECTED_MIN_PERCENT && bp <= COMBINED_BENIGN_MAX_PERCENT,
        "combined: {} of {} poisoned files detected ({dp:.1} %, at least \
         {COMBINED_DETECTED_MIN_PERCENT} % needed), {} of {} benign tools flagged ({bp:.2} %, at \
         most {COMBINED_BENIGN_MAX_PERCENT} % allowed)\nmisses:\n  {}\nfalse positives:\n  {}",
        c.detected,
        c.poisoned,
        c.flagged,
        c.benign_tools,
        combined.misses.join("\n  "),
        combined.false_positives.join("\n  ")
    );
}

/// The development halves of all thirty-two red-team sets (`fixtures/redteam/set*-dev.json`):
/// the rules were tuned on them and the classifier trains on them. Each tool is checked on its
/// own. Floors measured 2026-12-07, night (sets 29-32 added that day): 1,383 of 1,391 poisoned
/// tools detected, at most 12 of 1,451 hard benign tools flagged; a change that loses a detection or adds a false alarm here fails,
/// and the test lists both by set and id. These are the halves the scanner learned from: their
/// figures say nothing about attacks nobody here has seen (README, "How the metadata rules
/// decide").
#[test]
fn red_team_development_halves_keep_their_detections() {
    const DETECTED_MIN: usize = 1385;
    const FLAGGED_MAX: usize = 12;
    let dir = root().join("fixtures/redteam");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("set") && n.ends_with("-dev.json"))
        })
        .collect();
    names.sort();
    assert_eq!(
        names.len(),
        32,
        "expected thirty-two halves in {}",
        dir.display()
    );
    let policy = every_finding();
    let (mut poisoned, mut detected, mut benign, mut flagged) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    let mut alarms = Vec::new();
    for path in &names {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let items: Vec<Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for item in &items {
            let id = item["id"].as_str().unwrap_or("?");
            let one = serde_json::json!({ "tools": [item["tool"].clone()] }).to_string();
            let input = Input::parse(&one, None).unwrap_or_else(|e| panic!("{id}: {e}"));
            let hit = check_report(&input, "red team", policy)
                .findings
                .iter()
                .any(counts);
            if item["label"] == "poisoned" {
                poisoned += 1;
                if hit {
                    detected += 1;
                } else {
                    misses.push(format!("{id} ({})", item["class"].as_str().unwrap_or("?")));
                }
            } else {
                benign += 1;
                if hit {
                    flagged += 1;
                    alarms.push(format!("{id} ({})", item["class"].as_str().unwrap_or("?")));
                }
            }
        }
    }
    show(&format!(
        "red-team dev halves 1-32: {detected} of {poisoned} poisoned detected, {flagged} of \
         {benign} benign flagged\n  misses: {}\n  flagged: {}\n",
        misses.join(", "),
        alarms.join(", ")
    ));
    assert!(
        detected >= DETECTED_MIN && flagged <= FLAGGED_MAX,
        "red-team dev halves 1-32: {detected} of {poisoned} poisoned detected (at least \
         {DETECTED_MIN} needed), {flagged} of {benign} benign flagged (at most {FLAGGED_MAX})\n\
         misses: {}\nflagged: {}",
        misses.join(", "),
        alarms.join(", ")
    );
}
