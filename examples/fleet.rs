//! A fleet's throughput and a worker's memory (issue 25): real `mcpprobe daemon` processes
//! (the release binary) on one PostgreSQL database, scanning targets on loopback hosts
//! (127.0.0.2 onwards, one listener each that answers 404 to everything: a short scan). For 1, 2
//! and 4 workers in turn, each on a fresh database: the scans finished per minute once the fleet
//! is running, against the most the per-host rate allows (hosts × rate × 60 ÷ requests per
//! scan), and the busiest second any host saw; then one worker with 10,000 targets and its peak
//! resident memory. Run by `scripts/bench-fleet.sh`, which starts the cluster and creates the
//! databases `fleet1`, `fleet2`, `fleet4` and `fleet10k`:
//!
//! ```text
//! cargo run --release --example fleet -- postgres://mcpprobe@127.0.0.1:PORT/ target/release/mcpprobe
//! ```

#![allow(clippy::print_stdout)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpprobe::daemon::postgres::PgStore;
use mcpprobe::daemon::store::{RunStatus, Store};

const HOSTS: u8 = 30;
const PER_HOST: usize = 10;
const RATE: u32 = 10;
/// Every target is due every 10 s: more scans are due than the rate lets through.
const EVERY_MS: u64 = 10_000;
const WARM: Duration = Duration::from_secs(15);
const WINDOW: Duration = Duration::from_secs(60);
const VAR: &str = "MCPPROBE_DATABASE_URL";

type Arrivals = Arc<Mutex<Vec<Instant>>>;

/// One loopback host answering 404 to everything, recording when each request came.
async fn host(n: u8) -> (SocketAddr, Arrivals) {
    let seen: Arrivals = Arc::default();
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.{n}:0"))
        .await
        .expect("bind a loopback host");
    let addr = listener.local_addr().expect("its address");
    let log = seen.clone();
    let app = axum::Router::new().fallback(move || {
        let log = log.clone();
        async move {
            if let Ok(mut l) = log.lock() {
                l.push(Instant::now());
            }
            (axum::http::StatusCode::NOT_FOUND, "not found")
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

fn spawn(bin: &Path, config: &Path, worker: &str, url: &str) -> Child {
    Command::new(bin)
        .args(["daemon", "--config"])
        .arg(config)
        .args([
            "--test-every-ms",
            &EVERY_MS.to_string(),
            "--test-worker",
            worker,
        ])
        .env(VAR, url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the daemon starts")
}

fn stop(children: Vec<Child>) {
    for mut c in children {
        let pid = rustix::process::Pid::from_child(&c);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = c.wait();
    }
}

/// Peak resident memory of a process, in MB (`VmHWM`).
fn peak_mb(child: &Child) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn configs(
    dir: &Path,
    workers: usize,
    targets: &str,
    concurrent: usize,
) -> Vec<std::path::PathBuf> {
    (1..=workers)
        .map(|w| {
            let state = dir.join(format!("w{w}"));
            std::fs::create_dir_all(&state).expect("state");
            let config = dir.join(format!("w{w}.toml"));
            std::fs::write(
                &config,
                format!(
                    "listen = \"127.0.0.1:0\"\nrate = {RATE}\nmax_concurrent_scans = {concurrent}\ndatabase_url_env = \"{VAR}\"\nstate_dir = \"{}\"\n\n{targets}",
                    state.display()
                ),
            )
            .expect("config");
            config
        })
        .collect()
}

fn targets(addrs: &[SocketAddr], n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let a = addrs[i % addrs.len()];
        out.push_str(&format!(
            "[[targets]]\nname = \"t{i:05}\"\nurl = \"http://{a}/t{i:05}/mcp\"\nevery = \"1h\"\n\n"
        ));
    }
    out
}

/// Runs that ended (recorded with an outcome, not interrupted) within `[from, to]` (unix ms),
/// and all runs.
fn finished(store: &PgStore, from: i64, to: i64) -> (usize, usize) {
    let mut n = 0;
    let mut all = 0;
    for t in store.targets().expect("targets") {
        for r in store.runs(&t.name, 100_000).expect("runs") {
            all += 1;
            if !matches!(r.status, RunStatus::Running | RunStatus::Interrupted)
                && r.finished_ms.is_some_and(|f| f >= from && f <= to)
            {
                n += 1;
            }
        }
    }
    (n, all)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(base), Some(bin)) = (args.get(1), args.get(2)) else {
        println!("usage: fleet POSTGRES_BASE_URL MCPPROBE_BINARY");
        std::process::exit(2);
    };
    let bin = Path::new(bin);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let hosts: Vec<(SocketAddr, Arrivals)> =
        rt.block_on(async { futures_util::future::join_all((2..2 + HOSTS).map(host)).await });
    let addrs: Vec<SocketAddr> = hosts.iter().map(|(a, _)| *a).collect();
    let dir = tempfile::tempdir().expect("a folder");

    println!(
        "{HOSTS} hosts, {} targets due every {} s, rate {RATE} per host, {} s measured after {} s",
        HOSTS as usize * PER_HOST,
        EVERY_MS / 1000,
        WINDOW.as_secs(),
        WARM.as_secs()
    );
    for workers in [1usize, 2, 4] {
        let url = format!("{base}fleet{workers}");
        let sub = dir.path().join(format!("fleet{workers}"));
        let list = targets(&addrs, HOSTS as usize * PER_HOST);
        let children: Vec<Child> = configs(&sub, workers, &list, 32)
            .iter()
            .enumerate()
            .map(|(i, c)| spawn(bin, c, &format!("w{}", i + 1), &url))
            .collect();
        std::thread::sleep(WARM);
        for (_, seen) in &hosts {
            if let Ok(mut s) = seen.lock() {
                s.clear();
            }
        }
        let (from, started) = (now_ms(), Instant::now());
        std::thread::sleep(WINDOW);
        let to = now_ms();
        let mut busiest = 0;
        let mut requests = 0;
        for (_, seen) in &hosts {
            let mut s = seen.lock().map(|s| s.clone()).unwrap_or_default();
            s.retain(|t| *t >= started);
            s.sort();
            requests += s.len();
            for (i, at) in s.iter().enumerate() {
                let within = s[i..]
                    .iter()
                    .take_while(|t| t.duration_since(*at) < Duration::from_secs(1))
                    .count();
                busiest = busiest.max(within);
            }
        }
        let peaks: Vec<String> = children
            .iter()
            .map(|c| format!("{:.0}", peak_mb(c)))
            .collect();
        stop(children);
        let store = PgStore::connect(&secrecy::SecretString::from(url), VAR).expect("the database");
        let (n, _) = finished(&store, from, to);
        let minutes = (to - from) as f64 / 60_000.0;
        let per_scan = requests as f64 / n.max(1) as f64;
        let most = f64::from(HOSTS) * f64::from(RATE) * 60.0 / per_scan;
        let share =
            requests as f64 / (f64::from(HOSTS) * f64::from(RATE) * WINDOW.as_secs_f64()) * 100.0;
        println!(
            "{workers} worker(s): {:.0} scans a minute ({:.1} requests a scan; the rate allows {:.0}); hosts at {share:.0} % of their rate, the busiest second {busiest} requests; peak memory {} MB",
            n as f64 / minutes,
            per_scan,
            most,
            peaks.join(" / ")
        );
    }

    // One worker, 10,000 targets: its peak memory once every target has been seen.
    let url = format!("{base}fleet10k");
    let sub = dir.path().join("fleet10k");
    let list = targets(&addrs, 10_000);
    let children: Vec<Child> = configs(&sub, 1, &list, 32)
        .iter()
        .map(|c| spawn(bin, c, "w1", &url))
        .collect();
    std::thread::sleep(WINDOW);
    let peak = children.first().map_or(0.0, peak_mb);
    stop(children);
    let store = PgStore::connect(&secrecy::SecretString::from(url), VAR).expect("the database");
    let (_, all) = finished(&store, 0, i64::MAX);
    println!(
        "1 worker, 10,000 targets: peak memory {peak:.0} MB after {} s ({all} runs stored)",
        WINDOW.as_secs()
    );
}
