//! Each stage of `mcpprobe check` over one file, timed once (where the time goes):
//!
//!     cargo run --release --example phases -- FILE
//!
//! Prints the time of reading, parsing, building the document, the tool-list hash, the
//! catalogue's rules and writing the JSON report (to nowhere); on Linux also, for each stage,
//! the resident memory it leaves and the highest it stood during the stage (`[rss/peak MB]`,
//! from /proc/self/status, the peak restarted through /proc/self/clear_refs).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

// The allocator the command line uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// "[rss/peak MB]" since the last call (empty where /proc does not answer), and the peak
/// restarted from what is resident now.
fn memory() -> String {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return String::new();
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1e3)
    };
    let (rss, peak) = (field("VmRSS:"), field("VmHWM:"));
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    format!(" [{rss:.0}/{peak:.0} MB]")
}

fn main() {
    let _ = memory();
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: phases FILE");
        std::process::exit(64);
    };
    let t = Instant::now();
    let bytes = match mcpprobe::offline::read_file(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(64);
        }
    };
    let read = t.elapsed();
    let read_mem = memory();
    let t = Instant::now();
    let input = match mcpprobe::rules::Input::parse(bytes.as_slice(), None) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(64);
        }
    };
    let parse = t.elapsed();
    let parse_mem = memory();
    let t = Instant::now();
    let doc = input.document();
    let document = t.elapsed();
    let document_mem = memory();
    let t = Instant::now();
    let _ = input.tools_sha256();
    let hash = t.elapsed();
    let hash_mem = memory();
    if std::env::var_os("PHASES_CHECKS").is_some() {
        for entry in &mcpprobe::catalogue::catalogue().entries {
            let Some(check) = mcpprobe::checks::get(&entry.meta.id) else {
                continue;
            };
            let t = Instant::now();
            let _ = mcpprobe::offline::run_offline(check, &input, &doc);
            let took = t.elapsed();
            let mem = memory();
            if took.as_micros() > 500 {
                println!("{} {took:.1?}{mem}", entry.meta.id);
            }
        }
    }
    let t = Instant::now();
    let report = mcpprobe::offline::check_document(&input, &doc, "bench", Default::default());
    let rules = t.elapsed();
    let rules_mem = memory();
    let t = Instant::now();
    let mut out = std::io::BufWriter::new(std::io::sink());
    let written = mcpprobe::report::write_rendered(
        &report,
        mcpprobe::report::Format::Json,
        &Default::default(),
        &mut out,
    );
    let json = t.elapsed();
    let json_mem = memory();
    if let Err(e) = written {
        eprintln!("{e}");
    }
    println!(
        "read {read:.1?}{read_mem}, parse {parse:.1?}{parse_mem}, document {document:.1?}{document_mem}, tool-list hash {hash:.1?}{hash_mem}, rules {rules:.1?}{rules_mem}, JSON report {json:.1?}{json_mem}"
    );
    // As `check` does: the process ends here.
    std::mem::forget(report);
    std::mem::forget(doc);
    std::mem::forget(input);
    std::mem::forget(bytes);
}
