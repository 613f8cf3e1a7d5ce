//! `--accept FILE`: a committed YAML list of findings the team accepts, each with a
//! reason —
//!
//! ```yaml
//! - fingerprint: 5f0c3a9d2b7e41c8a6f19e0d3b2c7a41
//!   reason: the old endpoint is gone since 2.0; every caller migrated (PLAT-1289)
//! - rule: TOOL_REMOVED
//!   tool: legacy_quote          # `tool: null` for a service-level finding
//!   reason: deprecated for two releases
//! ```
//!
//! An accepted finding is reported as accepted and does not fail the gate; an entry that
//! matches nothing is a warning (`clawc::compat::stale_accept`, a WARN for `--fail-on`)
//! so the file does not rot.

use super::rules::RuleRef;
use super::{Finding, codes};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceMap};
use crate::yaml::Node;
use std::path::Path;

/// What an entry matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Match {
    Fingerprint(String),
    /// A rule on a tool (`None`: a service-level finding).
    Rule(RuleRef, Option<String>),
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub matches: Match,
    pub reason: String,
    pub loc: Loc,
}

/// Reads and checks the accept file (bounded like every input).
pub(crate) fn read(path: &Path, sources: &mut SourceMap) -> Result<Vec<Entry>, Vec<Diagnostic>> {
    let name = path.display().to_string();
    let text = match crate::source::fs::read_text(None, path, &name) {
        Ok(t) => t,
        Err(crate::source::fs::ReadError::Missing) => {
            let d = Diagnostic::error(
                crate::diag::catalogue::source::MISSING,
                format!("--accept `{}` does not exist", crate::diag::printable(&name)),
            )
            .help("create it (a YAML list of {fingerprint or rule+tool, reason}) or drop --accept");
            return Err(vec![d]);
        }
        Err(crate::source::fs::ReadError::Invalid(d) | crate::source::fs::ReadError::Io(d)) => return Err(vec![d]),
    };
    let file = sources.add(name, text);
    parse(file, sources)
}

fn parse(file: FileId, sources: &SourceMap) -> Result<Vec<Entry>, Vec<Diagnostic>> {
    let root = crate::yaml::parse(file, sources.get(file))?;
    let mut diags = Vec::new();
    let mut out = Vec::new();
    let err = |loc: Loc, msg: String, help: &str| Diagnostic::error(codes::ACCEPT_FILE, msg).at(loc).help(help.to_string());
    let items: &[Node] = if root.is_null() {
        &[]
    } else if let Some(items) = root.as_seq() {
        items
    } else {
        return Err(vec![err(root.loc, "the accept file must be a YAML list".into(), "write `- fingerprint: …` / `  reason: …` entries")]);
    };
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let Some(map) = item.as_map() else {
            diags.push(err(item.loc, format!("entry {n} must be a mapping"), "write `- fingerprint: …` and `  reason: …`"));
            continue;
        };
        for (k, _) in map {
            if !matches!(k.as_str(), Some("fingerprint" | "rule" | "tool" | "reason")) {
                let shown = crate::diag::printable(k.as_str().unwrap_or("?"));
                diags.push(err(
                    k.loc,
                    format!("entry {n}: unknown key `{shown}`"),
                    "an entry has fingerprint, or rule and tool, and reason",
                ));
            }
        }
        let reason = item.get("reason").and_then(Node::as_str).map(str::trim).unwrap_or_default();
        if reason.is_empty() {
            diags.push(err(item.loc, format!("entry {n}: `reason` is required"), "say why the finding is accepted; review reads it"));
            continue;
        }
        let matches = match (item.get("fingerprint"), item.get("rule")) {
            (Some(fp), None) => match fp.as_str().map(str::trim) {
                Some(s) if !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    Match::Fingerprint(s.to_ascii_lowercase())
                }
                _ => {
                    diags.push(err(
                        fp.loc,
                        format!("entry {n}: `fingerprint` must be the hex string compat printed"),
                        "copy it from the JSON or text output",
                    ));
                    continue;
                }
            },
            (None, Some(rule)) => {
                let id = rule.as_str().unwrap_or_default();
                let Some(r) = RuleRef::find(id) else {
                    let help = crate::diag::suggest(id, super::rules::ALL.iter().map(|r| r.id()), "`clawc compat --list-rules` lists them");
                    diags.push(err(rule.loc, format!("entry {n}: `{}` is not a rule", crate::diag::printable(id)), &help));
                    continue;
                };
                let Some(tool) = item.get("tool") else {
                    let help = "name the tool the finding is about, or write `tool: null` for a service-level finding";
                    diags.push(err(item.loc, format!("entry {n}: `rule` needs `tool`"), help));
                    continue;
                };
                Match::Rule(r, tool.as_str().map(str::to_string))
            }
            (Some(_), Some(_)) => {
                diags.push(err(item.loc, format!("entry {n}: give `fingerprint` or `rule`, not both"), "keep one"));
                continue;
            }
            (None, None) => {
                diags.push(err(item.loc, format!("entry {n}: `fingerprint` or `rule` is required"), "say which finding is accepted"));
                continue;
            }
        };
        out.push(Entry { matches, reason: reason.to_string(), loc: item.loc });
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}

impl Entry {
    fn accepts(&self, f: &Finding) -> bool {
        match &self.matches {
            Match::Fingerprint(fp) => *fp == f.fingerprint,
            Match::Rule(r, tool) => *r == f.rule && *tool == f.tool,
        }
    }
}

/// Marks accepted findings; returns the entries that matched nothing. Indexed both ways,
/// so a long accept file against many findings stays linear.
pub(crate) fn apply<'e>(entries: &'e [Entry], findings: &mut [Finding]) -> Vec<&'e Entry> {
    use std::collections::HashMap;
    let mut by_fp: HashMap<String, Vec<usize>> = HashMap::new();
    let mut by_rule: HashMap<(RuleRef, Option<String>), Vec<usize>> = HashMap::new();
    for (i, f) in findings.iter().enumerate() {
        by_fp.entry(f.fingerprint.clone()).or_default().push(i);
        by_rule.entry((f.rule, f.tool.clone())).or_default().push(i);
    }
    let mut stale = Vec::new();
    for e in entries {
        let hits = match &e.matches {
            Match::Fingerprint(fp) => by_fp.get(fp),
            Match::Rule(r, tool) => by_rule.get(&(*r, tool.clone())),
        };
        let Some(hits) = hits.filter(|h| !h.is_empty()) else {
            stale.push(e);
            continue;
        };
        for &i in hits {
            debug_assert!(e.accepts(&findings[i]));
            if findings[i].accepted.is_none() {
                findings[i].accepted = Some(e.reason.clone());
            }
        }
    }
    stale
}

/// The warning for an entry that matches nothing.
pub(crate) fn stale_warning(e: &Entry) -> Diagnostic {
    let what = match &e.matches {
        Match::Fingerprint(fp) => format!("fingerprint {fp}"),
        Match::Rule(r, Some(t)) => format!("{r} on `{}`", crate::diag::printable(t)),
        Match::Rule(r, None) => format!("{r} on the service"),
    };
    Diagnostic::warning(codes::STALE_ACCEPT, format!("accept entry for {what} matches no finding"))
        .at(e.loc)
        .help("remove the entry: the finding it accepted is gone")
}
