//! A real PostgreSQL for a test: Debian's server binaries (`initdb`, `pg_ctl`, installed by
//! `.ci/run` where missing), a temporary cluster owned by a user that is not root (PostgreSQL
//! refuses to run as root; the `postgres` account the package creates, else `nobody`), on a
//! free loopback port, its socket in the cluster's folder, stopped and removed on drop.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use secrecy::SecretString;

/// A running cluster.
pub struct TempPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    /// The account the server runs as (uid, gid), when the test runs as root.
    user: Option<(u32, u32)>,
}

/// The folder of `initdb` and `pg_ctl`: on PATH, else Debian's `/usr/lib/postgresql/N/bin`
/// (the newest).
fn bin_dir() -> PathBuf {
    if let Ok(path) = std::env::var("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return dir;
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().unwrap_or_else(|| {
        panic!("no PostgreSQL server binaries (initdb, pg_ctl): `.ci/run` installs Debian's postgresql package")
    })
}

/// The uid and gid of account `name` in /etc/passwd.
fn account(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl TempPostgres {
    /// Creates and starts a cluster (within a minute, or the test fails).
    pub fn start() -> TempPostgres {
        let bin = bin_dir();
        let root = rustix::process::geteuid().is_root();
        let user = if root {
            Some(
                account("postgres")
                    .or_else(|| account("nobody"))
                    .expect("an account that is not root for the PostgreSQL server"),
            )
        } else {
            None
        };
        let dir = tempfile::Builder::new()
            .prefix("mcpprobe-pg-")
            .tempdir()
            .expect("a folder for the cluster");
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
        }
        let pg = TempPostgres {
            dir,
            bin,
            port: free_port(),
            user,
        };
        let data = pg.data();
        pg.run(
            "initdb",
            &[
                "-D",
                path(&data),
                "-U",
                "mcpprobe",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            pg.port,
            path(pg.dir.path())
        );
        let log = pg.dir.path().join("server.log");
        pg.run(
            "pg_ctl",
            &[
                "-D",
                path(&data),
                "-l",
                path(&log),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(program));
        cmd.current_dir(self.dir.path())
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?}: {}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A new, empty database on the cluster, and its URL.
    pub fn database(&self) -> SecretString {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let port = self.port.to_string();
        let createdb = self.bin.join("createdb");
        let mut cmd = if createdb.is_file() {
            self.command("createdb")
        } else {
            // Debian keeps the client programs in the same folder; a wrapper on PATH otherwise.
            Command::new("createdb")
        };
        let out = cmd
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "mcpprobe", &name])
            .output()
            .expect("createdb");
        assert!(
            out.status.success(),
            "createdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SecretString::from(format!(
            "postgres://mcpprobe:not-a-real-password@127.0.0.1:{}/{name}",
            self.port
        ))
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                path(&data),
                "-m",
                "immediate",
                "-w",
                "-t",
                "30",
                "stop",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // The folder goes with `dir` (as root, whatever the server's account wrote in it).
    }
}
