//! The command line: exit codes, usage errors, the catalogue commands.

use crate::support::mcpprobe;

#[test]
fn unknown_flag_exits_64_not_clap_2() {
    mcpprobe().arg("--bogus").assert().code(64);
    mcpprobe()
        .args(["checks", "--format", "yaml"])
        .assert()
        .code(64);
    mcpprobe().assert().code(64); // no subcommand
}

#[test]
fn help_and_version_exit_0() {
    mcpprobe().arg("--help").assert().code(0);
    let out = mcpprobe()
        .arg("--version")
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn checks_show_unknown_id_exits_64_with_a_clear_message() {
    let out = mcpprobe()
        .args(["checks", "show", "NOPE-99"])
        .assert()
        .code(64)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no check named \"NOPE-99\""), "{err}");
}

#[test]
fn checks_json_lists_every_check_of_the_folder() {
    let out = mcpprobe()
        .args(["checks", "--format", "json"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let checks = v["checks"].as_array().expect("checks array");
    assert_eq!(checks.len(), crate::support::check_count());
    for (kind, files) in crate::support::check_files() {
        let listed: std::collections::BTreeSet<String> = checks
            .iter()
            .filter(|c| c["kind"] == kind)
            .filter_map(|c| c["id"].as_str().map(str::to_string))
            .collect();
        assert_eq!(listed, files, "{kind}");
    }
}

#[test]
fn checks_show_explains_one_check() {
    let out = mcpprobe()
        .args(["checks", "show", "meta-02"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "META-02",
        "Why it matters",
        "How to fix",
        "P1",
        "MCP03 Tool Poisoning",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
}

#[test]
fn daemon_without_a_config_file_exits_64_naming_it() {
    let dir = tempfile::tempdir().expect("dir");
    let out = mcpprobe()
        .current_dir(dir.path())
        .arg("daemon")
        .assert()
        .code(64)
        .get_output()
        .clone();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot read mcpprobe.toml"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_man_pages_in_doc_are_current() {
    let dir = tempfile::tempdir().expect("dir");
    mcpprobe().arg("manpages").arg(dir.path()).assert().code(0);
    let pages = |d: &std::path::Path| -> std::collections::BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(d)
            .expect("read_dir")
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "1"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).expect("read"),
                )
            })
            .collect()
    };
    let fresh = pages(dir.path());
    let committed = pages(&crate::support::root().join("doc"));
    assert!(fresh.contains_key("mcpprobe.1") && fresh.contains_key("mcpprobe-scan.1"));
    assert_eq!(
        fresh.keys().collect::<Vec<_>>(),
        committed.keys().collect::<Vec<_>>(),
        "doc/ is stale: run scripts/gen-man.sh"
    );
    for (name, text) in &fresh {
        assert!(
            committed.get(name) == Some(text),
            "doc/{name} is stale: run scripts/gen-man.sh"
        );
    }
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _mcpprobe"),
        ("zsh", "#compdef mcpprobe"),
        ("fish", "complete -c mcpprobe"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = mcpprobe()
            .args(["completions", shell])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..text.len().min(200)]
        );
        assert!(
            text.contains("fail-on-new"),
            "{shell} completes scan's flags"
        );
    }
    mcpprobe().args(["completions", "tcsh"]).assert().code(64);
}
