//! A stdio MCP server that mcpprobe starts itself: newline-delimited JSON-RPC over its
//! stdin/stdout, its stderr kept (capped) for the trace, and always stopped at the end — also
//! on a timeout, on Ctrl-C, or when the session is dropped (`kill_on_drop`).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::rpc::Reply;
use super::session::{Call, stdio_exchange};

/// The longest line read from the server.
pub const MAX_LINE: usize = 8 * 1024 * 1024;
/// How long one message may take to be written to the server's stdin.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most stderr kept.
pub const MAX_STDERR: usize = 64 * 1024;

#[derive(Debug)]
pub struct StdioProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    buf: Vec<u8>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Messages written (counted as requests sent).
    pub sent: u64,
    /// The scan was interrupted: stop waiting for replies.
    cancel: tokio_util::sync::CancellationToken,
}

impl StdioProcess {
    /// Starts `program` with `args`. Waits for replies end when `cancel` fires.
    pub fn spawn(
        program: &str,
        args: &[String],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<StdioProcess, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let sink = stderr.clone();
            tokio::spawn(async move {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = err.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut buf) = sink.lock() {
                        let room = MAX_STDERR.saturating_sub(buf.len());
                        buf.extend_from_slice(&chunk[..n.min(room)]);
                    }
                }
            });
        }
        Ok(StdioProcess {
            child,
            stdin,
            stdout,
            buf: Vec::new(),
            stderr,
            sent: 0,
            cancel: cancel.clone(),
        })
    }

    /// What the server wrote to stderr (capped), for the trace.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Writes one line; a server that stops reading its stdin cannot hold the scan (a write
    /// is bounded in time and ends when the scan is interrupted).
    async fn write(&mut self, msg: &Value) -> Result<(), String> {
        let cancel = self.cancel.clone();
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        let mut line = msg.to_string();
        line.push('\n');
        self.sent += 1;
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        tokio::select! {
            r = tokio::time::timeout(WRITE_TIMEOUT, write) => match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("cannot write to the server: {e}")),
                Err(_) => Err(format!("the server did not read its stdin within {} s", WRITE_TIMEOUT.as_secs())),
            },
            () = cancel.cancelled() => Err("not written: the scan was interrupted".into()),
        }
    }

    /// The next complete line from stdout (bounded).
    async fn line(&mut self) -> Result<Vec<u8>, String> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Ok(line);
            }
            if self.buf.len() > MAX_LINE {
                self.buf.clear();
                return Err(format!(
                    "the server wrote a line longer than {MAX_LINE} bytes"
                ));
            }
            let mut chunk = vec![0u8; 64 * 1024];
            let n = self
                .stdout
                .read(&mut chunk)
                .await
                .map_err(|e| format!("cannot read from the server: {e}"))?;
            if n == 0 {
                return Err("the server closed its stdout".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    pub async fn send(&mut self, msg: &Value) -> Call {
        match self.write(msg).await {
            Ok(()) => Call {
                exchange: stdio_exchange(msg, None, None),
                ..Call::default()
            },
            Err(e) => Call {
                exchange: stdio_exchange(msg, None, Some(e.clone())),
                error: Some(e),
                ..Call::default()
            },
        }
    }

    /// Sends a request and waits for the reply with its id. Requests from the server are
    /// answered with "method not found" (mcpprobe offers no client capabilities).
    pub async fn call(&mut self, msg: &Value, id: u64, timeout: Duration) -> Call {
        if let Err(e) = self.write(msg).await {
            return Call {
                exchange: stdio_exchange(msg, None, Some(e.clone())),
                error: Some(e),
                ..Call::default()
            };
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let cancel = self.cancel.clone();
        loop {
            let next = tokio::select! {
                l = tokio::time::timeout_at(deadline, self.line()) => Some(l),
                () = cancel.cancelled() => None,
            };
            let Some(next) = next else {
                let e = "not answered: the scan was interrupted".to_string();
                return Call {
                    exchange: stdio_exchange(msg, None, Some(e.clone())),
                    error: Some(e),
                    ..Call::default()
                };
            };
            let line = match next {
                Err(_) => {
                    let e = format!("no reply within {} s", timeout.as_secs_f64());
                    return Call {
                        exchange: stdio_exchange(msg, None, Some(e.clone())),
                        error: Some(e),
                        ..Call::default()
                    };
                }
                Ok(Err(e)) => {
                    return Call {
                        exchange: stdio_exchange(msg, None, Some(e.clone())),
                        error: Some(e),
                        ..Call::default()
                    };
                }
                Ok(Ok(line)) => line,
            };
            let Ok(v) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if v.get("id").and_then(Value::as_u64) == Some(id) && v.get("method").is_none() {
                return Call {
                    reply: Reply::from_message(&v),
                    exchange: stdio_exchange(msg, Some(&v), None),
                    body: line,
                    ..Call::default()
                };
            }
            if let (Some(req_id), Some(_)) = (v.get("id"), v.get("method")) {
                let refusal = json!({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "mcpprobe offers no client capabilities"}});
                let _ = self.write(&refusal).await;
                self.sent = self.sent.saturating_sub(1);
            }
        }
    }

    /// Closes stdin (a stdio server exits on EOF), waits briefly, then kills it.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
