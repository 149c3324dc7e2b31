//! The command line, a thin host around the engine: clap definitions, dispatch, the runtime,
//! Ctrl-C, rendering and exit codes. Usage errors exit 64, never clap's 2 (2 means "stopped by
//! the gate"). The only module that prints.

mod badge;
mod daemon;
mod demo;
mod discover;
mod offline;
mod scan;
pub mod settings;
mod values;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode as ProcessExit;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::catalogue::catalogue;
use crate::exit::ExitCode;
use crate::finding::Confidence;
use crate::model::{Policy, Report};
use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "mcpprobe",
    version,
    about = "A polite security scanner for MCP servers",
    long_about = "mcpprobe scans MCP servers you own: tool poisoning, authentication, transport and \
                  session checks. It honours opt-outs, proves ownership before sending anything, \
                  stays under a rate limit and records the evidence of every finding.",
    after_help = "Exit codes: 0 clean · 1 findings at or above --fail-on · 2 stopped by the gate · \
                  3 scan incomplete · 64 usage or configuration error"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scan a live MCP server (HTTP URL or --stdio command), or with --discover every server
    /// this machine's MCP clients run.
    Scan(Box<ScanArgs>),
    /// List the MCP servers this machine's clients are configured to run (Claude Desktop and
    /// Code, Cursor, VS Code, Windsurf, Zed, Continue, Codex, Gemini, Cline), and the secrets
    /// their files hold inline. Starts and sends nothing.
    Discover(Box<DiscoverArgs>),
    /// Run the metadata rules on a file: tools/list response, tools array, server card or agent card.
    Check(Box<CheckArgs>),
    /// Print the SHA-256 tool-list fingerprint of a file (SPEC §5).
    Fingerprint {
        /// A tools/list response, its result, or a tools array; `-` for stdin.
        file: String,
    },
    /// Compare two tool lists: added, removed, changed field by field, renamed.
    Diff {
        old: String,
        new: String,
        #[arg(long, value_enum, default_value_t = DiffFormat::Terminal)]
        format: DiffFormat,
    },
    /// Prove ownership of a host with a DNS TXT record.
    Verify {
        #[command(subcommand)]
        action: VerifyAction,
        /// DNS server to ask, IP:PORT (default: the system's).
        #[arg(long, env = "MCPPROBE_RESOLVER", hide_env_values = true, global = true)]
        resolver: Option<String>,
    },
    /// List the check catalogue, or explain one check.
    Checks {
        #[command(subcommand)]
        action: Option<ChecksAction>,
        /// Output format for the list.
        #[arg(long, value_enum, default_value_t = ListFormat::Terminal)]
        format: ListFormat,
    },
    /// Render a status badge (SVG, or shields.io endpoint JSON) from a JSON report.
    Badge {
        /// A JSON report written by `scan --json` or `check --format json`.
        report: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = badge::BadgeFormat::Svg)]
        format: badge::BadgeFormat,
        /// Write the badge to FILE instead of stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Re-scan the targets of mcpprobe.toml on a schedule; serve their status, badges,
    /// metrics and a web page.
    Daemon(Box<DaemonArgs>),
    /// Start the bundled vulnerable reference server on 127.0.0.1, scan it, and stop it.
    Demo(Box<DemoArgs>),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages into a folder (`scripts/gen-man.sh` keeps doc/ current).
    #[command(hide = true)]
    Manpages { dir: PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum VerifyAction {
    /// Make a token and print the TXT record to publish.
    Init { host: String },
    /// Look the record up and store a 90-day proof.
    Check { host: String },
    /// List stored proofs and their expiry.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum ChecksAction {
    /// List every check (the default).
    List,
    /// Explain one check: why it matters, how to fix, its rules.
    Show { id: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Terminal,
    Json,
}

pub use crate::docs::ListFormat;

pub use crate::model::FailOn;

/// The META-01 judge (SPEC §12): off unless `--judge-command` is given.
#[derive(Debug, Args)]
#[command(next_help_heading = "Judge (META-01)")]
pub struct JudgeArgs {
    /// Run CMD (split as a shell would, no shell involved) once; it gets one JSON object per
    /// tool on stdin, one per line, and answers each with one line: a JSON array of verdicts
    /// (`[]` for none). It sees this environment minus MCPPROBE_* and the scan's secrets.
    #[arg(long, value_name = "CMD")]
    pub judge_command: Option<String>,
    /// Seconds the judge may take for one tool.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600), requires = "judge_command")]
    pub judge_timeout: u64,
    /// Seconds the judge may take in all (added to the scan's cap).
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3600), requires = "judge_command")]
    pub judge_budget: u64,
}

impl JudgeArgs {
    /// The judge of these flags (`None` without `--judge-command`); `secrets` are values its
    /// environment must not hold.
    pub fn config(
        &self,
        secrets: &[&str],
    ) -> Result<Option<crate::judge::JudgeConfig>, crate::judge::command::CommandError> {
        let Some(line) = &self.judge_command else {
            return Ok(None);
        };
        let env = crate::judge::command::judge_env(std::env::vars_os(), secrets);
        let judge = crate::judge::command::CommandJudge::parse(line, env)?;
        Ok(Some(crate::judge::JudgeConfig {
            judge: std::sync::Arc::new(judge),
            limits: crate::judge::JudgeLimits {
                per_tool: std::time::Duration::from_secs(self.judge_timeout),
                total: std::time::Duration::from_secs(self.judge_budget),
            },
        }))
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Output format of the main report.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Write the main report to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the SARIF report to FILE.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Also write a Markdown summary to FILE (the Action's job summary).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// The file in the repository SARIF results point at (default: the configuration file,
    /// else the baseline, else the checked file).
    #[arg(long, value_name = "FILE")]
    pub sarif_artifact: Option<PathBuf>,
    /// Exit 1 when a finding is at or above this severity [default: high, or the config's].
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// Leave out findings below this confidence [default: low, or the config's].
    #[arg(long, value_enum)]
    pub min_confidence: Option<Confidence>,
}

impl OutputArgs {
    /// The policy of these flags alone (no configuration file: the demo).
    pub fn policy(&self) -> Policy {
        Policy {
            fail_on: self.fail_on.unwrap_or(FailOn::High).severity(),
            min_confidence: self.min_confidence.unwrap_or(Confidence::Low),
        }
    }

    /// Whether a SARIF rendering is written (the only one that reads the artifact).
    pub fn writes_sarif(&self) -> bool {
        self.sarif.is_some() || self.format == Format::Sarif
    }
}

/// `mcpprobe.toml` and `--fail-on-new` (`scan` and `check`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Configuration")]
pub struct ConfigArgs {
    /// Configuration file [default: ./mcpprobe.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not read ./mcpprobe.toml.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
    /// Count only findings absent from this previous JSON report; mark the new ones.
    #[arg(long, value_name = "PREVIOUS.json")]
    pub fail_on_new: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The file to check; `-` reads stdin.
    pub file: String,
    /// Force the document kind instead of detecting it.
    #[arg(long, value_enum)]
    pub kind: Option<crate::rules::InputKind>,
    /// Stop the rules after this many seconds; what they had not read makes the result
    /// incomplete (exit 3).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub time_cap: u64,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
}

/// Where discovery looks (`discover` and `scan --discover`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Discovery")]
pub struct PlacesArgs {
    /// Also read this client file (any client's layout, JSON with comments, YAML or TOML);
    /// repeatable.
    #[arg(long, value_name = "FILE")]
    pub client_config: Vec<PathBuf>,
    /// The project whose files are read (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`…)
    /// [default: the working folder].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Do not read the project's files, only the user's.
    #[arg(long, conflicts_with = "project")]
    pub no_project: bool,
    /// Tests only: the platform whose layout is searched.
    #[arg(long, hide = true, value_name = "linux|macos|windows")]
    pub test_platform: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    #[command(flatten)]
    pub places: PlacesArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Terminal)]
    pub format: DiffFormat,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// The MCP endpoint, e.g. https://mcp.example.com/mcp.
    pub url: Option<String>,
    /// Launch a stdio server: everything after `--` is the command and its arguments. It gets
    /// only PATH, HOME, LANG and what --env names, runs in its own process group, and the whole
    /// group is killed at the end.
    #[arg(long, requires = "command", conflicts_with = "url")]
    pub stdio: bool,
    /// Scan every MCP server the clients on this machine run (see `mcpprobe discover`): stdio
    /// servers are started with the local proof; a remote URL only when its host has a proof
    /// in force, else it is listed "not scanned: no proof". One report, with rules across
    /// servers. --token and --header are never sent to discovered servers; --trace-file writes
    /// one file per server (trace.jsonl → trace.<server>.jsonl).
    #[arg(long, conflicts_with_all = ["url", "stdio"])]
    pub discover: bool,
    #[command(flatten)]
    pub places: PlacesArgs,
    /// With --discover: also start the stdio servers the project's files name (`.mcp.json`,
    /// `.vscode/mcp.json`…). Without it they are listed, not started: a project may be someone
    /// else's repository.
    #[arg(long, requires = "discover", help_heading = "Discovery")]
    pub trust_project: bool,
    /// Pass this environment variable to the --stdio server, or with --discover let a
    /// discovered server's `env` entry (or header) of this name, or that references it, be
    /// passed (repeatable; never MCPPROBE_TOKEN).
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// Requests per second, at most 10 [default: 5, or the config's].
    #[arg(long, help_heading = "Network")]
    pub rate: Option<u32>,
    /// DNS server to ask, IP:PORT (default: the system's).
    #[arg(
        long,
        env = "MCPPROBE_RESOLVER",
        hide_env_values = true,
        help_heading = "Network"
    )]
    pub resolver: Option<String>,
    /// Extra request header, `Name: value` (repeatable; redacted in all output).
    #[arg(long = "header", short = 'H', help_heading = "Network")]
    pub headers: Vec<String>,
    /// Bearer token for the inventory (redacted in all output).
    #[arg(
        long,
        env = "MCPPROBE_TOKEN",
        hide_env_values = true,
        help_heading = "Network"
    )]
    pub token: Option<String>,
    /// Do not send the one GET to the advertised authorization server (AUTH-03).
    #[arg(long, help_heading = "Network")]
    pub no_follow_as: bool,
    /// Scan a host name even when it resolves to an address that is not public: private
    /// (RFC 1918), loopback beside other addresses, link-local (169.254/16, fe80::/10: cloud
    /// metadata), CGNAT, unique-local, NAT64, 6to4 or IPv4-mapped forms of those, benchmark,
    /// documentation, multicast or reserved. Without it such a name is refused (exit 2) before
    /// anything is sent, even with a DNS-TXT proof: a name's owner can point it at the network
    /// mcpprobe runs in. A name that resolves only to loopback needs no flag (local proof).
    #[arg(long, help_heading = "Network")]
    pub allow_private_addresses: bool,
    /// Write every request and response (redacted) as JSON lines.
    #[arg(long, value_name = "FILE", help_heading = "Network")]
    pub trace_file: Option<PathBuf>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Pin the server's state to FILE when it does not exist; compare with it when it does.
    #[arg(long, value_name = "FILE", help_heading = "Checks")]
    pub baseline: Option<PathBuf>,
    /// Accept the current state into the baseline (the changes are shown, suppressed).
    #[arg(long, requires = "baseline", help_heading = "Checks")]
    pub update_baseline: bool,
    /// Run active checks (needs --authorised-by, --scope and --verify).
    #[arg(long, help_heading = "Active")]
    pub active: bool,
    /// Who authorised the active run.
    #[arg(long, value_name = "NAME", help_heading = "Active")]
    pub authorised_by: Option<String>,
    /// The tools that may be called: names or globs, comma-separated (`lookup_*,get_forecast`),
    /// or `*`. The call rule is an allow-list: only a tool annotated readOnlyHint: true whose
    /// name has a read verb (or none) and whose name, title, description and parameters say
    /// nothing of changing, deleting, sending, running or paying; never one annotated
    /// destructiveHint: true or named by --exclude-tool.
    #[arg(long, value_name = "WHAT", help_heading = "Active")]
    pub scope: Option<String>,
    /// Also call tools that have no annotations (the MCP default for them is destructive).
    #[arg(long, requires = "active", help_heading = "Active")]
    pub include_unannotated: bool,
    /// Say which calls each active check would make (tools, arguments, budget); call nothing.
    /// With --discover: list the servers that would be started and scanned; start nothing.
    #[arg(long, help_heading = "Active")]
    pub dry_run: bool,
    /// Require an ownership proof made within this run.
    #[arg(long, help_heading = "Active")]
    pub verify: bool,
    /// Never call this tool: a name or a glob (`*`, `?`), as --scope takes; repeatable.
    #[arg(long, value_name = "TOOL", help_heading = "Active")]
    pub exclude_tool: Vec<String>,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub action: Option<DaemonAction>,
    /// The configuration: targets with `every`, the listen address, suppressions (SPEC §8).
    #[arg(long, default_value = "mcpprobe.toml", global = true)]
    pub config: PathBuf,
    /// Run every target whose current slot has not run yet, once, then exit (for cron).
    #[arg(long)]
    pub once: bool,
    /// Log lines as text or as JSON objects (one per line, on stderr).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// DNS server to ask, IP:PORT (default: the system's).
    #[arg(long, env = "MCPPROBE_RESOLVER", hide_env_values = true)]
    pub resolver: Option<String>,
    /// Tests only: every target's interval in milliseconds, below the shipped 30 s floor.
    #[arg(long, hide = true, value_name = "MS")]
    pub test_every_ms: Option<u64>,
    /// Tests only: the lease of runs and hosts in milliseconds (default 60 s).
    #[arg(long, hide = true, value_name = "MS")]
    pub test_lease_ms: Option<u64>,
    /// Tests only: this worker's name (default: the host name and the process id).
    #[arg(long, hide = true, value_name = "NAME")]
    pub test_worker: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum DaemonAction {
    /// Accept a target's state as its new baseline: the state run --run ID observed (the run
    /// you reviewed), or the latest run's.
    Accept {
        name: String,
        #[arg(long, value_name = "ID")]
        run: Option<i64>,
    },
    /// Manage imported targets (beside the configuration file's, which win by name).
    Targets {
        #[command(subcommand)]
        action: TargetsAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum TargetsAction {
    /// Import targets, all or none, idempotent by name: FILE.toml holds `[[targets]]` tables
    /// as in mcpprobe.toml; FILE.jsonl one target object per line (the same keys); FILE.json
    /// an array of them.
    Import { file: PathBuf },
    /// Stop listing and scheduling an imported target (its history is kept).
    Remove { name: String },
    /// List the targets the store holds (configured and imported).
    List,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Which checks run (`scan` and `demo`).
#[derive(Debug, Args)]
pub struct SelectionArgs {
    /// Only run these checks (comma-separated ids).
    #[arg(long, value_delimiter = ',', help_heading = "Checks")]
    pub checks: Vec<String>,
    /// Skip these checks (comma-separated ids).
    #[arg(long, value_delimiter = ',', help_heading = "Checks")]
    pub skip_checks: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// Requests per second (at most 10; the demo scans at the highest polite rate).
    #[arg(long, default_value_t = crate::net::MAX_RATE, help_heading = "Network")]
    pub rate: u32,
    /// Write every request and response (redacted) as JSON lines.
    #[arg(long, value_name = "FILE", help_heading = "Network")]
    pub trace_file: Option<PathBuf>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Only start the reference server, print its URL on stdout, and keep it up until Ctrl-C
    /// or SIGTERM (to scan it with `mcpprobe scan`, or from the Action in CI).
    #[arg(long, help_heading = "Server")]
    pub serve: bool,
    /// The loopback port of the reference server (0: any free port).
    #[arg(long, default_value_t = 0, help_heading = "Server")]
    pub port: u16,
    /// Also run the implemented active checks against the reference server, with scope `*`
    /// (its proof is local: it runs on loopback): its `lookup_host` tool builds a shell command
    /// from its input, and ACT-01 proves it with a canary. The tools the policy refuses are
    /// listed; nothing is executed by the reference server, whose shell is simulated.
    #[arg(long, conflicts_with = "serve", help_heading = "Active")]
    pub active: bool,
    /// The safe twin instead: the same protocol without the weaknesses, requiring the bearer
    /// token of --token / MCPPROBE_TOKEN.
    #[arg(long, requires = "token", help_heading = "Server")]
    pub safe: bool,
    /// The safe twin's token (the scan sends it too).
    #[arg(
        long,
        env = "MCPPROBE_TOKEN",
        hide_env_values = true,
        help_heading = "Server"
    )]
    pub token: Option<String>,
}

/// Parses the command line and runs it. Returns the process exit code.
pub fn main() -> ProcessExit {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            let code = match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
                _ => ExitCode::Usage.code(),
            };
            let _ = e.print();
            return exit(code);
        }
    };
    exit(run(cli))
}

fn exit(code: i32) -> ProcessExit {
    ProcessExit::from(u8::try_from(code).unwrap_or(u8::MAX))
}

/// A usage error message on stderr, exit 64.
pub fn usage_error(msg: impl std::fmt::Display) -> i32 {
    eprintln!("mcpprobe: error: {msg}");
    ExitCode::Usage.code()
}

pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Checks { action, format } => match action {
            None | Some(ChecksAction::List) => print_out(&crate::docs::list(format)),
            Some(ChecksAction::Show { id }) => match crate::docs::show(&id) {
                Some(text) => print_out(&text),
                None => usage_error(format!(
                    "no check named {id:?}; `mcpprobe checks` lists the {} checks",
                    catalogue().entries.len()
                )),
            },
        },
        Command::Check(args) => offline::check(&args),
        Command::Discover(args) => discover::list(&args),
        Command::Fingerprint { file } => offline::fingerprint(&file),
        Command::Diff { old, new, format } => offline::diff(&old, &new, format),
        Command::Scan(args) => {
            // A scan process owns every child it has (its stdio server, a judge command): it
            // adopts what escapes a server's process group (a daemonised grandchild) so that
            // the session's end kills and reaps it (protocol::stdio).
            let _ = crate::protocol::stdio::become_subreaper();
            scan::scan(&args)
        }
        Command::Verify { action, resolver } => scan::verify(&action, resolver.as_deref()),
        Command::Badge {
            report,
            format,
            output,
        } => badge::run(&report, format, output.as_ref()),
        Command::Daemon(args) => daemon::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command(), "mcpprobe", &mut out);
            print_out(&String::from_utf8_lossy(&out))
        }
        Command::Manpages { dir } => match man_pages(&dir) {
            Ok(()) => 0,
            Err(e) => usage_error(format!("cannot write man pages to {}: {e}", dir.display())),
        },
    }
}

/// The clap definition of the whole command line.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Writes `mcpprobe.1` and one page per subcommand (`mcpprobe-scan.1`, …) into `dir`.
pub fn man_pages(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(command(), dir)
}

pub(crate) fn print_out(text: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`mcpprobe checks | head`) is not an error.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    0
}

/// Colour only on a terminal, and never with `NO_COLOR`.
fn stdout_wants_color() -> bool {
    use std::io::IsTerminal;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && std::io::stdout().is_terminal()
}

/// Writes the report as the output arguments ask: the main format to stdout or `--output`,
/// and the `--json` / `--sarif` / `--markdown` copies beside it. Warnings (an expired or stale
/// suppression) also go to stderr. Returns the exit code of the report, or 64 when a file
/// cannot be written.
pub fn emit(report: &Report, output: &OutputArgs, artifact: crate::report::Artifact) -> i32 {
    let color =
        output.output.is_none() && output.format == Format::Terminal && stdout_wants_color();
    if output.format != Format::Terminal || output.output.is_some() {
        for w in &report.warnings {
            eprintln!("mcpprobe: warning: {}", crate::util::escape::escape(w));
        }
    }
    let options = settings::render_options(artifact, color);
    let plain = crate::report::RenderOptions {
        color: false,
        ..options.clone()
    };
    let write = |path: &PathBuf, format: Format, options: &crate::report::RenderOptions| {
        std::fs::File::create(path)
            .and_then(|f| {
                let mut out = std::io::BufWriter::new(f);
                crate::report::write_rendered(report, format, options, &mut out)?;
                out.flush()
            })
            .map_err(|e| usage_error(format!("cannot write {}: {e}", path.display())))
    };
    let result = (|| {
        match &output.output {
            Some(path) => write(path, output.format, &options)?,
            None => {
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                // A closed pipe (`mcpprobe check … | head`) is not an error.
                let _ = crate::report::write_rendered(report, output.format, &options, &mut out)
                    .and_then(|()| out.flush());
            }
        }
        for (path, format) in [
            (&output.json, Format::Json),
            (&output.sarif, Format::Sarif),
            (&output.markdown, Format::Markdown),
        ] {
            if let Some(path) = path {
                write(path, format, &plain)?;
            }
        }
        Ok(())
    })();
    match result {
        Ok(()) => report.exit_code,
        Err(code) => code,
    }
}
