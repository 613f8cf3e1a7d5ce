//! Static reading of a Clawfile/Dockerfile (no build, no daemon): its `LABEL`s, enough
//! to find `claw.describe` in a build context as Clawdapus does when the image is
//! absent, and the Clawfile directive `CLAW_TYPE` that names the agent's runner.

use std::collections::BTreeMap;

/// What clawc reads from a Dockerfile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub labels: BTreeMap<String, String>,
    /// The last `CLAW_TYPE <runner>` directive's value.
    pub claw_type: Option<String>,
}

/// Labels set by `LABEL` instructions, later ones winning. Handles `k=v` pairs (quoted or
/// not, several per line), the legacy `LABEL k v` form, and `\` line continuations.
/// `CLAW_TYPE` (any case, as Dockerfile keywords) is read as Clawdapus' Clawfile parser
/// reads it: the rest of the line.
pub(crate) fn parse(text: &str) -> Parsed {
    let mut out = BTreeMap::new();
    let mut claw_type = None;
    for instr in instructions(text) {
        let Some((kw, rest)) = instr.split_once(char::is_whitespace) else { continue };
        if kw.eq_ignore_ascii_case("CLAW_TYPE") {
            claw_type = Some(unquote(rest)).filter(|t| !t.is_empty());
            continue;
        }
        if !kw.eq_ignore_ascii_case("LABEL") {
            continue;
        }
        let words = split_words(rest.trim());
        if words.first().is_some_and(|w| !w.contains('=')) {
            // Legacy form: `LABEL key value with spaces`.
            let (k, v) = rest.trim().split_once(char::is_whitespace).unwrap_or((rest.trim(), ""));
            out.insert(unquote(k), unquote(v.trim()));
            continue;
        }
        for w in words {
            if let Some((k, v)) = w.split_once('=') {
                out.insert(unquote(k), unquote(v));
            }
        }
    }
    Parsed { labels: out, claw_type }
}

/// Logical instructions: comments dropped, continuation lines joined.
fn instructions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(t);
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
            }
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

/// Whitespace-separated words, where quotes group (`a="x y"` is one word).
fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (_, '\\') => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (_, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            let inner = &s[1..s.len() - 1];
            return if q == '"' { inner.replace("\\\"", "\"").replace("\\\\", "\\") } else { inner.to_string() };
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_forms() {
        let text = "FROM scratch\n# LABEL claw.describe=/nope\nLABEL a=1 \"b\"=\"two words\" \\\n  claw.describe=/x.json\nLABEL legacy some value\nlabel c='q'\n";
        let l = parse(text).labels;
        assert_eq!(l["claw.describe"], "/x.json");
        assert_eq!(l["b"], "two words");
        assert_eq!(l["legacy"], "some value");
        assert_eq!(l["c"], "q");
        assert_eq!(l["a"], "1");
    }

    #[test]
    fn claw_type_directive() {
        let p = parse("FROM openclaw:latest\n\nCLAW_TYPE openclaw\nAGENT AGENTS.md\n");
        assert_eq!(p.claw_type.as_deref(), Some("openclaw"));
        assert_eq!(parse("FROM x\nclaw_type  hermes \n# CLAW_TYPE nope\n").claw_type.as_deref(), Some("hermes"));
        assert_eq!(parse("FROM x\nLABEL claw.type=nanobot\n").claw_type, None);
    }
}
