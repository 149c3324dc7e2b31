//! Small utilities of the ground floor: terminal-safe escaping, atomic file writes, JSON
//! helpers. They import nothing of the crate.

pub mod atomic;
pub mod escape;
pub mod json;
