//! TRANS-03: Permissive CORS on the MCP endpoint.
//!
//! Metadata: `checks/passive/TRANS-03.toml`.

use crate::checks::Check;

pub struct Trans03;

pub static CHECK: Trans03 = Trans03;

impl Check for Trans03 {
    fn id(&self) -> &'static str {
        "TRANS-03"
    }
}
