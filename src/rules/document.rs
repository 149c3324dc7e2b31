//! The document model: everything the model reads, each text with its JSON Pointer.
//!
//! The walk is bounded: schemas deeper than [`MAX_DEPTH`] and documents with more than
//! [`MAX_TEXTS`] texts end the walk there with a note (reported as N1), never a stack overflow.

use super::json::Json;

pub const MAX_DEPTH: usize = 32;
pub const MAX_TEXTS: usize = 2_000_000;

/// The JSON Schema type names; any other `type` string is text.
pub(super) const JSON_TYPES: &[&str] = &[
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// The keys of a tool the walk reads on purpose (or that carry no text); any other key is
/// walked as an unknown key.
const TOOL_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "execution",
];

/// JSON Schema keywords (2020-12, draft-07 and the OpenAPI ones servers emit): a key outside
/// this list is walked as an unknown key, with its strings.
const SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "title",
    "description",
    "$comment",
    "enum",
    "const",
    "default",
    "examples",
    "example",
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "anyOf",
    "oneOf",
    "allOf",
    "prefixItems",
    "required",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$recursiveRef",
    "$recursiveAnchor",
    "dependentRequired",
    "dependencies",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "nullable",
    "discriminator",
    "xml",
    "externalDocs",
    "x-mcp-header",
];

/// [`SCHEMA_KEYWORDS`] as a set: the walk asks for every key it does not read on purpose (every
/// `"type": "string"`), and a linear search of 70 keywords was a visible part of the walk. A
/// fixed set: nothing a server sends is inserted, so the fast non-keyed hash cannot be driven
/// into collisions.
static SCHEMA_KEYWORD_SET: std::sync::LazyLock<rustc_hash::FxHashSet<&'static str>> =
    std::sync::LazyLock::new(|| SCHEMA_KEYWORDS.iter().copied().collect());

/// What a text is, which decides the rules that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    ToolName,
    ToolTitle,
    ToolDescription,
    /// A schema's description, title or `$comment`.
    SchemaText,
    /// An enum or const value, a default or an example.
    SchemaValue,
    PropertyName,
    /// A key the model reads that is not a JSON Schema keyword nor a known tool field (an
    /// `x-…` extension, a stray `note`), a `required` entry, or a name under
    /// `patternProperties`, `$defs`, `definitions` or `dependentSchemas`: read like a property
    /// name.
    Key,
    Instructions,
    /// Prompt and resource names, titles, descriptions, prompt argument texts.
    PromptOrResource,
    /// Server-card and agent-card names, descriptions, skill texts.
    CardText,
}

/// A node of the path tree: texts refer to a node, and its pointer is built only when a
/// finding needs it (a 20 MB list has hundreds of thousands of texts and few findings). One
/// step of a JSON Pointer: an object key, or (when `index` is not [`KEY`]) an array index.
#[derive(Debug, Clone, Copy)]
struct Node<'a> {
    parent: u32,
    index: u32,
    key: &'a str,
}

/// [`Node::index`] of a key step.
const KEY: u32 = u32::MAX;

/// Where a text is: a node of [`Document`]'s path tree. [`Document::pointer`] spells it.
pub type Path = u32;

const ROOT: Path = 0;

#[derive(Debug, Clone)]
pub struct Text<'a> {
    pub path: Path,
    /// Index into [`Document::tools`] when the text belongs to a tool.
    pub tool: Option<usize>,
    pub field: Field,
    pub text: &'a str,
}

#[derive(Debug, Clone)]
pub struct Tool<'a> {
    pub pointer: String,
    pub value: &'a Json<'a>,
    pub name: Option<&'a str>,
    profile: std::sync::OnceLock<super::capabilities::Profile>,
    description_scan: std::sync::OnceLock<super::text::Scan>,
}

impl<'a> Tool<'a> {
    /// The tool's description, with the byte scan of it that META-02 and META-03 share.
    pub fn description(&self) -> Option<(&'a str, super::text::Scan)> {
        let d = self.value.get("description").and_then(Json::as_str)?;
        Some((
            d,
            *self
                .description_scan
                .get_or_init(|| super::text::Scan::of(d)),
        ))
    }

    /// What the tool can do (capability classes), computed once and shared by the rules.
    pub fn profile(&self) -> &super::capabilities::Profile {
        self.profile
            .get_or_init(|| super::capabilities::profile(self))
    }

    /// The name to show: the tool's name, or its pointer when it has none.
    pub fn label(&self) -> String {
        self.name
            .map(str::to_string)
            .unwrap_or_else(|| self.pointer.clone())
    }

    pub fn title(&self) -> Option<&str> {
        self.value.get("title").and_then(Json::as_str).or_else(|| {
            self.value
                .pointer("/annotations/title")
                .and_then(Json::as_str)
        })
    }
}

/// A place the walk stopped early, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub pointer: String,
    pub why: String,
}

#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub tools: Vec<Tool<'a>>,
    pub texts: Vec<Text<'a>>,
    pub truncated: Vec<Truncation>,
    /// The `nextCursor` of a single tools/list page read offline: more pages exist unread.
    pub next_cursor: Option<&'a str>,
    /// Set by a host to stop the rules early (a time cap, a cancelled scan): the rules look
    /// at it between texts and tools, and [`Document::stopped`] tells afterwards that what
    /// they found is incomplete.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    nodes: Vec<Node<'a>>,
}

impl Default for Document<'_> {
    fn default() -> Self {
        Document {
            tools: Vec::new(),
            texts: Vec::new(),
            truncated: Vec::new(),
            next_cursor: None,
            stop: None,
            nodes: vec![Node {
                parent: ROOT,
                index: KEY,
                key: "",
            }],
        }
    }
}

/// Escapes one JSON Pointer reference token (RFC 6901).
pub fn token(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['~', '/']) {
        s.replace('~', "~0").replace('/', "~1").into()
    } else {
        s.into()
    }
}

impl Document<'_> {
    /// Whether a host asked the rules to stop (see [`Document::stop`]).
    pub fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The JSON Pointer of a path, e.g. `/tools/3/inputSchema/properties/note/description`.
    pub fn pointer(&self, path: Path) -> String {
        let mut segs = Vec::new();
        let mut at = path;
        while at != ROOT {
            let Some(node) = self.nodes.get(at as usize) else {
                break;
            };
            segs.push(node);
            at = node.parent;
        }
        let mut out = String::new();
        for node in segs.iter().rev() {
            out.push('/');
            match node.index {
                KEY => out.push_str(&token(node.key)),
                i => out.push_str(&i.to_string()),
            }
        }
        out
    }
}

struct Walker<'a, 'd> {
    doc: &'d mut Document<'a>,
    full: bool,
}

impl<'a> Walker<'a, '_> {
    fn child(&mut self, parent: Path, index: u32, key: &'a str) -> Path {
        let id = self.doc.nodes.len() as Path;
        self.doc.nodes.push(Node { parent, index, key });
        id
    }

    fn key(&mut self, parent: Path, key: &'a str) -> Path {
        self.child(parent, KEY, key)
    }

    fn index(&mut self, parent: Path, i: usize) -> Path {
        // An array of 2^32 - 1 items does not fit in the largest input read (256 MB).
        self.child(parent, u32::try_from(i).unwrap_or(KEY - 1).min(KEY - 1), "")
    }

    fn push(&mut self, path: Path, tool: Option<usize>, field: Field, text: &'a str) {
        if self.doc.texts.len() >= MAX_TEXTS {
            if !self.full {
                self.full = true;
                let pointer = self.doc.pointer(path);
                self.doc.truncated.push(Truncation {
                    pointer,
                    why: format!("more than {MAX_TEXTS} texts: the rest was not walked"),
                });
            }
            return;
        }
        if !text.is_empty() {
            self.doc.texts.push(Text {
                path,
                tool,
                field,
                text,
            });
        }
    }

    /// The string at `v[key]`, if there is one.
    fn string_at(
        &mut self,
        v: &'a Json<'a>,
        key: &'static str,
        at: Path,
        tool: Option<usize>,
        field: Field,
    ) {
        if let Some(s) = v.get(key).and_then(Json::as_str) {
            let p = self.key(at, key);
            self.push(p, tool, field, s);
        }
    }

    /// Every string inside a value (enum values, defaults, examples may be structured).
    fn values(&mut self, v: &'a Json<'a>, at: Path, tool: Option<usize>, depth: usize) {
        if depth > MAX_DEPTH {
            self.deep(at);
            return;
        }
        match v {
            Json::String(s) => self.push(at, tool, Field::SchemaValue, s),
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = self.index(at, i);
                    self.values(item, p, tool, depth + 1);
                }
            }
            Json::Object(map) => {
                for (k, item) in map {
                    let p = self.key(at, k);
                    self.values(item, p, tool, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn deep(&mut self, at: Path) {
        let pointer = self.doc.pointer(at);
        self.doc.truncated.push(Truncation {
            pointer,
            why: format!("nested deeper than {MAX_DEPTH} levels: not walked further"),
        });
    }

    /// A JSON Schema, recursively: one pass over its keys.
    fn schema(&mut self, v: &'a Json<'a>, at: Path, tool: Option<usize>, depth: usize) {
        if depth > MAX_DEPTH {
            self.deep(at);
            return;
        }
        let Some(map) = v.as_object() else { return };
        for (key, x) in map {
            match (key, x) {
                ("title" | "description" | "$comment", Json::String(s)) => {
                    let p = self.key(at, key);
                    self.push(p, tool, Field::SchemaText, s);
                }
                ("enum" | "const" | "default" | "examples" | "example", x) => {
                    let p = self.key(at, key);
                    self.values(x, p, tool, depth + 1);
                }
                (
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas",
                    Json::Object(props),
                ) => {
                    let group = self.key(at, key);
                    for (name, sub) in props {
                        // The pointer of a name is the schema it names. A property name is a
                        // parameter; a pattern, a definition's name or a dependent schema's
                        // key is read like one (the model sees it all the same).
                        let p = self.key(group, name);
                        let field = if key == "properties" {
                            Field::PropertyName
                        } else {
                            Field::Key
                        };
                        self.push(p, tool, field, name);
                        self.schema(sub, p, tool, depth + 1);
                    }
                }
                (
                    "items"
                    | "additionalProperties"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "contains"
                    | "propertyNames"
                    | "unevaluatedProperties"
                    | "unevaluatedItems"
                    | "additionalItems",
                    sub @ Json::Object(_),
                ) => {
                    let p = self.key(at, key);
                    self.schema(sub, p, tool, depth + 1);
                }
                ("items" | "anyOf" | "oneOf" | "allOf" | "prefixItems", Json::Array(subs)) => {
                    let group = self.key(at, key);
                    for (i, sub) in subs.iter().enumerate() {
                        let p = self.index(group, i);
                        self.schema(sub, p, tool, depth + 1);
                    }
                }
                // A `format` or `pattern` written as a sentence (four words or more, as no
                // format name or ordinary pattern is) is text the model reads.
                ("format" | "pattern" | "contentMediaType", Json::String(s))
                    if s.split_whitespace().nth(3).is_some() =>
                {
                    let p = self.key(at, key);
                    self.push(p, tool, Field::SchemaText, s);
                }
                // A `type` that is not a JSON Schema type is text the model reads.
                ("type", Json::String(s)) if !JSON_TYPES.contains(&s.as_ref()) => {
                    let p = self.key(at, key);
                    self.push(p, tool, Field::SchemaText, s);
                }
                ("type", Json::Array(items)) => {
                    let group = self.key(at, key);
                    for (i, item) in items.iter().enumerate() {
                        if let Some(s) = item.as_str()
                            && !JSON_TYPES.contains(&s)
                        {
                            let p = self.index(group, i);
                            self.push(p, tool, Field::SchemaText, s);
                        }
                    }
                }
                ("required", Json::Array(items)) => {
                    let group = self.key(at, key);
                    for (i, item) in items.iter().enumerate() {
                        if let Some(s) = item.as_str() {
                            let p = self.index(group, i);
                            self.push(p, tool, Field::Key, s);
                        }
                    }
                }
                (k, x) if !SCHEMA_KEYWORD_SET.contains(k) => self.unknown(k, x, at, tool, depth),
                _ => {}
            }
        }
    }

    /// A key no schema or tool vocabulary knows, and every string under it.
    fn unknown(
        &mut self,
        key: &'a str,
        x: &'a Json<'a>,
        at: Path,
        tool: Option<usize>,
        depth: usize,
    ) {
        let p = self.key(at, key);
        self.push(p, tool, Field::Key, key);
        self.values(x, p, tool, depth + 1);
    }

    fn tool(&mut self, v: &'a Json<'a>, at: Path) {
        let index = self.doc.tools.len();
        let name = v.get("name").and_then(Json::as_str);
        let pointer = self.doc.pointer(at);
        self.doc.tools.push(Tool {
            pointer,
            value: v,
            name,
            profile: std::sync::OnceLock::new(),
            description_scan: std::sync::OnceLock::new(),
        });
        let t = Some(index);
        self.string_at(v, "name", at, t, Field::ToolName);
        self.string_at(v, "title", at, t, Field::ToolTitle);
        self.string_at(v, "description", at, t, Field::ToolDescription);
        if let Some(a) = v.get("annotations") {
            let p = self.key(at, "annotations");
            self.string_at(a, "title", p, t, Field::ToolTitle);
            // Every other string in the annotations (hints are booleans; anything else is
            // text a client may show the model).
            if let Some(map) = a.as_object() {
                for (k, x) in map {
                    if k != "title" && !x.is_boolean() {
                        self.unknown(k, x, p, t, 1);
                    }
                }
            }
        }
        for key in ["inputSchema", "outputSchema"] {
            if let Some(s) = v.get(key) {
                let p = self.key(at, key);
                self.schema(s, p, t, 1);
            }
        }
        // Extra top-level keys of the tool (`_meta`, vendor fields): their names and strings.
        if let Some(map) = v.as_object() {
            for (k, x) in map {
                if !TOOL_KEYS.contains(&k) {
                    self.unknown(k, x, at, t, 1);
                }
            }
        }
    }

    fn prompt_or_resource(&mut self, v: &'a Json<'a>, at: Path) {
        for key in ["name", "title", "description", "uri", "uriTemplate"] {
            self.string_at(v, key, at, None, Field::PromptOrResource);
        }
        if let Some(Json::Array(args)) = v.get("arguments") {
            let group = self.key(at, "arguments");
            for (i, a) in args.iter().enumerate() {
                let p = self.index(group, i);
                for key in ["name", "title", "description"] {
                    self.string_at(a, key, p, None, Field::PromptOrResource);
                }
            }
        }
    }

    /// `root[key]` as an array: each item's path.
    fn items(&mut self, root: &'a Json<'a>, key: &'static str) -> Vec<(Path, &'a Json<'a>)> {
        let Some(Json::Array(items)) = root.get(key) else {
            return Vec::new();
        };
        let group = self.key(ROOT, key);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| (self.index(group, i), item))
            .collect()
    }
}

impl<'a> Document<'a> {
    /// An empty document with room for what a walk of `root` can find, so that its tables are
    /// allocated once instead of grown by copying (on a 20 MB list the copies left behind cost
    /// more memory than the tables themselves). Room that is not used is never touched.
    fn sized_for(root: &Json<'_>) -> Document<'a> {
        let (positions, strings) = root.census();
        let mut doc = Document::default();
        doc.nodes.reserve(positions.min(MAX_TEXTS * 4));
        doc.texts.reserve(strings.min(MAX_TEXTS));
        doc.tools.reserve(
            root.get("tools")
                .and_then(Json::as_array)
                .map_or(0, <[_]>::len),
        );
        doc
    }

    /// A tools container: an object with `tools` and optionally `prompts`, `resources`,
    /// `resourceTemplates`, `instructions` and `nextCursor` (a tools/list result, or an
    /// inventory dump).
    pub fn from_inventory(root: &'a Json<'a>) -> Document<'a> {
        let mut doc = Document::sized_for(root);
        let mut w = Walker {
            doc: &mut doc,
            full: false,
        };
        for (p, t) in w.items(root, "tools") {
            w.tool(t, p);
        }
        w.string_at(root, "instructions", ROOT, None, Field::Instructions);
        for key in ["prompts", "resources", "resourceTemplates"] {
            for (p, item) in w.items(root, key) {
                w.prompt_or_resource(item, p);
            }
        }
        doc.next_cursor = root.get("nextCursor").and_then(Json::as_str);
        doc
    }

    /// An MCP server card: its own texts, and the tools it lists (early drafts carry them).
    pub fn from_server_card(card: &'a Json<'a>) -> Document<'a> {
        let mut doc = Document::sized_for(card);
        let mut w = Walker {
            doc: &mut doc,
            full: false,
        };
        for key in ["name", "title", "description", "instructions"] {
            w.string_at(card, key, ROOT, None, Field::CardText);
        }
        if let Some(info) = card.get("serverInfo") {
            let p = w.key(ROOT, "serverInfo");
            for key in ["name", "title"] {
                w.string_at(info, key, p, None, Field::CardText);
            }
        }
        for (p, t) in w.items(card, "tools") {
            if t.is_object() {
                w.tool(t, p);
            }
        }
        for key in ["prompts", "resources"] {
            for (p, item) in w.items(card, key) {
                if item.is_object() {
                    w.prompt_or_resource(item, p);
                }
            }
        }
        doc
    }

    /// An A2A agent card: name, description, and each skill's name, description, tags and
    /// examples (SPEC §3.1).
    pub fn from_agent_card(card: &'a Json<'a>) -> Document<'a> {
        let mut doc = Document::sized_for(card);
        let mut w = Walker {
            doc: &mut doc,
            full: false,
        };
        for key in ["name", "description"] {
            w.string_at(card, key, ROOT, None, Field::CardText);
        }
        for (p, skill) in w.items(card, "skills") {
            for key in ["name", "description"] {
                w.string_at(skill, key, p, None, Field::CardText);
            }
            for key in ["tags", "examples"] {
                if let Some(Json::Array(items)) = skill.get(key) {
                    let group = w.key(p, key);
                    for (j, item) in items.iter().enumerate() {
                        if let Some(text) = item.as_str() {
                            let q = w.index(group, j);
                            w.push(q, None, Field::CardText, text);
                        }
                    }
                }
            }
        }
        doc
    }
}
