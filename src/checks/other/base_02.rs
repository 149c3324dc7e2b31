//! BASE-02: Server instructions, prompts or resources changed since the baseline.
//!
//! Metadata: `checks/other/BASE-02.toml`.

use crate::checks::Check;

pub struct Base02;

pub static CHECK: Base02 = Base02;

impl Check for Base02 {
    fn id(&self) -> &'static str {
        "BASE-02"
    }
}
