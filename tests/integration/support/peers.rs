//! Real MCP servers written by others, installed from the registries by
//! `scripts/setup-peers.sh` into `.peers/`, started on 127.0.0.1 on a free port and stopped when
//! the guard drops.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub enum Peer {
    /// npm @modelcontextprotocol/server-everything, Streamable HTTP.
    EverythingHttp,
    /// The same, legacy HTTP+SSE mode.
    EverythingSse,
    /// TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2), stateless, JSON responses.
    TsV1,
    /// TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0) createMcpHandler, default legacy mode.
    TsV2,
    /// The same with `legacy: 'reject'` (2026-07-28 only).
    TsV2Reject,
    /// PyPI `mcp` 2.3.0, stateful.
    Py2,
    /// PyPI `mcp` 2.3.0, stateless with JSON responses.
    Py2Stateless,
    /// PyPI `mcp` 1.30.0 (FastMCP).
    Py1,
}

pub fn peers_dir() -> PathBuf {
    let dir = super::root().join(".peers");
    assert!(
        dir.join("node_modules").exists() && dir.join("py2/bin/python").exists(),
        "the real MCP servers are not installed: run scripts/setup-peers.sh (CI's .ci/run does)"
    );
    dir
}

/// The command that starts the server everything as a stdio server.
pub fn everything_stdio() -> Vec<String> {
    let p = peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    vec!["node".into(), p.display().to_string(), "stdio".into()]
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub struct Running {
    child: Child,
    pub url: String,
}

impl Peer {
    pub fn start(self) -> Running {
        let dir = peers_dir();
        let root = super::root();
        let port = free_port();
        let everything =
            dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let loopback = root.join("tests/peers/force-loopback.cjs");
        let mut cmd = match self {
            Peer::EverythingHttp | Peer::EverythingSse => {
                let mut c = Command::new("node");
                c.arg("--require").arg(&loopback).arg(&everything);
                c.arg(if matches!(self, Peer::EverythingSse) {
                    "sse"
                } else {
                    "streamableHttp"
                });
                c
            }
            Peer::TsV1 => {
                let mut c = Command::new("node");
                c.arg(dir.join("ts-v1-server.mjs"));
                c
            }
            Peer::TsV2 | Peer::TsV2Reject => {
                let mut c = Command::new("node");
                c.arg(dir.join("ts-v2-server.mjs"));
                if matches!(self, Peer::TsV2Reject) {
                    c.env("LEGACY", "reject");
                }
                c
            }
            Peer::Py2 | Peer::Py2Stateless => {
                let mut c = Command::new(dir.join("py2/bin/python"));
                c.arg(root.join("tests/peers/py2_server.py"));
                if matches!(self, Peer::Py2Stateless) {
                    c.env("STATELESS", "1").env("JSON", "1");
                }
                c
            }
            Peer::Py1 => {
                let mut c = Command::new(dir.join("py1/bin/python"));
                c.arg(root.join("tests/peers/py1_server.py"));
                c
            }
        };
        let child = cmd
            .env("PORT", port.to_string())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {self:?}: {e}"));
        let mut running = Running {
            child,
            url: format!(
                "http://127.0.0.1:{port}{}",
                if matches!(self, Peer::EverythingSse) {
                    "/sse"
                } else {
                    "/mcp"
                }
            ),
        };
        // Ready when the port accepts a connection (bounded).
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200))
            .is_err()
        {
            if let Ok(Some(status)) = running.child.try_wait() {
                panic!("{self:?} exited before listening: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "{self:?} did not listen on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
