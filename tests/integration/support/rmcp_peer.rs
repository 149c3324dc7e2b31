//! An in-process MCP server on the official Rust SDK (rmcp), on 127.0.0.1:0: stateful
//! (2025 sessions and 2026-07-28) or stateless.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Clone, Default)]
pub struct Echo;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

#[tool_router(server_handler)]
impl Echo {
    #[tool(description = "Echo text back")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

/// Starts the server; returns its MCP URL. It runs until the runtime is dropped.
pub fn start(rt: &tokio::runtime::Runtime, stateless: bool) -> String {
    rt.block_on(async move {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(!stateless)
            .with_json_response(stateless);
        let service = StreamableHttpService::new(
            || Ok(Echo),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        url
    })
}
