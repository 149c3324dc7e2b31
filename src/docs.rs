//! Documentation rendered from the catalogue: `mcpprobe checks`, `checks show ID`, and the
//! README's check table (`scripts/gen-readme-table.sh`).

use std::fmt::Write as _;

use serde_json::json;

use crate::catalogue::{CheckMeta, catalogue};

/// How `mcpprobe checks` lists the catalogue.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case", ascii_case_insensitive)]
pub enum ListFormat {
    Terminal,
    Json,
    Markdown,
}

/// The whole catalogue as a list.
pub fn list(format: ListFormat) -> String {
    let cat = catalogue();
    match format {
        ListFormat::Json => {
            let entries: Vec<_> = cat.metas().collect();
            let mut s = serde_json::to_string_pretty(&json!({ "checks": entries }))
                .unwrap_or_else(|e| panic!("the catalogue always serialises: {e}"));
            s.push('\n');
            s
        }
        ListFormat::Markdown => markdown_table(),
        ListFormat::Terminal => {
            let mut out = String::new();
            let mut kind = None;
            for m in cat.metas() {
                if kind != Some(m.kind) {
                    kind = Some(m.kind);
                    let n = cat.metas().filter(|x| x.kind == m.kind).count();
                    let _ = writeln!(out, "\n{} ({n})", m.kind.as_str());
                }
                let rules = if m.rules.is_empty() {
                    String::new()
                } else {
                    format!(
                        "  [{}]",
                        m.rules
                            .iter()
                            .map(|r| r.code.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                };
                let _ = writeln!(out, "  {:<9} {:<8} {}{}", m.id, m.severity, m.title, rules);
            }
            let _ = writeln!(out, "\n`mcpprobe checks show ID` explains one.");
            out.trim_start().to_string()
        }
    }
}

fn references(meta_mcp: &[String], meta_asi: &[String]) -> String {
    meta_mcp
        .iter()
        .chain(meta_asi.iter())
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}

/// The README table: one row per check, generated so it cannot drift from the catalogue.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| id | kind | default severity | title | rules | references |\n|---|---|---|---|---|---|\n",
    );
    for m in catalogue().metas() {
        let rules = m
            .rules
            .iter()
            .map(|r| r.code.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            m.id,
            m.kind.as_str(),
            m.severity,
            m.title.replace('|', "\\|"),
            rules,
            references(&m.owasp_mcp, &m.owasp_asi)
        );
    }
    out
}

/// One check explained; `None` when the id is unknown.
pub fn show(id: &str) -> Option<String> {
    let entry = catalogue().get(id)?;
    Some(explain(&entry.meta))
}

fn explain(m: &CheckMeta) -> String {
    let tax = &catalogue().taxonomy;
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", m.id, m.title);
    let _ = writeln!(
        out,
        "kind: {} · default severity: {} · confidence: {} · request budget: {}",
        m.kind.as_str(),
        m.severity,
        m.confidence,
        m.requests
    );
    if let Some(note) = &m.severity_note {
        let _ = writeln!(out, "severity: {note}");
    }
    let refs: Vec<String> = m
        .owasp_mcp
        .iter()
        .chain(m.owasp_asi.iter())
        .map(|r| tax.describe(r))
        .collect();
    let _ = writeln!(out, "references: {}", refs.join(" · "));
    let _ = writeln!(out, "spec: {}", m.spec);
    let _ = writeln!(out, "\nWhy it matters\n{}", indent(m.why.trim()));
    let _ = writeln!(out, "\nHow to fix\n{}", indent(m.fix.trim()));
    if !m.rules.is_empty() {
        let _ = writeln!(out, "\nRules");
        for r in &m.rules {
            let _ = writeln!(
                out,
                "  {:<5} {:<8} {} ({})",
                r.code,
                r.severity,
                r.title,
                references(&r.owasp_mcp, &r.owasp_asi)
            );
        }
    }
    out
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
