//! AUTH-03: Authorization-server metadata weak (no S256 PKCE, issuer mismatch, non-https endpoints).
//!
//! Metadata: `checks/passive/AUTH-03.toml`.

use crate::checks::Check;

pub struct Auth03;

pub static CHECK: Auth03 = Auth03;

impl Check for Auth03 {
    fn id(&self) -> &'static str {
        "AUTH-03"
    }
}
