//! Tool lists captured from real, benign servers installed from the registries
//! (`scripts/capture-tools.py`): no poisoning findings, and exactly the capability and
//! definition findings judged correct (snapshot, reviewed).

use mcpprobe::finding::Confidence;
use mcpprobe::model::Policy;
use mcpprobe::offline::check_report;
use mcpprobe::rules::Input;

use crate::support::root;

fn findings_of(file: &str) -> Vec<String> {
    let path = root().join("fixtures/real").join(file);
    let text = std::fs::read_to_string(&path).expect("fixture");
    let input = Input::parse(&text, None).expect("a tools/list response");
    let report = check_report(
        &input,
        file,
        Policy {
            fail_on: None,
            min_confidence: Confidence::Low,
        },
    );
    report
        .findings
        .iter()
        .map(|f| {
            format!(
                "{}/{} {} {}",
                f.check,
                f.rule.as_deref().unwrap_or("-"),
                f.location.tool.as_deref().unwrap_or("-"),
                f.location.pointer.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

const REAL: [&str; 6] = [
    "npm-server-everything-2026.8.31.json",
    "npm-server-filesystem-2026.8.31.json",
    "npm-server-memory-2026.8.31.json",
    "pypi-mcp-server-fetch-2026.10.24.json",
    "pypi-mcp-server-git-2026.10.19.json",
    "pypi-mcp-server-time-2026.10.19.json",
];

#[test]
fn real_benign_servers_have_no_poisoning_findings() {
    for file in REAL {
        let bad: Vec<String> = findings_of(file)
            .into_iter()
            .filter(|f| {
                ["P1", "P2", "P3", "P4", "P5"]
                    .iter()
                    .any(|p| f.starts_with(&format!("META-02/{p} ")))
            })
            .collect();
        assert!(bad.is_empty(), "{file}: {bad:#?}");
    }
}

#[test]
fn real_servers_findings_are_the_reviewed_ones() {
    for file in REAL {
        let name = file.trim_end_matches(".json");
        insta::assert_snapshot!(name, findings_of(file).join("\n"));
    }
}

#[test]
fn real_servers_have_stable_fingerprints() {
    // Re-serialising with other key order and whitespace never changes the fingerprint.
    for file in REAL {
        let path = root().join("fixtures/real").join(file);
        let v = crate::support::json_file(&path);
        let tools = v["result"]["tools"].as_array().expect("tools").clone();
        let mut reversed = tools.clone();
        reversed.reverse();
        let reordered: Vec<serde_json::Value> = reversed
            .iter()
            .map(|t| {
                let text = serde_json::to_string_pretty(t).expect("json");
                let back: std::collections::BTreeMap<String, serde_json::Value> =
                    serde_json::from_str(&text).expect("json");
                serde_json::to_value(back).expect("json")
            })
            .collect();
        assert_eq!(
            mcpprobe::rules::fingerprint::tools_sha256(&tools),
            mcpprobe::rules::fingerprint::tools_sha256(&reordered),
            "{file}"
        );
    }
}
