//! INFO-02: Inventory and tool-list fingerprint.
//!
//! Metadata: `checks/other/INFO-02.toml`.

use crate::checks::Check;

pub struct Info02;

pub static CHECK: Info02 = Info02;

impl Check for Info02 {
    fn id(&self) -> &'static str {
        "INFO-02"
    }
}
