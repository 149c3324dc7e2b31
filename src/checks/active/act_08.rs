//! ACT-08: Resource templates that resolve outside their intended root.
//!
//! Metadata: `checks/active/ACT-08.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act08;

pub static CHECK: Act08 = Act08;

impl Check for Act08 {
    fn id(&self) -> &'static str {
        "ACT-08"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        let _ = tools; Some("would read one canary URI outside each resource template's root (`…/../mcpprobe-canary`)".to_string())
    }
}
