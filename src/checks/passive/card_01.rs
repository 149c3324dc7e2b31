//! CARD-01: MCP server card problems.
//!
//! Metadata: `checks/passive/CARD-01.toml`.

use crate::checks::Check;

pub struct Card01;

pub static CHECK: Card01 = Card01;

impl Check for Card01 {
    fn id(&self) -> &'static str {
        "CARD-01"
    }
}
