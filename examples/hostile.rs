//! Runs one hostile scenario of the test support (`tests/integration/support/hostile.rs`) on
//! 127.0.0.1 until stdin closes: `cargo run --release --example hostile -- <scenario>`. Prints
//! the target URL on the first line. `scripts/hostile.sh` scans each scenario with the release
//! binary and measures it; `--list` prints the scenario names.

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/integration/support/hostile.rs"]
mod hostile;

use tokio::io::AsyncReadExt as _;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg == "--list" {
        for s in hostile::Scenario::ALL {
            println!("{}", s.name());
        }
        return std::process::ExitCode::SUCCESS;
    }
    let Some(scenario) = hostile::Scenario::from_name(&arg) else {
        eprintln!("usage: hostile <scenario> | --list");
        return std::process::ExitCode::from(64);
    };
    let server = match hostile::Hostile::spawn(scenario).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    println!("{}", server.url());
    // Until stdin closes (the script holds it open while the scan runs).
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    eprintln!(
        "{}: {} requests, other origin hit {} times",
        scenario.name(),
        server.seen().len(),
        server.other_hits()
    );
    std::process::ExitCode::SUCCESS
}
