//! INFO-01: Protocol fingerprint.
//!
//! Metadata: `checks/other/INFO-01.toml`.

use crate::checks::Check;

pub struct Info01;

pub static CHECK: Info01 = Info01;

impl Check for Info01 {
    fn id(&self) -> &'static str {
        "INFO-01"
    }
}
