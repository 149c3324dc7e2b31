//! TRANS-02: Plaintext HTTP on a non-loopback endpoint, or TLS problems.
//!
//! Metadata: `checks/passive/TRANS-02.toml`.

use crate::checks::Check;

pub struct Trans02;

pub static CHECK: Trans02 = Trans02;

impl Check for Trans02 {
    fn id(&self) -> &'static str {
        "TRANS-02"
    }
}
