//! The skills one agent carries: its service surfaces' descriptor skills, then the pod's
//! `x-claw.skills`, merged by name as `claw up` merges them, and what clawc can tell of
//! each ahead of time (SPEC-0023): the sections it lacks, whether the agent's tier may
//! use it, which of its Tool Discovery candidates the agent has, and which of the tools
//! it brings a granted tool shadows. Pure: the files were read at the edge
//! ([`super::operator`], the describe stage).

use super::codes;
use super::files::FolderFile;
use super::markdown::{Markdown, Section, Tier};
use super::resolve::{Inventory, Resolution};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceMap, Span};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A skill as read: a markdown file or a skill folder.
#[derive(Debug, Hash)]
pub(crate) struct Skill {
    /// The skill's name: the file's stem (`git-pr.md` → `git-pr`) or the folder's name.
    pub name: String,
    /// What it is written under in `context/<agent>/skills/` (and merged by): the file's
    /// or the folder's name.
    pub file: String,
    /// Where it was read: pod-relative path, or `<image>:<path>`.
    pub source: String,
    pub body: Body,
    /// Its instructions (the file, or the folder's `SKILL.md`) in the source map, read.
    pub text: FileId,
    pub markdown: Markdown,
}

#[derive(Debug, Hash)]
pub(crate) enum Body {
    File(Arc<str>),
    Folder(Arc<Folder>),
}

/// A skill folder, read whole.
#[derive(Debug, Hash)]
pub(crate) struct Folder {
    /// Every file by folder-relative path (bytes always present).
    pub files: BTreeMap<String, FolderFile>,
    pub kind: Kind,
    /// The valid tools its `tools.json` or `tool-manifest.yaml` brings, in order.
    pub tools: Vec<Brought>,
    pub invalid: Vec<super::InvalidTool>,
}

/// What a skill is, for the report.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// Instructions only: a markdown file, or a folder with `SKILL.md`.
    Markdown,
    /// A folder with `tools.json` (Skill Tools).
    SkillTools,
    /// A folder with `tool-manifest.yaml` (Dynamic Skill Tools).
    ToolManifest,
}

/// A tool a skill folder brings, in MCP's shape.
#[derive(Clone, Debug, Hash, PartialEq, Serialize)]
pub(crate) struct Brought {
    pub name: String,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(skip)]
    pub loc: Loc,
}

impl Brought {
    pub(crate) fn of_dynamic(t: &super::manifest::DynamicTool) -> Self {
        Brought { name: t.name.clone(), description: t.description.clone(), input_schema: t.input_schema.clone(), loc: t.loc }
    }

    pub(crate) fn of_skill_tool(t: &super::package::SkillTool) -> Self {
        let m = &t.tool;
        Brought { name: m.name.clone(), description: m.description.clone(), input_schema: m.input_schema.clone(), loc: t.loc }
    }
}

impl Skill {
    /// A markdown file's skill (`name` its file name), its text added to `sources`.
    pub(crate) fn file(file: String, source: String, text: Arc<str>, sources: &mut SourceMap) -> Skill {
        let stem = std::path::Path::new(&file).file_stem().map_or_else(|| file.clone(), |s| s.to_string_lossy().into_owned());
        let id = sources.add(source.clone(), text.clone());
        let markdown = super::markdown::parse(&text);
        Skill { name: stem, file, source, body: Body::File(text), text: id, markdown }
    }

    /// A skill folder's skill, its `SKILL.md` added to `sources`.
    pub(crate) fn folder(file: String, source: String, skill_md: &str, folder: Folder, sources: &mut SourceMap) -> Skill {
        let id = sources.add(format!("{source}/{}", super::SKILL_MD), skill_md);
        let markdown = super::markdown::parse(skill_md);
        Skill { name: file.clone(), file, source, body: Body::Folder(Arc::new(folder)), text: id, markdown }
    }

    /// The heading of `section` (the file's start when it has none).
    fn section_loc(&self, section: Section, sources: &SourceMap) -> Loc {
        match self.markdown.found.iter().find(|(s, _)| *s == section) {
            Some((_, line)) => Loc { file: self.text, span: sources.get(self.text).line(*line) },
            None => Loc { file: self.text, span: Span::FILE },
        }
    }

    /// How many bytes it holds.
    pub(crate) fn size(&self) -> u64 {
        match &self.body {
            Body::File(text) => text.len() as u64,
            Body::Folder(f) => f.files.values().map(|ff| ff.bytes.as_ref().map_or(0, |b| b.len() as u64)).sum(),
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        match &self.body {
            Body::File(_) => Kind::Markdown,
            Body::Folder(f) => f.kind,
        }
    }

    pub(crate) fn tools(&self) -> &[Brought] {
        match &self.body {
            Body::File(_) => &[],
            Body::Folder(f) => &f.tools,
        }
    }

    /// The files it is written as, relative to `skills/`: (path, bytes, executable).
    pub(crate) fn files(&self) -> Vec<(String, Arc<[u8]>, bool)> {
        match &self.body {
            Body::File(text) => vec![(self.file.clone(), Arc::from(text.as_bytes()), false)],
            Body::Folder(f) => f
                .files
                .iter()
                .map(|(rel, ff)| (format!("{}/{rel}", self.file), ff.bytes.clone().unwrap_or_else(|| Arc::from(&[][..])), ff.executable))
                .collect(),
        }
    }

    /// Whether every required section is checked: it looks like a SPEC-0023 skill, or
    /// `--strict` asks for all.
    pub(crate) fn linted(&self, strict: bool) -> bool {
        strict || self.markdown.is_spec()
    }

    /// `clawc::skill::missing_section` for each required section it lacks (once per skill,
    /// whoever carries it).
    pub(crate) fn lint(&self, strict: bool, sources: &SourceMap) -> Vec<Diagnostic> {
        if !self.linted(strict) {
            return Vec::new();
        }
        let loc = Loc { file: self.text, span: Span::FILE };
        let mut out: Vec<Diagnostic> = self
            .markdown
            .missing()
            .into_iter()
            .map(|s| {
                let what = if s == Section::Title {
                    "no title (a top-level `#` heading)".to_string()
                } else {
                    format!("no {} section", s.label())
                };
                Diagnostic::warning(codes::MISSING_SECTION, format!("skill \"{}\" has {what}", crate::diag::printable(&self.name)))
                    .at(loc)
                    .help(format!(
                        "SPEC-0023 skills have a title and Purpose, Tool Discovery, Execution and Validation sections; add `## {}`",
                        s.label()
                    ))
            })
            .collect();
        if self.markdown.is_spec() && self.markdown.discovery.is_empty() {
            out.push(
                Diagnostic::warning(
                    codes::MISSING_SECTION,
                    format!("skill \"{}\" lists no tool under Tool Discovery", crate::diag::printable(&self.name)),
                )
                .at(self.section_loc(Section::ToolDiscovery, sources))
                .help("name each candidate in a list item's first code span, most preferred first: - `mcp__github__create_pull_request`"),
            );
        }
        out
    }
}

/// Where a carried skill comes from, in merge order.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Layer {
    /// The descriptor skill of a service surface.
    Descriptor { service: String },
    /// An `x-claw.skills` entry.
    Pod { loc: Loc },
}

impl Layer {
    fn rank(&self) -> u8 {
        match self {
            Layer::Descriptor { .. } => 0,
            Layer::Pod { .. } => 1,
        }
    }
}

/// One skill of an agent after the merge.
#[derive(Clone, Debug, Hash)]
pub(crate) struct Entry {
    pub skill: Arc<Skill>,
    pub layer: Layer,
    /// What it replaced, earliest first: (layer, source).
    pub replaced: Vec<(Layer, String)>,
}

/// Merges by written name (§6.5 of the Clawdapus formats): descriptor skills, then the
/// pod's; a later entry replaces an earlier one of the same name and keeps its position;
/// new names are appended. Two of one layer with one name is a warning.
pub(crate) fn merge(entries: impl IntoIterator<Item = (Layer, Arc<Skill>)>, consumer: &str) -> (Vec<Entry>, Vec<Diagnostic>) {
    let mut out: Vec<Entry> = Vec::new();
    let mut diags = Vec::new();
    for (layer, skill) in entries {
        let Some(at) = out.iter().position(|e| e.skill.file == skill.file) else {
            out.push(Entry { skill, layer, replaced: Vec::new() });
            continue;
        };
        let old = &out[at];
        if old.layer.rank() == layer.rank() && !Arc::ptr_eq(&old.skill, &skill) {
            let shown = crate::diag::printable(&skill.file);
            let message = match (&old.layer, &layer) {
                (Layer::Descriptor { service: first }, Layer::Descriptor { service: then }) => format!(
                    "agent \"{consumer}\": the descriptor skills of services \"{first}\" and \"{then}\" are both named \"{shown}\"; {then}'s replaces {first}'s"
                ),
                _ => format!(
                    "agent \"{consumer}\": x-claw.skills lists two skills named \"{shown}\": `{}` replaces `{}`",
                    crate::diag::printable(&skill.source),
                    crate::diag::printable(&old.skill.source)
                ),
            };
            let d = Diagnostic::warning(codes::DUPLICATE_NAME, message)
                .help(format!("both would be written as skills/{shown}; rename one of them, or drop the one that is not wanted"));
            diags.push(match &layer {
                Layer::Pod { loc } => d.at(*loc),
                Layer::Descriptor { .. } => d,
            });
        }
        let mut replaced = std::mem::take(&mut out[at].replaced);
        if !Arc::ptr_eq(&out[at].skill, &skill) {
            replaced.push((out[at].layer.clone(), out[at].skill.source.clone()));
        }
        out[at] = Entry { skill, layer, replaced };
    }
    (out, diags)
}

/// An agent's tier (`CLAUDEOPS_TIER`, 1 when unset or unreadable).
pub(crate) fn tier(env: Option<&crate::pod::Spanned<Option<String>>>, consumer: &str) -> (u8, Option<Diagnostic>) {
    let Some(value) = env.and_then(|v| v.value.as_deref().map(|s| (s.trim(), v.loc))) else { return (1, None) };
    match value.0 {
        "1" => (1, None),
        "2" => (2, None),
        "3" => (3, None),
        other => {
            let d = Diagnostic::warning(
                codes::BAD_TIER,
                format!(
                    "agent \"{consumer}\": CLAUDEOPS_TIER \"{}\" is not 1, 2 or 3; the agent is treated as tier 1",
                    crate::diag::printable(other)
                ),
            )
            .at(value.1)
            .help("set CLAUDEOPS_TIER to 1 (observe), 2 (safe remediation) or 3 (full remediation)");
            (1, Some(d))
        }
    }
}

/// Why a skill is not written into the agent's tree.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize)]
pub(crate) struct HeldBack {
    /// The tier it requires (`None`: unreadable).
    pub requires: Option<u8>,
    pub reason: String,
}

/// One skill of an agent, as clawc judged it for that agent.
#[derive(Clone, Debug, Hash)]
pub(crate) struct Judged {
    pub entry: Entry,
    pub held_back: Option<HeldBack>,
    /// `None`: not a SPEC-0023 skill, or it lists no candidate.
    pub resolution: Option<Resolution>,
    /// The tools it brings that a granted tool shadows: (name, the granted tool).
    pub shadowed: Vec<(String, String)>,
}

impl Judged {
    /// SPEC-0023's log line for it.
    pub(crate) fn line(&self) -> Option<String> {
        self.resolution.as_ref().map(|r| r.line(&self.entry.skill.name))
    }
}

/// Judges each merged skill for an agent of `tier` with `inventory`: held back by tier,
/// resolved, and shadowed tools found. Errors: a skill no tool can run.
pub(crate) fn judge(
    entries: Vec<Entry>,
    tier: u8,
    inventory: &Inventory,
    consumer: &str,
    sources: &SourceMap,
) -> (Vec<Judged>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let shown: BTreeMap<&str, String> = inventory.granted.iter().map(|g| (g.shown.as_str(), format!("{}.{}", g.service, g.tool))).collect();
    let judged = entries
        .into_iter()
        .map(|entry| {
            let skill = &entry.skill;
            let held_back = held_back(skill, tier, consumer, sources, &mut diags);
            let resolution = if skill.markdown.is_spec() {
                super::resolve::resolve(&skill.markdown.discovery, &skill.markdown.capability(&skill.name), inventory)
            } else {
                None
            };
            if held_back.is_none()
                && let Some(r @ Resolution::NoTool { .. }) = &resolution
            {
                diags.push(no_tool(skill, r, inventory, consumer, sources));
            }
            let shadowed: Vec<(String, String)> =
                skill.tools().iter().filter_map(|t| shown.get(t.name.as_str()).map(|by| (t.name.clone(), by.clone()))).collect();
            for (name, by) in &shadowed {
                let loc = skill.tools().iter().find(|t| &t.name == name).map(|t| t.loc);
                let d = Diagnostic::warning(
                    codes::SHADOWED_TOOL,
                    format!("agent \"{consumer}\": skill tool \"{}\" is shadowed by the granted tool {by}", crate::diag::printable(name)),
                )
                .help("the pod's granted tool wins on a name conflict; rename the skill's tool if both are wanted");
                diags.push(if let Some(l) = loc { d.at(l) } else { d });
            }
            Judged { entry, held_back, resolution, shadowed }
        })
        .collect();
    (judged, diags)
}

fn held_back(skill: &Skill, tier: u8, consumer: &str, sources: &SourceMap, diags: &mut Vec<Diagnostic>) -> Option<HeldBack> {
    match skill.markdown.tier.as_ref()? {
        Tier::Min(n) if *n <= tier => None,
        Tier::Min(n) => Some(HeldBack {
            requires: Some(*n),
            reason: format!("requires tier {n}; this agent is tier {tier} (escalate to a tier {n} agent)"),
        }),
        Tier::Unreadable(text) => {
            diags.push(
                Diagnostic::warning(
                    codes::BAD_TIER,
                    format!(
                        "agent \"{consumer}\": the Tier Requirement of skill \"{}\" names no tier (\"{}\"); the skill is held back",
                        crate::diag::printable(&skill.name),
                        crate::diag::printable(text)
                    ),
                )
                .at(skill.section_loc(Section::TierRequirement, sources))
                .help("write the minimum tier as `Tier 2 minimum` (tiers are 1, 2 and 3)"),
            );
            Some(HeldBack { requires: None, reason: "its Tier Requirement names no tier".to_string() })
        }
    }
}

fn no_tool(skill: &Skill, r: &Resolution, inventory: &Inventory, consumer: &str, sources: &SourceMap) -> Diagnostic {
    let searched: Vec<String> =
        skill.markdown.discovery.iter().map(|c| format!("{} ({})", crate::diag::printable(&c.name), c.kind.label())).collect();
    let has: BTreeSet<&str> = inventory.granted.iter().map(|g| g.shown.as_str()).collect();
    let granted = if has.is_empty() { "no tools".to_string() } else { has.into_iter().collect::<Vec<_>>().join(", ") };
    let clis = if inventory.cli.is_empty() {
        "no CLIs known (label the image with claw.cli, or give clawc the image with --images)".to_string()
    } else {
        format!("{} CLIs", inventory.cli.len())
    };
    // The names come from the skill file: printable, so a CI log cannot be steered.
    Diagnostic::error(codes::NO_TOOL, format!("agent \"{consumer}\": {}", crate::diag::printable(&r.line(&skill.name))))
        .at(skill.section_loc(Section::ToolDiscovery, sources))
        .help(format!(
            "it searched {}; the agent has {granted} and {clis}. Grant one of them (x-claw.tools), add the CLI to the image, or drop the skill",
            searched.join(", ")
        ))
}
