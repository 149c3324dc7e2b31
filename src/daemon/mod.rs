//! `mcpprobe daemon` (SPEC §8, §8.1): scheduled re-scans of the targets in `mcpprobe.toml`,
//! through one [`crate::engine::Scanner`], with their state in a [`store::Store`], a status
//! API, badges, metrics and a web page. A host of the engine, like the CLI.

pub mod page;
pub mod store;
