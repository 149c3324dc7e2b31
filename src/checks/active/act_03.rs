//! ACT-03: Server-side request forgery through URL parameters.
//!
//! Metadata: `checks/active/ACT-03.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act03;

pub static CHECK: Act03 = Act03;

impl Check for Act03 {
    fn id(&self) -> &'static str {
        "ACT-03"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(crate::checks::probe::plan_for(tools, &["url", "uri", "link", "href", "endpoint", "webhook", "host"], "a canary URL on a listener mcpprobe controls"))
    }
}
