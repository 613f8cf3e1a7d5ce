//! Descriptors decoded by an earlier compile in the same process (`compile --watch`),
//! kept by their text, so a recompile after an edit of the pod decodes only the
//! descriptors that changed: decoding (parsing, the checks Clawdapus applies, the JSON
//! Schema check of every `inputSchema`) is the largest part of a compile's front.
//!
//! Decoding is a pure function of the file's id in the source map, its name, whether it
//! is sensitive and its text, and all four are the key, so what is kept is exactly what
//! decoding would return, diagnostics and their locations included. What the last
//! compile did not use is dropped when the next begins: at most two compiles' worth is
//! held, however long the watch runs.

use super::SharedDescriptor;
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, SourceFile};
use foldhash::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// What decoding one text gave.
type Outcome = (Option<Arc<SharedDescriptor>>, Vec<Diagnostic>);

#[derive(PartialEq, Eq, Hash)]
struct Key {
    file: FileId,
    name: String,
    sensitive: bool,
    text: Arc<str>,
}

#[derive(Default)]
struct Generations {
    /// Used by the compile under way.
    current: HashMap<Key, Outcome>,
    /// Used by the one before (taken into `current` when used again).
    previous: HashMap<Key, Outcome>,
}

/// Descriptors decoded before, by their text: none kept unless made with
/// [`Decoded::kept`]. Clones share what is kept.
#[derive(Clone, Default)]
pub struct Decoded(Option<Arc<Mutex<Generations>>>);

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.as_ref().map(|g| {
            let g = g.lock().unwrap_or_else(PoisonError::into_inner);
            g.current.len() + g.previous.len()
        });
        f.debug_tuple("Decoded").field(&held).finish()
    }
}

impl Decoded {
    /// One that keeps what each compile decodes for the next.
    pub fn kept() -> Decoded {
        Decoded(Some(Arc::default()))
    }

    /// Whether it keeps what a compile decodes (a watch's).
    pub(crate) fn keeps(&self) -> bool {
        self.0.is_some()
    }

    /// A compile begins: what the last one did not use is dropped.
    pub(crate) fn begin(&self) {
        if let Some(g) = &self.0 {
            let mut g = g.lock().unwrap_or_else(PoisonError::into_inner);
            g.previous = std::mem::take(&mut g.current);
        }
    }

    /// What decoding `src` (file `file`) gives: kept from before, or `decode()`'s, then
    /// kept.
    pub(crate) fn get_or(&self, file: FileId, src: &SourceFile, decode: impl FnOnce() -> Outcome) -> Outcome {
        let Some(g) = &self.0 else { return decode() };
        let key = Key { file, name: src.name.clone(), sensitive: src.sensitive, text: Arc::clone(&src.text) };
        {
            let mut g = g.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(found) = g.current.get(&key) {
                return found.clone();
            }
            if let Some((key, found)) = g.previous.remove_entry(&key) {
                g.current.insert(key, found.clone());
                return found;
            }
        }
        // Decoded outside the lock: the other threads decode theirs meanwhile.
        let outcome = decode();
        g.lock().unwrap_or_else(PoisonError::into_inner).current.insert(key, outcome.clone());
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    #[test]
    fn a_text_is_decoded_once_while_it_is_used_and_forgotten_once_it_is_not() {
        let mut sources = SourceMap::default();
        let a = sources.add("a.json", r#"{"version":2,"description":"a","tools":[]}"#);
        let b = sources.add("b.json", "not json");
        // Another id for the same text is another key: its diagnostics point elsewhere.
        let c = sources.add("a.json", sources.get(a).text.to_string());
        let kept = Decoded::kept();
        let calls = std::cell::Cell::new(0);
        let decode = |file: FileId| {
            calls.set(calls.get() + 1);
            let (d, ds) = crate::describe::decode(file, sources.get(file));
            (d.map(Arc::from), ds)
        };
        let first = kept.get_or(a, sources.get(a), || decode(a));
        let bad = kept.get_or(b, sources.get(b), || decode(b));
        assert!(first.0.is_some() && bad.0.is_none() && !bad.1.is_empty());
        kept.begin();
        assert_eq!(kept.get_or(a, sources.get(a), || decode(a)), first, "the same outcome");
        assert_eq!(calls.get(), 2, "kept from the compile before");
        kept.begin();
        kept.get_or(a, sources.get(a), || decode(a));
        kept.get_or(b, sources.get(b), || decode(b));
        assert_eq!(calls.get(), 3, "b, unused by the compile before, was dropped");
        kept.get_or(c, sources.get(c), || decode(c));
        assert_eq!(calls.get(), 4);
        // The default keeps nothing.
        let none = Decoded::default();
        none.get_or(a, sources.get(a), || decode(a));
        none.get_or(a, sources.get(a), || decode(a));
        assert_eq!(calls.get(), 6);
    }
}
