//! The house's floors (doc/architecture.md): every module of the library imports only its
//! own floor's earlier modules and the floors below. This reads every file under `src/` with
//! `syn` (its `use` trees, every `crate::`/`super::` path in code and in macro tokens, inline
//! modules), resolves each import to the top-level module it reaches, and holds it against
//! [`FLOORS`]. A failure names the file, the line and the import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The floors, ground first. A module may import itself, any module on a lower floor, and the
/// modules listed before it on its own floor. doc/architecture.md draws the same table.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "vocabulary",
        &["util", "exit", "finding", "catalogue", "model"],
    ),
    ("net", &["permit", "net"]),
    ("protocol", &["protocol"]),
    ("rules", &["rules"]),
    ("gate", &["gate"]),
    ("checks", &["judge", "baseline", "active", "checks"]),
    ("engine", &["offline", "engine", "discover"]),
    (
        "hosts",
        &[
            "report", "review", "config", "demo", "docs", "daemon", "cli",
        ],
    ),
];

/// One import of one file: the top-level module it reaches, where it is, and its text.
#[derive(Debug, Clone)]
struct Import {
    target: String,
    line: usize,
    text: String,
}

/// (floor, position on the floor) of a top-level module, or `None` when it is not in the table.
fn place(module: &str) -> Option<(usize, usize)> {
    FLOORS.iter().enumerate().find_map(|(floor, (_, modules))| {
        modules
            .iter()
            .position(|m| *m == module)
            .map(|pos| (floor, pos))
    })
}

fn allowed(from: &str, to: &str) -> bool {
    if from == to {
        return true;
    }
    match (place(from), place(to)) {
        (Some((ff, fp)), Some((tf, tp))) => tf < ff || (tf == ff && tp < fp),
        _ => false,
    }
}

/// Collects the imports of one file whose module path is `module` (`["rules", "text"]`).
struct Collector {
    /// The module path at the current point (the file's, plus inline modules entered).
    path: Vec<String>,
    imports: Vec<Import>,
    /// Calls of the gate's mints (`Authorised::mint`, `Admission::mint`), by line.
    mints: Vec<(usize, String)>,
}

impl Collector {
    /// Resolves a path's leading segments to the top-level module it names, if it leaves
    /// through `crate` or `super` (a plain path is local or an external crate).
    fn resolve(&self, segments: &[String]) -> Option<String> {
        let first = segments.first()?;
        let mut rest: &[String] = &segments[1..];
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "super" => {
                let mut p = self.path.clone();
                p.pop();
                while rest.first().is_some_and(|s| s == "super") {
                    p.pop();
                    rest = &rest[1..];
                }
                p
            }
            "self" => self.path.clone(),
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        base.into_iter().next()
    }

    fn record(&mut self, segments: &[String], line: usize, text: String) {
        if let Some(target) = self.resolve(segments) {
            self.imports.push(Import { target, line, text });
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                let text = prefix.join("::");
                self.record(&prefix.clone(), line, text);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                let text = prefix.join("::");
                self.record(&prefix.clone(), line, text);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => {
                let text = format!("{}::*", prefix.join("::"));
                self.record(&prefix.clone(), line, text);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }

    /// `crate :: a :: b` and `super :: …` sequences inside macro tokens (`format!`,
    /// `matches!`, `assert!` …), which syn leaves unparsed.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let line = id.span().start().line;
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < trees.len() + 1 {
                        let colons = matches!(
                            (trees.get(j), trees.get(j + 1)),
                            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                                if a.as_char() == ':' && b.as_char() == ':'
                        );
                        match (colons, trees.get(j + 2)) {
                            (true, Some(TokenTree::Ident(next))) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segments.len() > 1 {
                        let text = segments.join("::");
                        self.record(&segments, line, text);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.path.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.path.pop();
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let [.., ty, f] = segments.as_slice()
            && (ty == "Authorised" || ty == "Admission")
            && f == "mint"
        {
            let line = p
                .segments
                .first()
                .map(|s| s.ident.span().start().line)
                .unwrap_or(0);
            self.mints.push((line, segments.join("::")));
        }
        if p.leading_colon.is_none() && segments.len() > 1 {
            let line = p
                .segments
                .first()
                .map(|s| s.ident.span().start().line)
                .unwrap_or(0);
            let text = segments.join("::");
            self.record(&segments, line, text);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The imports of one source text, as the file `rel` (relative to `src/`) would have them.
fn imports_of(rel: &Path, text: &str) -> Result<Vec<Import>, syn::Error> {
    collect(rel, text).map(|c| c.imports)
}

fn collect(rel: &Path, text: &str) -> Result<Collector, syn::Error> {
    let file = syn::parse_file(text)?;
    let mut path: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod" || l == "lib") {
        path.pop();
    }
    // The check implementations are `#[path]` modules of `checks` (build.rs's registry):
    // `super` inside one is `checks`, whatever folder holds the file.
    if path.first().is_some_and(|p| p == "checks") && path.len() > 2 {
        path = vec!["checks".into(), path[1..].join("_")];
    }
    let mut c = Collector {
        path,
        imports: Vec::new(),
        mints: Vec::new(),
    };
    c.visit_file(&file);
    Ok(c)
}

fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            source_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every import of the crate that goes against the floors, as `file:line: from -> import`.
fn violations(src: &Path) -> (usize, Vec<String>) {
    let mut files = Vec::new();
    source_files(src, &mut files);
    let mut seen = 0;
    let mut out = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).expect("under src");
        let Some(from) = top_module(rel) else {
            continue;
        };
        let text = std::fs::read_to_string(f).expect("readable source");
        let imports = imports_of(rel, &text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", f.display()));
        if place(&from).is_none() {
            out.push(format!(
                "src/{}: module `{from}` is on no floor of tests/layering.rs",
                rel.display()
            ));
        }
        for i in imports {
            seen += 1;
            if !allowed(&from, &i.target) {
                out.push(format!(
                    "src/{}:{}: `{from}` imports `{}` ({})",
                    rel.display(),
                    i.line,
                    i.text,
                    describe(&from, &i.target)
                ));
            }
        }
    }
    (seen, out)
}

fn describe(from: &str, to: &str) -> String {
    match (place(from), place(to)) {
        (Some((ff, _)), Some((tf, _))) if tf == ff => {
            format!("`{to}` comes after `{from}` on floor {}", FLOORS[ff].0)
        }
        (Some((ff, _)), Some((tf, _))) => {
            format!(
                "floor {} reaches up to floor {}",
                FLOORS[ff].0, FLOORS[tf].0
            )
        }
        _ => format!("`{to}` is on no floor"),
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_import_goes_down_the_floors() {
    let (seen, bad) = violations(&root().join("src"));
    assert!(seen > 500, "the imports were read ({seen})");
    assert!(
        bad.is_empty(),
        "{} imports go against the floors of doc/architecture.md:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The permit's tokens sit on the network floor so the client can see them, but only the
/// gate may make one: every call of their `mint` is in `src/gate/` (or the permit's own tests).
#[test]
fn only_the_gate_mints_the_permit_tokens() {
    let src = root().join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut seen = Vec::new();
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let text = std::fs::read_to_string(f).expect("readable source");
        let c = collect(rel, &text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (line, call) in c.mints {
            let place = format!("src/{}:{line}: {call}", rel.display());
            if rel.starts_with("gate") || rel == Path::new("permit.rs") {
                seen.push(place);
            } else {
                bad.push(place);
            }
        }
    }
    assert!(
        seen.iter()
            .any(|s| s.starts_with("src/gate/") && s.ends_with("Authorised::mint"))
            && seen.iter().any(|s| s.ends_with("Admission::mint")),
        "the gate's mints were found: {seen:?}"
    );
    assert!(
        bad.is_empty(),
        "minted outside the gate:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_top_level_module_is_on_a_floor() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("lib.rs");
    let file = syn::parse_file(&lib).expect("lib.rs parses");
    let mut declared = Vec::new();
    for item in file.items {
        if let syn::Item::Mod(m) = item {
            declared.push(m.ident.to_string());
        }
    }
    assert!(declared.len() > 10, "{declared:?}");
    let missing: Vec<_> = declared.iter().filter(|m| place(m).is_none()).collect();
    assert!(missing.is_empty(), "modules on no floor: {missing:?}");
    let mut tabled: Vec<&str> = FLOORS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
    tabled.retain(|m| !declared.iter().any(|d| d == m));
    assert!(
        tabled.is_empty(),
        "floors name modules lib.rs lacks: {tabled:?}"
    );
}

#[test]
fn the_architecture_page_shows_the_same_floors() {
    let page = std::fs::read_to_string(root().join("doc/architecture.md"))
        .expect("doc/architecture.md exists");
    // Rows `| 0 | vocabulary | `util`, `exit`, … |` of its floor table.
    let mut rows: BTreeMap<usize, (String, Vec<String>)> = BTreeMap::new();
    for line in page.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if cells.len() < 3 {
            continue;
        }
        let Ok(n) = cells[0].parse::<usize>() else {
            continue;
        };
        let modules = cells[2]
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .filter(|m| !m.is_empty())
            .collect();
        rows.insert(n, (cells[1].to_string(), modules));
    }
    let expected: BTreeMap<usize, (String, Vec<String>)> = FLOORS
        .iter()
        .enumerate()
        .map(|(n, (name, modules))| {
            (
                n,
                (
                    name.to_string(),
                    modules.iter().map(|m| m.to_string()).collect(),
                ),
            )
        })
        .collect();
    assert_eq!(rows, expected, "doc/architecture.md's floor table");
}

#[test]
fn an_upward_import_is_caught() {
    let text = "use crate::finding::Severity;\n\
                use crate::{protocol::Session, engine::Scanner};\n\
                fn f() { let _ = crate::daemon::run; }\n\
                fn g() { let _ = format!(\"{}\", crate::cli::NAME); }\n\
                mod inner { use super::super::super::report::render; }\n";
    let imports = imports_of(Path::new("net/client.rs"), text).expect("parses");
    let bad: Vec<_> = imports
        .iter()
        .filter(|i| !allowed("net", &i.target))
        .map(|i| (i.line, i.target.as_str(), i.text.as_str()))
        .collect();
    assert_eq!(
        bad,
        vec![
            (2, "protocol", "crate::protocol::Session"),
            (2, "engine", "crate::engine::Scanner"),
            (3, "daemon", "crate::daemon::run"),
            (4, "cli", "crate::cli::NAME"),
            (5, "report", "super::super::super::report::render"),
        ]
    );
    // Down and sideways-earlier are allowed; a later module on one's own floor is not.
    assert!(allowed("engine", "finding"));
    assert!(allowed("checks", "active"));
    assert!(!allowed("active", "checks"));
    assert!(allowed("net", "net"));
}
