//! BASE-01: Tool definitions changed since the baseline (rug pull).
//!
//! Metadata: `checks/other/BASE-01.toml`.

use crate::checks::Check;

pub struct Base01;

pub static CHECK: Base01 = Base01;

impl Check for Base01 {
    fn id(&self) -> &'static str {
        "BASE-01"
    }
}
