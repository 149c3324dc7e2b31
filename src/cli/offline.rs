//! The offline commands as the CLI runs them: read, compute (`crate::offline`), print.

use crate::cli::{CheckArgs, DiffFormat, emit, print_out, settings, usage_error};
use crate::offline::{OfflineError, read_file, read_from, render_diff};

/// Reads a file, or stdin for `-` (only the CLI reads stdin).
fn read_input(path: &str) -> Result<Vec<u8>, OfflineError> {
    if path == "-" {
        read_from(std::io::stdin().lock(), "stdin", None)
    } else {
        read_file(path)
    }
}

/// Parses what [`read_input`] read from `path`, named as the user gave it.
fn parse<'a>(
    path: &str,
    text: &'a [u8],
    kind: Option<InputKind>,
) -> Result<crate::rules::Input<'a>, OfflineError> {
    crate::offline::parse(if path == "-" { "stdin" } else { path }, text, kind)
}
use crate::rules::InputKind;
use crate::rules::fingerprint::diff as diff_tools;

pub fn check(args: &CheckArgs) -> i32 {
    let (loaded, review) = match settings::load_reviewed(&args.config) {
        Ok(l) => l,
        Err(e) => return usage_error(e),
    };
    let selection = match super::scan::selection(&[], &[], &loaded.config) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let judge = match args.judge.config(&[]) {
        Ok(j) => j,
        Err(e) => return usage_error(e),
    };
    let bytes = match read_input(&args.file) {
        Ok(b) => b,
        Err(e) => return usage_error(e),
    };
    let input = match parse(&args.file, &bytes, args.kind) {
        Ok(i) => i,
        Err(e) => return usage_error(e),
    };
    let target = if args.file == "-" {
        "stdin".to_string()
    } else {
        args.file.clone()
    };
    let mut doc = input.document();
    let cap = std::time::Duration::from_secs(args.time_cap);
    let mut report = crate::offline::check_capped(
        &input,
        &mut doc,
        &target,
        Default::default(),
        &selection,
        cap,
    );
    if let Some(judge) = &judge {
        let ran = super::scan::runtime().map(|rt| {
            let cancel = tokio_util::sync::CancellationToken::new();
            rt.block_on(async {
                let ctrl_c = super::scan::cancel_on_signals(&cancel);
                crate::offline::judge(&mut report, &input, judge, &selection, &cancel).await;
                ctrl_c.abort();
            });
        });
        if let Err(e) = ran {
            return usage_error(e);
        }
    }
    review.apply(&mut report, chrono::Utc::now().date_naive());
    report.apply_policy(loaded.policy(&args.output));
    let file = (args.file != "-").then(|| std::path::Path::new(&args.file));
    // Only SARIF places results in a file: reading the input a second time for its lines costs
    // another copy of it in memory, so no other format does.
    let artifact = if args.output.writes_sarif() {
        settings::artifact(
            &[
                args.output.sarif_artifact.as_deref(),
                file,
                loaded.path.as_deref(),
            ],
            &target,
        )
    } else {
        crate::report::Artifact::named(target.as_str())
    };
    let code = emit(&report, &args.output, artifact);
    // The process ends here: freeing the input, its tree and the document would only cost time.
    std::mem::forget(doc);
    std::mem::forget(input);
    std::mem::forget(bytes);
    code
}

pub fn fingerprint(path: &str) -> i32 {
    let bytes = match read_input(path) {
        Ok(b) => b,
        Err(e) => return usage_error(e),
    };
    match parse(path, &bytes, Some(InputKind::Tools)) {
        Ok(input) => print_out(&format!("{}\n", input.tools_sha256())),
        Err(e) => usage_error(e),
    }
}

pub fn diff(old: &str, new: &str, format: DiffFormat) -> i32 {
    // The diff reads `Value`s: each file is parsed into one (as before the rules had their own
    // tree), recognised as a tool list, and its tools moved out, never copied.
    let load = |path: &str| -> Result<Vec<serde_json::Value>, String> {
        let name = if path == "-" { "stdin" } else { path };
        let value: serde_json::Value =
            serde_json::from_slice(&read_input(path).map_err(|e| e.to_string())?)
                .map_err(|e| format!("{name}: not valid JSON: {e}"))?;
        let input = crate::rules::Input::from_value(value, Some(InputKind::Tools))
            .map_err(|e| format!("{name}: {e}"))?;
        Ok(input
            .into_tools()
            .into_iter()
            .map(crate::rules::Json::into_value)
            .collect())
    };
    let (a, b) = match (load(old), load(new)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return usage_error(e),
    };
    let d = diff_tools(&a, &b);
    let text = match format {
        DiffFormat::Json => serde_json::to_string_pretty(&d).unwrap_or_default() + "\n",
        DiffFormat::Terminal => render_diff(&d),
    };
    print_out(&text);
    if d.identical { 0 } else { 1 }
}
