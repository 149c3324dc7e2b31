//! `mcpprobe badge REPORT.json`: a well-formed SVG (or shields.io endpoint JSON) in the colour
//! of the report's worst counting finding; a file that is no mcpprobe report is a usage error.

use std::path::Path;

use mcpprobe::report::badge::{self, Badge, BadgeColor};

use crate::support::{mcpprobe, root};

/// `mcpprobe check FILE --format json` into `out` (exit 0 or 1: findings do not matter here).
fn check_report(tools: &Path, out: &Path) -> serde_json::Value {
    let status = mcpprobe()
        .current_dir(root())
        .args(["check", "--no-config", "--format", "json", "-o"])
        .arg(out)
        .arg(tools)
        .output()
        .expect("check runs");
    assert!(matches!(status.status.code(), Some(0 | 1)), "{status:?}");
    crate::support::json_file(out)
}

/// The worst counting severity of a JSON report, as the badge colours it.
fn expected_colour(report: &serde_json::Value) -> BadgeColor {
    let rank = |s: &str| {
        ["low", "medium", "high", "critical"]
            .iter()
            .position(|x| *x == s)
    };
    let worst = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f.get("suppressed").is_none() && f.get("new") != Some(&false.into()))
        .filter_map(|f| f["severity"].as_str().and_then(rank))
        .max();
    match worst {
        None => BadgeColor::BrightGreen,
        Some(0) => BadgeColor::YellowGreen,
        Some(1) => BadgeColor::Yellow,
        Some(2) => BadgeColor::Orange,
        Some(_) => BadgeColor::Red,
    }
}

/// The fills and the texts of a badge SVG, which must parse as XML.
fn parse_svg(svg: &str) -> (Vec<String>, Vec<String>) {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not XML: {e}\n{svg}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert!(
        doc.descendants()
            .all(|n| !n.tag_name().name().eq_ignore_ascii_case("script")),
        "a script element in {svg}"
    );
    let fills = doc
        .descendants()
        .filter_map(|n| n.attribute("fill"))
        .map(str::to_string)
        .collect();
    let texts = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .map(str::to_string)
        .collect();
    (fills, texts)
}

#[test]
fn badge_of_a_check_report_is_svg_in_the_worst_colour() {
    let dir = tempfile::tempdir().expect("dir");
    let report_path = dir.path().join("report.json");
    let report = check_report(&root().join("fixtures/config/tools.json"), &report_path);
    let colour = expected_colour(&report);
    assert_ne!(colour, BadgeColor::BrightGreen, "the fixture has findings");

    let out = mcpprobe().arg("badge").arg(&report_path).assert().code(0);
    let svg = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let (fills, texts) = parse_svg(&svg);
    assert!(
        fills.iter().any(|f| f == colour.hex()),
        "{colour:?} not in {fills:?}"
    );
    assert!(texts.iter().any(|t| t == "mcpprobe"), "{texts:?}");
    let worst = match colour {
        BadgeColor::Red => "critical",
        BadgeColor::Orange => "high",
        BadgeColor::Yellow => "medium",
        _ => "low",
    };
    assert!(
        texts.iter().any(|t| t.ends_with(&format!(" {worst}"))),
        "{texts:?}"
    );

    // The endpoint JSON, into a file.
    let json_path = dir.path().join("badge.json");
    mcpprobe()
        .arg("badge")
        .arg(&report_path)
        .args(["--format", "json", "-o"])
        .arg(&json_path)
        .assert()
        .code(0)
        .stdout("");
    let endpoint = crate::support::json_file(&json_path);
    assert_eq!(endpoint["schemaVersion"], 1);
    assert_eq!(endpoint["label"], "mcpprobe");
    assert_eq!(endpoint["color"], colour.name());
}

#[test]
fn badge_of_a_clean_report_is_brightgreen() {
    let dir = tempfile::tempdir().expect("dir");
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"{"tools": [{"name": "weather", "description": "Returns the weather forecast for a city.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}}]}"#,
    )
    .expect("write");
    let report_path = dir.path().join("report.json");
    let report = check_report(&tools, &report_path);
    assert_eq!(
        expected_colour(&report),
        BadgeColor::BrightGreen,
        "{report}"
    );
    let out = mcpprobe().arg("badge").arg(&report_path).assert().code(0);
    let (fills, texts) = parse_svg(&String::from_utf8_lossy(&out.get_output().stdout));
    assert!(fills.iter().any(|f| f == "#4c1"), "{fills:?}");
    assert!(texts.iter().any(|t| t == "clean"), "{texts:?}");
}

#[test]
fn hostile_badge_text_stays_text() {
    let hostile = "<script>alert('x')</script> & \"quoted\" ]]> \u{202E}";
    let b = Badge {
        label: hostile.into(),
        message: format!("2 high{hostile}"),
        color: BadgeColor::Orange,
    };
    let svg = badge::svg(&b);
    let (_, texts) = parse_svg(&svg);
    let shown = "<script>alert('x')</script> & \"quoted\" ]]> [U+202E]";
    assert!(texts.iter().any(|t| t == shown), "{texts:?}");
    assert!(
        texts.iter().any(|t| *t == format!("2 high{shown}")),
        "{texts:?}"
    );
    assert!(!svg.contains("<script"), "{svg}");
}

#[test]
fn a_file_that_is_not_a_report_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().expect("dir");
    let missing = dir.path().join("missing.json");
    let sarif = dir.path().join("foreign.sarif");
    std::fs::write(&sarif, r#"{"version": "2.1.0", "runs": []}"#).expect("write");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json {").expect("write");
    let other_tool = dir.path().join("other.json");
    let mut report = check_report(&root().join("fixtures/config/tools.json"), &other_tool);
    report["tool"]["name"] = "othertool".into();
    std::fs::write(&other_tool, report.to_string()).expect("write");
    for file in [&missing, &sarif, &garbage, &other_tool] {
        let out = mcpprobe().arg("badge").arg(file).assert().code(64);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
        assert!(out.get_output().stdout.is_empty());
    }
}
