//! A stdio MCP server that mcpprobe starts itself: newline-delimited JSON-RPC over its
//! stdin/stdout, its stderr kept (capped) for the trace, and always stopped at the end — also
//! on a timeout, on Ctrl-C, or when the session is dropped.
//!
//! A server is untrusted code's neighbour, so it is held short:
//! - its environment is exactly what the host passes (see `engine::request::stdio_env`);
//! - it runs in its own process group, and the whole group is killed at the end (an `npx`
//!   wrapper's grandchild does not survive the scan);
//! - every write to its stdin is bounded in time;
//! - its stdout is framed linearly ([`LineFramer`]) with a per-line cap and a total cap;
//! - the time spent waiting on a server that does not answer is budgeted across the whole
//!   session ([`SILENCE_BUDGET`]): a silent or flooding server cannot hold a scan for a fresh
//!   timeout on every request.

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
/// The most bytes read from the server's stdout in one session.
pub const MAX_STDOUT: u64 = 256 * 1024 * 1024;
/// The longest the session waits, in all, for replies that do not come; once spent, a call
/// fails at once.
pub const SILENCE_BUDGET: Duration = Duration::from_secs(20);
/// How long a server gets to exit after its stdin is closed, before its group is killed.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A wait as a report shows it: seconds to a tenth ("5", "4.5"), not `4.9980596760000005`.
fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Splits a byte stream into newline-terminated lines, linearly: every byte is looked at once
/// (a chunk never makes the framer rescan what it has already searched), and a line longer
/// than the cap is dropped up to its line break instead of growing the buffer.
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    /// Where the next line begins in `buf`.
    start: usize,
    /// How far `buf` has been searched for a line break.
    scanned: usize,
    /// The longest line kept (bytes, the line break excluded).
    max: usize,
    /// Inside a line that was too long: drop bytes up to the next line break.
    discarding: bool,
}

/// What [`LineFramer::next_line`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// One line, without its line break (a trailing `\r` is kept: JSON ignores it).
    Line(Vec<u8>),
    /// A line longer than the cap began here; its bytes are dropped up to its line break.
    Overlong,
}

impl LineFramer {
    /// A framer that keeps lines of at most `max` bytes.
    pub fn new(max: usize) -> LineFramer {
        LineFramer {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max,
            discarding: false,
        }
    }

    /// Bytes held for a line not yet complete.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.discarding {
            match bytes.iter().position(|b| *b == b'\n') {
                None => return,
                Some(pos) => {
                    self.discarding = false;
                    bytes = &bytes[pos + 1..];
                }
            }
        }
        if self.start > 0 && self.start >= self.buf.len() - self.start {
            // Compacting only when at least as much was consumed as is left keeps the moves
            // linear in the bytes pushed.
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line, an overlong line's marker, or `None` until more bytes come.
    pub fn next_line(&mut self) -> Option<Frame> {
        if self.discarding {
            return None;
        }
        match self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
            Some(off) => {
                let end = self.scanned + off;
                let line = &self.buf[self.start..end];
                let frame = if line.len() > self.max {
                    Frame::Overlong
                } else {
                    Frame::Line(line.to_vec())
                };
                self.start = end + 1;
                self.scanned = self.start;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                }
                Some(frame)
            }
            None => {
                self.scanned = self.buf.len();
                if self.pending() > self.max {
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                    self.discarding = true;
                    return Some(Frame::Overlong);
                }
                None
            }
        }
    }
}

/// A child in a process group of its own (its id is the child's pid), its pipes taken.
pub struct GroupChild {
    pub child: Child,
    /// The group to kill at the end ([`kill_group`]); `None` once killed.
    pub group: Option<rustix::process::Pid>,
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    /// What it writes to stderr, up to a cap ([`collect_stderr`]).
    pub stderr: Arc<Mutex<Vec<u8>>>,
}

/// Starts `program` with `args` and exactly `env` (nothing of mcpprobe's own environment), in a
/// process group of its own, killed with the child when dropped: a stdio server, a judge
/// command.
pub fn spawn_group<K, V>(
    program: &str,
    args: &[String],
    env: impl IntoIterator<Item = (K, V)>,
    stderr_cap: usize,
    keep: Keep,
) -> std::io::Result<GroupChild>
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let group = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw);
    let stdin = child.stdin.take();
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
    let stderr = collect_stderr(child.stderr.take(), stderr_cap, keep);
    Ok(GroupChild {
        child,
        group,
        stdin,
        stdout,
        stderr,
    })
}

/// SIGKILL to a process group, once (what its leader started included).
pub fn kill_group(group: &mut Option<rustix::process::Pid>) {
    if let Some(g) = group.take() {
        let _ = rustix::process::kill_process_group(g, rustix::process::Signal::KILL);
    }
}

/// Which part of a child's stderr [`collect_stderr`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first bytes (a server's start-up trouble).
    Head,
    /// The last bytes (why a program failed).
    Tail,
}

/// Reads a child's stderr to its end on a task of its own (a full pipe never blocks the child),
/// keeping at most `cap` bytes of it.
pub fn collect_stderr(
    err: Option<tokio::process::ChildStderr>,
    cap: usize,
    keep: Keep,
) -> Arc<Mutex<Vec<u8>>> {
    let kept = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut err) = err {
        let sink = kept.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = err.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut buf) = sink.lock() {
                    match keep {
                        Keep::Head => {
                            let room = cap.saturating_sub(buf.len());
                            buf.extend_from_slice(&chunk[..n.min(room)]);
                        }
                        Keep::Tail => {
                            buf.extend_from_slice(&chunk[..n]);
                            let over = buf.len().saturating_sub(cap);
                            buf.drain(..over);
                        }
                    }
                }
            }
        });
    }
    kept
}

#[derive(Debug)]
pub struct StdioProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Why mcpprobe closed stdin before the end (a write that timed out).
    closed: Option<String>,
    stdout: ChildStdout,
    framer: LineFramer,
    /// Bytes read from stdout so far.
    read: u64,
    /// What is left of [`SILENCE_BUDGET`].
    silence_left: Duration,
    /// The process group (the child's pid), killed at the end; `None` once killed.
    group: Option<rustix::process::Pid>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Messages written (counted as requests sent).
    pub sent: u64,
    /// The scan was interrupted: stop waiting for replies.
    cancel: tokio_util::sync::CancellationToken,
}

impl StdioProcess {
    /// Starts `program` with `args` and exactly the environment `env`, in a process group of
    /// its own. Waits for replies end when `cancel` fires.
    pub fn spawn(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<StdioProcess, String> {
        let GroupChild {
            child,
            group,
            stdin,
            stdout,
            stderr,
        } = spawn_group(program, args, env.iter().copied(), MAX_STDERR, Keep::Head)
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        Ok(StdioProcess {
            child,
            stdin,
            closed: None,
            stdout,
            framer: LineFramer::new(MAX_LINE),
            read: 0,
            silence_left: SILENCE_BUDGET,
            group,
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
        if self.silence_left.is_zero() {
            return Err(format!(
                "not written: the server left the scan waiting for {} s in all",
                SILENCE_BUDGET.as_secs()
            ));
        }
        // SPEC §13: a tools/call only inside an active check's permit (the gate's token).
        crate::active::permit::admit(msg)?;
        let limit = WRITE_TIMEOUT.min(self.silence_left);
        if let (None, Some(why)) = (&self.stdin, &self.closed) {
            return Err(format!(
                "not written: stdin was closed after an earlier write: {why}"
            ));
        }
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        let mut line = msg.to_string();
        line.push('\n');
        self.sent += 1;
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        let started = tokio::time::Instant::now();
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, write) => match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("cannot write to the server: {e}")),
                Err(_) => {
                    // Part of the line may be in the pipe: nothing more can be framed after it.
                    self.stdin = None;
                    self.silence_left = self.silence_left.saturating_sub(started.elapsed());
                    let why = format!("the server did not read its stdin within {} s", secs(limit));
                    self.closed = Some(why.clone());
                    Err(why)
                }
            },
            () = cancel.cancelled() => Err("not written: the scan was interrupted".into()),
        };
        outcome
    }

    /// The next complete line from stdout (bounded per line and in all).
    async fn line(&mut self) -> Result<Vec<u8>, String> {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match self.framer.next_line() {
                Some(Frame::Line(line)) => return Ok(line),
                Some(Frame::Overlong) => {
                    return Err(format!(
                        "the server wrote a line longer than {MAX_LINE} bytes"
                    ));
                }
                None => {}
            }
            if self.read >= MAX_STDOUT {
                return Err(format!(
                    "the server wrote more than {} MiB to stdout",
                    MAX_STDOUT / (1024 * 1024)
                ));
            }
            let n = self
                .stdout
                .read(&mut chunk)
                .await
                .map_err(|e| format!("cannot read from the server: {e}"))?;
            if n == 0 {
                return Err("the server closed its stdout".into());
            }
            self.read += n as u64;
            self.framer.push(&chunk[..n]);
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
        if self.silence_left.is_zero() {
            let e = format!(
                "not waited for: the server left requests unanswered for {} s in all",
                SILENCE_BUDGET.as_secs()
            );
            return Call {
                exchange: stdio_exchange(msg, None, Some(e.clone())),
                error: Some(e),
                ..Call::default()
            };
        }
        let started = tokio::time::Instant::now();
        let waited = timeout.min(self.silence_left);
        let deadline = started + waited;
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
                    self.silence_left = self.silence_left.saturating_sub(started.elapsed());
                    let e = format!("no reply within {} s", secs(waited));
                    // Tell the server to stop working on it (MCP cancellation); its late reply,
                    // if any, is skipped by id like any other line.
                    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "mcpprobe stopped waiting for it"}});
                    let _ = self.write(&cancel).await;
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

    /// Closes stdin (a stdio server exits on EOF), waits briefly, then kills its whole process
    /// group (what it started itself included) and the server.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        let exited = tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_ok();
        // Grandchildren keep the group (and so its id) alive; an empty group is ESRCH.
        self.kill_group();
        if !exited {
            let _ = self.child.kill().await;
        }
    }

    /// SIGKILL to the server's process group, once.
    fn kill_group(&mut self) {
        kill_group(&mut self.group);
    }
}

impl Drop for StdioProcess {
    /// A session dropped without [`StdioProcess::stop`] (an interrupted scan) still leaves no
    /// process behind; the child itself is reaped by `kill_on_drop`.
    fn drop(&mut self) {
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(framer: &mut LineFramer) -> Vec<Frame> {
        std::iter::from_fn(|| framer.next_line()).collect()
    }

    #[test]
    fn lines_split_anywhere_frame_the_same() {
        let input = b"{\"a\":1}\n\nxxxxxxxxxxxx\n{}\r\npartial";
        let mut whole = LineFramer::new(8);
        whole.push(input);
        let expected = frames(&mut whole);
        assert_eq!(
            expected,
            [
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Overlong,
                Frame::Line(b"{}\r".to_vec()),
            ]
        );
        let mut bytewise = LineFramer::new(8);
        let mut got = Vec::new();
        for b in input {
            bytewise.push(&[*b]);
            got.extend(frames(&mut bytewise));
        }
        assert_eq!(got, expected);
        assert!(bytewise.pending() <= 9);
    }

    #[tokio::test]
    async fn a_server_that_never_reads_stdin_costs_one_bounded_write() {
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut p = StdioProcess::spawn(
            "sleep",
            &["30".into()],
            &[("PATH", "/usr/bin:/bin")],
            &cancel,
        )
        .expect("sleep starts");
        p.silence_left = Duration::from_millis(300);
        // Far more than a pipe holds, so the write blocks on a server that never reads.
        let big = json!({"x": "y".repeat(4 * 1024 * 1024)});
        let first = tokio::time::timeout(Duration::from_secs(10), p.write(&big))
            .await
            .expect("the write is bounded");
        assert!(first.is_err_and(|e| e.contains("did not read its stdin")));
        let second = tokio::time::timeout(Duration::from_secs(1), p.write(&json!({})))
            .await
            .expect("the next write fails at once");
        assert!(second.is_err());
        let call = tokio::time::timeout(
            Duration::from_secs(1),
            p.call(&json!({}), 1, Duration::from_secs(10)),
        )
        .await
        .expect("a call fails at once");
        assert!(call.error.is_some());
        tokio::time::timeout(Duration::from_secs(10), p.stop())
            .await
            .expect("stop is bounded");
    }
}
