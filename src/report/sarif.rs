//! SARIF 2.1.0 through serde-sarif: every catalogue check and rule code listed as a rule (fired
//! or not), `security-severity` on rules and results, stable `partialFingerprints`, suppressed
//! findings as SARIF suppressions.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use serde_sarif::sarif::{
    ArtifactLocation, Invocation, Location, LogicalLocation, Message, MultiformatMessageString,
    PhysicalLocation, PropertyBag, Region, ReportingConfiguration, ReportingDescriptor,
    Result as SarifResult, ResultLevel, Run, Sarif, Suppression, Tool, ToolComponent,
};

use super::RenderOptions;
use crate::catalogue::{CheckMeta, RuleMeta, catalogue};
use crate::finding::{Confidence, Finding, Severity};
use crate::model::Report;
use crate::util::escape::escape_trimmed;

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const INFORMATION_URI: &str = "https://github.com/mcpprobe/mcpprobe";

fn level(s: Severity) -> ResultLevel {
    match s {
        Severity::Critical | Severity::High => ResultLevel::Error,
        Severity::Medium => ResultLevel::Warning,
        Severity::Low | Severity::Info => ResultLevel::Note,
    }
}

fn level_value(s: Severity) -> Value {
    json!(match level(s) {
        ResultLevel::Error => "error",
        ResultLevel::Warning => "warning",
        _ => "note",
    })
}

/// The SARIF rule id of a finding or catalogue entry: `META-02/P1`, or `AUTH-01`.
pub fn rule_id(check: &str, rule: Option<&str>) -> String {
    match rule {
        Some(code) => format!("{check}/{code}"),
        None => check.to_string(),
    }
}

fn properties(
    severity: Severity,
    confidence: Confidence,
    kind: &str,
    refs: impl Iterator<Item = String>,
) -> PropertyBag {
    let mut tags = vec!["security".to_string(), format!("mcpprobe:{kind}")];
    tags.extend(refs.map(|r| format!("owasp:{r}")));
    let mut extra = BTreeMap::new();
    extra.insert(
        "security-severity".into(),
        json!(severity.security_severity()),
    );
    extra.insert("precision".into(), json!(precision(confidence)));
    PropertyBag::builder()
        .tags(tags)
        .additional_properties(extra)
        .build()
}

fn precision(c: Confidence) -> &'static str {
    match c {
        Confidence::High => "high",
        Confidence::Medium => "medium",
        Confidence::Low => "low",
    }
}

fn help(meta: &CheckMeta, rule: Option<&RuleMeta>) -> MultiformatMessageString {
    let fix = rule.map(|r| r.fix.trim()).unwrap_or(meta.fix.trim());
    let text = format!("{}\n\nFix: {}", meta.why.trim(), fix);
    let markdown = format!(
        "**{}**\n\n{}\n\n**Fix.** {}\n\nSpec: {}",
        rule.map(|r| r.title.as_str()).unwrap_or(&meta.title),
        meta.why.trim(),
        fix,
        meta.spec
    );
    MultiformatMessageString::builder()
        .text(text)
        .markdown(markdown)
        .build()
}

fn descriptors() -> Vec<ReportingDescriptor> {
    let mut out = Vec::new();
    for meta in catalogue().metas() {
        let mut push = |rule: Option<&RuleMeta>| {
            let (title, sev, conf, mcp, asi) = match rule {
                Some(r) => (
                    &r.title,
                    r.severity,
                    r.confidence,
                    &r.owasp_mcp,
                    &r.owasp_asi,
                ),
                None => (
                    &meta.title,
                    meta.severity,
                    meta.confidence,
                    &meta.owasp_mcp,
                    &meta.owasp_asi,
                ),
            };
            let refs = mcp.iter().chain(asi.iter()).cloned();
            out.push(
                ReportingDescriptor::builder()
                    .id(rule_id(&meta.id, rule.map(|r| r.code.as_str())))
                    .name(title.clone())
                    .short_description(
                        MultiformatMessageString::builder()
                            .text(title.clone())
                            .build(),
                    )
                    .full_description(
                        MultiformatMessageString::builder()
                            .text(meta.why.trim().to_string())
                            .build(),
                    )
                    .help(help(meta, rule))
                    .default_configuration(
                        ReportingConfiguration::builder()
                            .level(level_value(sev))
                            .build(),
                    )
                    .properties(properties(sev, conf, meta.kind.as_str(), refs))
                    .build(),
            );
        };
        push(None);
        for rule in &meta.rules {
            push(Some(rule));
        }
    }
    out
}

/// The line of `artifact` that names `tool` (a JSON string `"tool"` after a `"name"` key, or a
/// TOML `tool = "…"`), else 1: code scanning shows a result on a line of a file.
fn line_of(artifact: Option<&str>, tool: Option<&str>) -> i64 {
    let (Some(text), Some(tool)) = (artifact, tool) else {
        return 1;
    };
    let quoted = serde_json::to_string(tool).unwrap_or_default();
    let names = |line: &str| {
        line.match_indices(quoted.as_str()).any(|(at, _)| {
            let before = line[..at].trim_end();
            let key = |sep: char, k: &str| {
                before
                    .strip_suffix(sep)
                    .is_some_and(|b| b.trim_end().ends_with(k))
            };
            key(':', "\"name\"") || key('=', "tool")
        })
    };
    text.lines().position(names).map_or(1, |i| i as i64 + 1)
}

fn result(
    f: &Finding,
    index: &BTreeMap<String, i64>,
    report: &Report,
    options: &RenderOptions,
) -> SarifResult {
    let id = rule_id(&f.check, f.rule.as_deref());
    let mut text = f.title.clone();
    if let Some(m) = &f.message {
        text.push_str(": ");
        text.push_str(m);
    }
    if let Some(e) = &f.evidence.text {
        text.push_str(&format!(" — \"{}\"", escape_trimmed(e, 300)));
    }
    // The server, then the tool on it, then the place in what it sent.
    // In a discovered set (`scan --discover`) the server is the finding's own.
    let server = f.location.server.as_ref().unwrap_or(&report.target);
    let mut logical = vec![
        LogicalLocation::builder()
            .name(server.clone())
            .kind("module")
            .build(),
    ];
    if let Some(tool) = &f.location.tool {
        logical.push(
            LogicalLocation::builder()
                .name(tool.clone())
                .fully_qualified_name(format!("{server}#{tool}"))
                .kind("function")
                .build(),
        );
    }
    if let Some(ptr) = &f.location.pointer {
        logical.push(
            LogicalLocation::builder()
                .fully_qualified_name(ptr.clone())
                .kind("member")
                .build(),
        );
    }
    let physical = PhysicalLocation::builder()
        .artifact_location(
            ArtifactLocation::builder()
                .uri(options.artifact.uri.clone())
                .build(),
        )
        .region(
            Region::builder()
                .start_line(line_of(
                    options.artifact.text.as_deref(),
                    f.location.tool.as_deref(),
                ))
                .build(),
        )
        .build();
    let location = Location::builder()
        .physical_location(physical)
        .logical_locations(logical)
        .build();
    let meta = catalogue().meta(&f.check);
    let mut fingerprints = BTreeMap::new();
    fingerprints.insert("mcpprobeFinding/v1".to_string(), f.fingerprint.clone());
    let mut props = properties(
        f.severity,
        f.confidence,
        meta.kind.as_str(),
        f.references.iter().cloned(),
    );
    props
        .additional_properties
        .insert("mcpprobe/severity".into(), json!(f.severity.as_str()));
    props
        .additional_properties
        .insert("mcpprobe/confidence".into(), json!(f.confidence.as_str()));
    if let Some(default) = f.default_severity {
        props
            .additional_properties
            .insert("mcpprobe/defaultSeverity".into(), json!(default.as_str()));
    }
    let base = SarifResult::builder()
        .rule_id(id.clone())
        .rule_index(index.get(&id).copied().unwrap_or(0))
        .level(level(f.severity))
        .message(Message::builder().text(text).build())
        .locations(vec![location])
        .partial_fingerprints(fingerprints)
        .properties(props);
    // With --fail-on-new, SARIF's own word for it: new, or unchanged since the previous run.
    let state = f
        .new
        .map(|new| json!(if new { "new" } else { "unchanged" }));
    match (&f.suppressed, state) {
        (Some(s), state) => {
            let sup = Suppression::builder()
                .kind(json!("external"))
                .status(json!("accepted"))
                .justification(s.reason.clone());
            let sup = match &s.until {
                Some(until) => {
                    let mut extra = BTreeMap::new();
                    extra.insert("until".to_string(), json!(until));
                    sup.properties(PropertyBag::builder().additional_properties(extra).build())
                        .build()
                }
                None => sup.build(),
            };
            let b = base.suppressions(vec![sup]);
            match state {
                Some(st) => b.baseline_state(st).build(),
                None => b.build(),
            }
        }
        (None, Some(st)) => base.baseline_state(st).build(),
        (None, None) => base.build(),
    }
}

/// Renders `report` as a SARIF 2.1.0 log: one run, its invocation with the exit code, every
/// result at `options.artifact`.
pub fn render(report: &Report, options: &RenderOptions) -> String {
    let mut rules = descriptors();
    // A judge names its own rule codes (META-01/KW1): each gets a descriptor of its own, as
    // META-01's, so that every result's ruleIndex points at a rule with its id.
    for f in &report.findings {
        let id = rule_id(&f.check, f.rule.as_deref());
        if rules.iter().any(|r| r.id == id) {
            continue;
        }
        let Some(mut d) = rules
            .iter()
            .find(|r| r.id == rule_id(&f.check, None))
            .cloned()
        else {
            continue;
        };
        let title = format!(
            "{} (rule {})",
            f.title,
            f.rule.as_deref().unwrap_or_default()
        );
        d.id = id;
        d.name = Some(title.clone());
        d.short_description = Some(MultiformatMessageString::builder().text(title).build());
        rules.push(d);
    }
    let rules = rules;
    let index: BTreeMap<String, i64> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.clone(), i as i64))
        .collect();
    let results: Vec<SarifResult> = report
        .findings
        .iter()
        .map(|f| result(f, &index, report, options))
        .collect();
    let driver = ToolComponent::builder()
        .name("mcpprobe")
        .version(report.tool.version.clone())
        .semantic_version(report.tool.version.clone())
        .information_uri(INFORMATION_URI)
        .rules(rules)
        .build();
    let notes: Vec<_> = report
        .warnings
        .iter()
        .map(|w| {
            serde_sarif::sarif::Notification::builder()
                .message(Message::builder().text(w.clone()).build())
                .level(json!("warning"))
                .build()
        })
        .collect();
    let invocation = Invocation::builder()
        .execution_successful(matches!(report.exit_code, 0 | 1))
        .exit_code(i64::from(report.exit_code));
    let invocation = match (&options.invocation, notes.is_empty()) {
        (Some(cmd), true) => invocation.command_line(cmd.clone()).build(),
        (Some(cmd), false) => invocation
            .command_line(cmd.clone())
            .tool_configuration_notifications(notes)
            .build(),
        (None, true) => invocation.build(),
        (None, false) => invocation.tool_configuration_notifications(notes).build(),
    };
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .invocations(vec![invocation])
        .results(results)
        .build();
    let sarif = Sarif::builder()
        .version(json!("2.1.0"))
        .schema(SCHEMA_URI)
        .runs(vec![run])
        .build();
    match serde_json::to_string_pretty(&sarif) {
        Ok(s) => s,
        Err(e) => panic!("a SARIF log always serialises: {e}"),
    }
}
