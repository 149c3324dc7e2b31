//! Reports: JSON against the repo's schema, SARIF against the SARIF 2.1.0 schema, terminal
//! escaping, and exit codes that do not depend on the format.

use mcpprobe::catalogue::catalogue;
use mcpprobe::checks::{Outcome, finding};
use mcpprobe::finding::{Confidence, Exchange, Message, Severity, Suppressed};
use mcpprobe::model::{Policy, Report, RunOutcome};
use mcpprobe::report::{Format, render};

use crate::support::assert_valid;

const HOSTILE: &str = "weather\u{1b}[2J\u{7}\rspoof\u{202E}txt\u{E0041}\u{E0042}\u{200B}end";

fn check(id: &str) -> &'static dyn mcpprobe::checks::Check {
    mcpprobe::checks::get(id).expect("id in the registry")
}

/// A report that holds a finding of every severity, an exchange, a suppressed finding and a
/// hostile string.
fn sample(policy: Policy) -> Report {
    let mut r = Report::new("http://127.0.0.1:9/mcp", policy);
    let critical = finding(check("META-03"), Some("C1"))
        .message("fetch_page, read_db and send_mail make an exfiltration path")
        .build();
    let high = finding(check("META-02"), Some("P1"))
        .tool(HOSTILE)
        .pointer("/tools/0/description")
        .text(HOSTILE)
        .message("3 invisible characters")
        .build();
    let medium = finding(check("TRANS-03"), None)
        .exchange(Exchange {
            request: Message {
                method: Some("OPTIONS".into()),
                url: Some("http://127.0.0.1:9/mcp".into()),
                headers: vec![("Origin".into(), "https://evil.example".into())],
                ..Message::default()
            },
            response: Some(Message {
                status: Some(204),
                headers: vec![("Access-Control-Allow-Origin".into(), "*".into())],
                ..Message::default()
            }),
            note: None,
        })
        .build();
    let low = finding(check("META-04"), Some("S1"))
        .tool("bad name")
        .build();
    let info = finding(check("META-02"), Some("P6"))
        .pointer("/instructions")
        .build();
    let mut suppressed = finding(check("META-03"), Some("C5"))
        .tool("fetch_page")
        .build();
    suppressed.suppressed = Some(Suppressed {
        reason: "validated server-side".into(),
        until: None,
    });
    r.record("META-02", Outcome::Ran(vec![high, info]));
    r.record("META-03", Outcome::Ran(vec![critical, suppressed]));
    r.record("META-04", Outcome::Ran(vec![low]));
    r.record("TRANS-03", Outcome::Ran(vec![medium]));
    r.record("ACT-01", Outcome::NotImplemented("stub".into()));
    r.finish();
    r
}

#[test]
fn json_report_validates_against_the_repo_schema() {
    let r = sample(Policy::default());
    let value: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
    assert_valid("schema/report-v1.schema.json", &value);
    let severities: Vec<&str> = value["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["severity"].as_str())
        .collect();
    for s in ["critical", "high", "medium", "low", "info"] {
        assert!(severities.contains(&s), "no {s} finding in {severities:?}");
    }
    assert_eq!(
        value["checks"].as_array().map(Vec::len),
        Some(crate::support::check_count())
    );
    assert_eq!(value["exit_code"], 1);
    assert_eq!(value["outcome"], "complete");
}

#[test]
fn schema_rejects_a_broken_report() {
    let r = sample(Policy::default());
    let mut value: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
    value["findings"][0]["severity"] = "fatal".into();
    let schema =
        crate::support::json_file(&crate::support::root().join("schema/report-v1.schema.json"));
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(!v.is_valid(&value));
}

#[test]
fn sarif_report_validates_against_sarif_2_1_0() {
    let r = sample(Policy::default());
    let text = render(&r, Format::Sarif, &opts("tools.json", false));
    let value: serde_json::Value = serde_json::from_str(&text).expect("sarif is json");
    assert_valid("tests/sarif-2.1.0.schema.json", &value);

    let run = &value["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    // Every catalogue check and every rule code is listed, fired or not.
    let expected: usize = catalogue().metas().map(|m| 1 + m.rules.len()).sum();
    assert_eq!(rules.len(), expected);
    assert!(
        rules
            .iter()
            .all(|r| r["properties"]["security-severity"].is_string())
    );
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 6);
    for res in results {
        let id = res["ruleId"].as_str().expect("ruleId");
        let idx = res["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[idx]["id"], id, "ruleIndex points at the rule");
        let fp = res["partialFingerprints"]["mcpprobeFinding/v1"]
            .as_str()
            .expect("fingerprint");
        assert_eq!(fp.len(), 64);
        assert_eq!(
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "tools.json"
        );
    }
    let crit = results
        .iter()
        .find(|r| r["ruleId"] == "META-03/C1")
        .expect("C1 result");
    assert_eq!(crit["level"], "error");
    assert_eq!(crit["properties"]["security-severity"], "9.5");
    let sup = results
        .iter()
        .find(|r| r["ruleId"] == "META-03/C5")
        .expect("C5 result");
    assert_eq!(
        sup["suppressions"][0]["justification"],
        "validated server-side"
    );
    // Escaped in the message, so nothing hidden reaches a SARIF viewer either.
    let p1 = results
        .iter()
        .find(|r| r["ruleId"] == "META-02/P1")
        .expect("P1");
    assert!(
        p1["message"]["text"]
            .as_str()
            .expect("text")
            .contains("[U+202E]")
    );
}

#[test]
fn sarif_is_written_even_without_findings() {
    let mut r = Report::new("x", Policy::default());
    r.finish();
    let value: serde_json::Value =
        serde_json::from_str(&render(&r, Format::Sarif, &opts("x", false))).expect("json");
    assert_valid("tests/sarif-2.1.0.schema.json", &value);
    assert_eq!(
        value["runs"][0]["results"].as_array().map(Vec::len),
        Some(0)
    );
}

#[test]
fn fingerprints_are_stable_and_distinct() {
    let a = sample(Policy::default());
    let fa: Vec<_> = a.findings.iter().map(|f| f.fingerprint.clone()).collect();
    let unique: std::collections::BTreeSet<_> = fa.iter().collect();
    assert_eq!(unique.len(), fa.len());
    // Stable across processes (no per-process hash seed, address or time in them): two runs of
    // the binary over one document, and this process's engine over it, give the same ones.
    let doc = crate::support::root().join("fixtures/judge/tools.json");
    let run = || -> Vec<String> {
        let out = crate::support::mcpprobe()
            .args([
                "check",
                "--no-config",
                "--format",
                "json",
                "--fail-on",
                "none",
            ])
            .arg(&doc)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let report = crate::support::stdout_json(&out);
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                f["fingerprint"]
                    .as_str()
                    .expect("a fingerprint")
                    .to_string()
            })
            .collect()
    };
    let (first, second) = (run(), run());
    assert!(first.len() >= 2, "a document with findings: {first:?}");
    assert_eq!(
        first, second,
        "the fingerprints changed between two processes"
    );
    let distinct: std::collections::BTreeSet<_> = first.iter().collect();
    assert_eq!(distinct.len(), first.len(), "{first:?}");
    let bytes = std::fs::read(&doc).expect("the fixture");
    let input = mcpprobe::offline::parse(&doc.display().to_string(), &bytes, None).expect("parses");
    let here =
        mcpprobe::offline::check_report(&input, &doc.display().to_string(), Policy::default());
    let here: Vec<_> = here
        .findings
        .iter()
        .map(|f| f.fingerprint.clone())
        .collect();
    assert_eq!(here, first, "this process's engine and the binary disagree");
}

#[test]
fn terminal_escapes_every_control_and_invisible_character() {
    let r = sample(Policy::default());
    for color in [false, true] {
        let text = render(&r, Format::Terminal, &opts("x", color));
        for bad in ['\u{7}', '\r', '\u{202E}', '\u{E0041}', '\u{200B}'] {
            assert!(!text.contains(bad), "{:?} reached the terminal output", bad);
        }
        for shown in [
            "[U+001B]",
            "[U+0007]",
            "[U+000D]",
            "[U+202E]",
            "[U+E0041]",
            "[U+200B]",
        ] {
            assert!(text.contains(shown), "{shown} missing from:\n{text}");
        }
        // Without colour there is no ESC at all; with colour, only our own SGR sequences.
        let escs: Vec<_> = text
            .match_indices('\u{1b}')
            .map(|(i, _)| &text[i..])
            .collect();
        if color {
            assert!(!escs.is_empty());
            assert!(
                escs.iter().all(|s| s.starts_with("\u{1b}[")
                    && s[2..].starts_with(|c: char| c.is_ascii_digit()))
            );
            assert!(
                !text.contains("\u{1b}[2J"),
                "the server's own escape got through"
            );
        } else {
            assert!(escs.is_empty(), "ESC in colourless output");
        }
    }
}

#[test]
fn terminal_groups_by_severity_and_counts_suppressed() {
    let text = render(
        &sample(Policy::default()),
        Format::Terminal,
        &opts("x", false),
    );
    let order: Vec<usize> = ["── CRITICAL", "── HIGH", "── MEDIUM", "── LOW", "── INFO"]
        .iter()
        .map(|h| {
            text.find(h)
                .unwrap_or_else(|| panic!("{h} missing:\n{text}"))
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "severity groups out of order:\n{text}"
    );
    assert!(text.contains("1 suppressed"));
    assert!(text.contains("help: "));
    assert!(
        text.contains("MCP06 Intent Flow Subversion"),
        "references are named:\n{text}"
    );
}

/// The exit code every format states for `r`, rendered: the terminal's verdict line, the
/// JSON report's `exit_code`, SARIF's invocation and the Markdown summary.
fn stated_exit_codes(r: &Report) -> Vec<(Format, i64)> {
    let number = |text: &str, after: &str| -> i64 {
        let at = text
            .rfind(after)
            .unwrap_or_else(|| panic!("no {after:?} in:\n{text}"));
        let digits: String = text[at + after.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no number after {after:?} in:\n{text}"))
    };
    [
        Format::Terminal,
        Format::Json,
        Format::Sarif,
        Format::Markdown,
    ]
    .into_iter()
    .map(|format| {
        let text = render(r, format, &opts("x", false));
        let code = match format {
            Format::Terminal => number(&text, "\nexit "),
            Format::Markdown => number(&text, "exit code **"),
            Format::Json => {
                let v: serde_json::Value = serde_json::from_str(&text).expect("json");
                v["exit_code"].as_i64().expect("exit_code")
            }
            Format::Sarif => {
                let v: serde_json::Value = serde_json::from_str(&text).expect("sarif");
                v["runs"][0]["invocations"][0]["exitCode"]
                    .as_i64()
                    .expect("exitCode")
            }
        };
        (format, code)
    })
    .collect()
}

#[test]
fn exit_codes_follow_policy_not_format() {
    // The policy decides the code; every format, rendered, states that same code.
    let all = |code: i32| {
        [
            Format::Terminal,
            Format::Json,
            Format::Sarif,
            Format::Markdown,
        ]
        .map(|f| (f, i64::from(code)))
        .to_vec()
    };
    let at = |fail_on: Option<Severity>, min: Confidence| {
        let r = sample(Policy {
            fail_on,
            min_confidence: min,
        });
        assert_eq!(
            stated_exit_codes(&r),
            all(r.exit_code),
            "{fail_on:?} {min:?}"
        );
        r.exit_code
    };
    assert_eq!(at(Some(Severity::High), Confidence::Low), 1);
    assert_eq!(at(Some(Severity::Critical), Confidence::Low), 1);
    assert_eq!(at(None, Confidence::Low), 0);
    // The only critical finding (C1) is medium confidence: dropping it leaves nothing critical.
    assert_eq!(at(Some(Severity::Critical), Confidence::High), 0);

    let mut refused = Report::new("x", Policy::default());
    refused.outcome = RunOutcome::Refused;
    refused.finish();
    assert_eq!(refused.exit_code, 2);
    assert_eq!(stated_exit_codes(&refused), all(2));

    let mut errored = Report::new("x", Policy::default());
    errored.record("AUTH-01", Outcome::Error("boom".into()));
    errored.finish();
    assert_eq!(
        (errored.exit_code, errored.outcome),
        (3, RunOutcome::Incomplete)
    );
    assert_eq!(stated_exit_codes(&errored), all(3));
}

#[test]
fn suppressed_findings_never_count() {
    let mut r = Report::new(
        "x",
        Policy {
            fail_on: Some(Severity::Medium),
            min_confidence: Confidence::Low,
        },
    );
    let mut f = finding(check("META-03"), Some("C5")).build();
    f.suppressed = Some(Suppressed {
        reason: "ok".into(),
        until: None,
    });
    r.record("META-03", Outcome::Ran(vec![f]));
    r.finish();
    assert_eq!(r.exit_code, 0);
    assert_eq!(
        r.findings.len(),
        1,
        "a suppressed finding stays in the report"
    );
}

fn opts(artifact: &str, color: bool) -> mcpprobe::report::RenderOptions {
    mcpprobe::report::RenderOptions {
        artifact: mcpprobe::report::Artifact::named(artifact),
        color,
        invocation: None,
    }
}
