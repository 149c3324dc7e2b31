//! Where the major MCP clients keep their server lists, per platform and scope. The host says
//! which platform and which folders (the engine reads no environment); a test can lay out a
//! temporary home for any platform.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The platform whose layout is searched.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case", ascii_case_insensitive)]
pub enum Platform {
    Linux,
    Macos,
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub fn current() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::Macos
        } else {
            Platform::Linux
        }
    }
}

/// The folders a host found (`$HOME`, `%APPDATA%`, `$XDG_CONFIG_HOME`, the working folder).
#[derive(Debug, Clone)]
pub struct Places {
    pub platform: Platform,
    pub home: Option<PathBuf>,
    /// Windows' roaming application data (`%APPDATA%`); defaults to `home\AppData\Roaming`.
    pub appdata: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` on Linux; defaults to `home/.config`.
    pub xdg_config: Option<PathBuf>,
    /// The project whose project-level files are read (the working folder).
    pub project: Option<PathBuf>,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Places {
    /// The folders an environment names (`lookup` reads the host's): `$HOME` (`%USERPROFILE%`
    /// first on Windows), `%APPDATA%`, `$XDG_CONFIG_HOME`; empty values count as unset.
    pub fn from_env(
        platform: Platform,
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
        project: Option<PathBuf>,
    ) -> Places {
        let var = |n: &str| lookup(n).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = match platform {
            Platform::Windows => var("USERPROFILE").or_else(|| var("HOME")),
            _ => var("HOME"),
        };
        Places {
            platform,
            home,
            appdata: var("APPDATA"),
            xdg_config: var("XDG_CONFIG_HOME"),
            project,
        }
    }
}

/// An MCP client whose configuration mcpprobe reads.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case", ascii_case_insensitive)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
    Zed,
    Continue,
    Codex,
    Gemini,
    Cline,
    /// A file given with `--client-config`.
    Other,
}

impl Client {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whether a file configures every project of the user or one project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Scope {
    User,
    Project,
    /// A file the user named.
    Given,
}

/// Where in a file its servers are, and in which syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `{"mcpServers": {name: entry}}` (Claude Desktop, Cursor, Windsurf, Gemini, Cline,
    /// Claude Code's `.mcp.json`), JSON with comments tolerated.
    McpServers,
    /// `~/.claude.json`: `mcpServers` (user scope) and `projects.<folder>.mcpServers` (local scope).
    ClaudeCodeUser,
    /// VS Code's `mcp.json`: `{"servers": {name: entry}}`.
    VscodeServers,
    /// VS Code's `settings.json`: `{"mcp": {"servers": {…}}}`.
    VscodeSettings,
    /// Zed's `settings.json`: `{"context_servers": {name: entry}}`.
    ZedSettings,
    /// Continue's `config.json`: `experimental.modelContextProtocolServers: [{transport}]`.
    ContinueJson,
    /// Continue's `config.yaml` and `.continue/mcpServers/*.yaml`: `mcpServers: [{name, …}]`.
    ContinueYaml,
    /// Codex's `config.toml`: `[mcp_servers.<name>]`.
    CodexToml,
    /// Anything given with `--client-config`: any of the above, recognised by its keys.
    Detect,
}

/// A file that may hold servers.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub client: Client,
    pub scope: Scope,
    pub path: PathBuf,
    pub layout: Layout,
}

fn c(client: Client, scope: Scope, path: PathBuf, layout: Layout) -> Candidate {
    Candidate {
        client,
        scope,
        path,
        layout,
    }
}

/// Every documented location for `places`, user files first, then the project's; files that do
/// not exist are included (the caller skips them). Continue's and VS Code's per-folder files
/// are listed by [`expand`].
pub fn candidates(places: &Places) -> Vec<Candidate> {
    use Client::*;
    use Layout::*;
    use Scope::*;
    let mut out = Vec::new();
    if let Some(home) = &places.home {
        // The folder applications keep their settings in, per platform.
        let app: PathBuf = match places.platform {
            Platform::Windows => places
                .appdata
                .clone()
                .unwrap_or_else(|| home.join("AppData").join("Roaming")),
            Platform::Macos => home.join("Library").join("Application Support"),
            Platform::Linux => places
                .xdg_config
                .clone()
                .unwrap_or_else(|| home.join(".config")),
        };
        out.push(c(
            ClaudeDesktop,
            User,
            app.join("Claude").join("claude_desktop_config.json"),
            McpServers,
        ));
        out.push(c(
            ClaudeCode,
            User,
            home.join(".claude.json"),
            ClaudeCodeUser,
        ));
        out.push(c(
            Cursor,
            User,
            home.join(".cursor").join("mcp.json"),
            McpServers,
        ));
        let code = app.join("Code").join("User");
        out.push(c(Vscode, User, code.join("mcp.json"), VscodeServers));
        out.push(c(Vscode, User, code.join("settings.json"), VscodeSettings));
        out.push(c(
            Windsurf,
            User,
            home.join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            McpServers,
        ));
        let zed = match places.platform {
            Platform::Windows => app.join("Zed").join("settings.json"),
            // Zed keeps ~/.config/zed on macOS too.
            _ => places
                .xdg_config
                .clone()
                .unwrap_or_else(|| home.join(".config"))
                .join("zed")
                .join("settings.json"),
        };
        out.push(c(Zed, User, zed, ZedSettings));
        let cont = home.join(".continue");
        out.push(c(Continue, User, cont.join("config.json"), ContinueJson));
        out.push(c(Continue, User, cont.join("config.yaml"), ContinueYaml));
        out.push(c(
            Codex,
            User,
            home.join(".codex").join("config.toml"),
            CodexToml,
        ));
        out.push(c(
            Gemini,
            User,
            home.join(".gemini").join("settings.json"),
            McpServers,
        ));
        out.push(c(
            Cline,
            User,
            code.join("globalStorage")
                .join("saoudrizwan.claude-dev")
                .join("settings")
                .join("cline_mcp_settings.json"),
            McpServers,
        ));
    }
    if let Some(p) = &places.project {
        out.push(c(ClaudeCode, Project, p.join(".mcp.json"), McpServers));
        out.push(c(
            Cursor,
            Project,
            p.join(".cursor").join("mcp.json"),
            McpServers,
        ));
        out.push(c(
            Vscode,
            Project,
            p.join(".vscode").join("mcp.json"),
            VscodeServers,
        ));
        out.push(c(
            Windsurf,
            Project,
            p.join(".windsurf").join("mcp.json"),
            McpServers,
        ));
        out.push(c(
            Zed,
            Project,
            p.join(".zed").join("settings.json"),
            ZedSettings,
        ));
        out.push(c(
            Gemini,
            Project,
            p.join(".gemini").join("settings.json"),
            McpServers,
        ));
        out.push(c(
            Codex,
            Project,
            p.join(".codex").join("config.toml"),
            CodexToml,
        ));
    }
    out
}

/// The files of Continue's `mcpServers` folders (user and project), each a YAML or JSON block,
/// sorted; at most `max` of them.
pub fn continue_blocks(places: &Places, max: usize) -> Vec<Candidate> {
    let mut out = Vec::new();
    let dirs = [
        places
            .home
            .as_ref()
            .map(|h| (Scope::User, h.join(".continue").join("mcpServers"))),
        places
            .project
            .as_ref()
            .map(|p| (Scope::Project, p.join(".continue").join("mcpServers"))),
    ];
    for (scope, dir) in dirs.into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| layout_of_block(p).is_some())
            .collect();
        files.sort();
        for path in files.into_iter().take(max) {
            if let Some(layout) = layout_of_block(&path) {
                out.push(c(Client::Continue, scope, path, layout));
            }
        }
    }
    out
}

fn layout_of_block(p: &Path) -> Option<Layout> {
    match p.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => Some(Layout::ContinueYaml),
        Some("json") => Some(Layout::Detect),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(platform: Platform) -> Places {
        Places {
            platform,
            home: Some(PathBuf::from("/h")),
            appdata: None,
            xdg_config: None,
            project: Some(PathBuf::from("/p")),
        }
    }

    fn has(list: &[Candidate], client: Client, path: &str) -> bool {
        list.iter()
            .any(|c| c.client == client && c.path == Path::new(path))
    }

    #[test]
    fn each_platform_has_its_own_claude_desktop_and_vscode_folders() {
        let l = candidates(&places(Platform::Linux));
        assert!(has(
            &l,
            Client::ClaudeDesktop,
            "/h/.config/Claude/claude_desktop_config.json"
        ));
        assert!(has(
            &l,
            Client::Vscode,
            "/h/.config/Code/User/settings.json"
        ));
        let m = candidates(&places(Platform::Macos));
        assert!(has(
            &m,
            Client::ClaudeDesktop,
            "/h/Library/Application Support/Claude/claude_desktop_config.json"
        ));
        assert!(has(&m, Client::Zed, "/h/.config/zed/settings.json"));
        let mut w = places(Platform::Windows);
        w.appdata = Some(PathBuf::from("/h/AppData/Roaming"));
        let w = candidates(&w);
        assert!(has(
            &w,
            Client::ClaudeDesktop,
            "/h/AppData/Roaming/Claude/claude_desktop_config.json"
        ));
        assert!(has(&w, Client::Zed, "/h/AppData/Roaming/Zed/settings.json"));
        assert!(has(
            &w,
            Client::Vscode,
            "/h/AppData/Roaming/Code/User/mcp.json"
        ));
    }

    #[test]
    fn project_files_are_listed_when_a_project_is_given() {
        let l = candidates(&places(Platform::Linux));
        for (client, path) in [
            (Client::ClaudeCode, "/p/.mcp.json"),
            (Client::Cursor, "/p/.cursor/mcp.json"),
            (Client::Vscode, "/p/.vscode/mcp.json"),
        ] {
            assert!(has(&l, client, path), "{path}");
        }
        let mut none = places(Platform::Linux);
        none.project = None;
        assert!(!candidates(&none).iter().any(|c| c.scope == Scope::Project));
    }
}
