//! META-02: Hidden or manipulative text in what the model reads.
//!
//! Metadata: `checks/passive/META-02.toml`.

use crate::checks::Check;

pub struct Meta02;

pub static CHECK: Meta02 = Meta02;

impl Check for Meta02 {
    fn id(&self) -> &'static str {
        "META-02"
    }
}
