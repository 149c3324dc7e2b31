//! ACT-02: Path traversal through path-like parameters.
//!
//! Metadata: `checks/active/ACT-02.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act02;

pub static CHECK: Act02 = Act02;

impl Check for Act02 {
    fn id(&self) -> &'static str {
        "ACT-02"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(crate::checks::probe::plan_for(tools, &["path", "file", "filename", "filepath", "dir", "directory", "folder"], "a traversal canary (`../../mcpprobe-canary-does-not-exist`) that names nothing real"))
    }
}
