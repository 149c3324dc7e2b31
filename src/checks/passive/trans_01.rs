//! TRANS-01: Forged Origin (or Host, for loopback) accepted instead of 403.
//!
//! Metadata: `checks/passive/TRANS-01.toml`.

use crate::checks::Check;

pub struct Trans01;

pub static CHECK: Trans01 = Trans01;

impl Check for Trans01 {
    fn id(&self) -> &'static str {
        "TRANS-01"
    }
}
