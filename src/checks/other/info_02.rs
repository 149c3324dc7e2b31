//! INFO-02: Inventory and tool-list fingerprint.
//!
//! Metadata: `checks/other/INFO-02.toml`.

use serde_json::Value;

use crate::checks::{Check, Outcome};
use crate::finding::Finding;
use crate::rules::{Document, Input, InputKind};

pub struct Info02;

pub static CHECK: Info02 = Info02;

/// "12 tools, 0 prompts, 3 resources, 1 resource template" for an inventory object.
pub fn counts(inventory: &Value) -> String {
    let n = |k: &str| inventory.get(k).and_then(Value::as_array).map(Vec::len).unwrap_or(0);
    format!(
        "{} tools, {} prompts, {} resources, {} resource templates",
        n("tools"),
        n("prompts"),
        n("resources"),
        n("resourceTemplates")
    )
}

impl Check for Info02 {
    fn id(&self) -> &'static str {
        "INFO-02"
    }

    fn offline(&self, input: &Input, _doc: &Document<'_>) -> Outcome {
        if input.kind != InputKind::Tools {
            return Outcome::Skipped("the input is a card, not an inventory".into());
        }
        let sha = input.tools_sha256();
        let finding = Finding::of(self.meta(), None)
            .pointer("/tools")
            .message(format!("{}; tool-list sha256 {sha}", counts(&input.value)))
            .build();
        Outcome::Ran(vec![finding])
    }
}
