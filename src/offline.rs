//! The offline commands: `check`, `fingerprint`, `diff`. They send nothing over the network.

use crate::cli::{CheckArgs, usage_error};
use crate::report::Format;

pub fn check(_args: &CheckArgs) -> i32 {
    usage_error("`check` is not yet available in this build of mcpprobe")
}

pub fn fingerprint(_file: &str) -> i32 {
    usage_error("`fingerprint` is not yet available in this build of mcpprobe")
}

pub fn diff(_old: &str, _new: &str, _format: Format) -> i32 {
    usage_error("`diff` is not yet available in this build of mcpprobe")
}
