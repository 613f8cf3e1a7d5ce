//! Finds the source span of a value inside a JSON text, given its path.
//!
//! serde_json keeps no positions, so descriptor diagnostics locate values by walking the
//! raw text along the path. The text has already parsed, so the walker may assume valid
//! JSON; on anything unexpected it returns what it has (the enclosing value).

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Byte range of the value at `path`, or of the deepest ancestor that could be found.
pub fn locate(text: &str, path: &[Seg]) -> (usize, usize) {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    for seg in path {
        let found = match (seg, b.get(pos)) {
            (Seg::Key(k), Some(b'{')) => find_key(text, pos, k),
            (Seg::Index(i), Some(b'[')) => find_index(b, pos, *i),
            _ => None,
        };
        match found {
            Some(p) => pos = p,
            None => break,
        }
    }
    (pos, value_end(b, pos))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// End of the value starting at `i` (iterative, so depth is no concern).
fn value_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = string_end(b, j);
                if depth == 0 {
                    return j;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return j;
                }
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            b',' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return j,
            _ => {}
        }
        j += 1;
    }
    j
}

fn find_key(text: &str, obj: usize, key: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, obj + 1);
    // Later duplicates win in serde_json, so keep the last match.
    let mut found = None;
    while i < b.len() && b[i] == b'"' {
        let kend = string_end(b, i);
        let k: Option<String> = serde_json::from_str(&text[i..kend]).ok();
        let colon = skip_ws(b, kend);
        let vstart = skip_ws(b, colon + 1);
        if k.as_deref() == Some(key) {
            found = Some(vstart);
        }
        let vend = value_end(b, vstart);
        i = skip_ws(b, vend);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        } else {
            break;
        }
    }
    found
}

fn find_index(b: &[u8], arr: usize, index: usize) -> Option<usize> {
    let mut i = skip_ws(b, arr + 1);
    for n in 0.. {
        if i >= b.len() || b[i] == b']' {
            return None;
        }
        if n == index {
            return Some(i);
        }
        i = skip_ws(b, value_end(b, i));
        if b.get(i) != Some(&b',') {
            return None;
        }
        i = skip_ws(b, i + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_values() {
        let t = r#"{"a": [1, {"b\"x": "v,}"}, [2]], "c": true}"#;
        let (s, e) = locate(t, &[Seg::Key("a".into()), Seg::Index(1), Seg::Key("b\"x".into())]);
        assert_eq!(&t[s..e], "\"v,}\"");
        let (s, e) = locate(t, &[Seg::Key("a".into()), Seg::Index(2)]);
        assert_eq!(&t[s..e], "[2]");
        let (s, e) = locate(t, &[Seg::Key("c".into())]);
        assert_eq!(&t[s..e], "true");
        let (s, e) = locate(t, &[Seg::Key("a".into()), Seg::Index(9)]);
        assert_eq!(&t[s..e], r#"[1, {"b\"x": "v,}"}, [2]]"#);
    }
}
