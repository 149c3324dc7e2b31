//! AUTH-02: Protected-resource metadata (RFC 9728) missing or wrong.
//!
//! Metadata: `checks/passive/AUTH-02.toml`.

use crate::checks::Check;

pub struct Auth02;

pub static CHECK: Auth02 = Auth02;

impl Check for Auth02 {
    fn id(&self) -> &'static str {
        "AUTH-02"
    }
}
