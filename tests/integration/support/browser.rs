//! Debian's headless Chromium (`/usr/bin/chromium`, installed by `scripts/setup-browser.sh`)
//! for the web page's tests: the DOM after parsing (`--dump-dom`) and a screenshot, no driver.
//!
//! Started with the flags the closed network needs (no background networking, no component
//! updates, no sync), `--no-sandbox` only as root, a fresh temporary profile, in its own
//! process group; the whole group is killed after [`TIMEOUT`].

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one Chromium run may take before it is killed.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The browser: `$MCPPROBE_CHROMIUM`, else `/usr/bin/chromium`. Panics with how to install it.
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("MCPPROBE_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "{} is not installed: run scripts/setup-browser.sh (CI's .ci/run does)",
        path.display()
    );
    path
}

/// What a Chromium run printed.
#[derive(Debug)]
pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs headless Chromium with `args` after the common flags; panics when it cannot start,
/// times out (the process group is killed) or fails.
pub fn run(args: &[&str]) -> Run {
    let profile = tempfile::tempdir().expect("a temporary profile");
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--metrics-recording-only",
        "--mute-audio",
    ]);
    if rustix::process::geteuid().is_root() {
        cmd.arg("--no-sandbox");
    }
    cmd.arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start chromium: {e}"));
    let pid = rustix::process::Pid::from_child(&child);
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) | Err(_) => {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                let _ = child.wait();
                panic!("chromium {args:?} did not finish within {TIMEOUT:?}");
            }
        }
    };
    // Helpers it started (zygote, renderers) go with the group.
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let run = Run {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    assert!(
        run.status.success(),
        "chromium {args:?} failed ({}):\n{}",
        run.status,
        run.stderr
    );
    run
}

/// The DOM of `url` after parsing, as Chromium serialises it (`--dump-dom`).
pub fn dump_dom(url: &str) -> String {
    run(&["--dump-dom", url]).stdout
}

/// A 1280×900 PNG screenshot of `url` written to `out`.
pub fn screenshot(url: &str, out: &Path) {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).expect("the screenshot's folder");
    }
    let shot = format!("--screenshot={}", out.display());
    run(&[&shot, "--window-size=1280,900", "--hide-scrollbars", url]);
    let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    assert!(size > 0, "no screenshot at {}", out.display());
}
