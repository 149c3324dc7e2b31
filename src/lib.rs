//! mcpprobe: a polite security scanner for MCP servers.
//!
//! The library holds everything; `src/main.rs` only runs [`cli::main`]. The engine is
//! [`engine::Scanner`]: the CLI, the daemon, the Action and the Python package host it.

pub mod active;
pub mod baseline;
pub mod catalogue;
pub mod checks;
#[cfg(feature = "cli")]
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod discover;
pub mod docs;
pub mod engine;
pub mod exit;
pub mod finding;
pub mod gate;
pub mod judge;
pub mod model;
pub mod net;
pub mod offline;
pub mod permit;
pub mod protocol;
pub mod report;
pub mod review;
pub mod rules;
pub mod util;
