//! PROTO-04: Answers depend on who asks (bait-and-switch).
//!
//! Metadata: `checks/passive/PROTO-04.toml`.

use crate::checks::Check;

pub struct Proto04;

pub static CHECK: Proto04 = Proto04;

impl Check for Proto04 {
    fn id(&self) -> &'static str {
        "PROTO-04"
    }
}
