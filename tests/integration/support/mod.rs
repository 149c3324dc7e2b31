//! Helpers shared by the integration tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assert_cmd::Command;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The checks/ folder as it is on disk: each kind (`passive`, `active`, `other`) with the ids
/// of its TOML files (`checks/passive/AUTH-01.toml` is AUTH-01). The tests that count or list
/// the catalogue compare with this, so adding a check changes no test.
pub fn check_files() -> BTreeMap<&'static str, BTreeSet<String>> {
    ["passive", "active", "other"]
        .into_iter()
        .map(|kind| {
            let dir = root().join("checks").join(kind);
            let ids = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
                .map(|e| e.expect("readable dir entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .map(|p| {
                    p.file_stem()
                        .and_then(|s| s.to_str())
                        .expect("catalogue file names are UTF-8")
                        .to_string()
                })
                .collect();
            (kind, ids)
        })
        .collect()
}

/// How many checks the checks/ folder holds, all kinds.
pub fn check_count() -> usize {
    check_files().values().map(BTreeSet::len).sum()
}

/// The binary, with a scrubbed environment so results do not depend on the caller's shell.
pub fn mcpprobe() -> Command {
    let mut cmd = Command::cargo_bin("mcpprobe").expect("the mcpprobe binary is built");
    for var in [
        "NO_COLOR",
        "MCPPROBE_TOKEN",
        "MCPPROBE_RESOLVER",
        "MCPPROBE_STATE_DIR",
        "CI",
    ] {
        cmd.env_remove(var);
    }
    cmd.timeout(std::time::Duration::from_secs(60));
    cmd
}

/// The JSON report a command printed; panics with its stderr when there is none.
pub fn stdout_json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn json_file(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Validates `instance` against the JSON Schema at `schema` (relative to the repo root); panics
/// with every error.
pub fn assert_valid(schema: &str, instance: &serde_json::Value) {
    let schema_value = json_file(&root().join(schema));
    let validator = jsonschema::validator_for(&schema_value)
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid against {schema}:\n{}",
        errors.join("\n")
    );
}

pub mod browser;
pub mod dns;
pub mod hostile;
pub mod http;
pub mod netns;
pub mod peers;
pub mod postgres;
pub mod rmcp_peer;

/// A multi-threaded runtime for the test's servers, while the test itself runs the binary.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A fresh state folder for one test.
pub fn state_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary state folder")
}

/// Tool names in a tools/list response body (JSON or SSE).
pub fn tool_names_in(body: &str) -> Vec<String> {
    let json_text = body
        .lines()
        .find_map(|l| {
            l.strip_prefix("data:")
                .map(str::trim)
                .filter(|d| d.starts_with('{'))
        })
        .unwrap_or(body);
    let v: serde_json::Value = serde_json::from_str(json_text).unwrap_or_default();
    v["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}
