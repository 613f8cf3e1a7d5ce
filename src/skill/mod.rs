//! Skill folders that bring tools, read and checked ahead of time: a **Skill Tools
//! package** (`SKILL.md` + `tools.json` + `scripts/`, the Skill Tools specification) and a
//! **`tool-manifest.yaml`** (the Dynamic Skill Tools design: script and HTTP executors,
//! timeouts and retries, templates). `docs/skills.md` is the user's side of this module.
//!
//! The module is a library the pod compile can call (a skill folder an agent carries) and
//! the engine of `clawc skill compile DIR`. One file per concept:
//!
//! | file | what it is for |
//! |---|---|
//! | [`files`] | the skill folder on disk: confined, bounded reads, and the walk the lock hashes |
//! | [`names`] | the naming rules: skill folders (Agent Skills), Skill Tools and manifest tools |
//! | [`frontmatter`] | `SKILL.md`'s YAML frontmatter and its `name` |
//! | [`json`] | `tools.json` read keeping the order of object keys (parameters' order is `required`'s) |
//! | [`params`] | the Skill Tools parameter subset → an MCP `inputSchema` |
//! | [`package`] | a Skill Tools package: package-level errors, per-tool warnings, MCP-shaped tools |
//! | [`policy`] | timeout and retry: tool, else runtime default, else the system default |
//! | [`template`] | `minijinja` templates: syntax, and which variables they may use |
//! | [`manifest`] | `tool-manifest.yaml`: the shape, its aliases, executors, per-tool checks |
//! | [`compile`] | `skill compile`: shadowing by static tools, the three output files, the counts |
//! | [`write`] | writing the outputs beside the manifest: staged, renamed, never through a symlink |
//!
//! Like the passes of a pod compile, everything here collects diagnostics rather than
//! stopping at the first, and a single bad tool is a warning that skips that tool only.

pub(crate) mod carried;
pub(crate) mod compile;
pub(crate) mod files;
pub(crate) mod frontmatter;
pub(crate) mod json;
pub(crate) mod manifest;
pub(crate) mod markdown;
pub(crate) mod names;
pub(crate) mod operator;
pub(crate) mod package;
pub(crate) mod params;
pub(crate) mod policy;
pub(crate) mod resolve;
pub(crate) mod template;
pub(crate) mod write;

pub(crate) use crate::diag::catalogue::skill as codes;

/// The Skill Tools manifest, at the root of a skill folder.
pub(crate) const TOOLS_JSON: &str = "tools.json";
/// The Dynamic Skill Tools manifest, at the root of a skill folder.
pub(crate) const TOOL_MANIFEST: &str = "tool-manifest.yaml";
/// The skill's instructions (Agent Skills), with its YAML frontmatter.
pub(crate) const SKILL_MD: &str = "SKILL.md";
/// Most tools one `tools.json` or `tool-manifest.yaml` may declare.
pub(crate) const MAX_TOOLS: usize = 10_000;

/// Why one tool was skipped: the rule it breaks and what is wrong, with where.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Reason {
    /// A stable rule name: `shape`, `name`, `description`, `duplicate`, `script`,
    /// `parameters`, `input_schema`, `executor`, `template`, `timeout`, `retry`,
    /// `misspelt_key`.
    pub rule: &'static str,
    pub message: String,
    /// 1-based line and column in the manifest.
    pub line: u32,
    pub column: u32,
}

/// A tool that was skipped, and every reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct InvalidTool {
    /// Its position in the manifest's list (0-based).
    pub index: usize,
    /// Its `name` as written, when it has a string one.
    pub name: Option<String>,
    pub reasons: Vec<Reason>,
}

impl InvalidTool {
    /// How messages call it: `tool "x"`, or `tools[3]` when it has no name.
    pub(crate) fn label(index: usize, name: Option<&str>) -> String {
        match name {
            Some(n) => format!("tool \"{}\"", crate::diag::printable(n)),
            None => format!("tools[{index}]"),
        }
    }
}

/// The problems found with one tool, gathered while it is checked.
#[derive(Debug, Hash)]
pub(crate) struct ToolProblems {
    index: usize,
    name: Option<String>,
    found: Vec<(&'static str, String, crate::sourcemap::Loc, String)>,
    /// Secondary locations by problem index ("first declared here").
    related: Vec<(usize, crate::sourcemap::Loc, &'static str)>,
}

impl ToolProblems {
    pub(crate) fn new(index: usize) -> Self {
        ToolProblems { index, name: None, found: Vec::new(), related: Vec::new() }
    }

    /// The tool's name as written, once known (messages name the tool by it).
    pub(crate) fn named(&mut self, name: &str) {
        self.name = Some(name.to_string());
    }

    /// A broken `rule`: what is wrong, where, and how to fix it.
    pub(crate) fn add(&mut self, rule: &'static str, message: impl Into<String>, loc: crate::sourcemap::Loc, help: impl Into<String>) {
        self.found.push((rule, message.into(), loc, help.into()));
    }

    /// Adds a secondary location with its label to the last problem added.
    pub(crate) fn also(&mut self, loc: crate::sourcemap::Loc, label: &'static str) {
        if let Some(last) = self.found.len().checked_sub(1) {
            self.related.push((last, loc, label));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// How many problems were found so far.
    pub(crate) fn len(&self) -> usize {
        self.found.len()
    }

    /// One `clawc::skill::invalid_tool` warning per problem, and the tool as the report
    /// lists it (`None` when it is valid).
    pub(crate) fn finish(self, diags: &mut Vec<crate::diag::Diagnostic>) -> Option<InvalidTool> {
        if self.found.is_empty() {
            return None;
        }
        let label = InvalidTool::label(self.index, self.name.as_deref());
        let mut reasons = Vec::new();
        for (i, (rule, message, loc, help)) in self.found.into_iter().enumerate() {
            let mut d = crate::diag::Diagnostic::warning(codes::INVALID_TOOL, format!("{label} is skipped: rule `{rule}`: {message}"))
                .at(loc)
                .help(help);
            for (_, at, text) in self.related.iter().filter(|(p, _, _)| *p == i) {
                d = d.also(*at, *text);
            }
            diags.push(d);
            reasons.push(Reason { rule, message, line: loc.span.line, column: loc.span.col });
        }
        Some(InvalidTool { index: self.index, name: self.name, reasons })
    }
}
