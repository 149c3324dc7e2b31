//! One client file → its servers. Every syntax (JSON with comments, YAML, TOML) becomes a JSON
//! value first; every layout then hands its entries to one entry reader.

use std::path::Path;

use serde_json::{Map, Value};

use super::locations::Layout;
use super::{ConfigValue, Launch, Named, ParsedFile};
use crate::rules::document::token;

/// Bytes read of one file: `~/.claude.json` carries Claude Code's history and grows.
pub const MAX_FILE: u64 = 32 * 1024 * 1024;
/// Servers kept per file; arguments, variables and headers kept per server.
pub const MAX_SERVERS: usize = 256;
pub const MAX_ITEMS: usize = 256;

/// Why a file could not be read; the file is listed with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("cannot be read: {0}")]
    Io(String),
    #[error("is larger than {} MiB", MAX_FILE / 1024 / 1024)]
    TooLarge,
    #[error("is not valid {syntax}: {why}")]
    Syntax { syntax: &'static str, why: String },
    #[error("has no MCP server list this client writes ({0})")]
    Shape(String),
}

/// Reads and parses `path` as `layout` says.
pub fn read(path: &Path, layout: Layout) -> Result<ParsedFile, ReadError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| ReadError::Io(e.kind().to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Io(e.kind().to_string()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(ReadError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|e| ReadError::Syntax {
        syntax: "UTF-8",
        why: format!("invalid byte at offset {}", e.utf8_error().valid_up_to()),
    })?;
    parse(&text, path, layout)
}

fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

/// Parses a file's text (named `path`, whose extension picks TOML or YAML for [`Layout::Detect`]).
pub fn parse(text: &str, path: &Path, layout: Layout) -> Result<ParsedFile, ReadError> {
    let syntax = match layout {
        Layout::CodexToml => "toml",
        Layout::ContinueYaml => "yaml",
        Layout::Detect => match extension(path) {
            "toml" => "toml",
            "yaml" | "yml" => "yaml",
            _ => "json",
        },
        _ => "json",
    };
    let value: Value = match syntax {
        "toml" => toml::from_str::<Value>(text).map_err(|e| ReadError::Syntax {
            syntax: "TOML",
            why: e.message().to_string()
                + &e.span()
                    .map(|s| format!(" (line {})", line_of(text, s.start)))
                    .unwrap_or_default(),
        })?,
        "yaml" => serde_norway::from_str::<Value>(text).map_err(|e| ReadError::Syntax {
            syntax: "YAML",
            why: e.to_string(),
        })?,
        _ => serde_json::from_str::<Value>(&super::jsonc::strip(text)).map_err(|e| {
            ReadError::Syntax {
                syntax: "JSON",
                why: format!("{} at line {} column {}", e_kind(&e), e.line(), e.column()),
            }
        })?,
    };
    let layout = if layout == Layout::Detect {
        detect(&value, syntax)?
    } else {
        layout
    };
    from_value(&value, layout)
}

fn e_kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Eof => "the text ends early",
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "an unexpected value",
        serde_json::error::Category::Io => "a read error",
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// The layout of a file given with `--client-config`, from its keys.
fn detect(v: &Value, syntax: &str) -> Result<Layout, ReadError> {
    let has = |k: &str| v.get(k).is_some();
    Ok(if syntax == "toml" || has("mcp_servers") {
        Layout::CodexToml
    } else if has("projects") && has("mcpServers") || has("projects") {
        Layout::ClaudeCodeUser
    } else if v.get("mcpServers").is_some_and(Value::is_array) {
        Layout::ContinueYaml
    } else if has("mcpServers") {
        Layout::McpServers
    } else if has("servers") {
        Layout::VscodeServers
    } else if v.get("mcp").is_some_and(|m| m.get("servers").is_some()) {
        Layout::VscodeSettings
    } else if has("context_servers") {
        Layout::ZedSettings
    } else if v
        .pointer("/experimental/modelContextProtocolServers")
        .is_some()
    {
        Layout::ContinueJson
    } else {
        return Err(ReadError::Shape(
            "expected mcpServers, servers, mcp.servers, context_servers, mcp_servers or \
             experimental.modelContextProtocolServers"
                .into(),
        ));
    })
}

/// The servers of a parsed value laid out as `layout`. A file without the layout's key holds
/// no servers (a settings file without MCP servers is common); a key of the wrong type is an
/// error.
pub fn from_value(v: &Value, layout: Layout) -> Result<ParsedFile, ReadError> {
    let mut out = ParsedFile::default();
    match layout {
        Layout::McpServers => map_at(v, "/mcpServers", &mut out)?,
        Layout::ClaudeCodeUser => {
            map_at(v, "/mcpServers", &mut out)?;
            if let Some(projects) = v.get("projects").and_then(Value::as_object) {
                for (folder, p) in projects {
                    let ptr = format!("/projects/{}/mcpServers", token(folder));
                    if p.get("mcpServers").is_some() {
                        map_at(v, &ptr, &mut out)?;
                    }
                }
            }
        }
        Layout::VscodeServers => map_at(v, "/servers", &mut out)?,
        Layout::VscodeSettings => map_at(v, "/mcp/servers", &mut out)?,
        Layout::ZedSettings => map_at(v, "/context_servers", &mut out)?,
        Layout::CodexToml => map_at(v, "/mcp_servers", &mut out)?,
        Layout::ContinueYaml => list_at(v, "/mcpServers", &mut out)?,
        Layout::ContinueJson => list_at(v, "/experimental/modelContextProtocolServers", &mut out)?,
        Layout::Detect => unreachable_layout(&mut out),
    }
    Ok(out)
}

fn unreachable_layout(out: &mut ParsedFile) {
    problem(out, "the file's layout was not recognised".into());
}

fn map_at(v: &Value, ptr: &str, out: &mut ParsedFile) -> Result<(), ReadError> {
    let Some(m) = v.pointer(ptr) else {
        return Ok(());
    };
    let Some(m) = m.as_object() else {
        return Err(ReadError::Shape(format!("{ptr} is not an object")));
    };
    for (name, e) in m {
        push(out, name.clone(), format!("{ptr}/{}", token(name)), e);
    }
    Ok(())
}

fn list_at(v: &Value, ptr: &str, out: &mut ParsedFile) -> Result<(), ReadError> {
    let Some(l) = v.pointer(ptr) else {
        return Ok(());
    };
    let Some(l) = l.as_array() else {
        return Err(ReadError::Shape(format!("{ptr} is not a list")));
    };
    for (i, e) in l.iter().enumerate() {
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("server {}", i + 1));
        push(out, name, format!("{ptr}/{i}"), e);
    }
    Ok(())
}

/// Problems kept per file; the rest are counted.
pub const MAX_PROBLEMS: usize = 32;

fn problem(out: &mut ParsedFile, text: String) {
    if out.problems.len() < MAX_PROBLEMS {
        out.problems.push(text);
    } else {
        out.dropped += 1;
    }
}

fn push(out: &mut ParsedFile, name: String, pointer: String, e: &Value) {
    if out.servers.len() >= MAX_SERVERS {
        if !out.truncated {
            out.truncated = true;
            problem(
                out,
                format!("more than {MAX_SERVERS} servers: the rest were not read"),
            );
        }
        return;
    }
    match entry(e, &pointer) {
        Ok((launch, disabled)) => out.servers.push(super::ParsedServer {
            name,
            pointer,
            launch,
            disabled,
        }),
        Err(why) => problem(out, format!("{pointer}: {why}")),
    }
}

/// One server entry: a command (string, or Zed's `{path, args, env}`), or a URL (`url`,
/// `serverUrl`, `httpUrl`), with Continue's `transport` object read as the entry itself.
fn entry(e: &Value, ptr: &str) -> Result<(Launch, bool), String> {
    let Some(obj) = e.as_object() else {
        return Err("not an object".into());
    };
    let disabled = obj.get("disabled") == Some(&Value::Bool(true))
        || obj.get("enabled") == Some(&Value::Bool(false));
    // Continue's config.json nests the launch in `transport`.
    if let Some(t) = obj.get("transport").and_then(Value::as_object) {
        return entry_of(t, &format!("{ptr}/transport")).map(|l| (l, disabled));
    }
    entry_of(obj, ptr).map(|l| (l, disabled))
}

fn entry_of(obj: &Map<String, Value>, ptr: &str) -> Result<Launch, String> {
    let kind = obj
        .get("type")
        .or_else(|| obj.get("transport"))
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase);
    let url = ["url", "serverUrl", "httpUrl", "uri"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str).map(|u| (*k, u)));
    match obj.get("command") {
        Some(Value::Object(z)) => {
            // Zed's older form: "command": {"path", "args", "env"}.
            let program = z
                .get("path")
                .and_then(Value::as_str)
                .ok_or("`command.path` is missing or not a string")?;
            return Ok(stdio(program, z, &format!("{ptr}/command"), obj, ptr));
        }
        Some(Value::String(program)) => {
            return Ok(stdio(program, obj, ptr, obj, ptr));
        }
        Some(_) => return Err("`command` is neither a string nor an object".into()),
        None => {}
    }
    if let Some((key, url)) = url {
        return Ok(Launch::Remote {
            url: url.to_string(),
            url_pointer: format!("{ptr}/{key}"),
            transport: kind.filter(|k| k != "stdio"),
            headers: named(obj.get("headers"), &format!("{ptr}/headers")),
        });
    }
    Err("neither `command` nor a URL (`url`, `serverUrl`, `httpUrl`)".into())
}

/// A stdio launch read from `from` (at `ptr`); `outer` (at `outer_ptr`) is the whole entry,
/// whose `env` and `cwd` count when `from` has none (Zed's older form nests the command).
fn stdio(
    program: &str,
    from: &Map<String, Value>,
    ptr: &str,
    outer: &Map<String, Value>,
    outer_ptr: &str,
) -> Launch {
    let args = match from.get("args") {
        Some(Value::Array(a)) => a
            .iter()
            .take(MAX_ITEMS)
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    };
    let env = match from.get("env") {
        Some(e) => named(Some(e), &format!("{ptr}/env")),
        None => named(outer.get("env"), &format!("{outer_ptr}/env")),
    };
    Launch::Stdio {
        command: program.to_string(),
        args,
        args_pointer: format!("{ptr}/args"),
        env,
        cwd: outer.get("cwd").and_then(Value::as_str).map(str::to_string),
    }
}

/// `{name: value}` (environment variables, headers): strings and numbers kept, the rest noted
/// as not a string.
fn named(v: Option<&Value>, ptr: &str) -> Vec<Named> {
    let Some(m) = v.and_then(Value::as_object) else {
        return Vec::new();
    };
    m.iter()
        .take(MAX_ITEMS)
        .filter_map(|(k, x)| {
            let text = match x {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some(Named {
                name: k.clone(),
                pointer: format!("{ptr}/{}", token(k)),
                value: ConfigValue::new(&text),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::Launch;

    fn p(text: &str, name: &str, layout: Layout) -> ParsedFile {
        parse(text, Path::new(name), layout).expect("parses")
    }

    #[test]
    fn the_common_mcp_servers_shape_with_comments() {
        let f = p(
            r#"{ // Cursor
              "mcpServers": {
                "notes": {"command": "npx", "args": ["-y", "notes-mcp"], "env": {"NOTES_DIR": "/tmp"},},
                "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
              }
            }"#,
            "mcp.json",
            Layout::McpServers,
        );
        assert_eq!(f.servers.len(), 2);
        let notes = &f.servers[0];
        assert_eq!(notes.pointer, "/mcpServers/notes");
        match &notes.launch {
            Launch::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(command, "npx");
                assert_eq!(args, &["-y", "notes-mcp"]);
                assert_eq!(env[0].name, "NOTES_DIR");
                assert_eq!(env[0].pointer, "/mcpServers/notes/env/NOTES_DIR");
            }
            other => panic!("{other:?}"),
        }
        match &f.servers[1].launch {
            Launch::Remote { url, headers, .. } => {
                assert_eq!(url, "https://mcp.example.com/mcp");
                assert_eq!(headers[0].value.refs, vec!["TOKEN".to_string()]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn claude_code_reads_user_and_per_project_servers() {
        let f = p(
            r#"{"mcpServers": {"a": {"type": "stdio", "command": "a"}},
                "projects": {"/w/x": {"mcpServers": {"b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}},
                             "/w/y": {"history": []}}}"#,
            ".claude.json",
            Layout::ClaudeCodeUser,
        );
        let names: Vec<_> = f
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.pointer.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("a", "/mcpServers/a"),
                ("b", "/projects/~1w~1x/mcpServers/b")
            ]
        );
    }

    #[test]
    fn zed_old_and_new_command_forms() {
        let f = p(
            r#"{"context_servers": {
                "old": {"command": {"path": "/bin/old", "args": ["x"], "env": {"K": "v"}}},
                "new": {"source": "custom", "command": "/bin/new", "args": []},
                "web": {"url": "https://z.example/mcp"}}}"#,
            "settings.json",
            Layout::ZedSettings,
        );
        assert_eq!(f.servers.len(), 3, "{:?}", f.problems);
        match &f.servers[1].launch {
            Launch::Stdio { command, env, .. } => {
                assert_eq!(command, "/bin/old");
                assert_eq!(env[0].pointer, "/context_servers/old/command/env/K");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn continue_yaml_and_json_codex_toml_vscode_settings() {
        let y = p(
            "name: x\nmcpServers:\n  - name: sqlite\n    command: uvx\n    args: [mcp-server-sqlite]\n",
            "config.yaml",
            Layout::ContinueYaml,
        );
        assert_eq!(y.servers[0].name, "sqlite");
        let j = p(
            r#"{"experimental": {"modelContextProtocolServers": [{"transport": {"type": "stdio", "command": "uvx", "args": ["a"]}}]}}"#,
            "config.json",
            Layout::ContinueJson,
        );
        assert_eq!(j.servers[0].name, "server 1");
        assert_eq!(
            j.servers[0].pointer,
            "/experimental/modelContextProtocolServers/0"
        );
        let t = p(
            "[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--stdio\"]\n[mcp_servers.docs.env]\nA = \"b\"\n",
            "config.toml",
            Layout::CodexToml,
        );
        assert_eq!(t.servers[0].name, "docs");
        let v = p(
            r#"{"editor.fontSize": 12, "mcp": {"servers": {"gh": {"type": "http", "url": "https://api.example/mcp"}}}}"#,
            "settings.json",
            Layout::VscodeSettings,
        );
        assert_eq!(v.servers[0].name, "gh");
        let none = p(
            r#"{"editor.fontSize": 12}"#,
            "settings.json",
            Layout::VscodeSettings,
        );
        assert!(none.servers.is_empty() && none.problems.is_empty());
    }

    #[test]
    fn broken_files_say_where() {
        let e = parse(
            "{\n \"mcpServers\": {\n  \"a\": {\"command\": }\n}",
            Path::new("x.json"),
            Layout::McpServers,
        )
        .expect_err("broken");
        assert!(e.to_string().contains("line 3"), "{e}");
        let e = parse(
            r#"{"mcpServers": []}"#,
            Path::new("x.json"),
            Layout::McpServers,
        )
        .expect_err("wrong type");
        assert!(
            e.to_string().contains("/mcpServers is not an object"),
            "{e}"
        );
        let f = p(
            r#"{"mcpServers": {"a": {"args": []}, "b": 3}}"#,
            "x.json",
            Layout::McpServers,
        );
        assert!(f.servers.is_empty());
        assert_eq!(f.problems.len(), 2, "{:?}", f.problems);
    }

    #[test]
    fn a_given_file_is_recognised_by_its_keys() {
        for (text, name) in [
            (r#"{"mcpServers": {"a": {"command": "a"}}}"#, "x.json"),
            (r#"{"servers": {"a": {"command": "a"}}}"#, "x.json"),
            (r#"{"context_servers": {"a": {"command": "a"}}}"#, "x.json"),
            ("[mcp_servers.a]\ncommand = \"a\"\n", "x.toml"),
            ("mcpServers:\n  - name: a\n    command: a\n", "x.yaml"),
        ] {
            let f = p(text, name, Layout::Detect);
            assert_eq!(f.servers.len(), 1, "{text}");
        }
        assert!(parse("{}", Path::new("x.json"), Layout::Detect).is_err());
    }
}
