//! Which tools an active run may call at all (SPEC §13), decided once per tool before any check
//! plans a call: in `--scope`, not `--exclude-tool`, not `destructiveHint: true`, annotated
//! `readOnlyHint: true` (or `--include-unannotated` for a tool without annotations), and — whatever
//! the annotations claim — not a tool whose name, title or leading description verbs say it
//! changes, deletes, sends, runs or pays, and never one that writes files.

use serde_json::Value;

use crate::rules::capabilities::{self, Class};

/// The user's scope and exclusions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallPolicy {
    /// Tool names or globs (`*`, `?`), from `--scope a,b*`; `*` alone is every tool.
    pub scope: Vec<String>,
    pub exclude: Vec<String>,
    /// `--include-unannotated`: a tool without annotations may be called (the MCP schema's
    /// default for it is destructive, so it is off by default).
    pub include_unannotated: bool,
}

/// Why a tool is never called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCalled {
    OutOfScope,
    Excluded,
    Destructive,
    Unannotated,
    NotReadOnly,
    /// The class, and the word that put it there ("runs: \"run\" in its name").
    Effect(String),
    Unnamed,
}

impl std::fmt::Display for NotCalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotCalled::OutOfScope => f.write_str("not in --scope"),
            NotCalled::Excluded => f.write_str("named by --exclude-tool"),
            NotCalled::Destructive => f.write_str("annotated destructiveHint: true"),
            NotCalled::Unannotated => f.write_str(
                "no annotations (the MCP default is destructive; --include-unannotated calls it)",
            ),
            NotCalled::NotReadOnly => f.write_str("not annotated readOnlyHint: true"),
            NotCalled::Effect(why) => write!(f, "it {why}, whatever its annotations claim"),
            NotCalled::Unnamed => f.write_str("it has no name"),
        }
    }
}

impl CallPolicy {
    /// `--scope` as given: comma-separated names or globs.
    pub fn parse_scope(raw: &str) -> Vec<String> {
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// Whether `tool` may be called, or why not.
    pub fn decide(&self, tool: &Value) -> Result<String, NotCalled> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(NotCalled::Unnamed)?;
        if !self.scope.iter().any(|p| glob(p, name)) {
            return Err(NotCalled::OutOfScope);
        }
        if self.exclude.iter().any(|e| e == name) {
            return Err(NotCalled::Excluded);
        }
        let hint = |k: &str| {
            tool.get("annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_bool)
        };
        if hint("destructiveHint") == Some(true) {
            return Err(NotCalled::Destructive);
        }
        // Effects first: a tool that runs commands but claims read-only is never called.
        if let Some(why) = effect(tool) {
            return Err(NotCalled::Effect(why));
        }
        match tool.get("annotations") {
            None | Some(Value::Null) if self.include_unannotated => {}
            None | Some(Value::Null) => return Err(NotCalled::Unannotated),
            Some(_) if hint("readOnlyHint") == Some(true) => {}
            Some(_) => return Err(NotCalled::NotReadOnly),
        }
        Ok(name.to_string())
    }
}

/// Words that, anywhere in a tool's name or title, say it does something (the active policy's
/// own list: wider than the capability rules', which judge what a tool reads).
#[rustfmt::skip]
const EFFECT_WORDS: &[&str] = &[
    "run", "runs", "exec", "execute", "executes", "eval", "evaluate", "spawn", "shell", "kill",
    "restart", "reboot", "shutdown", "stop", "start", "launch", "deploy", "install", "uninstall",
    "upgrade", "downgrade", "migrate", "rollback", "restore", "terminate", "trigger", "invoke",
    "dispatch", "schedule", "cancel", "revoke", "reset", "ban", "block", "unblock", "approve",
    "reject", "merge", "push", "commit", "rebase", "tag", "release", "publish", "post", "send",
    "email", "mail", "notify", "message", "reply", "submit", "apply", "enable", "disable",
    "grant", "deny", "assign", "unassign", "invite", "share", "transfer", "pay", "payment",
    "charge", "refund", "buy", "purchase", "order", "book", "subscribe", "unsubscribe", "create",
    "make", "new", "add", "insert", "update", "upsert", "patch", "put", "set", "edit", "modify",
    "change", "write", "save", "store", "upload", "export", "import", "sync", "move", "rename",
    "copy", "archive", "delete", "remove", "drop", "clear", "purge", "wipe", "destroy", "erase",
    "truncate", "format", "mount", "unmount", "lock", "unlock", "scale", "resize", "close",
    "open", "login", "logout", "register", "signup", "unregister", "confirm", "accept",
    "decline", "mark", "flag", "pin", "unpin", "star", "follow", "unfollow", "like", "vote",
];

/// Parameter-name words that say the tool writes somewhere or runs something.
#[rustfmt::skip]
const EFFECT_PARAMS: &[&str] = &[
    "output", "out", "dest", "destination", "target", "save", "write", "overwrite", "command",
    "cmd", "script", "exec", "pid", "process", "signal", "body", "content", "contents", "data",
    "payload", "recipient", "recipients", "to", "amount",
];

/// The effect a tool's name, title, parameters or leading description verbs give it, if any:
/// the capability rules' classes first (their reasons name the class), then the active
/// policy's wider lists.
fn effect(tool: &Value) -> Option<String> {
    if let Some(why) = old_effect(tool) {
        return Some(why);
    }
    for key in ["name", "title"] {
        if let Some(text) = tool.get(key).and_then(Value::as_str)
            && let Some(w) = crate::rules::text::words(text)
                .into_iter()
                .find(|w| EFFECT_WORDS.contains(&w.as_str()))
        {
            return Some(format!(
                "does something: \"{}\" in its {key}",
                crate::report::escape::escape(&w)
            ));
        }
    }
    if let Some(props) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    {
        for name in props.keys() {
            if let Some(w) = crate::rules::text::words(name)
                .into_iter()
                .find(|w| EFFECT_PARAMS.contains(&w.as_str()))
            {
                return Some(format!(
                    "may write or run something: \"{}\" in its parameter `{}`",
                    crate::report::escape::escape(&w),
                    crate::report::escape::escape_trimmed(name, 40)
                ));
            }
        }
    }
    if let Some(desc) = tool.get("description").and_then(Value::as_str) {
        // The first word of each sentence or clause, third person or imperative.
        for clause in desc.split(['.', ',', ';', '\n', ':', '!', '?', '(', ')']) {
            let Some(first) = clause.split_whitespace().next() else {
                continue;
            };
            let w = first
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_ascii_lowercase();
            let stem = w
                .strip_suffix("es")
                .filter(|s| EFFECT_WORDS.contains(s))
                .or_else(|| w.strip_suffix('s').filter(|s| EFFECT_WORDS.contains(s)));
            if EFFECT_WORDS.contains(&w.as_str()) || stem.is_some() {
                return Some(format!(
                    "does something: its description says \"{}\"",
                    crate::report::escape::escape(&w)
                ));
            }
        }
    }
    None
}

/// The capability rules' classes too (their phrase lists: "send money", …).
fn old_effect(tool: &Value) -> Option<String> {
    const NEVER: [Class; 5] = [
        Class::Changes,
        Class::Deletes,
        Class::Sends,
        Class::Runs,
        Class::Payments,
    ];
    for key in ["name", "title"] {
        if let Some(text) = tool.get(key).and_then(Value::as_str) {
            for (class, word) in capabilities::classify_name(text) {
                if NEVER.contains(&class) {
                    return Some(format!(
                        "{}: \"{}\" in its {key}",
                        class.describe(),
                        crate::report::escape::escape(&word)
                    ));
                }
            }
        }
    }
    let desc = tool.get("description").and_then(Value::as_str)?;
    capabilities::described_effect(desc)
        .map(|(class, verb)| format!("{}: its description says \"{verb}\"", class.describe()))
}

/// `*` (any run) and `?` (one character) globs, linear in both lengths.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> CallPolicy {
        CallPolicy {
            scope: vec!["*".into()],
            exclude: vec!["get_secret".into()],
            include_unannotated: false,
        }
    }

    #[test]
    fn globs() {
        assert!(glob("*", "anything"));
        assert!(glob("get_*", "get_weather"));
        assert!(!glob("get_*", "set_weather"));
        assert!(glob("?et_*r", "get_weather"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }

    #[test]
    fn only_read_only_tools_without_effects_are_called() {
        let p = policy();
        let ro = json!({"readOnlyHint": true});
        let cases = [
            (json!({"name": "lookup_host", "annotations": ro}), None),
            (
                json!({"name": "run_command", "annotations": ro}),
                Some("runs"),
            ),
            (
                json!({"name": "delete_file", "annotations": ro}),
                Some("deletes"),
            ),
            (
                json!({"name": "notes", "title": "Send a note", "annotations": ro}),
                Some("sends"),
            ),
            (
                json!({"name": "notes", "description": "Writes the note to disk.", "annotations": ro}),
                Some("changes"),
            ),
            (
                json!({"name": "get_secret", "annotations": ro}),
                Some("--exclude-tool"),
            ),
            (
                json!({"name": "get_x", "annotations": {"readOnlyHint": true, "destructiveHint": true}}),
                Some("destructive"),
            ),
            (json!({"name": "get_x"}), Some("no annotations")),
            (
                json!({"name": "get_x", "annotations": {"openWorldHint": true}}),
                Some("readOnlyHint"),
            ),
        ];
        for (tool, refused) in cases {
            let got = p.decide(&tool);
            match refused {
                None => assert!(got.is_ok(), "{tool}: {got:?}"),
                Some(why) => {
                    let e = got.expect_err("refused");
                    assert!(e.to_string().contains(why), "{tool}: {e}");
                }
            }
        }
        let scoped = CallPolicy {
            scope: vec!["lookup_*".into()],
            ..policy()
        };
        assert_eq!(
            scoped.decide(&json!({"name": "get_x", "annotations": ro})),
            Err(NotCalled::OutOfScope)
        );
        let open = CallPolicy {
            include_unannotated: true,
            ..policy()
        };
        assert!(open.decide(&json!({"name": "get_x"})).is_ok());
        assert!(open.decide(&json!({"name": "exec_sql"})).is_err());
    }
}
