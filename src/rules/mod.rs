//! The metadata rules engine (SPEC §3.1). Pure: documents in, findings out.

use serde_json::Value;

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputKind {
    /// A tools/list response, its result, or a bare tools array.
    Tools,
    /// An MCP server card.
    ServerCard,
    /// An A2A agent card.
    AgentCard,
}

/// Documents read offline: what `mcpprobe check` hands to the checks.
#[derive(Debug, Clone)]
pub struct Input {
    pub kind: InputKind,
    pub value: Value,
}
