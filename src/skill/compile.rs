//! `clawc skill compile DIR`: the skill folder's tools checked, shadowed by the static
//! tools, and (for a `tool-manifest.yaml`) rendered into the three files the Dynamic Skill
//! Tools design writes beside the manifest:
//!
//! - `dynamic_tools.json`: the valid, unshadowed tools, normalised (aliases resolved,
//!   timeout and retry merged), in manifest order;
//! - `dynamic_tools.lock.json`: every file of the skill folder with its SHA-256, the
//!   static tools compiled against and the compiler's version (no timestamps);
//! - `dynamic_tools.report.json`: the counts, `valid`, `invalid` (with every reason) and
//!   `shadowed` (with the static tool that wins).
//!
//! A folder with `tools.json` and no manifest is a Skill Tools package: it is validated
//! and counted, and nothing is written (`tools.json` is itself what a runtime loads). A
//! folder with both compiles the manifest and validates the package too (its errors fail
//! the run; the counts and files are the manifest's). The output is deterministic: the
//! same folder gives the same bytes whatever the order of its files on disk or of the keys
//! in the manifest's mappings.

use super::files::SkillDir;
use super::manifest::{self, DynamicTool, Manifest};
use super::{InvalidTool, codes, package};
use crate::diag::{Diagnostic, Diagnostics};
use crate::sourcemap::SourceMap;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The normalised tools.
pub(crate) const DYNAMIC_TOOLS: &str = "dynamic_tools.json";
/// The compile report.
pub(crate) const REPORT: &str = "dynamic_tools.report.json";
/// Source hashes and compile metadata.
pub(crate) const LOCK: &str = "dynamic_tools.lock.json";
/// The files `skill compile` owns in a skill folder, in the order they are replaced (the
/// lock last: it says what the others were compiled from).
pub(crate) const OUTPUTS: [&str; 3] = [DYNAMIC_TOOLS, REPORT, LOCK];

/// The version of the three output formats (`schemas/dynamic-tools*.schema.json`).
const FORMAT_VERSION: u32 = 1;

/// What `skill compile` is asked.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub dir: &'a Path,
    /// How diagnostics name the folder (`skills/weather/`; empty for `.`).
    pub prefix: String,
    /// The names the model sees for the static tools: a dynamic tool of one of these
    /// names is shadowed.
    pub static_tools: BTreeSet<String>,
}

/// The summary `skill compile` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    /// Valid tools that are not shadowed.
    pub compiled_ok: usize,
    pub invalid_tools: usize,
    pub shadowed_tools: usize,
}

/// What was compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    /// A `tool-manifest.yaml` (the three files are written).
    Manifest,
    /// A Skill Tools package alone (nothing is written).
    Package,
}

/// The files to write, by name, in the order they are replaced.
pub(crate) type Files = Vec<(&'static str, Vec<u8>)>;

/// The outcome: diagnostics (sorted), and on success the counts and the files to write.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub sources: SourceMap,
    pub diagnostics: Diagnostics,
    pub what: Option<What>,
    /// `None` when an error stops the compile.
    pub counts: Option<Counts>,
    /// The folder (symlinks resolved) and the files to write there, by name.
    pub outputs: Option<(PathBuf, Files)>,
}

/// A shadowed dynamic tool and the static tool that wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shadowed {
    pub name: String,
    pub by: String,
}

pub(crate) fn compile(req: &Request<'_>) -> Compiled {
    let mut sources = SourceMap::default();
    let mut diags = Vec::new();
    let finish = |sources: SourceMap, diags: Vec<Diagnostic>, what, counts, outputs| {
        let diagnostics = Diagnostics(diags).sorted(&sources);
        let failed = diagnostics.has_errors();
        Compiled { diagnostics, what, counts: if failed { None } else { counts }, outputs: if failed { None } else { outputs }, sources }
    };
    let dir = match SkillDir::open(req.dir, &req.prefix) {
        Ok(d) => d,
        Err(d) => return finish(sources, vec![d], None, None, None),
    };
    let has_manifest = dir.has(super::TOOL_MANIFEST);
    let has_package = dir.has(super::TOOLS_JSON);
    if !has_manifest && !has_package {
        let shown = dir.shown_dir();
        let d = Diagnostic::error(
            crate::source::diags::MISSING,
            format!("`{shown}` holds neither {} nor {}", super::TOOL_MANIFEST, super::TOOLS_JSON),
        )
        .help("pass a skill folder with a tool-manifest.yaml (dynamic tools) or a tools.json (Skill Tools)");
        return finish(sources, vec![d], None, None, None);
    }
    let package = if has_package {
        let (p, ds) = package::load(&dir, &mut sources);
        diags.extend(ds);
        p
    } else {
        None
    };
    if !has_manifest {
        let counts = package.map(|p| {
            let shadowed = shadow(p.tools.iter().map(|t| (t.tool.name.as_str(), t.loc)), &req.static_tools, &mut diags);
            Counts { compiled_ok: p.tools.len() - shadowed.len(), invalid_tools: p.invalid.len(), shadowed_tools: shadowed.len() }
        });
        return finish(sources, diags, Some(What::Package), counts, None);
    }
    let (manifest, ds) = manifest::load(&dir, &mut sources);
    diags.extend(ds);
    let Some(manifest) = manifest else { return finish(sources, diags, Some(What::Manifest), None, None) };
    let shadowed = shadow(manifest.tools.iter().map(|t| (t.name.as_str(), t.loc)), &req.static_tools, &mut diags);
    let counts = Counts {
        compiled_ok: manifest.tools.len() - shadowed.len(),
        invalid_tools: manifest.invalid.len(),
        shadowed_tools: shadowed.len(),
    };
    if diags.iter().any(Diagnostic::is_error) {
        return finish(sources, diags, Some(What::Manifest), None, None);
    }
    let skip: BTreeSet<String> = OUTPUTS.iter().map(|s| (*s).to_string()).collect();
    let files = match dir.hash_all(&skip) {
        Ok(f) => f,
        Err(ds) => {
            diags.extend(ds);
            return finish(sources, diags, Some(What::Manifest), None, None);
        }
    };
    let name = dir.name();
    let kept: Vec<&DynamicTool> = manifest.tools.iter().filter(|t| !shadowed.iter().any(|s| s.name == t.name)).collect();
    let outputs = vec![
        (DYNAMIC_TOOLS, to_bytes(&dynamic_tools(&name, &manifest, &kept))),
        (REPORT, to_bytes(&report(&name, counts, &kept, &manifest.invalid, &shadowed))),
        (LOCK, to_bytes(&lock(&name, &req.static_tools, &files))),
    ];
    let real = dir.path().to_path_buf();
    finish(sources, diags, Some(What::Manifest), Some(counts), Some((real, outputs)))
}

/// The dynamic tools named like a static tool (by the name the model sees), each with a
/// `clawc::skill::shadowed_tool` warning. The pod compile calls this with an agent's
/// granted tools.
pub(crate) fn shadow<'t>(
    tools: impl Iterator<Item = (&'t str, crate::sourcemap::Loc)>,
    statics: &BTreeSet<String>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Shadowed> {
    let mut out = Vec::new();
    for (name, loc) in tools {
        if let Some(by) = statics.get(name) {
            let shown = crate::diag::printable(name);
            diags.push(
                Diagnostic::warning(codes::SHADOWED_TOOL, format!("dynamic tool \"{shown}\" is shadowed by the static tool \"{shown}\""))
                    .at(loc)
                    .help("static tools win on a name conflict; rename the dynamic tool if both are wanted"),
            );
            out.push(Shadowed { name: name.to_string(), by: by.clone() });
        }
    }
    out
}

/// JSON with a 2-space indent and one trailing newline. Objects keep the field order of
/// the structs below (the name first, as a reader looks for it); free-form JSON (an
/// `input_schema`) has its keys sorted.
fn to_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("in-memory values serialize");
    out.push(b'\n');
    out
}

/// `dynamic_tools.json` (`schemas/dynamic-tools.schema.json`).
#[derive(Serialize)]
struct DynamicToolsFile<'a> {
    version: u32,
    skill: &'a str,
    manifest_version: Option<&'a str>,
    tools: &'a [&'a DynamicTool],
}

fn dynamic_tools<'a>(skill: &'a str, manifest: &'a Manifest, kept: &'a [&'a DynamicTool]) -> DynamicToolsFile<'a> {
    DynamicToolsFile { version: FORMAT_VERSION, skill, manifest_version: manifest.version.as_deref(), tools: kept }
}

/// `dynamic_tools.report.json` (`schemas/dynamic-tools-report.schema.json`).
#[derive(Serialize)]
struct ReportFile<'a> {
    version: u32,
    skill: &'a str,
    manifest: &'static str,
    counts: Counts,
    valid: Vec<ValidEntry<'a>>,
    invalid: Vec<InvalidEntry<'a>>,
    shadowed: Vec<ShadowedEntry<'a>>,
}

#[derive(Serialize)]
struct ValidEntry<'a> {
    name: &'a str,
    executor: &'static str,
    line: u32,
    column: u32,
    policy_from: super::policy::Origins,
}

#[derive(Serialize)]
struct InvalidEntry<'a> {
    index: usize,
    name: Option<&'a str>,
    reasons: Vec<ReasonEntry<'a>>,
}

#[derive(Serialize)]
struct ReasonEntry<'a> {
    rule: &'static str,
    message: &'a str,
    line: u32,
    column: u32,
}

#[derive(Serialize)]
struct ShadowedEntry<'a> {
    name: &'a str,
    static_tool: &'a str,
}

fn report<'a>(
    skill: &'a str,
    counts: Counts,
    kept: &[&'a DynamicTool],
    invalid: &'a [InvalidTool],
    shadowed: &'a [Shadowed],
) -> ReportFile<'a> {
    let valid = kept
        .iter()
        .map(|t| ValidEntry {
            name: &t.name,
            executor: t.executor.kind(),
            line: t.loc.span.line,
            column: t.loc.span.col,
            policy_from: t.origins,
        })
        .collect();
    let invalid = invalid
        .iter()
        .map(|t| InvalidEntry {
            index: t.index,
            name: t.name.as_deref(),
            reasons: t.reasons.iter().map(|r| ReasonEntry { rule: r.rule, message: &r.message, line: r.line, column: r.column }).collect(),
        })
        .collect();
    let shadowed = shadowed.iter().map(|s| ShadowedEntry { name: &s.name, static_tool: &s.by }).collect();
    ReportFile { version: FORMAT_VERSION, skill, manifest: super::TOOL_MANIFEST, counts, valid, invalid, shadowed }
}

/// `dynamic_tools.lock.json` (`schemas/dynamic-tools-lock.schema.json`).
#[derive(Serialize)]
struct LockFile<'a> {
    version: u32,
    compiler: Compiler,
    skill: &'a str,
    manifest: &'static str,
    static_tools: &'a BTreeSet<String>,
    files: Vec<LockedFile<'a>>,
}

#[derive(Serialize)]
struct Compiler {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct LockedFile<'a> {
    path: &'a str,
    sha256: &'a str,
}

fn lock<'a>(skill: &'a str, statics: &'a BTreeSet<String>, files: &'a BTreeMap<String, String>) -> LockFile<'a> {
    LockFile {
        version: FORMAT_VERSION,
        compiler: Compiler { name: "clawc", version: env!("CARGO_PKG_VERSION") },
        skill,
        manifest: super::TOOL_MANIFEST,
        static_tools: statics,
        files: files.iter().map(|(path, sha256)| LockedFile { path, sha256 }).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic PRNG (xorshift), so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n.max(1) as u64) as usize
        }
    }

    const NOISE: &[&str] = &[
        "{", "}", "[", "]", ":", "-", "&a", "*a", "<<", "{{", "}}", "{%", "\"", "'", "\n", "  ", "#", "null", "0", "-1", "é", ",", "..",
        "/",
    ];

    fn mutate(text: &str, rng: &mut Rng) -> String {
        let mut s: Vec<char> = text.chars().collect();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(s.len() + 1);
            if rng.below(2) == 0 && at < s.len() {
                let len = 1 + rng.below(8);
                s.drain(at..(at + len).min(s.len()));
            } else {
                let noise: Vec<char> = NOISE[rng.below(NOISE.len())].chars().collect();
                s.splice(at..at, noise);
            }
        }
        s.into_iter().collect()
    }

    /// Thousands of random edits of the fixtures: every run ends in counts or in
    /// diagnostics with a code, each renderable, never in a panic.
    #[test]
    fn mutated_skills_never_panic() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/skills");
        let mut rng = Rng(0x5eed_c1a0);
        for (skill, file) in [("weather", "tool-manifest.yaml"), ("count-words", "tools.json"), ("count-words", "SKILL.md")] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(skill);
            std::fs::create_dir_all(dir.join("scripts")).unwrap();
            for e in std::fs::read_dir(root.join(skill).join("scripts")).unwrap() {
                let e = e.unwrap();
                std::fs::copy(e.path(), dir.join("scripts").join(e.file_name())).unwrap();
            }
            for f in ["SKILL.md", "tool-manifest.yaml", "tools.json"] {
                if let Ok(t) = std::fs::read_to_string(root.join(skill).join(f)) {
                    std::fs::write(dir.join(f), t).unwrap();
                }
            }
            let original = std::fs::read_to_string(root.join(skill).join(file)).unwrap();
            for _ in 0..300 {
                std::fs::write(dir.join(file), mutate(&original, &mut rng)).unwrap();
                let req = Request { dir: &dir, prefix: format!("{skill}/"), static_tools: ["alerts".to_string()].into() };
                let out = compile(&req);
                for d in &out.diagnostics.0 {
                    let _ = format!("{:?}", d.to_report(&out.sources));
                    let _ = d.to_json(&out.sources);
                }
                assert_eq!(out.counts.is_some(), !out.diagnostics.has_errors());
            }
        }
    }
}
