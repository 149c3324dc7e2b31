//! ACT-05: Tool results that carry instructions aimed at the model.
//!
//! Metadata: `checks/active/ACT-05.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act05;

pub static CHECK: Act05 = Act05;

impl Check for Act05 {
    fn id(&self) -> &'static str {
        "ACT-05"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(match crate::checks::probe::read_only(tools).as_slice() { [] => "no read-only tool to call".to_string(), t => format!("would call the read-only tools {} once each and apply the P rules to their results", t.join(", ")) })
    }
}
