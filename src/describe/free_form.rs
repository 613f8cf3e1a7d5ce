//! A descriptor's free-form JSON that a compile may never look at (a tool's
//! `inputSchema`): the value, or the canonical text an earlier compile kept of it
//! ([`super::cache`]), parsed the first time it is looked at. A one-agent edit of a big
//! pod renders the tools of one agent service; parsing the schemas of every other tool
//! from the cache was most of what taking its descriptors from there cost.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::OnceLock;

/// Free-form JSON: the [`Value`], made from the kept text when first asked for. It hashes,
/// compares and serializes as the value it stands for, so a descriptor taken from the
/// cache is the one decoding gives.
#[derive(Default)]
pub struct FreeForm {
    value: OnceLock<Value>,
    /// The value's canonical text (`serde_json` output: keys sorted), until parsed.
    text: Option<Box<RawValue>>,
}

impl FreeForm {
    /// The value, which the caller takes (the text is not kept).
    pub fn take(&mut self) -> Value {
        self.value.take().unwrap_or_else(|| self.text.take().map(|t| parse(&t)).unwrap_or_default())
    }
}

/// The kept text's value. The text was checked to be JSON when it was read (as a
/// [`RawValue`]), and it was written from a value that parsed within the same nesting
/// limit, so this cannot fail; `Null` if it somehow did (never a panic).
fn parse(text: &RawValue) -> Value {
    serde_json::from_str(text.get()).unwrap_or_default()
}

impl From<Value> for FreeForm {
    fn from(value: Value) -> Self {
        FreeForm { value: OnceLock::from(value), text: None }
    }
}

impl std::ops::Deref for FreeForm {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value.get_or_init(|| self.text.as_deref().map(parse).unwrap_or_default())
    }
}

impl Clone for FreeForm {
    fn clone(&self) -> Self {
        match self.value.get() {
            Some(v) => FreeForm::from(v.clone()),
            None => FreeForm { value: OnceLock::new(), text: self.text.clone() },
        }
    }
}

impl std::fmt::Debug for FreeForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Value::fmt(self, f)
    }
}

impl std::hash::Hash for FreeForm {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Value::hash(self, state);
    }
}

impl PartialEq for FreeForm {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// As the value; the kept text as it is when it was never parsed (it is the value's own
/// serialization).
impl Serialize for FreeForm {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.value.get(), &self.text) {
            (None, Some(text)) => text.serialize(s),
            _ => Value::serialize(self, s),
        }
    }
}

/// Kept as text: parsed only when looked at.
impl<'de> Deserialize<'de> for FreeForm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(FreeForm { value: OnceLock::new(), text: Some(Box::<RawValue>::deserialize(d)?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_text_is_the_value_it_was_made_from_in_every_use() {
        let value = serde_json::json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "\u{e9}\"<"}}});
        let text = serde_json::to_string(&FreeForm::from(value.clone())).unwrap();
        let kept: FreeForm = serde_json::from_str(&text).unwrap();
        assert!(kept.value.get().is_none(), "not parsed when read");
        assert_eq!(serde_json::to_string(&kept).unwrap(), text, "serialized as kept, unparsed");
        assert_eq!(crate::digest::of_hash(&kept), crate::digest::of_hash(&FreeForm::from(value.clone())));
        assert_eq!(*kept, value);
        assert_eq!(kept.clone(), FreeForm::from(value.clone()));
        let mut taken: FreeForm = serde_json::from_str(&text).unwrap();
        assert_eq!(taken.take(), value);
        assert_eq!(*FreeForm::default(), Value::Null);
    }
}
