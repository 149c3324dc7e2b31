//! META-03: What the tools can do (capability classes).
//!
//! Metadata: `checks/passive/META-03.toml`.

use crate::checks::Check;

pub struct Meta03;

pub static CHECK: Meta03 = Meta03;

impl Check for Meta03 {
    fn id(&self) -> &'static str {
        "META-03"
    }
}
