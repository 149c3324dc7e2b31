//! The document model: everything the model reads, each text with its JSON Pointer.
//!
//! The walk is bounded: schemas deeper than [`MAX_DEPTH`] and documents with more than
//! [`MAX_TEXTS`] texts end the walk there with a note (reported as N1), never a stack overflow.

use serde_json::Value;

pub const MAX_DEPTH: usize = 32;
pub const MAX_TEXTS: usize = 2_000_000;

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
    Instructions,
    /// Prompt and resource names, titles, descriptions, prompt argument texts.
    PromptOrResource,
    /// Server-card and agent-card names, descriptions, skill texts.
    CardText,
}

#[derive(Debug, Clone)]
pub struct Text<'a> {
    pub pointer: String,
    /// Index into [`Document::tools`] when the text belongs to a tool.
    pub tool: Option<usize>,
    pub field: Field,
    pub text: &'a str,
}

#[derive(Debug, Clone)]
pub struct Tool<'a> {
    pub pointer: String,
    pub value: &'a Value,
    pub name: Option<&'a str>,
}

impl Tool<'_> {
    /// The name to show: the tool's name, or its pointer when it has none.
    pub fn label(&self) -> String {
        self.name
            .map(str::to_string)
            .unwrap_or_else(|| self.pointer.clone())
    }
    pub fn title(&self) -> Option<&str> {
        self.value.get("title").and_then(Value::as_str).or_else(|| {
            self.value
                .pointer("/annotations/title")
                .and_then(Value::as_str)
        })
    }
}

/// A place the walk stopped early, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub pointer: String,
    pub why: String,
}

#[derive(Debug, Clone, Default)]
pub struct Document<'a> {
    pub tools: Vec<Tool<'a>>,
    pub texts: Vec<Text<'a>>,
    pub truncated: Vec<Truncation>,
    /// The `nextCursor` of a single tools/list page read offline: more pages exist unread.
    pub next_cursor: Option<&'a str>,
}

/// Escapes one JSON Pointer reference token (RFC 6901).
pub fn token(s: &str) -> String {
    if s.contains(['~', '/']) {
        s.replace('~', "~0").replace('/', "~1")
    } else {
        s.to_string()
    }
}

struct Walker<'a, 'd> {
    doc: &'d mut Document<'a>,
    full: bool,
}

impl<'a> Walker<'a, '_> {
    fn push(&mut self, pointer: String, tool: Option<usize>, field: Field, text: &'a str) {
        if self.doc.texts.len() >= MAX_TEXTS {
            if !self.full {
                self.full = true;
                self.doc.truncated.push(Truncation {
                    pointer,
                    why: format!("more than {MAX_TEXTS} texts: the rest was not walked"),
                });
            }
            return;
        }
        if !text.is_empty() {
            self.doc.texts.push(Text {
                pointer,
                tool,
                field,
                text,
            });
        }
    }

    fn string_at(
        &mut self,
        v: &'a Value,
        key: &str,
        base: &str,
        tool: Option<usize>,
        field: Field,
    ) {
        if let Some(s) = v.get(key).and_then(Value::as_str) {
            self.push(format!("{base}/{}", token(key)), tool, field, s);
        }
    }

    /// Every string inside a value (enum values, defaults, examples may be structured).
    fn values(&mut self, v: &'a Value, ptr: String, tool: Option<usize>, depth: usize) {
        if depth > MAX_DEPTH {
            self.deep(ptr);
            return;
        }
        match v {
            Value::String(s) => self.push(ptr, tool, Field::SchemaValue, s),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.values(item, format!("{ptr}/{i}"), tool, depth + 1);
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    self.values(item, format!("{ptr}/{}", token(k)), tool, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn deep(&mut self, pointer: String) {
        self.doc.truncated.push(Truncation {
            pointer,
            why: format!("nested deeper than {MAX_DEPTH} levels: not walked further"),
        });
    }

    /// A JSON Schema, recursively.
    fn schema(&mut self, v: &'a Value, ptr: &str, tool: Option<usize>, depth: usize) {
        if depth > MAX_DEPTH {
            self.deep(ptr.to_string());
            return;
        }
        let Some(map) = v.as_object() else { return };
        for key in ["title", "description", "$comment"] {
            self.string_at(v, key, ptr, tool, Field::SchemaText);
        }
        for key in ["enum", "const", "default", "examples", "example"] {
            if let Some(x) = map.get(key) {
                self.values(x, format!("{ptr}/{key}"), tool, depth + 1);
            }
        }
        for key in [
            "properties",
            "patternProperties",
            "$defs",
            "definitions",
            "dependentSchemas",
        ] {
            if let Some(Value::Object(props)) = map.get(key) {
                for (name, sub) in props {
                    let p = format!("{ptr}/{key}/{}", token(name));
                    if key == "properties" {
                        // The pointer of a property name is the property itself.
                        self.push(p.clone(), tool, Field::PropertyName, name);
                    }
                    self.schema(sub, &p, tool, depth + 1);
                }
            }
        }
        for key in [
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
        ] {
            match map.get(key) {
                Some(sub @ Value::Object(_)) => {
                    self.schema(sub, &format!("{ptr}/{key}"), tool, depth + 1)
                }
                Some(Value::Array(subs)) if key == "items" => {
                    for (i, sub) in subs.iter().enumerate() {
                        self.schema(sub, &format!("{ptr}/{key}/{i}"), tool, depth + 1);
                    }
                }
                _ => {}
            }
        }
        for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                for (i, sub) in subs.iter().enumerate() {
                    self.schema(sub, &format!("{ptr}/{key}/{i}"), tool, depth + 1);
                }
            }
        }
    }

    fn tool(&mut self, v: &'a Value, ptr: String) {
        let index = self.doc.tools.len();
        let name = v.get("name").and_then(Value::as_str);
        self.doc.tools.push(Tool {
            pointer: ptr.clone(),
            value: v,
            name,
        });
        let t = Some(index);
        self.string_at(v, "name", &ptr, t, Field::ToolName);
        self.string_at(v, "title", &ptr, t, Field::ToolTitle);
        self.string_at(v, "description", &ptr, t, Field::ToolDescription);
        if let Some(a) = v.get("annotations") {
            self.string_at(
                a,
                "title",
                &format!("{ptr}/annotations"),
                t,
                Field::ToolTitle,
            );
        }
        for key in ["inputSchema", "outputSchema"] {
            if let Some(s) = v.get(key) {
                self.schema(s, &format!("{ptr}/{key}"), t, 1);
            }
        }
    }

    fn prompt_or_resource(&mut self, v: &'a Value, ptr: &str) {
        for key in ["name", "title", "description", "uri", "uriTemplate"] {
            self.string_at(v, key, ptr, None, Field::PromptOrResource);
        }
        if let Some(Value::Array(args)) = v.get("arguments") {
            for (i, a) in args.iter().enumerate() {
                let p = format!("{ptr}/arguments/{i}");
                for key in ["name", "title", "description"] {
                    self.string_at(a, key, &p, None, Field::PromptOrResource);
                }
            }
        }
    }
}

impl<'a> Document<'a> {
    /// A tools container: an object with `tools` and optionally `prompts`, `resources`,
    /// `resourceTemplates`, `instructions` and `nextCursor` (a tools/list result, or an
    /// inventory dump).
    pub fn from_inventory(root: &'a Value) -> Document<'a> {
        let mut doc = Document::default();
        let mut w = Walker {
            doc: &mut doc,
            full: false,
        };
        if let Some(Value::Array(tools)) = root.get("tools") {
            for (i, t) in tools.iter().enumerate() {
                w.tool(t, format!("/tools/{i}"));
            }
        }
        w.string_at(root, "instructions", "", None, Field::Instructions);
        for key in ["prompts", "resources", "resourceTemplates"] {
            if let Some(Value::Array(items)) = root.get(key) {
                for (i, item) in items.iter().enumerate() {
                    w.prompt_or_resource(item, &format!("/{key}/{i}"));
                }
            }
        }
        doc.next_cursor = root.get("nextCursor").and_then(Value::as_str);
        doc
    }

    /// An MCP server card: its own texts, and the tools it lists (early drafts carry them).
    pub fn from_server_card(card: &'a Value) -> Document<'a> {
        let mut doc = Document::default();
        let mut w = Walker {
            doc: &mut doc,
            full: false,
        };
        for key in ["name", "title", "description", "instructions"] {
            w.string_at(card, key, "", None, Field::CardText);
        }
        if let Some(info) = card.get("serverInfo") {
            for key in ["name", "title"] {
                w.string_at(info, key, "/serverInfo", None, Field::CardText);
            }
        }
        if let Some(Value::Array(tools)) = card.get("tools") {
            for (i, t) in tools.iter().enumerate() {
                if t.is_object() {
                    w.tool(t, format!("/tools/{i}"));
                }
            }
        }
        for key in ["prompts", "resources"] {
            if let Some(Value::Array(items)) = card.get(key) {
                for (i, item) in items.iter().enumerate() {
                    if item.is_object() {
                        w.prompt_or_resource(item, &format!("/{key}/{i}"));
                    }
                }
            }
        }
        doc
    }

    /// An A2A agent card: name, description, and each skill's name, description, tags and
    /// examples (SPEC §3.1).
    pub fn from_agent_card(card: &'a Value) -> Document<'a> {
        let mut doc = Document::default();
        let mut w = Walker {
            doc: &mut doc,
            full: false,
        };
        for key in ["name", "description"] {
            w.string_at(card, key, "", None, Field::CardText);
        }
        if let Some(Value::Array(skills)) = card.get("skills") {
            for (i, s) in skills.iter().enumerate() {
                let p = format!("/skills/{i}");
                for key in ["name", "description"] {
                    w.string_at(s, key, &p, None, Field::CardText);
                }
                for key in ["tags", "examples"] {
                    if let Some(Value::Array(items)) = s.get(key) {
                        for (j, item) in items.iter().enumerate() {
                            if let Some(text) = item.as_str() {
                                w.push(format!("{p}/{key}/{j}"), None, Field::CardText, text);
                            }
                        }
                    }
                }
            }
        }
        doc
    }
}
