//! The diagnostic every pass reports: a stable code, a message, where, and how to fix it.
//!
//! Passes collect diagnostics instead of stopping at the first one; the driver sorts them
//! by file and position and stops before writing anything when one is an error. Every code
//! is a row of the [`catalogue`]; each pass re-exports its codes from there under its own
//! `diags`/`codes` module so they stay stable and greppable.

pub mod catalogue;

pub(crate) use catalogue::Code;

use crate::sourcemap::{FileId, Loc, SourceMap, Span};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding. Built through [`Diagnostic::error`] / [`Diagnostic::warning`] and the
/// `at`/`label`/`also`/`help` builders so that every diagnostic reads the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub loc: Option<Loc>,
    pub label: Option<String>,
    /// Secondary locations, each with its label ("first declared here").
    pub related: Vec<(Loc, String)>,
    pub help: Option<String>,
    /// The span may hold a secret value: printed as `file:line:column`, never drawn.
    pub no_snippet: bool,
    /// A warning `--strict` made an error: it fails the run with exit 2 whatever its
    /// code's exit class (see [`Diagnostics::promote_warnings`]).
    pub promoted: bool,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, message.into())
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, message.into())
    }

    fn new(code: Code, severity: Severity, message: String) -> Self {
        debug_assert!(code.allows(severity), "the catalogue does not raise {code} as a {severity:?}");
        Self { code, severity, message, loc: None, label: None, related: Vec::new(), help: None, no_snippet: false, promoted: false }
    }

    pub fn at(mut self, loc: Loc) -> Self {
        self.loc = Some(loc);
        self
    }

    pub fn at_opt(mut self, loc: Option<Loc>) -> Self {
        self.loc = loc;
        self
    }

    pub fn in_file(self, file: FileId) -> Self {
        self.at(Loc { file, span: Span::FILE })
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// A secondary location with its label, e.g. where a name was first declared.
    pub fn also(mut self, loc: Loc, label: impl Into<String>) -> Self {
        self.related.push((loc, label.into()));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The location is shown as `file:line:column` and its text never drawn (it may hold
    /// a secret value), as for a sensitive file.
    pub fn no_snippet(mut self) -> Self {
        self.no_snippet = true;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A run's diagnostics, kept in the order they were found until [`Diagnostics::sorted`].
#[derive(Clone, Debug, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        self.0.extend(ds);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| !d.is_error())
    }

    /// `--strict`: every warning becomes an error, keeping its code; the message says
    /// which setting did it (`by`: `--strict`, or `strict` in a clawc.toml). Returns
    /// whether any was promoted.
    pub fn promote_warnings(&mut self, by: &str) -> bool {
        let mut any = false;
        for d in self.0.iter_mut().filter(|d| d.severity == Severity::Warning) {
            d.severity = Severity::Error;
            d.promoted = true;
            d.message.push_str(&format!(" (a warning, made an error by {by})"));
            any = true;
        }
        any
    }

    /// A sorted copy (see [`Diagnostics::sorted`]).
    pub fn sorted_clone(&self, sources: &SourceMap) -> Self {
        self.clone().sorted(sources)
    }

    /// Sorted by file name, position, code and message; duplicates removed. Diagnostics
    /// without a location come last. This order is part of the output contract.
    pub fn sorted(mut self, sources: &SourceMap) -> Self {
        self.0.sort_by(|a, b| sort_key(a, sources).cmp(&sort_key(b, sources)));
        self.0.dedup();
        self
    }
}

fn sort_key<'a>(d: &'a Diagnostic, sources: &'a SourceMap) -> impl Ord + 'a {
    let pos = d.loc.map(|l| (sources.name(l.file), l.span.start, l.span.end));
    (pos.is_none(), pos, d.code, &d.message)
}

/// The JSON form of a diagnostic (one per line with `--format json`, and in report.json).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct DiagnosticJson {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// The secondary locations (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<RelatedJson>,
}

/// A secondary location of a diagnostic, in JSON.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct RelatedJson {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub label: String,
}

impl Diagnostic {
    pub fn to_json(&self, sources: &SourceMap) -> DiagnosticJson {
        DiagnosticJson {
            severity: self.severity,
            code: self.code,
            message: self.message.clone(),
            file: self.loc.map(|l| sources.name(l.file).to_string()),
            line: self.loc.map(|l| l.span.line),
            column: self.loc.map(|l| l.span.col),
            label: self.label.clone(),
            help: self.help.clone(),
            related: self
                .related
                .iter()
                .map(|(l, label)| RelatedJson {
                    file: sources.name(l.file).to_string(),
                    line: l.span.line,
                    column: l.span.col,
                    label: label.clone(),
                })
                .collect(),
        }
    }

    /// A miette report that draws the offending span of the file (for a file holding
    /// secrets, only its name and line: a snippet would print neighbouring tokens).
    /// Secondary labels in the drawn file are drawn too; the others are printed as
    /// `  <label>: file:line:col` lines.
    pub fn to_report(&self, sources: &SourceMap) -> miette::Report {
        let mut labels = Vec::new();
        let mut src = None;
        let mut message = self.message.clone();
        let mut drawn = None;
        if let Some(loc) = self.loc.filter(|l| self.no_snippet || sources.get(l.file).sensitive || long_line(sources, l)) {
            message = format!("{message}\n  at {}:{}:{}", sources.name(loc.file), loc.span.line, loc.span.col);
        } else if let Some(loc) = self.loc {
            let file = sources.get(loc.file);
            src = Some(miette::NamedSource::new(file.name.clone(), file.text.clone()));
            drawn = Some(loc.file);
            if loc.span != Span::FILE || !file.text.is_empty() {
                let text = self.label.clone().unwrap_or_else(|| "here".to_string());
                labels.push(miette::LabeledSpan::new(Some(text), loc.span.start, loc.span.end - loc.span.start));
            }
        }
        for (loc, text) in &self.related {
            if drawn == Some(loc.file) && loc.span != Span::FILE && !long_line(sources, loc) && !self.no_snippet {
                labels.push(miette::LabeledSpan::new(Some(text.clone()), loc.span.start, loc.span.end - loc.span.start));
            } else {
                message = format!("{message}\n  {text}: {}:{}:{}", sources.name(loc.file), loc.span.line, loc.span.col);
            }
        }
        let severity = match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        };
        let mut diag = miette::MietteDiagnostic::new(message).with_code(self.code.as_str()).with_severity(severity).with_labels(labels);
        if let Some(help) = &self.help {
            diag = diag.with_help(help.clone());
        }
        let report = miette::Report::new(diag);
        match src {
            Some(src) => report.with_source_code(src),
            None => report,
        }
    }
}

/// Most diagnostics of one code shown for one file. A hostile file can hold 100,000
/// instances of one mistake; past this many, one summary stands for the rest.
pub(crate) const MAX_DIAGNOSTICS_PER_CODE: usize = 100;

/// Keeps the first [`MAX_DIAGNOSTICS_PER_CODE`] diagnostics of each code in each file (in
/// the order found) and adds one summary per code that had more. The summary has the
/// same code, and is an error when any dropped diagnostic was. (Shared by the passes that
/// report per item: pod, descriptors, registry, grants.)
pub(crate) fn cap(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut shown: HashMap<(Option<FileId>, Code), usize> = HashMap::new();
    let mut dropped: BTreeMap<(Option<FileId>, Code), (usize, Severity)> = BTreeMap::new();
    let mut out = Vec::with_capacity(diags.len().min(4 * MAX_DIAGNOSTICS_PER_CODE));
    for d in diags {
        let key = (d.loc.map(|l| l.file), d.code);
        let n = shown.entry(key).or_default();
        if *n < MAX_DIAGNOSTICS_PER_CODE {
            *n += 1;
            out.push(d);
        } else {
            let (count, severity) = dropped.entry(key).or_insert((0, Severity::Warning));
            *count += 1;
            *severity = (*severity).min(d.severity);
        }
    }
    for ((file, code), (count, severity)) in dropped {
        let msg = format!("{count} more `{code}` diagnostics in this file are not shown (only the first {MAX_DIAGNOSTICS_PER_CODE} are)");
        let d = if severity == Severity::Error { Diagnostic::error(code, msg) } else { Diagnostic::warning(code, msg) };
        let d = d.help("fix the ones shown and compile again");
        out.push(match file {
            Some(f) => d.in_file(f),
            None => d,
        });
    }
    out
}

/// Whether the line `loc` starts on is too long to draw (a minified descriptor): the
/// snippet would be the whole file, once per diagnostic.
fn long_line(sources: &SourceMap, loc: &Loc) -> bool {
    const MAX_DRAWN_LINE: usize = 400;
    let text = sources.get(loc.file).text.as_bytes();
    let start = loc.span.start.min(text.len());
    let line_start = text[..start].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line_end = text[start..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| start + i);
    line_end - line_start > MAX_DRAWN_LINE
}

/// `text` with control characters other than newline and tab written as `\u{..}`: what
/// clawc prints of an untrusted file, so no escape sequence reaches the terminal.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// The closest candidate to `needle` by edit distance, if close enough to be a likely typo.
///
/// Bounded, because names come from hostile input: names longer than 128 bytes are
/// never typos worth suggesting for (and comparing them is quadratic in their length),
/// and only the first 2,000 candidates are compared. Callers that suggest per item also
/// cap how many suggestions they make.
pub(crate) fn did_you_mean<'a>(needle: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    const SUGGEST_MAX_LEN: usize = 128;
    const SUGGEST_MAX_CANDIDATES: usize = 2_000;
    if needle.len() > SUGGEST_MAX_LEN {
        return None;
    }
    let mut best: Option<(f64, &str)> = None;
    for c in candidates.into_iter().take(SUGGEST_MAX_CANDIDATES) {
        if c == needle || c.len() > SUGGEST_MAX_LEN {
            continue;
        }
        let score = strsim::jaro_winkler(needle, c);
        if score > 0.8 && best.is_none_or(|(s, b)| score > s || (score == s && c < b)) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The candidate `needle` is at most `max` edits from (insertions, deletions,
/// substitutions and swaps of neighbours, i.e. the optimal string alignment distance),
/// the nearest first and then the first in `candidates` order; `None` if none is.
///
/// Unlike [`did_you_mean`] (a similarity score, for suggestions), this is a rule: a key
/// this close to a grant key is treated as that key misspelt. Only candidates whose length
/// is within `max` of the needle's are compared, so a hostile long key costs nothing.
pub(crate) fn within_edits<'a>(needle: &str, candidates: impl IntoIterator<Item = &'a str>, max: usize) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if needle.len().abs_diff(c.len()) > max || c == needle {
            continue;
        }
        let d = strsim::osa_distance(needle, c);
        if d <= max && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `help` text with a "did you mean" when a candidate is close.
pub(crate) fn suggest<'a>(needle: &str, candidates: impl IntoIterator<Item = &'a str>, fallback: impl Into<String>) -> String {
    match did_you_mean(needle, candidates) {
        Some(c) => format!("did you mean `{c}`?"),
        None => fallback.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::codes::FEED_COLLISION;

    fn render(r: &miette::Report) -> String {
        let mut out = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor()).render_report(&mut out, r.as_ref()).unwrap();
        out
    }

    #[test]
    fn secondary_labels_are_drawn_in_the_same_file_and_listed_from_others() {
        let mut sources = SourceMap::default();
        let a = sources.add("a.json", "{\"name\": \"x\"}\n{\"name\": \"x\"}\n");
        let b = sources.add("b.json", "{\"name\": \"x\"}\n");
        let (fa, fb) = (sources.get(a), sources.get(b));
        let d = Diagnostic::error(FEED_COLLISION, "collides")
            .at(Loc { file: a, span: fa.span(23, 26) })
            .label("again")
            .also(Loc { file: a, span: fa.span(9, 12) }, "first declared here")
            .also(Loc { file: b, span: fb.span(9, 12) }, "and here");
        let text = render(&d.to_report(&sources));
        assert!(text.contains("again") && text.contains("first declared here"), "{text}");
        assert!(text.contains("  and here: b.json:1:10"), "{text}");
        let json = serde_json::to_string(&d.to_json(&sources)).unwrap();
        assert!(json.ends_with(r#""related":[{"file":"a.json","line":1,"column":10,"label":"first declared here"},{"file":"b.json","line":1,"column":10,"label":"and here"}]}"#), "{json}");
        let plain = Diagnostic::error(FEED_COLLISION, "collides").at(Loc { file: a, span: fa.span(9, 12) });
        assert!(!serde_json::to_string(&plain.to_json(&sources)).unwrap().contains("related"));
    }

    #[test]
    fn a_sensitive_file_shows_no_snippet_for_secondary_labels_either() {
        let mut sources = SourceMap::default();
        let env = sources.add_sensitive(".env", "TOKEN=s3cret\nTOKEN=s3cret\n");
        let f = sources.get(env);
        let d = Diagnostic::error(FEED_COLLISION, "twice")
            .at(Loc { file: env, span: f.span(13, 18) })
            .also(Loc { file: env, span: f.span(0, 5) }, "first here");
        let text = render(&d.to_report(&sources));
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("at .env:2:1") && text.contains("first here: .env:1:1"), "{text}");
    }

    #[test]
    fn within_edits_is_a_bounded_distance_rule() {
        let keys = ["tools", "feeds", "tool-policy", "tools-defaults"];
        assert_eq!(within_edits("tool", keys, 2), Some("tools"));
        assert_eq!(within_edits("toosl", keys, 2), Some("tools"));
        assert_eq!(within_edits("Tools", keys, 2), Some("tools"));
        assert_eq!(within_edits("tools-defautls", keys, 2), Some("tools-defaults"));
        assert_eq!(within_edits("tool_policy", keys, 2), Some("tool-policy"));
        assert_eq!(within_edits("agnet", keys, 2), None);
        assert_eq!(within_edits("tools", keys, 2), None, "a key is not its own misspelling");
        assert_eq!(within_edits(&"t".repeat(100_000), keys, 2), None);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "does not raise")]
    fn a_code_is_raised_only_as_the_catalogue_says() {
        let _ = Diagnostic::warning(FEED_COLLISION, "not a warning");
    }
}
