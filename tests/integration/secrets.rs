//! SPEC §7, "Secrets never leave": a server that echoes every secret it is handed (each header's
//! value and words, the cookie's values, `Basic` credentials, the target URL's query values,
//! `--token`, `MCPPROBE_TOKEN`, the `--env` values of a stdio server) gets none of them into the
//! terminal output, the JSON report, SARIF, Markdown or the trace file (stdio stderr included).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;

use crate::support::{mcpprobe, root, state_dir};

const FIXTURE: &str = "tests/support/echo_secrets.py";

/// The echo server over HTTP, stopped (its stdin closed, then killed) when dropped.
struct EchoHttp {
    child: Child,
    stdin: Option<ChildStdin>,
    port: u16,
}

impl EchoHttp {
    fn start() -> EchoHttp {
        let mut child = Command::new("python3")
            .arg(root().join(FIXTURE))
            .arg("http")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the echo fixture");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("the fixture's stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the fixture prints its port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("not a port line: {line:?}"));
        EchoHttp { child, stdin, port }
    }
}

impl Drop for EchoHttp {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Everything one run wrote: (what, text).
struct Outputs(Vec<(String, String)>);

impl Outputs {
    /// Asserts that no output holds any form of any of `secrets`.
    fn assert_clean(&self, secrets: &[&str]) {
        for secret in secrets {
            let json = serde_json::to_string(secret).expect("json");
            let json = json.trim_matches('"').to_string();
            let forms = [
                secret.to_string(),
                json.clone(),
                // Escaped twice: a JSON report of a body that held the escaped form.
                serde_json::to_string(&json)
                    .expect("json")
                    .trim_matches('"')
                    .to_string(),
                url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
                base64::engine::general_purpose::STANDARD_NO_PAD.encode(secret),
            ];
            for (what, text) in &self.0 {
                for form in &forms {
                    let n = text.matches(form.as_str()).count();
                    assert_eq!(n, 0, "{n} copies of {form:?} in the {what}");
                }
            }
        }
    }

    /// How many times `[REDACTED]` appears in all outputs (the echo really reached them).
    fn redactions(&self) -> usize {
        self.0
            .iter()
            .map(|(_, t)| t.matches("[REDACTED]").count())
            .sum()
    }
}

/// `mcpprobe scan ARGS` with every output on: terminal on stdout, `--json`, `--sarif`,
/// `--markdown`, `--trace-file`; `env` set for the binary.
fn scan(args: &[String], env: &[(&str, &str)]) -> Outputs {
    let state = state_dir();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = |n: &str| -> PathBuf { dir.path().join(n) };
    let mut cmd = mcpprobe();
    cmd.env("MCPPROBE_STATE_DIR", state.path())
        .env("NO_COLOR", "1")
        .arg("scan")
        .args(["--rate", "10", "--fail-on", "none"])
        .arg("--json")
        .arg(file("report.json"))
        .arg("--sarif")
        .arg(file("report.sarif"))
        .arg("--markdown")
        .arg(file("report.md"))
        .arg("--trace-file")
        .arg(file("trace.jsonl"))
        // Last: a stdio command follows `--`.
        .args(args)
        .timeout(Duration::from_secs(120));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("mcpprobe runs");
    let read = |p: &Path| {
        std::fs::read_to_string(p).unwrap_or_else(|e| {
            panic!(
                "{p:?}: {e}; exit {:?}, stderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let report = read(&file("report.json"));
    let parsed: serde_json::Value = serde_json::from_str(&report).expect("a JSON report");
    assert!(
        parsed["inventory"].is_object() || parsed["findings"].is_array(),
        "a report: {report}"
    );
    Outputs(vec![
        (
            "terminal output".into(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        (
            "stderr".into(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        ("JSON report".into(), report),
        ("SARIF file".into(), read(&file("report.sarif"))),
        ("Markdown file".into(), read(&file("report.md"))),
        ("trace file".into(), read(&file("trace.jsonl"))),
    ])
}

const TOKEN: &str = "tokA-9f8e7d6c5b4a";
const HEADER_WORD: &str = "hdrWord-1a2b3c4d5e";
const COOKIE: &str = "cookieVal-77aa88bb";
const BASIC_PASS: &str = "basicPass-5566";
const QUOTED: &str = "quo\"te\\Secret-42";
const QUERY: &str = "qry/Secret-31";
const QUERY_RAW: &str = "qry%2FSecret-31";

#[test]
fn an_echoing_http_server_gets_no_secret_into_any_output() {
    let server = EchoHttp::start();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("alice:{BASIC_PASS}"));
    let url = format!(
        "http://127.0.0.1:{}/mcp?api_key={QUERY_RAW}&format=json",
        server.port
    );
    let args: Vec<String> = vec![
        url,
        "--token".into(),
        TOKEN.into(),
        "--header".into(),
        format!("X-Upstream-Auth: Bearer {HEADER_WORD}"),
        "--header".into(),
        format!("Cookie: sid={COOKIE}; theme=dark"),
        "--header".into(),
        format!("X-Basic: Basic {basic}"),
        "--header".into(),
        format!("X-Quoted: {QUOTED}"),
    ];
    let out = scan(&args, &[]);
    out.assert_clean(&[
        TOKEN,
        HEADER_WORD,
        COOKIE,
        BASIC_PASS,
        &basic,
        &format!("alice:{BASIC_PASS}"),
        QUOTED,
        QUERY,
        QUERY_RAW,
    ]);
    assert!(
        out.redactions() >= 20,
        "the server's echoes reached the outputs, redacted ({} redactions)",
        out.redactions()
    );
    // Not a secret: the query's other value and the header's scheme stay readable.
    let report = &out.0[2].1;
    assert!(report.contains("format=json"), "{report}");
}

#[test]
fn mcpprobe_token_is_redacted_like_the_flag() {
    let server = EchoHttp::start();
    let env_token = "envTok-0d0e0f1a2b";
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let out = scan(&[url], &[("MCPPROBE_TOKEN", env_token)]);
    out.assert_clean(&[env_token]);
    assert!(out.redactions() > 0, "the token was echoed and redacted");
}

#[test]
fn the_env_values_of_a_stdio_server_are_redacted_from_every_output_and_its_stderr() {
    let one = "stdioEnv-3c4d5e6f";
    let password = "stdioPw-778899";
    let db = format!("postgres://app:{password}@db.internal/app");
    let fixture = root().join(FIXTURE).display().to_string();
    let args: Vec<String> = vec![
        "--stdio".into(),
        "--env".into(),
        "ECHO_SECRET_ONE".into(),
        "--env".into(),
        "ECHO_DATABASE_URL".into(),
        "--".into(),
        "python3".into(),
        fixture,
        "stdio".into(),
    ];
    let out = scan(
        &args,
        &[("ECHO_SECRET_ONE", one), ("ECHO_DATABASE_URL", &db)],
    );
    out.assert_clean(&[one, password, &db]);
    let trace = &out.0[5].1;
    assert!(
        trace.contains("stdio_stderr") && trace.contains("[REDACTED]"),
        "the server's stderr is in the trace, redacted: {trace}"
    );
}

/// Every byte of every file under `dir` (the daemon's database, its WAL, the proofs), as text.
fn files_under(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((
                    path.display().to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    out
}

#[test]
fn the_daemon_keeps_every_token_env_value_and_query_secret_out_of_its_store_and_logs() {
    let server = EchoHttp::start();
    let token_a = "daemonTokA-5e6f7a8b";
    let token_b = "daemonTokB-9c0d1e2f";
    let query = "dmnQuery-4455aa";
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("mcpprobe.toml");
    let state = dir.path().join("state");
    std::fs::write(
        &file,
        format!(
            "rate = 10\nstate_dir = \"{}\"\n\
             [[targets]]\nname = \"a\"\nurl = \"http://127.0.0.1:{port}/mcp?access_token={query}\"\nevery = \"1h\"\ntoken_env = \"ECHO_TOKEN_A\"\n\n\
             [[targets]]\nname = \"b\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nevery = \"1h\"\ntoken_env = \"ECHO_TOKEN_B\"\n",
            state.display(),
            port = server.port
        ),
    )
    .expect("write the configuration");
    let out = mcpprobe()
        .env("MCPPROBE_STATE_DIR", &state)
        .env("ECHO_TOKEN_A", token_a)
        .env("ECHO_TOKEN_B", token_b)
        .args(["daemon", "--once", "--log-format", "json", "--config"])
        .arg(&file)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("the daemon runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut outputs = files_under(&state);
    assert!(
        outputs
            .iter()
            .any(|(p, _)| p.ends_with(".db") || p.contains("sqlite")),
        "the database is among the files: {:?}",
        outputs.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    let store = outputs
        .iter()
        .map(|(_, t)| t.matches("[REDACTED]").count())
        .sum::<usize>();
    assert!(store > 0, "the echoes were stored, redacted");
    outputs.push(("daemon log".into(), stderr));
    Outputs(outputs).assert_clean(&[token_a, token_b, query]);
}

#[test]
fn the_daemon_shows_its_targets_urls_without_their_query_secrets() {
    let text = "[[targets]]\nname = \"a\"\nurl = \"https://mcp.example.com/mcp?api_key=dmnKey-8899&format=json\"\nevery = \"1h\"\ntoken_env = \"T\"\n";
    let config = mcpprobe::config::Config::parse(text, Path::new("mcpprobe.toml"))
        .expect("a valid configuration");
    let dc = mcpprobe::daemon::DaemonConfig::new(
        &config,
        |_| Some("daemon-token-0011".to_string()),
        std::env::temp_dir(),
    )
    .expect("a valid daemon configuration");
    let t = &dc.targets[0];
    // What the API, the page, the store and the logs show; the scan still gets the real URL.
    assert_eq!(
        t.url,
        "https://mcp.example.com/mcp?api_key=[REDACTED]&format=json"
    );
    assert!(secrecy::ExposeSecret::expose_secret(&t.scan_url).contains("dmnKey-8899"));
    assert_eq!(dc.rows()[0].url, t.url);
    assert_eq!(
        dc.secrets.redact("daemon-token-0011 dmnKey-8899"),
        "[REDACTED] [REDACTED]"
    );
    assert!(!format!("{dc:?}").contains("dmnKey-8899"));
}
