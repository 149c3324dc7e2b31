//! The trace file (`--trace FILE`): one JSON line per request and per stdio stderr line,
//! written by a thread of its own, so an async worker never waits on the disk. The first write
//! error is kept and said once (the scan's report carries it); the lines after it are not
//! written, and nothing is dropped without saying so.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

enum Message {
    Line(String),
    /// Flush what was written, then answer.
    Sync(tokio::sync::oneshot::Sender<()>),
}

/// The writer's handle: cheap to share, never blocks the caller.
#[derive(Debug)]
pub struct Trace {
    path: PathBuf,
    /// `None` once dropped (the writer then flushes and ends).
    tx: Mutex<Option<mpsc::Sender<Message>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    error: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Line(_) => f.write_str("Line"),
            Message::Sync(_) => f.write_str("Sync"),
        }
    }
}

impl Trace {
    /// Creates (truncates) `path` and starts its writer thread.
    pub fn create(path: &Path) -> std::io::Result<Trace> {
        let file = File::create(path)?;
        let (tx, rx) = mpsc::channel::<Message>();
        let error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let kept = error.clone();
        let writer = std::thread::Builder::new()
            .name("mcpprobe-trace".into())
            .spawn(move || write_all(BufWriter::new(file), &rx, &kept))?;
        Ok(Trace {
            path: path.to_path_buf(),
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            error,
        })
    }

    /// Queues one line (a newline is added).
    pub fn line(&self, line: String) {
        if let Ok(tx) = self.tx.lock()
            && let Some(tx) = tx.as_ref()
        {
            // A closed channel means the writer stopped on an error it kept.
            let _ = tx.send(Message::Line(line));
        }
    }

    /// Waits (without blocking a thread) until every queued line is written and flushed;
    /// returns the first write error of the run, if any, naming the file.
    pub async fn sync(&self) -> Option<String> {
        let (done, wait) = tokio::sync::oneshot::channel();
        let sent = self
            .tx
            .lock()
            .map(|tx| {
                tx.as_ref()
                    .is_some_and(|tx| tx.send(Message::Sync(done)).is_ok())
            })
            .unwrap_or(false);
        if sent {
            let _ = wait.await;
        }
        let error = self.error.lock().ok().and_then(|e| e.clone());
        error.map(|e| format!("the trace file {} is incomplete: {e}", self.path.display()))
    }
}

impl Drop for Trace {
    /// Ends the writer and waits for its last lines: a process that exits right after its
    /// scan (the CLI) keeps every line it traced.
    fn drop(&mut self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        if let Ok(mut w) = self.writer.lock()
            && let Some(w) = w.take()
        {
            let _ = w.join();
        }
    }
}

fn write_all(
    mut out: BufWriter<File>,
    rx: &mpsc::Receiver<Message>,
    error: &Mutex<Option<String>>,
) {
    let mut failed = false;
    let fail = |e: std::io::Error, failed: &mut bool| {
        if !*failed {
            *failed = true;
            tracing::warn!("cannot write the trace file: {e}");
            if let Ok(mut slot) = error.lock() {
                *slot = Some(e.to_string());
            }
        }
    };
    while let Ok(message) = rx.recv() {
        match message {
            Message::Line(line) if !failed => {
                if let Err(e) = out
                    .write_all(line.as_bytes())
                    .and_then(|()| out.write_all(b"\n"))
                {
                    fail(e, &mut failed);
                }
            }
            Message::Line(_) => {}
            Message::Sync(done) => {
                if !failed && let Err(e) = out.flush() {
                    fail(e, &mut failed);
                }
                let _ = done.send(());
            }
        }
    }
    if !failed && let Err(e) = out.flush() {
        fail(e, &mut failed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_written_in_order_and_a_sync_flushes_them() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("trace.jsonl");
        let trace = Trace::create(&path).expect("created");
        for i in 0..1000 {
            trace.line(format!("{{\"n\":{i}}}"));
        }
        assert_eq!(trace.sync().await, None);
        let text = std::fs::read_to_string(&path).expect("readable");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert_eq!(lines[999], "{\"n\":999}");
        // Lines queued and never synced are written by the time the handle is dropped.
        trace.line("{\"last\":true}".into());
        drop(trace);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(text.lines().last(), Some("{\"last\":true}"));
    }

    /// A full disk (Linux's /dev/full) is said once, naming the file, and stops the writes.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_write_error_is_kept_and_said() {
        let trace = Trace::create(Path::new("/dev/full")).expect("/dev/full opens");
        trace.line("x".repeat(10_000));
        trace.line("y".into());
        let said = trace.sync().await.expect("the error is said");
        assert!(
            said.starts_with("the trace file /dev/full is incomplete: ") && said.contains("space"),
            "{said}"
        );
    }
}
