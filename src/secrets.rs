//! Secret values and where they must never appear.
//!
//! The leak check: before anything is written, every artifact (in its redacted form) is
//! searched for every resolved secret value *in every encoding clawc can write it in*
//! (raw, JSON, Go's HTML-escaped JSON, YAML and TOML strings): a token holding `&` is
//! written as `\u0026` by the Go-compatible JSON encoder, and a raw-bytes search would
//! miss it. A hit means a token would land somewhere no token belongs (CLAWDAPUS.md, the
//! report, a path or description), so nothing is written. Diagnostics name the variable
//! and the file, never the value.
//!
//! [`mask`] replaces every encoding of every value, whatever its length, with `${VAR}`:
//! diffs and anything else shown to a user go through it.

use crate::artifact::Artifact;
use crate::diag::Diagnostic;
use crate::grant::{Plan, Token};
use crate::sourcemap::{FileId, Loc, SourceFile, SourceMap};
use aho_corasick::{AhoCorasick, MatchKind};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) use crate::diag::catalogue::secrets as codes;

/// Values shorter than this would match ordinary text, so they are not scanned for.
pub(crate) const MIN_SCANNED_LEN: usize = 8;

/// Resolved secret values → the variable that holds each.
pub(crate) fn collect(plans: &BTreeMap<String, Plan>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let tokens = plans.values().flat_map(|p| {
        p.tools
            .iter()
            .filter_map(|t| t.auth.as_deref())
            .chain(p.feeds.iter().filter_map(|f| f.auth.as_ref()))
            .chain(p.memory.iter().filter_map(|m| m.auth.as_ref()))
    });
    for Token { env, value } in tokens {
        if let Some(v) = value {
            out.entry(v.clone()).or_insert_with(|| env.clone());
        }
    }
    out
}

/// Every form `value` takes in a file clawc writes: raw (Markdown, YAML plain and TOML
/// literal strings), a JSON string body (serde and Go's HTML-escaping encoder, lower- and
/// upper-case `\u` escapes), a YAML single-quoted body and a TOML basic string body.
pub(crate) fn encodings(value: &str) -> BTreeSet<String> {
    let mut forms = BTreeSet::new();
    if value.is_empty() {
        return forms;
    }
    forms.insert(value.to_string());
    let json = serde_json::to_string(value).unwrap_or_default();
    let json = json.trim_matches('"').to_string();
    let go = go_html_escape(&json);
    forms.insert(upper_hex_escapes(&json));
    forms.insert(upper_hex_escapes(&go));
    forms.insert(json);
    forms.insert(go);
    forms.insert(value.replace('\'', "''"));
    forms.insert(toml_basic(value));
    forms
}

/// Go's `json.Marshal` additionally escapes `<`, `>`, `&`, U+2028 and U+2029.
fn go_html_escape(json_body: &str) -> String {
    json_body
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn upper_hex_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\\u") {
        out.push_str(&rest[..i + 2]);
        let hex: String = rest[i + 2..].chars().take(4).collect();
        out.push_str(&hex.to_ascii_uppercase());
        rest = &rest[i + 2 + hex.len()..];
    }
    out.push_str(rest);
    out
}

fn toml_basic(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The encodings of each value → its variable, longest first (so the longest match wins).
fn patterns(secrets: &BTreeMap<String, String>, min_len: usize) -> Vec<(String, String)> {
    let mut pats: Vec<(String, String)> = secrets
        .iter()
        .filter(|(v, _)| v.trim().len() >= min_len)
        .flat_map(|(v, var)| encodings(v).into_iter().map(move |e| (e, var.clone())))
        .collect();
    pats.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
    pats.dedup_by(|a, b| a.0 == b.0);
    pats
}

fn automaton(pats: &[(String, String)]) -> Option<AhoCorasick> {
    if pats.is_empty() {
        return None;
    }
    AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(pats.iter().map(|(p, _)| p.as_bytes())).ok()
}

/// Scans `redacted` (artifacts rendered with `${VAR}` in place of every token). A leak is
/// pointed at the input its value is found in (see [`origins`]); `pod` is the pod file.
/// A rendering shared by several agents is scanned once, under its first path in path
/// order. Only the leaks: the scan's warnings come from [`scan_files`] once per compile,
/// not once per batch of files.
pub(crate) fn scan(
    redacted: &[(String, Artifact)],
    secrets: &BTreeMap<String, String>,
    inputs: &SourceMap,
    pod: FileId,
) -> Vec<Diagnostic> {
    let mut sorted: Vec<&(String, Artifact)> = redacted.iter().collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let files = crate::artifact::distinct(sorted).map(|(p, a)| (p.as_str(), &a.bytes[..]));
    scan_files(files, secrets, inputs, pod).into_iter().filter(Diagnostic::is_error).collect()
}

/// Scans files about to be written that must hold no token at all.
pub(crate) fn scan_files<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    secrets: &BTreeMap<String, String>,
    inputs: &SourceMap,
    pod: FileId,
) -> Vec<Diagnostic> {
    let (mut diags, hits) = find(files, secrets);
    diags.extend(leaks(hits.into_iter().map(|h| (h.var, h.path)), secrets, inputs, pod));
    diags
}

/// An error for each (variable, file) a token was found in, pointed at where its value is
/// in the inputs.
fn leaks<'p>(
    hits: impl ExactSizeIterator<Item = (String, &'p str)>,
    secrets: &BTreeMap<String, String>,
    inputs: &SourceMap,
    pod: FileId,
) -> Vec<Diagnostic> {
    let origins = if hits.len() == 0 { BTreeMap::new() } else { origins(secrets, inputs, pod) };
    let mut diags = Vec::new();
    for (var, path) in hits {
        let d = Diagnostic::error(codes::LEAK, format!("the secret value of {var} would be written to `{path}`"));
        diags.push(match origins.get(&var) {
            Some(&loc) if inputs.get(loc.file).sensitive => d.at(loc).no_snippet().label(format!("{var} is defined here")).help(format!(
                "a token may only appear in the auth of tools.json, feeds.json or memory.json; the value of {var} reaches `{path}` through a `${{{var}}}` placeholder elsewhere (a persona, a feed path, a description): remove it there"
            )),
            Some(&loc) => d.at(loc).no_snippet().label(format!("the value of {var} is here")).help(format!(
                "a token may only appear in the auth of tools.json, feeds.json or memory.json; the value of {var} is copied into `{path}` from this input: remove it here"
            )),
            None => d.help(format!(
                "a token may only appear in the auth of tools.json, feeds.json or memory.json; find where the value of {var} is copied into descriptor or pod text and remove it"
            )),
        });
    }
    diags
}

/// The leak scan of one file that must hold no token, fed its bytes a piece at a time as
/// they are made (a file streamed to disk is never held whole): every occurrence of every
/// encoding is found, overlapping ones too, and one that spans two pieces, since the
/// scan keeps the last bytes of each piece (one fewer than the longest encoding) before
/// the next.
pub(crate) struct Scanning {
    pats: Vec<(String, String)>,
    ac: Option<AhoCorasick>,
    window: Vec<u8>,
    keep: usize,
    found: BTreeSet<usize>,
}

impl Scanning {
    pub(crate) fn new(secrets: &BTreeMap<String, String>) -> Self {
        let pats = patterns(secrets, MIN_SCANNED_LEN);
        // Every match, overlapping ones too, needs the standard match kind.
        let ac = if pats.is_empty() { None } else { AhoCorasick::new(pats.iter().map(|(p, _)| p.as_bytes())).ok() };
        let keep = pats.iter().map(|(p, _)| p.len()).max().unwrap_or(1) - 1;
        Scanning { pats, ac, window: Vec::new(), keep, found: BTreeSet::new() }
    }

    /// Scans the next `piece` of the file.
    pub(crate) fn feed(&mut self, piece: &[u8]) {
        let Some(ac) = &self.ac else { return };
        self.window.extend_from_slice(piece);
        self.found.extend(ac.find_overlapping_iter(&self.window).map(|m| m.pattern().as_usize()));
        let cut = self.window.len().saturating_sub(self.keep);
        self.window.drain(..cut);
    }

    /// The leaks found in the file at `path` (as [`scan_files`] reports them).
    pub(crate) fn leaks(self, path: &str, secrets: &BTreeMap<String, String>, inputs: &SourceMap, pod: FileId) -> Vec<Diagnostic> {
        let vars: BTreeSet<&str> = self.found.iter().map(|&i| self.pats[i].1.as_str()).collect();
        leaks(vars.into_iter().map(|v| (v.to_string(), path)), secrets, inputs, pod)
    }
}

impl std::io::Write for Scanning {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.feed(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether a file holds any token value in any encoding clawc writes, one automaton for
/// many files: a compile that writes nothing still proves, file by file as it reads the
/// tree, that the tree holds no token it would refuse to write.
pub(crate) struct Finder {
    ac: Option<AhoCorasick>,
}

impl Finder {
    /// `None` when a value is too short to be looked for: a compile warns of it, so only a
    /// compile can answer.
    pub(crate) fn new(secrets: &BTreeMap<String, String>) -> Option<Self> {
        if secrets.keys().any(|v| v.trim().len() < MIN_SCANNED_LEN) {
            return None;
        }
        Some(Finder { ac: automaton(&patterns(secrets, MIN_SCANNED_LEN)) })
    }

    pub(crate) fn found_in(&self, bytes: &[u8]) -> bool {
        self.ac.as_ref().is_some_and(|ac| ac.is_match(bytes))
    }
}

/// Scans a compiled tree as it is on disk (committed files) for literal token values. The
/// committed file is not an input, so the diagnostic has no span: its help says the line
/// and column of the first hit (never the value).
pub(crate) fn scan_committed<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    secrets: &BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    let (mut diags, hits) = find(files, secrets);
    for Hit { var, path, bytes, at } in hits {
        let (line, column) = line_column(bytes, at);
        diags.push(Diagnostic::error(codes::COMMITTED, format!("`{path}` holds the literal value of {var}")).help(format!(
            "the value of {var} is first at line {line}, column {column} of `{path}`; recompile with `--secrets redact` (the default) and commit that tree; if it was pushed, rotate the token"
        )));
    }
    diags
}

/// A token found in a file: the first place each variable's value is in it.
struct Hit<'a> {
    var: String,
    path: &'a str,
    bytes: &'a [u8],
    /// Byte offset of the first match.
    at: usize,
}

/// The too-short warnings, and every (file, variable) whose value the file holds.
fn find<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>, secrets: &BTreeMap<String, String>) -> (Vec<Diagnostic>, Vec<Hit<'a>>) {
    let mut diags = Vec::new();
    let short: BTreeSet<&String> = secrets.iter().filter(|(v, _)| v.trim().len() < MIN_SCANNED_LEN).map(|(_, var)| var).collect();
    for var in short {
        diags.push(
            Diagnostic::warning(
                codes::TOO_SHORT,
                format!("the value of {var} is shorter than {MIN_SCANNED_LEN} characters, so artifacts are not scanned for it"),
            )
            .help("use a real token; short values cannot be told apart from ordinary text"),
        );
    }
    let mut hits = Vec::new();
    let pats = patterns(secrets, MIN_SCANNED_LEN);
    let Some(ac) = automaton(&pats) else { return (diags, hits) };
    for (path, bytes) in files {
        let mut first: BTreeMap<&str, usize> = BTreeMap::new();
        for m in ac.find_iter(bytes) {
            first.entry(pats[m.pattern().as_usize()].1.as_str()).or_insert(m.start());
        }
        hits.extend(first.into_iter().map(|(var, at)| Hit { var: var.to_string(), path, bytes, at }));
    }
    (diags, hits)
}

/// Where in the compile's inputs each variable's value is first found: the descriptors
/// and other files first, then the pod (where a token may be written legitimately, as an
/// `environment` value), then `.env` and other sensitive files (where it is defined).
fn origins(secrets: &BTreeMap<String, String>, inputs: &SourceMap, pod: FileId) -> BTreeMap<String, Loc> {
    let mut out = BTreeMap::new();
    let pats = patterns(secrets, MIN_SCANNED_LEN);
    let Some(ac) = automaton(&pats) else { return out };
    let rank = |id: FileId, f: &SourceFile| if f.sensitive { 2 } else { u8::from(id == pod) };
    let mut files: Vec<(FileId, &SourceFile)> = inputs.files().collect();
    files.sort_by_key(|(id, f)| rank(*id, f));
    for (id, f) in files {
        for m in ac.find_iter(f.text.as_bytes()) {
            let var = &pats[m.pattern().as_usize()].1;
            out.entry(var.clone()).or_insert(Loc { file: id, span: f.span(m.start(), m.end()) });
        }
    }
    out
}

/// 1-based line and column (in characters) of byte `at` in `bytes`.
fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    (line, String::from_utf8_lossy(&before[line_start..]).chars().count() + 1)
}

/// `bytes` with every encoding of every secret value, whatever its length, replaced by
/// `${VAR}` (for display, and for hashing files that hold inline tokens).
pub(crate) fn mask(bytes: &[u8], secrets: &BTreeMap<String, String>) -> Vec<u8> {
    let pats = patterns(secrets, 1);
    let Some(ac) = automaton(&pats) else { return bytes.to_vec() };
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for m in ac.find_iter(bytes) {
        out.extend_from_slice(&bytes[last..m.start()]);
        out.extend_from_slice(format!("${{{}}}", pats[m.pattern().as_usize()].1).as_bytes());
        last = m.end();
    }
    out.extend_from_slice(&bytes[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(value: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(value.to_string(), "TOKEN".to_string())])
    }

    #[test]
    fn every_json_encoding_is_found_and_masked() {
        let secrets = one("tok&<secret>\"\\x");
        let go = crate::artifact::json::to_go_json(&serde_json::json!({ "a": "tok&<secret>\"\\x" }));
        let file = |bytes: Vec<u8>| Artifact { bytes: bytes.into(), secret: false, executable: false };
        let plain = serde_json::to_vec(&serde_json::json!({ "a": "tok&<secret>\"\\x" })).unwrap();
        let set = [("tools.json".to_string(), file(go.clone())), ("plain.json".to_string(), file(plain))];
        let found = scan(&set, &secrets, &SourceMap::default(), FileId(0));
        assert_eq!(found.iter().filter(|d| d.code == codes::LEAK).count(), 2, "{found:?}");
        let masked = String::from_utf8(mask(&go, &secrets)).unwrap();
        assert_eq!(masked, "{\n  \"a\": \"${TOKEN}\"\n}\n");
    }

    #[test]
    fn short_values_are_masked_though_not_scanned() {
        let secrets = one("abc");
        assert_eq!(mask(b"x abc y", &secrets), b"x ${TOKEN} y");
        let warned = scan_files(std::iter::empty(), &secrets, &SourceMap::default(), FileId(0));
        assert!(!warned.is_empty() && warned.iter().all(|d| d.code == codes::TOO_SHORT), "{warned:?}");
        assert!(scan(&[], &secrets, &SourceMap::default(), FileId(0)).is_empty(), "the per-batch scan holds leaks only");
    }

    /// A file scanned a piece at a time finds what a scan of it whole finds, wherever the
    /// pieces split it (a token across two or three pieces too), and one token overlapping
    /// another.
    #[test]
    fn a_file_scanned_in_pieces_finds_what_a_whole_scan_finds() {
        let secrets = BTreeMap::from([
            ("tok&<secret>1".to_string(), "ONE".to_string()),
            ("secret>1-and-more".to_string(), "TWO".to_string()),
            ("unrelated-value".to_string(), "THREE".to_string()),
        ]);
        let go = crate::artifact::json::to_go_json(&serde_json::json!({ "a": "x tok&<secret>1-and-more y" }));
        let whole = scan_files([("report.json", &go[..])], &secrets, &SourceMap::default(), FileId(0));
        let codes_of = |d: &[Diagnostic]| d.iter().map(|d| (d.code, d.message.clone())).collect::<Vec<_>>();
        assert_eq!(codes_of(&whole).len(), 1, "the whole scan's leftmost-longest match hides the second token");
        for size in 1..=go.len() {
            let mut scan = Scanning::new(&secrets);
            go.chunks(size).for_each(|piece| scan.feed(piece));
            let found = codes_of(&scan.leaks("report.json", &secrets, &SourceMap::default(), FileId(0)));
            let want = ["ONE", "TWO"].map(|v| (codes::LEAK, format!("the secret value of {v} would be written to `report.json`")));
            assert_eq!(found, want, "pieces of {size} bytes");
        }
        let mut clean = Scanning::new(&secrets);
        clean.feed(b"nothing here");
        assert!(clean.leaks("report.json", &secrets, &SourceMap::default(), FileId(0)).is_empty());
    }

    #[test]
    fn yaml_and_toml_forms() {
        let forms = encodings("it's\"a\ttab\u{1}");
        assert!(forms.contains("it''s\"a\ttab\u{1}"));
        assert!(forms.contains("it's\\\"a\\ttab\\u0001"));
    }

    #[test]
    fn the_finder_sees_a_token_in_each_encoding_clawc_writes_and_no_short_one() {
        let secrets = BTreeMap::from([("Operation<description>\"text".to_string(), "API_TOKEN".to_string())]);
        let finder = Finder::new(&secrets).unwrap();
        for held in ["Operation<description>\"text", "Operation<description>\\\"text", "Operation\\u003cdescription\\u003e\\\"text"] {
            assert!(finder.found_in(format!("x {held} y").as_bytes()), "{held}");
        }
        assert!(!finder.found_in(b"Operation description text"));
        assert!(Finder::new(&BTreeMap::from([("short".to_string(), "T".to_string())])).is_none(), "too short to look for");
    }
}
