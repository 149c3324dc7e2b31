//! Speaking MCP: the fingerprint ladder, the era's sessions (HTTP and stdio), the inventory.

pub mod inventory;
pub mod ladder;
pub mod rpc;
pub mod session;
pub mod sse;
pub mod stdio;
