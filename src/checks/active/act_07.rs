//! ACT-07: Tools that accept unexpected properties or types (schema not enforced).
//!
//! Metadata: `checks/active/ACT-07.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act07;

pub static CHECK: Act07 = Act07;

impl Check for Act07 {
    fn id(&self) -> &'static str {
        "ACT-07"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(match crate::checks::probe::read_only(tools).first() { None => "no read-only tool to call".to_string(), Some(t) => format!("would call {t} with one unexpected property and one wrong type, and expect -32602") })
    }
}
