//! CARD-01: MCP server card problems (rules SC1–SC11).
//!
//! Metadata: `checks/passive/CARD-01.toml`. Static rules: `src/rules/server_card.rs`; SC3, SC4,
//! SC8 and SC11 need the live endpoints.

use crate::checks::{Check, Outcome};
use crate::rules::{Document, Input, InputKind, server_card};

pub struct Card01;

pub static CHECK: Card01 = Card01;

impl Check for Card01 {
    fn id(&self) -> &'static str {
        "CARD-01"
    }

    fn offline(&self, input: &Input, _doc: &Document<'_>) -> Outcome {
        match (input.kind, &input.invalid_json) {
            (InputKind::ServerCard, Some(error)) => Outcome::Ran(vec![server_card::not_json(error)]),
            (InputKind::ServerCard, None) => Outcome::Ran(server_card::run(&input.value)),
            _ => Outcome::Skipped("the input is not an MCP server card".into()),
        }
    }
}
