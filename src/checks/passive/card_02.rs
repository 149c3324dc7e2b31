//! CARD-02: A2A agent card problems (rules A1–A10).
//!
//! Metadata: `checks/passive/CARD-02.toml`. Rules: `src/rules/agent_card.rs`.

use crate::checks::{Check, Outcome};
use crate::rules::{Document, Input, InputKind, agent_card};

pub struct Card02;

pub static CHECK: Card02 = Card02;

impl Check for Card02 {
    fn id(&self) -> &'static str {
        "CARD-02"
    }

    fn offline(&self, input: &Input, _doc: &Document<'_>) -> Outcome {
        match input.kind {
            InputKind::AgentCard => Outcome::Ran(agent_card::run(&input.value)),
            _ => Outcome::Skipped("the input is not an A2A agent card".into()),
        }
    }
}
