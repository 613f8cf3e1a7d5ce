//! `clawc compat OLD NEW`: the release gate for service descriptors. Two releases of one
//! service, each loaded by the describe stage exactly as `compile` loads it
//! ([`load`]), are normalised ([`model`]) and compared ([`compare`], with the schema
//! rules in [`schema`]); every difference is a [`Finding`] of one rule of the catalogue
//! ([`rules`], the one table `docs/compat-rules.md` and `--list-rules` come from). With
//! `--pod`, [`grants`] names the agents each finding reaches, the grants that would
//! dangle and the new tools `allow: all` hands out; [`accept`] applies a committed accept
//! file; [`report`] renders text, JSON, Markdown, GitHub, JUnit and SARIF.
//!
//! The specification is `../shared/reference/compat-rules.md` (issue 11).

pub(crate) mod accept;
pub(crate) mod compare;
pub(crate) mod grants;
pub(crate) mod load;
pub(crate) mod model;
pub(crate) mod number;
pub(crate) mod report;
pub(crate) mod rules;
pub(crate) mod schema;

pub(crate) use crate::diag::catalogue::compat as codes;
use rules::{RuleRef, Severity};
use serde::Serialize;

/// What a finding is about, for naming the agents it reaches (`--pod`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Subject {
    /// The service's metadata, endpoints or version: no agent in particular.
    Service,
    /// A tool of OLD: the agents granted it under OLD.
    Tool(String),
    /// A tool only NEW has: the agents granted it under NEW.
    NewTool(String),
    /// Every tool of the service (a transport change).
    AllTools,
    /// A feed: its subscribers by name, and map-form feeds with the same source and path.
    Feed { name: String, path: String },
    /// The memory capability: agents whose `memory.service` is the service.
    Memory,
    /// Auth: every agent with a grant, feed or memory on the service.
    Auth,
}

impl Subject {
    pub(crate) fn tool(&self) -> Option<&str> {
        match self {
            Subject::Tool(t) | Subject::NewTool(t) => Some(t),
            _ => None,
        }
    }
}

/// One difference, as every output format reports it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Finding {
    pub rule: RuleRef,
    pub severity: Severity,
    pub category: &'static str,
    pub direction: &'static str,
    /// The tool's name; `None` for service-level findings.
    pub tool: Option<String>,
    /// JSON pointer below the tool (`/inputSchema/properties/qty/maximum`), or below the
    /// descriptor for service-level findings (`/auth/type`, `/feeds/prices/path`).
    pub path: String,
    pub message: String,
    /// The schema keyword a constraint finding is about.
    pub keyword: Option<String>,
    /// Agent ids the finding reaches (`--pod`), sorted.
    pub agents: Vec<String>,
    /// Stable across runs and machines: SHA-256 over rule, service, tool and path.
    pub fingerprint: String,
    /// Where it points: NEW's file and line of the changed node (a pod's grant line for
    /// `TOOL_GRANT_DANGLING`).
    pub file: String,
    pub line: u32,
    /// The accept file's reason, when an entry accepts it.
    pub accepted: Option<String>,
    #[serde(skip)]
    pub subject: Subject,
}

/// The fingerprint of a finding: the first 16 bytes of SHA-256 over its rule, service,
/// tool and path, in hex (never over line numbers, so editing elsewhere keeps it).
pub(crate) fn fingerprint(rule: RuleRef, service: &str, tool: Option<&str>, path: &str) -> String {
    let text = format!("{}\0{service}\0{}\0{path}", rule.id(), tool.unwrap_or(""));
    crate::digest::sha256_hex(text.as_bytes())[..32].to_string()
}

impl Finding {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        rule: RuleRef,
        service: &str,
        tool: Option<String>,
        path: String,
        message: String,
        keyword: Option<String>,
        subject: Subject,
        file: &str,
        line: u32,
    ) -> Finding {
        let r = rule.rule();
        Finding {
            fingerprint: fingerprint(rule, service, tool.as_deref(), &path),
            rule,
            severity: r.severity,
            category: r.category.as_str(),
            direction: r.direction.as_str(),
            tool,
            path,
            message,
            keyword,
            agents: Vec::new(),
            file: file.to_string(),
            line,
            accepted: None,
            subject,
        }
    }
}

/// The order of every output: most severe first, then by tool, path and rule.
pub(crate) fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.tool.cmp(&b.tool))
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.message.cmp(&b.message))
    });
}

/// Whether the gate fails: a finding at or above `fail_on` that no entry accepts, or a
/// stale accept entry (a WARN) when `fail_on` is WARN or INFO.
pub(crate) fn fails(findings: &[Finding], stale: usize, fail_on: Severity) -> bool {
    findings.iter().any(|f| f.accepted.is_none() && f.severity >= fail_on) || (stale > 0 && Severity::Warn >= fail_on)
}

#[cfg(test)]
mod tests;
