//! The variables `${...}` placeholders and auth tokens resolve against: the pod's `.env`
//! file overlaid by the process environment, with Clawdapus' `.env` quoting rules.

use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceFile};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) use crate::diag::catalogue::env as codes;

/// Variables by name. Built once at the edge; the core only reads it. Every lookup is
/// remembered (names only) so the lock can tell which variables an output depends on;
/// lookups made while resolving a token are remembered apart, as secrets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Env {
    vars: BTreeMap<String, String>,
    used: RefCell<BTreeSet<String>>,
    secret: RefCell<BTreeSet<String>>,
    in_secret: Cell<bool>,
    /// Lookups are not remembered (fields clawc only checks, whose values shape nothing).
    unrecorded: Cell<bool>,
}

impl Env {
    pub(crate) fn from_pairs<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Self { vars: pairs.into_iter().collect(), ..Self::default() }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        if self.unrecorded.get() {
            return self.vars.get(name).map(String::as_str);
        }
        let set = if self.in_secret.get() { &self.secret } else { &self.used };
        set.borrow_mut().insert(name.to_string());
        self.vars.get(name).map(String::as_str)
    }

    /// Runs `f` with every lookup recorded as a secret one.
    pub(crate) fn secret_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = self.in_secret.replace(true);
        let out = f();
        self.in_secret.set(before);
        out
    }

    /// Runs `f` with no lookup remembered: for placeholders clawc checks (so a pod
    /// `claw up` would refuse is refused) in fields whose values never reach the output.
    pub(crate) fn unrecorded_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = self.unrecorded.replace(true);
        let out = f();
        self.unrecorded.set(before);
        out
    }

    /// Records the lookups `other` (a copy of this one) recorded.
    pub(crate) fn absorb(&self, other: &Env) {
        self.used.borrow_mut().extend(other.used.borrow().iter().cloned());
        self.secret.borrow_mut().extend(other.secret.borrow().iter().cloned());
    }

    /// Names looked up outside token resolution (their values shape the output).
    pub(crate) fn used(&self) -> BTreeSet<String> {
        let secret = self.secret.borrow();
        self.used.borrow().iter().filter(|n| !secret.contains(*n)).cloned().collect()
    }

    /// Names looked up to resolve tokens (never hashed, never written).
    pub(crate) fn secret_names(&self) -> BTreeSet<String> {
        self.secret.borrow().clone()
    }

    /// A digest over `name=value` of `names` (unset ones marked), for the lock.
    pub(crate) fn digest(&self, names: &BTreeSet<String>) -> String {
        let mut text = String::new();
        for n in names {
            match self.vars.get(n) {
                Some(v) => text.push_str(&format!("{n}={v}\0")),
                None => text.push_str(&format!("{n}\u{1}\0")),
            }
        }
        crate::digest::sha256_hex(text.as_bytes())
    }

    /// `self` overlaid by `top` (`top` wins).
    pub(crate) fn overlay(mut self, top: Env) -> Self {
        // Recorded lookups are not carried over: overlaying happens before any lookup.
        self.vars.extend(top.vars);
        self
    }

    pub(crate) fn set_default(&mut self, name: &str, value: &str) {
        self.vars.entry(name.to_string()).or_insert_with(|| value.to_string());
    }
}

/// Parses a `.env` file: `KEY=VALUE` lines, an optional `export ` prefix, `#` comment
/// lines, single quotes literal, double quotes with `\n \r \t \\ \" \$`, and an unquoted
/// ` #` starting a comment (a `#` with no space before it stays in the value).
pub(crate) fn parse_dotenv(file: FileId, src: &SourceFile) -> (Env, Vec<Diagnostic>) {
    let mut vars = BTreeMap::new();
    let mut diags = Vec::new();
    let mut offset = 0;
    // A UTF-8 byte order mark is not part of the first key (editors on Windows add one).
    let text = src.text.strip_prefix('\u{feff}').unwrap_or(&src.text);
    offset += src.text.len() - text.len();
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']).trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, value)) = line.split_once('=') else {
            let loc = Loc { file, span: src.span(start, start + raw.trim_end().len()) };
            diags.push(
                Diagnostic::error(codes::BAD_LINE, "this `.env` line is not `KEY=VALUE`")
                    .at(loc)
                    .label("expected `KEY=VALUE`")
                    .help("write `NAME=value`, or start the line with `#` to make it a comment"),
            );
            continue;
        };
        let key = key.trim();
        if !is_var_name(key) {
            let loc = Loc { file, span: src.span(start, start + raw.trim_end().len()) };
            diags.push(
                Diagnostic::error(codes::BAD_LINE, format!("`{key}` is not a valid variable name"))
                    .at(loc)
                    .help("names match [A-Za-z_][A-Za-z0-9_]*"),
            );
            continue;
        }
        vars.insert(key.to_string(), dotenv_value(value.trim()));
    }
    (Env { vars, ..Env::default() }, crate::diag::cap(diags))
}

fn dotenv_value(v: &str) -> String {
    if let Some(inner) = v.strip_prefix('\'').and_then(|r| r.find('\'').map(|end| &r[..end])) {
        return inner.to_string();
    }
    if let Some(rest) = v.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return out,
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some(c @ ('\\' | '"' | '$')) => out.push(c),
                    Some(c) => {
                        out.push('\\');
                        out.push(c);
                    }
                    None => out.push('\\'),
                },
                c => out.push(c),
            }
        }
        return out;
    }
    match v.find(" #").or_else(|| v.find("\t#")) {
        Some(i) => v[..i].trim_end().to_string(),
        None => v.to_string(),
    }
}

pub(crate) fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    #[test]
    fn dotenv_quoting_rules() {
        let text = "# c\nexport A=1\nB='x #y $Z'\nC=\"a\\nb\\\"c\\$d\"\nD=v # comment\nE=v#kept\nF=\n";
        let mut m = SourceMap::default();
        let id = m.add(".env", text);
        let (env, diags) = parse_dotenv(id, m.get(id));
        assert!(diags.is_empty());
        assert_eq!(env.get("A"), Some("1"));
        assert_eq!(env.get("B"), Some("x #y $Z"));
        assert_eq!(env.get("C"), Some("a\nb\"c$d"));
        assert_eq!(env.get("D"), Some("v"));
        assert_eq!(env.get("E"), Some("v#kept"));
        assert_eq!(env.get("F"), Some(""));
    }

    #[test]
    fn bad_dotenv_line_points_at_it() {
        let mut m = SourceMap::default();
        let id = m.add(".env", "A=1\nnot a var\n");
        let (_, diags) = parse_dotenv(id, m.get(id));
        assert_eq!(diags[0].code, codes::BAD_LINE);
        assert_eq!(diags[0].loc.unwrap().span.line, 2);
    }
}
