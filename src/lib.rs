//! mcpprobe: a polite security scanner for MCP servers.
//!
//! The library holds everything; `src/main.rs` only runs [`cli::main`].

pub mod baseline;
pub mod catalogue;
pub mod checks;
pub mod cli;
pub mod demo;
pub mod docs;
pub mod exit;
pub mod finding;
pub mod fingerprint;
pub mod gate;
pub mod net;
pub mod offline;
pub mod protocol;
pub mod report;
pub mod rules;
pub mod scan;
