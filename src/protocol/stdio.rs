//! A stdio MCP server that mcpprobe starts itself: newline-delimited JSON-RPC over its
//! stdin/stdout, its stderr kept (capped) for the trace, and always stopped at the end — also
//! on a timeout, on Ctrl-C, or when the session is dropped.
//!
//! A server is untrusted code's neighbour, so it is held short:
//! - its environment is exactly what the host passes (see `engine::request::stdio_env`);
//! - it runs in its own process group, and the whole group is stopped at the end (SIGTERM,
//!   then SIGKILL after [`TERM_GRACE`]) *before* the server itself is reaped, so the group's id
//!   cannot have been reused when it is signalled (an `npx` wrapper's grandchild does not
//!   survive the scan);
//! - on Linux, what escaped the group (a descendant that called `setsid` or `setpgid`) is found
//!   in `/proc` when the session stops and signalled through a pidfd (no pid-reuse race); and a
//!   host that calls [`become_subreaper`] (the CLI does, for `scan`) adopts the orphans of its
//!   servers, so a daemonised grandchild whose parent exited during the scan is found, killed
//!   and reaped too. The library never makes its host a subreaper by itself: that changes who
//!   inherits *every* orphan of the process, which only the host may decide (a Python program
//!   has orphans of its own);
//! - every write to its stdin is bounded in time;
//! - its stdout is framed linearly ([`LineFramer`]) with a per-line cap and a total cap;
//! - the time spent waiting on a server that does not answer is budgeted across the whole
//!   session ([`SILENCE_BUDGET`]): a silent or flooding server cannot hold a scan for a fresh
//!   timeout on every request.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
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
/// How long a server gets to exit after its stdin is closed, before its group is signalled.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long what is still running at the end gets between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long, at most, the end waits for SIGKILLed processes to be gone.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// The most processes one session's end looks after (a fork bomb is the group kill's).
const MAX_TREE: usize = 4096;

/// Whether the host made this process a child subreaper ([`become_subreaper`]).
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): an orphaned
/// descendant is re-parented to it instead of to init, so the end of a stdio session finds a
/// server's daemonised grandchildren (they called `setsid`, and their parent exited) among its
/// own children, kills them and reaps them. A process-wide setting, for a host that owns every
/// child it has (the CLI calls it for `scan`); every child the host does not start through this
/// module is then taken for an adopted orphan when a session ends. Returns whether it took
/// effect (`false` where there is no such thing).
pub fn become_subreaper() -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
        SUBREAPER.store(true, Ordering::SeqCst);
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(false)
    }
}

/// Whether [`become_subreaper`] took effect in this process.
pub fn is_subreaper() -> bool {
    SUBREAPER.load(Ordering::SeqCst)
}

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
    #[cfg(target_os = "linux")]
    if let Some(g) = group {
        tree::spawned(g.as_raw_nonzero().get());
    }
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
    /// The server itself as a pidfd: readable once it exited, without reaping it.
    #[cfg(target_os = "linux")]
    leader: Option<tree::Watched>,
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
        #[cfg(target_os = "linux")]
        let leader = group.and_then(|g| tree::watch(g.as_raw_nonzero().get()));
        Ok(StdioProcess {
            #[cfg(target_os = "linux")]
            leader,
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
        crate::permit::admit(msg).map_err(|e| e.to_string())?;
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

    /// Closes stdin (a stdio server exits on EOF) and gives the server [`EXIT_GRACE`] to exit;
    /// then SIGTERM to its process group and to every descendant that left the group, SIGKILL
    /// to what is left after [`TERM_GRACE`], and only then the server is reaped (until then its
    /// pid, and so the group's id, cannot be reused). Bounded: at most
    /// `EXIT_GRACE + TERM_GRACE + KILL_WAIT` and a reap.
    #[cfg(target_os = "linux")]
    pub async fn stop(mut self) {
        use rustix::process::Signal;
        // Orphans adopted from an earlier session that are gone by now.
        tree::reap_adopted();
        // The descendants, while the server still holds its tree together.
        let mut others = self
            .group
            .map(|g| tree::descendants(g.as_raw_nonzero().get()))
            .unwrap_or_default();
        drop(self.stdin.take());
        let mut leader = self.leader.take();
        let deadline = tokio::time::Instant::now() + EXIT_GRACE;
        let leader_gone = match &mut leader {
            Some(l) => l.exited_by(deadline).await,
            // No pidfd: wait for the server the old way (this reaps it).
            None => tokio::time::timeout_at(deadline, self.child.wait())
                .await
                .is_ok(),
        };
        if let Some(g) = self.group {
            let _ = rustix::process::kill_process_group(g, Signal::TERM);
        }
        others.retain_mut(|w| !w.signal(Signal::TERM));
        let deadline = tokio::time::Instant::now() + TERM_GRACE;
        if !leader_gone && let Some(l) = &mut leader {
            l.exited_by(deadline).await;
        }
        tree::exited_by(&mut others, deadline).await;
        self.kill_group();
        others.retain_mut(|w| !w.signal(Signal::KILL));
        let deadline = tokio::time::Instant::now() + KILL_WAIT;
        if let Some(l) = &mut leader {
            l.exited_by(deadline).await;
        }
        tree::exited_by(&mut others, deadline).await;
        // Now the server is reaped; then the orphans it left to this process (a subreaper).
        if tokio::time::timeout_at(deadline, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        tree::reap_adopted();
    }

    /// Closes stdin (a stdio server exits on EOF), waits briefly, then kills its whole process
    /// group (what it started itself included) and the server.
    #[cfg(not(target_os = "linux"))]
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
    /// process behind: SIGKILL to its group and to the descendants that left it (Linux); the
    /// child itself is reaped by `kill_on_drop`, adopted orphans at the next session's end or
    /// when the process exits.
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(g) = self.group {
            for mut w in tree::descendants(g.as_raw_nonzero().get()) {
                w.signal(rustix::process::Signal::KILL);
            }
        }
        self.kill_group();
    }
}

/// A server's process tree in `/proc` (Linux): its descendants, whether or not they stayed in
/// its process group, each held as a pidfd (a signal sent through one reaches that process or
/// none, whatever pid reuse happened meanwhile); and, in a subreaper, the orphans adopted from
/// the servers, told apart from the children this process spawned itself.
#[cfg(target_os = "linux")]
mod tree {
    use std::collections::HashMap;
    use std::os::fd::OwnedFd;
    use std::sync::Mutex;

    use rustix::process::{Pid, PidfdFlags, Signal};

    /// The children spawned through [`super::spawn_group`]: (pid, start time). An entry whose
    /// process is gone is dropped at the next sweep; one whose pid was reused no longer matches
    /// (the start time differs).
    static SPAWNED: Mutex<Vec<(i32, u64)>> = Mutex::new(Vec::new());

    /// What `/proc/PID/stat` says of a process.
    #[derive(Debug, Clone, Copy)]
    pub struct Stat {
        pub ppid: i32,
        pub zombie: bool,
        /// Clock ticks after boot: with the pid, a process's identity.
        pub start: u64,
    }

    /// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp … starttime …`, the command name
    /// read past its last `)` (it may hold spaces and parentheses).
    pub fn parse_stat(text: &str) -> Option<Stat> {
        let (_, rest) = text.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        Some(Stat {
            zombie: matches!(fields.first().copied(), Some("Z" | "X")),
            ppid: fields.get(1)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    pub fn stat(pid: i32) -> Option<Stat> {
        parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Every process this process can see, at most [`super::MAX_TREE`] * 16.
    fn processes() -> Vec<(i32, Stat)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .take(super::MAX_TREE * 16)
            .filter_map(|pid| Some((pid, stat(pid)?)))
            .collect()
    }

    /// Records a child spawned here (never taken for an adopted orphan).
    pub fn spawned(pid: i32) {
        if let (Some(st), Ok(mut all)) = (stat(pid), SPAWNED.lock()) {
            all.push((pid, st.start));
        }
    }

    /// A process held by a pidfd.
    pub struct Watched {
        pid: i32,
        fd: Option<OwnedFd>,
        exited: bool,
    }

    impl std::fmt::Debug for Watched {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Watched")
                .field("pid", &self.pid)
                .field("exited", &self.exited)
                .finish()
        }
    }

    /// A pidfd on `pid`, if it is still the process `start` says (`None` for any other).
    fn open(pid: i32, start: Option<u64>) -> Option<Watched> {
        let fd = rustix::process::pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()).ok()?;
        // Held from here on: the check below cannot be raced by a reuse of the pid.
        if let Some(start) = start
            && stat(pid).map(|s| s.start) != Some(start)
        {
            return None;
        }
        Some(Watched {
            pid,
            fd: Some(fd),
            exited: false,
        })
    }

    /// A pidfd on a child just spawned (not reaped yet, so the pid is its own).
    pub fn watch(pid: i32) -> Option<Watched> {
        open(pid, None)
    }

    impl Watched {
        /// Sends `sig`; whether the process is known to be gone already.
        pub fn signal(&mut self, sig: Signal) -> bool {
            if self.exited {
                return true;
            }
            match &self.fd {
                Some(fd) => {
                    rustix::process::pidfd_send_signal(fd, sig) == Err(rustix::io::Errno::SRCH)
                }
                None => true,
            }
        }

        /// Waits, until `deadline` at most, for the process to exit (it is not reaped: a pidfd
        /// is readable from its exit on); whether it did.
        pub async fn exited_by(&mut self, deadline: tokio::time::Instant) -> bool {
            let mut one = vec![std::mem::replace(
                self,
                Watched {
                    pid: self.pid,
                    fd: None,
                    exited: true,
                },
            )];
            wait(&mut one, deadline).await;
            if let Some(w) = one.pop() {
                *self = w;
            }
            self.exited
        }
    }

    /// Waits, until `deadline` at most, for each of `ws` to exit (poll(2) on their pidfds, on a
    /// blocking thread: tokio's AsyncFd would need `unsafe` to register a file descriptor).
    async fn wait(ws: &mut Vec<Watched>, deadline: tokio::time::Instant) {
        use rustix::event::{PollFd, PollFlags, Timespec};
        if ws.iter().all(|w| w.exited || w.fd.is_none()) {
            return;
        }
        let mut taken = std::mem::take(ws);
        let deadline = deadline.into_std();
        let joined = tokio::task::spawn_blocking(move || {
            loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let waiting: Vec<usize> = (0..taken.len())
                    .filter(|i| !taken[*i].exited && taken[*i].fd.is_some())
                    .collect();
                if waiting.is_empty() || left.is_zero() {
                    break;
                }
                let mut fds: Vec<PollFd<'_>> = waiting
                    .iter()
                    .filter_map(|i| taken[*i].fd.as_ref())
                    .map(|fd| PollFd::new(fd, PollFlags::IN))
                    .collect();
                let timeout = Timespec {
                    tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(left.subsec_nanos()),
                };
                let polled = rustix::event::poll(&mut fds, Some(&timeout));
                let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
                drop(fds);
                match polled {
                    Ok(_) => {
                        for (i, r) in waiting.iter().zip(ready) {
                            taken[*i].exited |= r;
                        }
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => break,
                }
            }
            taken
        })
        .await;
        if let Ok(back) = joined {
            *ws = back;
        }
    }

    /// Waits, until `deadline` at most, for each of `ws` to exit; keeps those still running.
    pub async fn exited_by(ws: &mut Vec<Watched>, deadline: tokio::time::Instant) {
        wait(ws, deadline).await;
        ws.retain(|w| !w.exited);
    }

    /// Whether (pid, start) is a child spawned here; prunes the entries that are gone.
    fn is_spawned(all: &mut Vec<(i32, u64)>, pid: i32, start: u64) -> bool {
        all.retain(|(p, s)| stat(*p).is_some_and(|st| st.start == *s));
        all.iter().any(|(p, s)| *p == pid && *s == start)
    }

    /// This process's children that it did not spawn: orphans adopted as a subreaper.
    fn adopted(procs: &[(i32, Stat)]) -> Vec<(i32, Stat)> {
        if !super::is_subreaper() {
            return Vec::new();
        }
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let Ok(mut all) = SPAWNED.lock() else {
            return Vec::new();
        };
        procs
            .iter()
            .filter(|(pid, st)| st.ppid == me && !is_spawned(&mut all, *pid, st.start))
            .copied()
            .collect()
    }

    /// The descendants of `leader` (not itself) as they are now, and in a subreaper the
    /// adopted orphans and theirs, each held by a pidfd; at most [`super::MAX_TREE`].
    pub fn descendants(leader: i32) -> Vec<Watched> {
        let procs = processes();
        let mut children: HashMap<i32, Vec<(i32, u64)>> = HashMap::new();
        for (pid, st) in &procs {
            children.entry(st.ppid).or_default().push((*pid, st.start));
        }
        let mut found: Vec<(i32, u64)> = adopted(&procs)
            .into_iter()
            .map(|(p, st)| (p, st.start))
            .collect();
        let mut next = 0;
        let mut parents = vec![leader];
        parents.extend(found.iter().map(|(p, _)| *p));
        while let Some(parent) = parents.pop() {
            for (pid, start) in children.get(&parent).into_iter().flatten() {
                if found.len() >= super::MAX_TREE {
                    break;
                }
                if !found.iter().any(|(p, _)| p == pid) {
                    found.push((*pid, *start));
                    parents.push(*pid);
                }
            }
            next += 1;
            if next > super::MAX_TREE {
                break;
            }
        }
        found
            .into_iter()
            .filter_map(|(pid, start)| open(pid, Some(start)))
            .collect()
    }

    /// In a subreaper: reaps the adopted orphans that have exited (the children spawned here
    /// are tokio's to reap, and are left alone).
    pub fn reap_adopted() {
        use rustix::process::WaitOptions;
        for (pid, st) in adopted(&processes()) {
            if st.zombie
                && let Some(p) = Pid::from_raw(pid)
            {
                let _ = rustix::process::waitpid(Some(p), WaitOptions::NOHANG);
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_lines_parse_past_the_command_name() {
            let line = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 123456 2453504 241 18446744073709551615";
            let st = parse_stat(line).expect("parses");
            assert_eq!((st.ppid, st.start, st.zombie), (17, 123456, false));
            let z = parse_stat("9 (x) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0").expect("z");
            assert!(z.zombie);
            assert!(parse_stat("9 (x) S").is_none());
        }
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
