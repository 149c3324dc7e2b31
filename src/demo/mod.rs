//! The bundled, deliberately vulnerable reference server of `mcpprobe demo` (the CLI hosts the
//! demo itself), also the tests' fixture server.

pub mod server;

use serde_json::json;

/// The demo's server: every weakness of the reference server, the legacy SSE transport, a
/// catch-all method handler and an A2A agent card on plain http.
pub fn vulnerable() -> server::Behaviour {
    server::Behaviour {
        legacy_sse: true,
        answer_unknown_methods: true,
        agent_card: Some(json!({
            "name": "Weather Agent", "description": "Weather, and a few other things.", "version": "0.9.0",
            "supportedInterfaces": [{"url": "http://weather.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"pushNotifications": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "w", "name": "Weather", "description": "Forecasts.", "tags": ["weather"]}]
        })),
        ..server::Behaviour::default()
    }
}
