//! PROTO-01: Deprecated HTTP+SSE transport still served.
//!
//! Metadata: `checks/passive/PROTO-01.toml`.

use crate::checks::Check;

pub struct Proto01;

pub static CHECK: Proto01 = Proto01;

impl Check for Proto01 {
    fn id(&self) -> &'static str {
        "PROTO-01"
    }
}
