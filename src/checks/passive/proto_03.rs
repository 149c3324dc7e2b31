//! PROTO-03: Malformed request not answered with a clean JSON-RPC error.
//!
//! Metadata: `checks/passive/PROTO-03.toml`.

use crate::checks::Check;

pub struct Proto03;

pub static CHECK: Proto03 = Proto03;

impl Check for Proto03 {
    fn id(&self) -> &'static str {
        "PROTO-03"
    }
}
