//! What `clawc merge` owns in each runner file: one row per file a native runner
//! projection writes. `docs/merge.md` is rendered from this table ([`markdown`]) and a test
//! keeps the committed file in step. The rows come from the runner table: each runner's
//! files (`src/runner/<runner>.rs`) say their format and what clawc owns in them.
//!
//! A path is a list of object keys from the document root. What a row does not own is the
//! user's: kept as it is, or, where the target lacks a key the fragment has, filled in
//! from the fragment (see `docs/merge.md`).

pub(crate) use crate::runner::native::{Item, Own, Root, Syntax};
use crate::runner::{RUNNERS, Runner};
use std::sync::LazyLock;

/// One runner file: a row of a runner's `files` in `crate::runner::RUNNERS`.
#[derive(Debug)]
pub(crate) struct FileRule {
    pub(crate) runner: Runner,
    pub(crate) role: Root,
    /// Relative to the role's root, `/`-separated.
    pub(crate) path: &'static str,
    pub(crate) syntax: Syntax,
    pub(crate) owns: &'static [Own],
}

impl FileRule {
    /// `home/.codex/config.toml`: the path under `<out>/runners/<agent-id>/`.
    pub(crate) fn role_path(&self) -> String {
        format!("{}/{}", self.role.dir(), self.path)
    }
}

/// Every runner file, in the order of the runner table.
pub(crate) static RULES: LazyLock<Vec<FileRule>> = LazyLock::new(|| {
    RUNNERS
        .iter()
        .flat_map(|s| {
            s.native.files.iter().map(|f| FileRule { runner: s.runner, role: f.root, path: f.path, syntax: f.syntax, owns: f.owns })
        })
        .collect()
});

/// Whether the `/`-separated components of `path` end with those of `suffix`.
pub(crate) fn ends_with(path: &str, suffix: &str) -> bool {
    let p: Vec<&str> = path.split(['/', '\\']).filter(|c| !c.is_empty() && *c != ".").collect();
    let s: Vec<&str> = suffix.split('/').collect();
    p.len() >= s.len() && p[p.len() - s.len()..] == s[..]
}

/// The rows `path` names: those whose `<role>/<path>` it ends with, else those whose
/// `<path>` it ends with.
pub(crate) fn matching<'a>(path: &str, rows: impl Iterator<Item = &'a FileRule> + Clone) -> Vec<&'a FileRule> {
    let by_role: Vec<&FileRule> = rows.clone().filter(|r| ends_with(path, &r.role_path())).collect();
    if !by_role.is_empty() {
        return by_role;
    }
    rows.filter(|r| ends_with(path, r.path)).collect()
}

/// `docs/merge.md`: what `clawc merge` owns in each runner file.
pub fn markdown() -> String {
    let mut out = String::from(
        "# What `clawc merge` owns\n\n\
         <!-- Generated from the runner table (src/runner/, rendered by src/merge/rules.rs); do not edit. Regenerate with\n     \
         `UPDATE_GOLDEN=1 cargo test --test it merge_doc`. -->\n\n\
         `clawc merge FRAGMENT TARGET` merges a runner file that clawc wrote under\n\
         `<out>/runners/<agent-id>/<role>/<path>` into a file of yours. It changes only what\n\
         the table below says clawc owns in that file; see [the rules](#the-rules) after it.\n\n\
         | runner | file (role / path) | format | clawc owns |\n|---|---|---|---|\n",
    );
    for r in RULES.iter() {
        let owns: Vec<String> = r.owns.iter().map(|o| describe(*o)).collect();
        out.push_str(&format!(
            "| {} | {} / `{}` | {} | {} |\n",
            r.runner.spec().name,
            r.role.dir(),
            r.path,
            r.syntax.name(),
            owns.join("; ")
        ));
    }
    out.push_str(RULES_TEXT);
    out
}

/// What `own` makes clawc own, in words (for docs/merge.md).
fn describe(own: Own) -> String {
    let p = |p: &[&str]| if p.is_empty() { "the top level".to_string() } else { format!("`{}`", p.join(".")) };
    match own {
        Own::Entries([]) => "entries of the top level (each replaced whole)".to_string(),
        Own::Entries(path) => format!("entries of {} (each replaced whole)", p(path)),
        Own::ServerItems(path, Item::ClaudePermission) => {
            format!("items of the list {} that are `mcp__<server>` or `mcp__<server>__…` for a server the fragment names", p(path))
        }
        Own::ServerItems(path, Item::ServerName) => {
            format!("items of the list {} that name a server the fragment names", p(path))
        }
        Own::Union(path) => format!("the list {} (union: items added, none removed)", p(path)),
        Own::Scalar(path) => format!("the value {} (set)", p(path)),
        Own::ServerKeys { map, servers } => {
            format!("entries of {} whose key is `<server>_…` for a server the fragment defines in {}", p(map), p(servers))
        }
    }
}

const RULES_TEXT: &str = r#"
## The rules

- **Which file.** The rules of a file are chosen by the fragment's path: when it ends with
  `<role>/<path>` of a row (e.g. `runners/a/home/.codex/config.toml`), or with `<path>`
  and only one row has it, that row applies. `--runner NAME` narrows the rows to one
  runner's (then the fragment's path, else the target's, else the runner's only file
  decides). Otherwise merge refuses (`clawc::merge::unknown_file`) and lists the files.
- **Never widen.** A server entry the fragment defines replaces the target's entry of the
  same name whole: a stale `enabled_tools`, an extra header or any key of the old entry
  does not survive. Owned list items of a server the fragment names are removed before
  the fragment's are added. Target entries the fragment does not mention are kept as they
  are, and so is everything merge does not own.
- **What merge cannot know.** A server that is no longer in the pod is not in the
  fragment, so its entry (and its permission items) stay in your file: remove them by
  hand. `tools.ssrfWhitelist` of nanobot is a union: hosts are added, never removed.
- **Other keys of the fragment** (not owned): added where the target lacks them (objects
  are merged key by key); where the target has another value, the target's is kept and a
  warning names the key (`clawc::merge::kept_value`, never the value).
- **Idempotent.** Merging the same fragment again changes no byte. A missing TARGET is
  created with the fragment's bytes (and missing parent directories).
- **Formatting.** TOML is edited with `toml_edit`: comments, order and layout of
  everything not replaced are kept; a replaced `[mcp_servers.<name>]` table keeps its
  place and takes the fragment's layout. JSON, JSONC and JSON5 are edited with
  `jsonc-parser`'s concrete syntax tree: comments, trailing commas and the indentation are
  kept. YAML is edited line by line: an owned entry's lines are replaced and new entries
  are appended to their mapping, so comments outside replaced entries are kept. When the
  YAML layout is one that line editing cannot do (flow mappings such as
  `mcp_servers: {a: …}`, a top-level flow mapping), the owned parent is rewritten in block
  style, or as a last resort the whole file is written again: then comments are lost and
  a warning says how many (`clawc::merge::comments_lost`). Every result is parsed again
  and must equal the merge computed on the documents, else nothing is written.
- **Writing.** The result is written to a temporary file in TARGET's directory and renamed
  over TARGET (atomic). TARGET keeps its mode (and owner, when permitted); when the
  fragment is readable by its owner only (clawc writes files holding inline tokens 0600),
  the result loses group and other permissions too. A new TARGET takes the fragment's
  mode. A symlink, directory, FIFO or device as FRAGMENT or TARGET is refused
  (`clawc::merge::not_a_file`): merge into the file the link points to. A fragment
  under a `runners/` directory is read without following any symlink from there on (the
  compiled tree is untrusted); directories on the way to TARGET are the path you chose
  and are followed.
- **Checking.** `--check` writes nothing: exit 0 when TARGET is up to date, 1 and a
  unified diff when it would change (`clawc::merge::would_change`). In the diff, values
  of keys that look secret (`authorization`, `*token*`, `*secret*`, `*password*`,
  `*api_key*`, `cookie`, `credential`, …) and every value under `env`, `headers` or
  `http_headers` are shown as `${redacted}`, unless the value is a `${VAR}` reference.
  `--stdout` prints the merged file instead of writing it (unredacted: it is the file).
- **Bounds.** FRAGMENT and TARGET are at most 8 MiB, an object or list holds at most
  10,000 entries and one merge makes at most 1,000 edits (`clawc::merge::too_large`);
  they nest at most 64 levels (`clawc::merge::too_deep`); a key twice in one object is
  refused (`clawc::merge::invalid_file`): a runner would read the last, merge the first.
- **Exit codes.** 0 merged or up to date · 1 `--check` found a change · 2 invalid input
  or arguments · 3 reading or writing failed.
"#;
