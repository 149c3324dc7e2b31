//! A JSON tree for the rules that borrows its strings from the bytes it was parsed from.
//!
//! `mcpprobe check` of a 20 MB tool list spent most of its time and memory building a
//! `serde_json::Value` (a `String` per string and per key, a `BTreeMap` per object). [`Json`]
//! is parsed by the same serde_json parser (same validation, same recursion limit, same
//! errors) but keeps every string without an escape as a slice of the input, and an object as
//! one sorted vector. A live scan's inventory (a `Value`) is borrowed into the same tree, so the
//! rules have one shape to read.
//!
//! Objects behave as `Value`'s map does: members in key order (byte order), a repeated key
//! keeps its last value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Json<'a> {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// Members up to which [`Object::get`] scans instead of searching.
const SMALL_OBJECT: usize = 12;

/// A JSON object: members sorted by key, keys unique.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Object<'a> {
    /// An object of these members, in any order; of a repeated key the last one counts.
    pub fn from_members(mut members: Vec<(Cow<'a, str>, Json<'a>)>) -> Object<'a> {
        if !members.is_sorted_by(|a, b| a.0 < b.0) {
            // Stable: of equal keys the one read last stays last, and wins below.
            members.sort_by(|a, b| a.0.cmp(&b.0));
            members.dedup_by(|later, kept| {
                if later.0 == kept.0 {
                    std::mem::swap(&mut later.1, &mut kept.1);
                    true
                } else {
                    false
                }
            });
        }
        Object { members }
    }

    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        // Most objects of a tool list have a handful of members: comparing lengths first
        // skips almost every byte comparison. Beyond that, the sorted order.
        if self.members.len() <= SMALL_OBJECT {
            return self
                .members
                .iter()
                .find(|(k, _)| {
                    // Keys of one length are common ("description", "inputSchema",
                    // "annotations"): the first byte tells most apart without a call.
                    k.len() == key.len()
                        && k.as_bytes().first() == key.as_bytes().first()
                        && k.as_ref() == key
                })
                .map(|(_, v)| v);
        }
        self.members
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .and_then(|i| self.members.get(i))
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Takes a member out.
    pub fn remove(&mut self, key: &str) -> Option<Json<'a>> {
        let i = self
            .members
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()?;
        Some(self.members.remove(i).1)
    }

    /// The members in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> + Clone {
        self.members.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(k, _)| k.as_ref())
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

impl<'b, 'a> IntoIterator for &'b Object<'a> {
    type Item = (&'b str, &'b Json<'a>);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'b, (Cow<'a, str>, Json<'a>)>,
        fn(&'b (Cow<'a, str>, Json<'a>)) -> (&'b str, &'b Json<'a>),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.members.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

impl<'a> Json<'a> {
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(m) => m.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Json::Array(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Json::String(_))
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, Json::Bool(_))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// The value at a JSON Pointer (RFC 6901), as `Value::pointer` reads it.
    pub fn pointer(&self, pointer: &str) -> Option<&Json<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut at = self;
        for token in rest.split('/') {
            let token: Cow<'_, str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            at = match at {
                Json::Object(m) => m.get(&token)?,
                Json::Array(a) => {
                    if (token.len() > 1 && token.starts_with('0')) || token.starts_with('+') {
                        return None;
                    }
                    a.get(token.parse::<usize>().ok()?)?
                }
                _ => return None,
            };
        }
        Some(at)
    }

    /// How many positions (array items and object members) the tree has, and how many strings
    /// and keys: bounds on what a walk of it can record.
    pub fn census(&self) -> (usize, usize) {
        fn walk(v: &Json<'_>, n: &mut (usize, usize)) {
            match v {
                Json::String(_) => n.1 += 1,
                Json::Array(items) => {
                    n.0 += items.len();
                    items.iter().for_each(|x| walk(x, n));
                }
                Json::Object(m) => {
                    n.0 += m.len();
                    n.1 += m.len();
                    m.members.iter().for_each(|(_, x)| walk(x, n));
                }
                _ => {}
            }
        }
        let mut n = (1, 0);
        walk(self, &mut n);
        n
    }

    /// The JSON type's name, as error messages say it.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// A tree borrowing a `Value`'s strings (a live scan's inventory).
    pub fn borrow(v: &'a Value) -> Json<'a> {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(Cow::Borrowed(s)),
            Value::Array(items) => Json::Array(items.iter().map(Json::borrow).collect()),
            // A `Value`'s map is already in key order, its keys unique.
            Value::Object(m) => Json::Object(Object {
                members: m
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::borrow(v)))
                    .collect(),
            }),
        }
    }

    /// A tree that owns what it takes from a `Value`.
    pub fn from_value(v: Value) -> Json<'static> {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(b),
            Value::Number(n) => Json::Number(n),
            Value::String(s) => Json::String(Cow::Owned(s)),
            Value::Array(items) => Json::Array(items.into_iter().map(Json::from_value).collect()),
            Value::Object(m) => Json::Object(Object::from_members(
                m.into_iter()
                    .map(|(k, v)| (Cow::Owned(k), Json::from_value(v)))
                    .collect(),
            )),
        }
    }

    /// The same tree as a `Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// The same tree as a `Value`, its owned strings moved, not copied.
    pub fn into_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Number(n) => Value::Number(n),
            Json::String(s) => Value::String(s.into_owned()),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(m) => Value::Object(
                m.members
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), v.into_value()))
                    .collect(),
            ),
        }
    }

    /// Parses JSON text, borrowing every string without escapes from it.
    pub fn parse(text: &'a [u8]) -> serde_json::Result<Json<'a>> {
        // What `serde_json::from_slice` does: one value, then only whitespace.
        let mut de = serde_json::Deserializer::from_slice(text);
        let value = build(&mut de)?;
        de.end()?;
        Ok(value)
    }
}

/// Compact JSON text, as `Value`'s `Display` writes it.
impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_value(), f)
    }
}

/// Builds a tree with two stacks shared by every level: an array's items and an object's
/// members are pushed there while they are read, then moved into a vector of exactly their
/// number (no growth slack left in millions of small vectors).
struct Builder<'s, 'de> {
    items: &'s mut Vec<Json<'de>>,
    members: &'s mut Vec<(Cow<'de, str>, Json<'de>)>,
}

impl<'de> DeserializeSeed<'de> for Builder<'_, 'de> {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Builder<'_, 'de> {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        // As `Value` does: a float JSON cannot hold is null.
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        // On an error the whole parse fails and the stacks are dropped.
        let start = self.items.len();
        while let Some(item) = seq.next_element_seed(Builder {
            items: &mut *self.items,
            members: &mut *self.members,
        })? {
            self.items.push(item);
        }
        Ok(Json::Array(self.items.drain(start..).collect()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let start = self.members.len();
        while let Some(key) = map.next_key_seed(Key)? {
            let value = map.next_value_seed(Builder {
                items: &mut *self.items,
                members: &mut *self.members,
            })?;
            self.members.push((key, value));
        }
        Ok(Json::Object(Object::from_members(
            self.members.drain(start..).collect(),
        )))
    }
}

/// Parses one value with fresh stacks.
fn build<'de, D: Deserializer<'de>>(d: D) -> Result<Json<'de>, D::Error> {
    let (mut items, mut members) = (Vec::new(), Vec::new());
    Builder {
        items: &mut items,
        members: &mut members,
    }
    .deserialize(d)
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json<'de>, D::Error> {
        build(d)
    }
}

/// An object key, borrowed from the input when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Cow<'de, str>, E> {
        Err(de::Error::invalid_type(de::Unexpected::Bytes(v), &self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_as_value(text: &str) {
        let v: Value = serde_json::from_str(text).expect("valid");
        let j = Json::parse(text.as_bytes()).expect("valid");
        assert_eq!(j.to_value(), v, "{text}");
        assert_eq!(Json::borrow(&v), j, "{text}");
        assert_eq!(Json::from_value(v.clone()), j, "{text}");
        assert_eq!(j.to_string(), v.to_string(), "{text}");
    }

    #[test]
    fn reads_as_value_does() {
        same_as_value(r#"{"b":1,"a":[true,null,"x\u00e9\n"],"a":{"z":1.5,"y":-3,"\u0041":"k"}}"#);
        same_as_value(
            r#"[1e400000000, 1e300, -0, 0.1, 18446744073709551615, -9223372036854775808]"#
                .replace("1e400000000, ", "")
                .as_str(),
        );
        same_as_value(r#""plain""#);
        same_as_value(r#"{"k":"v","k":"w","c":{}}"#);
    }

    #[test]
    fn refuses_what_value_refuses() {
        for bad in [
            "[".repeat(100_000),
            "{\"a\":\"\\ud800\"}".to_string(),
            "[1,]".to_string(),
            "1e400".to_string(),
            "[] x".to_string(),
        ] {
            let v = serde_json::from_str::<Value>(&bad).map_err(|e| e.to_string());
            let j = Json::parse(bad.as_bytes()).map_err(|e| e.to_string());
            assert!(v.is_err(), "{bad:.20}");
            assert_eq!(j.err(), v.err(), "{bad:.20}");
        }
        let invalid = b"{\"a\":\"\xff\"}";
        assert_eq!(
            Json::parse(invalid).err().map(|e| e.to_string()),
            serde_json::from_slice::<Value>(invalid)
                .err()
                .map(|e| e.to_string())
        );
    }

    #[test]
    fn borrows_plain_strings() {
        let text = br#"{"key":"plain","esc\u0041":"a\nb"}"#;
        let j = Json::parse(text).expect("valid");
        let m = j.as_object().expect("object");
        assert!(matches!(m.get("key"), Some(Json::String(Cow::Borrowed(_)))));
        assert!(matches!(m.get("escA"), Some(Json::String(Cow::Owned(_)))));
        assert_eq!(j.pointer("/escA").and_then(Json::as_str), Some("a\nb"));
    }

    #[test]
    fn pointers_read_as_value_reads_them() {
        let text = r#"{"a":[{"b/c":1,"d~e":[2]}],"":3}"#;
        let v: Value = serde_json::from_str(text).expect("valid");
        let j = Json::parse(text.as_bytes()).expect("valid");
        for p in [
            "",
            "/a",
            "/a/0",
            "/a/00",
            "/a/+0",
            "/a/0/b~1c",
            "/a/0/d~0e/0",
            "/",
            "/x",
            "a",
            "/a/1",
            "/a/-",
        ] {
            assert_eq!(
                j.pointer(p).map(Json::to_value),
                v.pointer(p).cloned(),
                "{p}"
            );
        }
    }
}
