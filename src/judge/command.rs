//! `--judge-command CMD` (SPEC §12): CMD is started once per scan or check; mcpprobe writes one
//! JSON object per tool, one per line, to its stdin, and reads for each exactly one line from
//! its stdout, a JSON array of verdicts (`[]` for none). The command runs in its own process
//! group (killed at the end, with whatever it started), with the environment the host gives it
//! (the CLI passes its own minus every `MCPPROBE_*` variable and every value that is one of the
//! scan's secrets), and within the judge's budgets.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::{JudgeError, MAX_ANSWER_BYTES, Reviewer, Verdict, parse_answer};
use crate::protocol::stdio::{Frame, LineFramer};
use crate::util::BoxFuture;

/// What the command's stderr keeps for an error message.
const MAX_STDERR: usize = 4 * 1024;
/// How long a finished command may take to exit on end of input before its group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// An external judge: a program, its arguments and its whole environment.
#[derive(Clone)]
pub struct CommandJudge {
    program: String,
    args: Vec<String>,
    env: Vec<(OsString, OsString)>,
}

impl std::fmt::Debug for CommandJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The environment's values may be the judge's own keys: never in a log.
        f.debug_struct("CommandJudge")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .finish()
    }
}

/// Why a `--judge-command` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("--judge-command {0:?}: unbalanced quotes")]
    Quoting(String),
    #[error("--judge-command is empty")]
    Empty,
}

impl CommandJudge {
    /// `line` split as a POSIX shell would split words (quotes, backslashes; no expansion),
    /// started with exactly `env`.
    pub fn parse(line: &str, env: Vec<(OsString, OsString)>) -> Result<CommandJudge, CommandError> {
        let words = shlex::split(line).ok_or_else(|| CommandError::Quoting(line.to_string()))?;
        let (program, args) = words.split_first().ok_or(CommandError::Empty)?;
        if program.is_empty() {
            return Err(CommandError::Empty);
        }
        Ok(CommandJudge {
            program: program.clone(),
            args: args.to_vec(),
            env,
        })
    }
}

impl super::Judge for CommandJudge {
    /// The script's file name when the program is an interpreter given one
    /// (`python3 judge.py` is `judge.py`), else the program's; never other arguments, which
    /// may hold a key.
    fn name(&self) -> String {
        let base = |p: &str| {
            std::path::Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.to_string())
        };
        const SCRIPTS: [&str; 8] = [".py", ".js", ".mjs", ".ts", ".sh", ".rb", ".pl", ".php"];
        match self.args.first() {
            Some(a) if !a.starts_with('-') && SCRIPTS.iter().any(|e| a.ends_with(e)) => base(a),
            _ => base(&self.program),
        }
    }

    fn start(&self) -> Result<Box<dyn Reviewer>, JudgeError> {
        let crate::protocol::stdio::GroupChild {
            child,
            group,
            stdin,
            stdout,
            stderr,
        } = crate::protocol::stdio::spawn_group(
            &self.program,
            &self.args,
            self.env.iter().map(|(n, v)| (n, v)),
            MAX_STDERR,
            crate::protocol::stdio::Keep::Tail,
        )
        .map_err(|e| JudgeError::Start(format!("{}: {e}", self.program)))?;
        Ok(Box::new(Running {
            child,
            stdin,
            stdout,
            framer: LineFramer::new(MAX_ANSWER_BYTES),
            group,
            stderr,
        }))
    }
}

/// One started command.
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    framer: LineFramer,
    group: Option<rustix::process::Pid>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Running {
    /// The end of what the command wrote to stderr, escaped, for an error message.
    fn stderr_tail(&self) -> String {
        let tail = self
            .stderr
            .lock()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .unwrap_or_default();
        if tail.is_empty() {
            String::new()
        } else {
            let short: String = tail
                .chars()
                .rev()
                .take(400)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!(
                " (its stderr ends: {})",
                crate::util::escape::escape(&short)
            )
        }
    }

    /// Output the command wrote that no question asked for: answers out of step.
    fn unasked_output(&mut self) -> bool {
        if self.framer.pending() > 0 {
            return true;
        }
        // read(2) on the pipe itself, not a poll through the runtime: the runtime learns of
        // data only once its reactor has run, so a line already in the pipe could be missed
        // (seen on a loaded machine: an extra answer taken for the next tool's). The pipe is
        // non-blocking (tokio made it so): an empty one answers EAGAIN at once.
        let mut probe = [0u8; 256];
        match rustix::io::read(std::os::fd::AsFd::as_fd(&self.stdout), &mut probe[..]) {
            Ok(n) if n > 0 => {
                self.framer.push(&probe[..n]);
                true
            }
            _ => false,
        }
    }

    async fn ask(&mut self, tool: &Value) -> Result<Vec<Verdict>, JudgeError> {
        if self.unasked_output() {
            return Err(JudgeError::OutOfStep(
                "it wrote more than one line for an earlier tool".into(),
            ));
        }
        let mut line = serde_json::to_vec(tool).map_err(|e| JudgeError::Gone(e.to_string()))?;
        line.push(b'\n');
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(JudgeError::Gone("its stdin is closed".into()));
        };
        if let Err(e) = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
        .await
        {
            return Err(JudgeError::Gone(format!(
                "cannot write to it: {e}{}",
                self.stderr_tail()
            )));
        }
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match self.framer.next_line() {
                Some(Frame::Line(answer)) => return parse_answer(&answer, tool),
                Some(Frame::Overlong) => {
                    return Err(JudgeError::Garbage(format!(
                        "a line longer than {MAX_ANSWER_BYTES} bytes"
                    )));
                }
                None => {}
            }
            let n = self.stdout.read(&mut chunk).await.map_err(|e| {
                JudgeError::Gone(format!("cannot read from it: {e}{}", self.stderr_tail()))
            })?;
            if n == 0 {
                let status = match self.child.try_wait() {
                    Ok(Some(s)) => format!(", {s}"),
                    _ => String::new(),
                };
                return Err(JudgeError::Gone(format!(
                    "it closed its stdout{status}{}",
                    self.stderr_tail()
                )));
            }
            self.framer.push(&chunk[..n]);
        }
    }

    fn kill_group(&mut self) {
        crate::protocol::stdio::kill_group(&mut self.group);
    }
}

impl Reviewer for Running {
    fn review<'a>(
        &'a mut self,
        tool: &'a Value,
    ) -> BoxFuture<'a, Result<Vec<Verdict>, JudgeError>> {
        Box::pin(self.ask(tool))
    }

    fn finish(mut self: Box<Self>) -> BoxFuture<'static, Result<(), JudgeError>> {
        Box::pin(async move {
            drop(self.stdin.take());
            // Whatever it still writes before it exits must be nothing: a line more is an
            // answer that was out of step with its questions.
            let mut leftover = self.framer.pending();
            let mut chunk = [0u8; 4096];
            let drained = tokio::time::timeout(EXIT_GRACE, async {
                while leftover <= MAX_ANSWER_BYTES {
                    match self.stdout.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            leftover += chunk[..n]
                                .iter()
                                .filter(|b| !b.is_ascii_whitespace())
                                .count()
                        }
                    }
                }
            })
            .await;
            let exited = drained.is_ok()
                && tokio::time::timeout(EXIT_GRACE, self.child.wait())
                    .await
                    .is_ok();
            self.kill_group();
            if !exited {
                let _ = self.child.kill().await;
            }
            if leftover > 0 {
                return Err(JudgeError::OutOfStep(
                    "it wrote more lines than there were tools".into(),
                ));
            }
            Ok(())
        })
    }
}

impl Drop for Running {
    /// A review abandoned (a timeout, an interruption) leaves no process behind.
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// The environment a judge command gets from the host's `vars`: everything but mcpprobe's own
/// variables (`MCPPROBE_*`, the token among them) and any variable that holds one of `secrets`
/// (a `--token`, a `--header` value, a value `--env` passes a stdio server): equal to a
/// secret, or to one of its words (`Bearer s3cr3t` gives `s3cr3t`), or containing one of
/// them of 8 characters or more. Names and values need not be UTF-8.
pub fn judge_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    secrets: &[&str],
) -> Vec<(OsString, OsString)> {
    let mut fragments: Vec<&str> = Vec::new();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        fragments.push(s);
        fragments.extend(
            s.split(|c: char| c.is_whitespace() || "=;,:".contains(c))
                .filter(|w| !w.is_empty()),
        );
    }
    vars.into_iter()
        .filter(|(n, v)| {
            let name = n.to_string_lossy().to_ascii_uppercase();
            let value = v.to_string_lossy();
            !name.starts_with("MCPPROBE_")
                && !fragments
                    .iter()
                    .any(|f| *value == **f || (f.len() >= 8 && value.contains(f)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_splits_like_a_shell() {
        let j =
            CommandJudge::parse("python3 'my judge.py' --model \"a b\"", vec![]).expect("parses");
        assert_eq!(j.program, "python3");
        assert_eq!(j.args, ["my judge.py", "--model", "a b"]);
        assert_eq!(
            CommandJudge::parse("python3 'open", vec![]).err(),
            Some(CommandError::Quoting("python3 'open".into()))
        );
        assert_eq!(
            CommandJudge::parse("  ", vec![]).err(),
            Some(CommandError::Empty)
        );
        use crate::judge::Judge as _;
        let name = |line: &str| CommandJudge::parse(line, vec![]).expect("parses").name();
        assert_eq!(name("python3 scripts/kw.py --x"), "kw.py");
        assert_eq!(name("/usr/local/bin/my-judge --key sk-1"), "my-judge");
        assert_eq!(name("node -e 'x'"), "node");
    }

    #[test]
    fn the_environment_loses_mcpprobe_and_the_secrets() {
        let vars = [
            ("PATH", "/bin"),
            ("MCPPROBE_TOKEN", "t0k"),
            ("mcpprobe_state_dir", "/s"),
            ("COPY", "Bearer t0k-123456"),
            ("RAW", "t0k-123456"),
            ("SHORT", "o"),
            ("OPENAI_API_KEY", "sk-1"),
        ]
        .map(|(a, b)| (OsString::from(a), OsString::from(b)));
        let env = judge_env(vars, &["Bearer t0k-123456", "", "o"]);
        let names: Vec<String> = env
            .iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect();
        // A one-letter header value drops only a variable equal to it, never PATH.
        assert_eq!(names, ["PATH", "OPENAI_API_KEY"]);
    }
}
