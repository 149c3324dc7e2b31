//! PROTO-02: Unknown method answered with a result instead of error -32601.
//!
//! Metadata: `checks/passive/PROTO-02.toml`.

use crate::checks::Check;

pub struct Proto02;

pub static CHECK: Proto02 = Proto02;

impl Check for Proto02 {
    fn id(&self) -> &'static str {
        "PROTO-02"
    }
}
