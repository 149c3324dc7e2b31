//! CARD-02: A2A agent card problems.
//!
//! Metadata: `checks/passive/CARD-02.toml`.

use crate::checks::Check;

pub struct Card02;

pub static CHECK: Card02 = Card02;

impl Check for Card02 {
    fn id(&self) -> &'static str {
        "CARD-02"
    }
}
