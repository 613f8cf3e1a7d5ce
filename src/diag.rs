//! The diagnostic every pass reports: a stable code, a message, where, and how to fix it.
//!
//! Passes collect diagnostics instead of stopping at the first one; the driver sorts them
//! by file and position and stops before writing anything when one is an error. Each pass
//! keeps its codes in its own `diags` module so they stay stable and greppable.

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
/// `at`/`label`/`help` builders so that every diagnostic reads the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub loc: Option<Loc>,
    pub label: Option<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self { code, severity: Severity::Error, message: message.into(), loc: None, label: None, help: None }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, ..Self::error(code, message) }
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

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
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
    pub code: &'static str,
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
        }
    }

    /// A miette report that draws the offending span of the file (for a file holding
    /// secrets, only its name and line: a snippet would print neighbouring tokens).
    pub fn to_report(&self, sources: &SourceMap) -> miette::Report {
        let mut labels = Vec::new();
        let mut src = None;
        let mut message = self.message.clone();
        if let Some(loc) = self.loc.filter(|l| sources.get(l.file).sensitive || long_line(sources, l)) {
            message = format!("{message}\n  at {}:{}:{}", sources.name(loc.file), loc.span.line, loc.span.col);
        } else if let Some(loc) = self.loc {
            let file = sources.get(loc.file);
            src = Some(miette::NamedSource::new(file.name.clone(), file.text.clone()));
            if loc.span != Span::FILE || !file.text.is_empty() {
                let text = self.label.clone().unwrap_or_else(|| "here".to_string());
                labels.push(miette::LabeledSpan::new(Some(text), loc.span.start, loc.span.end - loc.span.start));
            }
        }
        let severity = match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        };
        let mut diag = miette::MietteDiagnostic::new(message).with_code(self.code).with_severity(severity).with_labels(labels);
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
pub const MAX_DIAGNOSTICS_PER_CODE: usize = 100;

/// Keeps the first [`MAX_DIAGNOSTICS_PER_CODE`] diagnostics of each code in each file (in
/// the order found) and adds one summary per code that had more. The summary has the
/// same code, and is an error when any dropped diagnostic was. (Shared by the passes that
/// report per item: pod, descriptors, registry, grants.)
pub fn cap(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut shown: HashMap<(Option<FileId>, &'static str), usize> = HashMap::new();
    let mut dropped: BTreeMap<(Option<FileId>, &'static str), (usize, Severity)> = BTreeMap::new();
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

/// The closest candidate to `needle` by edit distance, if close enough to be a likely typo.
///
/// Bounded, because names come from hostile input: names longer than 128 bytes are
/// never typos worth suggesting for (and comparing them is quadratic in their length),
/// and only the first 2,000 candidates are compared. Callers that suggest per item also
/// cap how many suggestions they make.
pub fn did_you_mean<'a>(needle: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
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

/// `help` text with a "did you mean" when a candidate is close.
pub fn suggest<'a>(needle: &str, candidates: impl IntoIterator<Item = &'a str>, fallback: impl Into<String>) -> String {
    match did_you_mean(needle, candidates) {
        Some(c) => format!("did you mean `{c}`?"),
        None => fallback.into(),
    }
}
