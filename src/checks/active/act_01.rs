//! ACT-01: Command injection through free-text parameters.
//!
//! Metadata: `checks/active/ACT-01.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act01;

pub static CHECK: Act01 = Act01;

impl Check for Act01 {
    fn id(&self) -> &'static str {
        "ACT-01"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(crate::checks::probe::plan_for(tools, &["command", "cmd", "shell", "script", "exec", "args", "argv"], "an echo canary (`$(echo mcpprobe-canary)`), reading the result for the echoed marker"))
    }
}
