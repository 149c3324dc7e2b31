//! The out-of-band canary listener (SPEC §13, ACT-03): an HTTP listener mcpprobe runs on
//! 127.0.0.1 for one scan. Each probe URL carries a random token; a request whose path holds it
//! is the proof that the server fetched it. It answers every request with a random body (so a
//! check can tell whether the fetched text came back) and reads at most 8 KiB of a request head,
//! within 2 s. It stops when dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The most request heads kept (a flood cannot grow it).
const MAX_HITS: usize = 256;
const MAX_HEAD: usize = 8 * 1024;
const MAX_CONNECTIONS: usize = 32;

#[derive(Debug)]
pub struct Listener {
    port: u16,
    body: String,
    hits: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// Binds 127.0.0.1:0 and serves until dropped.
    pub async fn start() -> std::io::Result<Listener> {
        let socket = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = socket.local_addr()?.port();
        let body = format!("mcpprobe-oob-{}", super::canary::Product::random().marker());
        let hits: Arc<Mutex<Vec<String>>> = Arc::default();
        let (sink, answer) = (hits.clone(), body.clone());
        // At most this many connections are served at once; the rest wait in the backlog.
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = socket.accept().await {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    break;
                };
                let (sink, answer) = (sink.clone(), answer.clone());
                tokio::spawn(async move {
                    let _slot = slot;
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 1024];
                    let read = tokio::time::timeout(Duration::from_secs(2), async {
                        while head.len() < MAX_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
                            match stream.read(&mut chunk).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => head.extend_from_slice(&chunk[..n]),
                            }
                        }
                    })
                    .await;
                    let line = String::from_utf8_lossy(&head)
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(512)
                        .collect::<String>();
                    // Only probe requests are kept: other local connections cannot crowd them out.
                    if line.contains("/mcpprobe-")
                        && let Ok(mut h) = sink.lock()
                        && h.len() < MAX_HITS
                    {
                        h.push(line);
                    }
                    if read.is_ok() {
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                            answer.len()
                        );
                        let _ = tokio::time::timeout(
                            Duration::from_secs(2),
                            stream.write_all(reply.as_bytes()),
                        )
                        .await;
                    }
                });
            }
        });
        Ok(Listener {
            port,
            body,
            hits,
            task,
        })
    }

    /// A probe URL carrying `token`.
    pub fn url(&self, token: &str) -> String {
        format!("http://127.0.0.1:{}/mcpprobe-{token}", self.port)
    }

    /// The request lines (`GET /mcpprobe-… HTTP/1.1`) that held `token`.
    pub fn hits(&self, token: &str) -> Vec<String> {
        self.hits
            .lock()
            .map(|h| h.iter().filter(|l| l.contains(token)).cloned().collect())
            .unwrap_or_default()
    }

    /// The body every request is answered with.
    pub fn body(&self) -> &str {
        &self.body
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}
