//! ACT-06: Tools callable without the authorization the server advertises.
//!
//! Metadata: `checks/active/ACT-06.toml`.

use crate::checks::{ACTIVE_NOT_IMPLEMENTED, Check, Outcome};
use crate::rules::{Document, Input};

pub struct Act06;

pub static CHECK: Act06 = Act06;

impl Check for Act06 {
    fn id(&self) -> &'static str {
        "ACT-06"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::NotImplemented(ACTIVE_NOT_IMPLEMENTED.into())
    }

    fn plan(&self, tools: &[serde_json::Value]) -> Option<String> {
        Some(match crate::checks::probe::read_only(tools).first() { None => "no read-only tool to call".to_string(), Some(t) => format!("would call {t} once without credentials and expect 401") })
    }
}
