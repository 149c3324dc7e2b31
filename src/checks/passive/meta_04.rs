//! META-04: Tool definition problems (rules S1–S6, N1).
//!
//! Metadata: `checks/passive/META-04.toml`. Rules: `src/rules/definitions.rs`.

use crate::checks::{Check, Outcome};
use crate::rules::{Document, Input, InputKind, definitions};

pub struct Meta04;

pub static CHECK: Meta04 = Meta04;

impl Check for Meta04 {
    fn id(&self) -> &'static str {
        "META-04"
    }

    fn offline(&self, input: &Input, doc: &Document<'_>) -> Outcome {
        match input.kind {
            InputKind::Tools => Outcome::Ran(definitions::run(doc)),
            InputKind::ServerCard => {
                Outcome::Skipped("a server card's tools are checked by CARD-01 (SC10)".into())
            }
            InputKind::AgentCard => Outcome::Skipped("an agent card lists skills, not tools".into()),
        }
    }
}
