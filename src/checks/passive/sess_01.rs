//! SESS-01: Weak or mishandled session ids.
//!
//! Metadata: `checks/passive/SESS-01.toml`.

use crate::checks::Check;

pub struct Sess01;

pub static CHECK: Sess01 = Sess01;

impl Check for Sess01 {
    fn id(&self) -> &'static str {
        "SESS-01"
    }
}
