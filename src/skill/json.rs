//! `tools.json` read as JSON that keeps the order of object keys and every duplicate key.
//!
//! `serde_json::Value` sorts keys, but the Skill Tools `parameters` object is ordered: the
//! `required` list of the MCP `inputSchema` is the non-optional parameters in the order
//! they are declared. Depth is bounded by `serde_json`'s recursion limit (128), size by
//! the 8 MiB input limit.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON value with objects as ordered entry lists.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn parse(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The first value under `key` of an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The first key an object gives twice (JSON parsers disagree on which value wins:
    /// `serde_json` and JavaScript take the last, this type's [`Json::get`] the first).
    pub(crate) fn duplicate_key(&self) -> Option<&str> {
        let Json::Object(entries) = self else { return None };
        let mut seen = std::collections::HashSet::new();
        entries.iter().map(|(k, _)| k.as_str()).find(|k| !seen.insert(*k))
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// What kind of value this is, in the words messages use.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// As a `serde_json::Value` (keys sorted; the last of duplicate keys wins).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(entries) => Value::Object(entries.iter().map(|(k, v)| (k.clone(), v.to_value())).collect()),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v).map(Json::Number).ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_depth_is_bounded() {
        let j = Json::parse(r#"{"b": 1, "a": [true, null, "x", 1.5], "b": 2}"#).unwrap();
        let Json::Object(entries) = &j else { panic!() };
        assert_eq!(entries.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["b", "a", "b"]);
        assert_eq!(j.to_value(), serde_json::json!({"a": [true, null, "x", 1.5], "b": 2}));
        assert_eq!(j.duplicate_key(), Some("b"));
        assert_eq!(Json::parse(r#"{"a": 1}"#).unwrap().duplicate_key(), None);
        let deep = "[".repeat(100_000);
        assert!(Json::parse(&deep).is_err());
    }
}
