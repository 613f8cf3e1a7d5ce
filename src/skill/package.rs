//! A Skill Tools package: a skill folder with `SKILL.md` and `tools.json` (the Skill Tools
//! specification, version 1.0.0).
//!
//! Package-level faults are errors (`clawc::skill::invalid_package`, naming the file): a
//! folder name the Agent Skills rules refuse, a folder name that differs from the `name` in
//! `SKILL.md`'s frontmatter, no `SKILL.md` or no frontmatter `name`, `tools.json` that is
//! not JSON or not an array (or holds over 10,000 tools). A single tool that breaks a rule
//! is a warning (`clawc::skill::invalid_tool`) and is skipped; the rest load. Valid tools
//! are normalised to the MCP shape `{name, description, inputSchema}` and each
//! `inputSchema` is checked as a JSON Schema as every descriptor's is.

use super::files::SkillDir;
use super::json::Json;
use super::{InvalidTool, ToolProblems, codes, names, params};
use crate::describe::json_span::{Locator, Seg};
use crate::describe::schema;
use crate::diag::Diagnostic;
use crate::sourcemap::{Loc, SourceMap, Span};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A tool as MCP lists it (`tools/list`): what an agent is shown.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct McpTool {
    pub name: String,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// A valid Skill Tools tool: its MCP shape and its handler.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SkillTool {
    pub tool: McpTool,
    /// The handler, folder-relative and normalised (`None`: the runtime's stub).
    pub script: Option<String>,
    /// Where it is declared.
    pub loc: Loc,
}

/// A package as loaded: its valid tools in declaration order and the skipped ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Package {
    /// The skill's name (its folder's).
    pub name: String,
    pub tools: Vec<SkillTool>,
    pub invalid: Vec<InvalidTool>,
}

/// The keys of a `tools.json` tool. Another key within two edits of one of these is taken
/// for a misspelling (the tool is skipped); other keys are ignored, as the specification's
/// runtimes ignore them.
const TOOL_KEYS: &[&str] = &["name", "description", "script", "parameters"];

/// Loads the package in `dir` (which holds `tools.json`). `None` when a package-level
/// error was found; the diagnostics hold it and every tool warning.
pub(crate) fn load(dir: &SkillDir, sources: &mut SourceMap) -> (Option<Package>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let name = dir.name();
    check_skill_md(dir, &name, sources, &mut diags);
    let tools_name = dir.shown(super::TOOLS_JSON);
    let text = match dir.read_text(super::TOOLS_JSON) {
        Ok(Some(t)) => t,
        Ok(None) => {
            diags.push(
                Diagnostic::error(codes::INVALID_PACKAGE, format!("`{tools_name}` does not exist"))
                    .help("a Skill Tools package declares its tools in tools.json at the root of the skill folder"),
            );
            return (None, diags);
        }
        Err(d) => {
            diags.push(d);
            return (None, diags);
        }
    };
    let file = sources.add(tools_name.clone(), text);
    let src = sources.get(file);
    let root = match Json::parse(&src.text) {
        Ok(j) => j,
        Err(e) => {
            let offset = line_col_offset(&src.text, e.line(), e.column());
            let d = Diagnostic::error(codes::INVALID_PACKAGE, format!("`{tools_name}` is not valid JSON: {e}"))
                .at(Loc { file, span: src.span(offset, offset) })
                .help("tools.json is one JSON array of tool declarations; fix the syntax here");
            diags.push(d);
            return (None, diags);
        }
    };
    let items = match &root {
        Json::Array(items) => items,
        other => {
            let d =
                Diagnostic::error(codes::INVALID_PACKAGE, format!("`{tools_name}` is not an array of tools (it is {})", other.kind_name()))
                    .at(Loc { file, span: src.span(0, src.text.len().min(1)) })
                    .help("write tools.json as an array, even for one tool: [{\"name\": …, \"description\": …}]");
            diags.push(d);
            return (None, diags);
        }
    };
    if items.len() > super::MAX_TOOLS {
        diags.push(
            Diagnostic::error(
                codes::INVALID_PACKAGE,
                format!("`{tools_name}` declares {} tools; the limit is {}", items.len(), super::MAX_TOOLS),
            )
            .in_file(file)
            .help("split the tools over several skills"),
        );
        return (None, diags);
    }
    let mut locator = Locator::new(src);
    let mut seen: BTreeMap<String, (usize, Loc)> = BTreeMap::new();
    let mut tools = Vec::new();
    let mut invalid = Vec::new();
    let mut budget = schema::PATTERN_BUDGET;
    let mut tool_diags = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let mut at = |path: &[Seg]| {
            let mut p = vec![Seg::Index(i)];
            p.extend_from_slice(path);
            Loc { file, span: locator.span_of(&p) }
        };
        let mut problems = ToolProblems::new(i);
        let tool = check_tool(dir, item, i, &mut seen, &mut budget, &mut problems, &mut at);
        match (problems.finish(&mut tool_diags), tool) {
            (Some(bad), _) => invalid.push(bad),
            (None, Some(t)) => tools.push(t),
            (None, None) => {}
        }
    }
    diags.extend(crate::diag::cap(tool_diags));
    let failed = diags.iter().any(Diagnostic::is_error);
    ((!failed).then_some(Package { name, tools, invalid }), diags)
}

/// The folder name rules, and `SKILL.md`'s frontmatter `name` equal to the folder's.
fn check_skill_md(dir: &SkillDir, name: &str, sources: &mut SourceMap, diags: &mut Vec<Diagnostic>) {
    let folder = match dir.shown_dir().as_str() {
        "." => crate::diag::printable(name),
        d => d.to_string(),
    };
    if let Some(why) = names::skill_name_problem(name) {
        diags.push(
            Diagnostic::error(
                codes::INVALID_PACKAGE,
                format!("the skill folder `{folder}` has an invalid name \"{}\": {why}", crate::diag::printable(name)),
            )
            .help("rename the folder: lowercase letters, digits and hyphens, at most 64, no `--`, not starting or ending with `-`"),
        );
    }
    let md_name = dir.shown(super::SKILL_MD);
    let text = match dir.read_text(super::SKILL_MD) {
        Ok(Some(t)) => t,
        Ok(None) => {
            diags.push(
                Diagnostic::error(codes::INVALID_PACKAGE, format!("`{md_name}` does not exist"))
                    .help("a skill folder holds a SKILL.md with YAML frontmatter naming the skill (`name: <folder name>`)"),
            );
            return;
        }
        Err(d) => {
            diags.push(d);
            return;
        }
    };
    let file = sources.add(md_name.clone(), text);
    let node = match super::frontmatter::parse(file, sources.get(file)) {
        Ok(n) => n,
        Err(ds) => {
            diags.extend(ds);
            return;
        }
    };
    let help = "start SKILL.md with a frontmatter block: `---`, `name: <folder name>`, `description: …`, `---`";
    let Some(node) = node else {
        diags.push(Diagnostic::error(codes::INVALID_PACKAGE, format!("`{md_name}` has no YAML frontmatter")).in_file(file).help(help));
        return;
    };
    match node.get("name") {
        Some(n) if n.as_str().is_some() && n.as_seq().is_none() && n.as_map().is_none() => {
            let declared = n.as_str().unwrap_or_default();
            if declared != name {
                diags.push(
                    Diagnostic::error(
                        codes::INVALID_PACKAGE,
                        format!(
                            "`{md_name}` names the skill \"{}\", but its folder is \"{}\"",
                            crate::diag::printable(declared),
                            crate::diag::printable(name)
                        ),
                    )
                    .at(n.loc)
                    .label("the frontmatter name")
                    .help("the folder name and the frontmatter `name` must be equal: rename one of them"),
                );
            }
        }
        Some(n) => diags.push(
            Diagnostic::error(
                codes::INVALID_PACKAGE,
                format!("`{md_name}`: the frontmatter `name` must be a string, not {}", n.kind_name()),
            )
            .at(n.loc)
            .help(help),
        ),
        None => {
            let loc = if node.as_map().is_some() { node.loc } else { Loc { file, span: Span::FILE } };
            diags.push(Diagnostic::error(codes::INVALID_PACKAGE, format!("`{md_name}`: the frontmatter has no `name`")).at(loc).help(help));
        }
    }
}

/// Checks tool `i`; its problems go to `problems`. The tool when it has none.
fn check_tool(
    dir: &SkillDir,
    item: &Json,
    i: usize,
    seen: &mut BTreeMap<String, (usize, Loc)>,
    budget: &mut usize,
    problems: &mut ToolProblems,
    at: &mut impl FnMut(&[Seg]) -> Loc,
) -> Option<SkillTool> {
    let Json::Object(fields) = item else {
        problems.add(
            "shape",
            format!("tools[{i}] is {}, not an object", item.kind_name()),
            at(&[]),
            "each tool is an object with name and description",
        );
        return None;
    };
    if let Some(n) = item.get("name").and_then(Json::as_str) {
        problems.named(n);
    }
    let key = |k: &str| vec![Seg::Key(k.to_string())];
    if let Some(k) = item.duplicate_key() {
        let msg = format!("the key `{}` is given twice (JSON parsers disagree on which one wins)", crate::diag::printable(k));
        problems.add("shape", msg, at(&[]), "give each key once");
    }
    for (k, _) in fields {
        if let Some(meant) = crate::diag::within_edits(k, TOOL_KEYS.iter().copied(), 2) {
            let msg = format!("`{}` looks like `{meant}` misspelt", crate::diag::printable(k));
            problems.add("misspelt_key", msg, at(&key(k)), "fix the key's spelling (other keys are ignored)");
        }
    }
    let name = match item.get("name") {
        Some(Json::String(n)) if names::is_skill_tool_name(n) => Some(n.clone()),
        Some(Json::String(n)) => {
            let msg = format!("the name \"{}\" must match ^[a-z][a-z0-9_]*$", crate::diag::printable(n));
            problems.add(
                "name",
                msg,
                at(&key("name")),
                "lowercase letters, digits and underscores, starting with a letter (e.g. count_words)",
            );
            None
        }
        Some(other) => {
            problems.add(
                "name",
                format!("`name` must be a string, not {}", other.kind_name()),
                at(&key("name")),
                "give the tool a name such as count_words",
            );
            None
        }
        None => {
            problems.add("name", "`name` is required", at(&[]), "give the tool a name such as count_words");
            None
        }
    };
    if let Some(Json::String(n)) = item.get("name") {
        match seen.get(n) {
            Some(&(first, first_loc)) => {
                let msg = format!("the name is declared twice; the first, tools[{first}], is kept");
                problems.add("duplicate", msg, at(&key("name")), "tool names are unique within tools.json: rename or remove this one");
                problems.also(first_loc, "first declared here");
            }
            None => {
                seen.insert(n.clone(), (i, at(&key("name"))));
            }
        }
    }
    let description = match item.get("description") {
        Some(Json::String(d)) if !d.trim().is_empty() => Some(d.clone()),
        Some(Json::String(_)) => {
            problems.add("description", "`description` is empty", at(&key("description")), "say what the tool does: the agent reads it");
            None
        }
        Some(other) => {
            let msg = format!("`description` must be a string, not {}", other.kind_name());
            problems.add("description", msg, at(&key("description")), "say what the tool does: the agent reads it");
            None
        }
        None => {
            problems.add("description", "`description` is required", at(&[]), "say what the tool does: the agent reads it");
            None
        }
    };
    let script = match item.get("script") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => match dir.script(s) {
            Ok(rel) => Some(rel),
            Err(why) => {
                problems.add("script", why, at(&key("script")), "`script` is a path relative to the skill folder, to a file inside it");
                None
            }
        },
        Some(other) => {
            let msg = format!("`script` must be a string, not {}", other.kind_name());
            problems.add("script", msg, at(&key("script")), "`script` is a path relative to the skill folder, to a file inside it");
            None
        }
    };
    let help = "parameters take type (string, number, boolean, object, array), description, and optionally enum and optional";
    let input_schema = match params::input_schema(item.get("parameters")) {
        Ok(s) => Some(s),
        Err(ps) => {
            for (msg, path) in ps {
                problems.add("parameters", msg, at(&path), help);
            }
            None
        }
    };
    if let Some(s) = &input_schema
        && let Err(p) = schema::check(s, budget)
    {
        let msg = format!("the inputSchema built from `parameters` is not a valid JSON Schema: {}", p.message);
        problems.add("parameters", msg, at(&key("parameters")), help);
    }
    if !problems.is_empty() {
        return None;
    }
    let loc = at(&key("name"));
    Some(SkillTool { tool: McpTool { name: name?, description: description?, input_schema: input_schema? }, script, loc })
}

/// Byte offset of serde_json's 1-based line and column.
fn line_col_offset(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (start + col.saturating_sub(1)).min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_tools_take_the_mcp_shape_with_required_in_declaration_order() {
        let dir =
            SkillDir::open(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/skills/count-words"), "count-words/").unwrap();
        let mut sources = SourceMap::default();
        let (package, diags) = load(&dir, &mut sources);
        let package = package.expect("the fixture loads");
        assert_eq!(package.name, "count-words");
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(package.invalid.len(), 1);
        assert_eq!(package.invalid[0].name.as_deref(), Some("Count-Lines"));
        let tools: Vec<Value> = package.tools.iter().map(|t| serde_json::to_value(&t.tool).unwrap()).collect();
        assert_eq!(
            tools[0],
            json!({
                "name": "count_words",
                "description": "Count the words in a text",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "The text"},
                        "mode": {"type": "string", "description": "How to split", "enum": ["spaces", "unicode"]},
                        "limit": {"type": "number", "description": "Stop after this many"}
                    },
                    "required": ["text", "limit"]
                }
            })
        );
        assert_eq!(package.tools[0].script.as_deref(), Some("scripts/count_words.js"));
        assert_eq!(package.tools[1].script, None, "no script: the runtime's stub");
        assert_eq!(tools[1]["inputSchema"], json!({"type": "object", "properties": {}, "required": []}));
    }
}
