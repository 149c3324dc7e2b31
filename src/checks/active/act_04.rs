//! ACT-04: SQL injection through query-like parameters.
//!
//! Metadata: `checks/active/ACT-04.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act04;

pub static CHECK: Act04 = Act04;

impl Check for Act04 {
    fn id(&self) -> &'static str {
        "ACT-04"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(crate::checks::probe::plan_for(tools, &["query", "sql", "filter", "where", "search"], "a timing canary (`' AND SLEEP(0)--`) that reads and changes nothing"))
    }
}
