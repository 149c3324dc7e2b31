//! Each stage of `mcpprobe check` over one file, timed once (where the time goes):
//!
//!     cargo run --release --example phases -- FILE
//!
//! Prints the time of reading, parsing, building the document, the tool-list hash, the
//! catalogue's rules and writing the JSON report (to nowhere).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

// The allocator the command line uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
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
    let t = Instant::now();
    let input = match mcpprobe::rules::Input::parse(bytes.as_slice(), None) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(64);
        }
    };
    let parse = t.elapsed();
    let t = Instant::now();
    let doc = input.document();
    let document = t.elapsed();
    let t = Instant::now();
    let _ = input.tools_sha256();
    let hash = t.elapsed();
    if std::env::var_os("PHASES_CHECKS").is_some() {
        for entry in &mcpprobe::catalogue::catalogue().entries {
            let Some(check) = mcpprobe::checks::get(&entry.meta.id) else {
                continue;
            };
            let t = Instant::now();
            let _ = mcpprobe::offline::run_offline(check, &input, &doc);
            let took = t.elapsed();
            if took.as_micros() > 500 {
                println!("{} {took:.1?}", entry.meta.id);
            }
        }
    }
    let t = Instant::now();
    let report = mcpprobe::offline::check_document(&input, &doc, "bench", Default::default());
    let rules = t.elapsed();
    let t = Instant::now();
    let mut out = std::io::BufWriter::new(std::io::sink());
    let written = mcpprobe::report::write_rendered(
        &report,
        mcpprobe::report::Format::Json,
        &Default::default(),
        &mut out,
    );
    let json = t.elapsed();
    if let Err(e) = written {
        eprintln!("{e}");
    }
    println!(
        "read {read:.1?}, parse {parse:.1?}, document {document:.1?}, tool-list hash {hash:.1?}, rules {rules:.1?}, JSON report {json:.1?}"
    );
    // As `check` does: the process ends here.
    std::mem::forget(report);
    std::mem::forget(doc);
    std::mem::forget(input);
    std::mem::forget(bytes);
}
