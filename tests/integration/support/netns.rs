//! A host that is not loopback: a network namespace with a veth pair, created by the test and
//! removed when the guard drops (also when the test fails). The HTTP server inside it is
//! `tests/support/count_server.py`, which prints every request it gets.
//!
//! Namespace tests take a file lock, so concurrent test processes never share the subnet.

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

pub const HOST_IP: &str = "10.200.0.1";
pub const NS_IP: &str = "10.200.0.2";
pub const PORT: u16 = 8080;
const NS: &str = "mcpprobe-test";
const VETH: &str = "mcpp-h0";
const VETH_NS: &str = "mcpp-n0";

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn cleanup() {
    let _ = Command::new("ip").args(["netns", "del", NS]).output();
    let _ = Command::new("ip").args(["link", "del", VETH]).output();
}

pub struct NetnsHost {
    server: Child,
    seen: Arc<Mutex<Vec<Value>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    _lock: File,
}

impl NetnsHost {
    /// Creates the namespace and starts the server with `routes` (see count_server.py).
    /// Needs root and iproute2, as CI has.
    pub fn start(routes: Value) -> NetnsHost {
        let lock =
            File::create(std::env::temp_dir().join("mcpprobe-netns.lock")).expect("lock file");
        lock.lock().expect("the netns lock");
        cleanup();
        let setup = || -> Result<(), String> {
            ip(&["netns", "add", NS])?;
            ip(&["link", "add", VETH, "type", "veth", "peer", "name", VETH_NS])?;
            ip(&["link", "set", VETH_NS, "netns", NS])?;
            ip(&["addr", "add", &format!("{HOST_IP}/30"), "dev", VETH])?;
            ip(&["link", "set", VETH, "up"])?;
            ip(&[
                "-n",
                NS,
                "addr",
                "add",
                &format!("{NS_IP}/30"),
                "dev",
                VETH_NS,
            ])?;
            ip(&["-n", NS, "link", "set", VETH_NS, "up"])?;
            ip(&["-n", NS, "link", "set", "lo", "up"])?;
            Ok(())
        };
        if let Err(e) = setup() {
            cleanup();
            panic!("cannot create the test network namespace (root and iproute2 are needed): {e}");
        }
        let script = super::root().join("tests/support/count_server.py");
        let mut server = Command::new("ip")
            .args(["netns", "exec", NS, "python3"])
            .arg(&script)
            .args([NS_IP, &PORT.to_string(), &routes.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                cleanup();
                panic!("cannot start the server in the namespace: {e}")
            });
        let stdout = server.stdout.take().expect("piped stdout");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = seen.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line == "READY" {
                    let _ = ready_tx.send(());
                } else if let Ok(v) = serde_json::from_str(&line) {
                    sink.lock().expect("lock").push(v);
                }
            }
        });
        if ready_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .is_err()
        {
            let _ = server.kill();
            cleanup();
            panic!("the server in the namespace did not start");
        }
        NetnsHost {
            server,
            seen,
            reader: Some(reader),
            _lock: lock,
        }
    }

    /// Every request the server received, as "METHOD /path". Call after the scanner exited:
    /// the server prints each request before answering it, and this stops the server and reads
    /// its output to the end, so nothing is missed and nothing races.
    pub fn finish(mut self) -> Vec<String> {
        let _ = self.server.kill();
        let _ = self.server.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let seen = self.seen.lock().expect("lock").clone();
        seen.iter()
            .map(|v| {
                format!(
                    "{} {}",
                    v["method"].as_str().unwrap_or("?"),
                    v["path"].as_str().unwrap_or("?")
                )
            })
            .collect()
    }
}

impl Drop for NetnsHost {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        cleanup();
    }
}
