//! AUTH-01: tools/list answers without credentials.
//!
//! Metadata: `checks/passive/AUTH-01.toml`.

use crate::checks::Check;

pub struct Auth01;

pub static CHECK: Auth01 = Auth01;

impl Check for Auth01 {
    fn id(&self) -> &'static str {
        "AUTH-01"
    }
}
