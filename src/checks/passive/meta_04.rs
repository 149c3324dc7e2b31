//! META-04: Tool definition problems.
//!
//! Metadata: `checks/passive/META-04.toml`.

use crate::checks::Check;

pub struct Meta04;

pub static CHECK: Meta04 = Meta04;

impl Check for Meta04 {
    fn id(&self) -> &'static str {
        "META-04"
    }
}
