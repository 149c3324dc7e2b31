//! META-01: Semantic review by a judge the user plugs in.
//!
//! Metadata: `checks/other/META-01.toml`.

use crate::checks::Check;

pub struct Meta01;

pub static CHECK: Meta01 = Meta01;

impl Check for Meta01 {
    fn id(&self) -> &'static str {
        "META-01"
    }
}
