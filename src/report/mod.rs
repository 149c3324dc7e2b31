//! Reports: what a run recorded, rendered as terminal text, JSON (SPEC §4 contract) or SARIF.
//! Reports never ask the network anything.

pub mod badge;
pub mod markdown;
pub mod sarif;
pub mod terminal;

use crate::model::Report;

/// An output format (`--format`), named as the CLI and the Python package name it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case", ascii_case_insensitive)]
pub enum Format {
    Terminal,
    Json,
    Sarif,
    /// A Markdown summary (the Action's job summary).
    Markdown,
}

/// The file SARIF results point at: a file in the repository (the configuration, the
/// baseline, `--sarif-artifact`, or the input of `check`), and its text when the host read it,
/// so results can point at the line that names their tool.
#[derive(Debug, Clone, Default)]
pub struct Artifact {
    /// A path relative to the repository root, `/`-separated (or, lacking one, the target).
    pub uri: String,
    pub text: Option<String>,
}

impl Artifact {
    pub fn named(uri: impl Into<String>) -> Artifact {
        Artifact {
            uri: uri.into(),
            text: None,
        }
    }
}

/// How a report is rendered, beside its format.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    pub artifact: Artifact,
    /// Colour (terminal format only).
    pub color: bool,
    /// The command line that produced the report, secrets already removed (SARIF invocation).
    pub invocation: Option<String>,
}

/// Writes [`render`]'s text to `out`; the JSON report is serialised straight into it, so a large
/// report is never held in memory a second time as text.
pub fn write_rendered(
    report: &Report,
    format: Format,
    options: &RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, report).map_err(std::io::Error::other)?;
            out.write_all(b"\n")
        }
        _ => out.write_all(render(report, format, options).as_bytes()),
    }
}

/// Renders a report in a format.
pub fn render(report: &Report, format: Format, options: &RenderOptions) -> String {
    match format {
        Format::Terminal => terminal::render(report, options.color),
        Format::Json => report.to_json() + "\n",
        Format::Sarif => sarif::render(report, options) + "\n",
        Format::Markdown => markdown::render(report),
    }
}
