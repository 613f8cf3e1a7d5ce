//! What a runner needs to load pod MCP servers natively: the row each runner file
//! (`src/runner/<runner>.rs`) fills in — its files, its tool filter, how it refers to an
//! environment variable, the name its model sees — and the small encoders those files
//! share. Pure data and text; projection (`crate::project::native`) decides what to grant.

use serde::Serialize;
use serde_json::Value;

/// How a runner keeps tools the agent was not granted away from its model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Filter {
    /// An allow-list: only the listed tools are loaded (utility tools a runner derives from
    /// resources and prompts included).
    Hard,
    /// Calls are gated and only `deny` hides a tool: clawc allows the granted tools and
    /// denies every other tool the service declares (tools the server adds after compile
    /// are visible, and need approval to run).
    CallGate,
    /// No per-tool filter: only a grant of every tool of a server can be projected.
    None,
}

impl Filter {
    pub fn describe(self) -> &'static str {
        match self {
            Filter::Hard => "hard",
            Filter::CallGate => "call-gate",
            Filter::None => "none",
        }
    }
}

/// How a runner's config refers to an environment variable (for the bearer token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Secrets {
    /// A header value with a reference the runner expands: `prefix VAR suffix`.
    Interpolate { prefix: &'static str, suffix: &'static str, upper_only: bool },
    /// A config key that names the variable (Codex `bearer_token_env_var`).
    EnvName,
    /// No interpolation: the literal token, written only with `--secrets inline`.
    Literal,
}

impl Secrets {
    /// The reference to `var`, when this runner can read it from its environment.
    pub fn reference(self, var: &str) -> Option<String> {
        match self {
            Secrets::Interpolate { upper_only: true, .. } if !is_upper_env_name(var) => None,
            Secrets::Interpolate { prefix, suffix, .. } => Some(format!("{prefix}{var}{suffix}")),
            Secrets::EnvName => Some(var.to_string()),
            Secrets::Literal => None,
        }
    }

    /// The syntax, for docs (`${VAR}`, `{env:VAR}`, …).
    pub fn syntax(self) -> String {
        match self {
            Secrets::Interpolate { prefix, suffix, upper_only } => {
                format!("`{prefix}VAR{suffix}`{}", if upper_only { " (VAR upper case)" } else { "" })
            }
            Secrets::EnvName => "variable name (`bearer_token_env_var`)".into(),
            Secrets::Literal => "none (literal token, `--secrets inline`)".into(),
        }
    }
}

fn is_upper_env_name(var: &str) -> bool {
    let mut b = var.bytes();
    b.next().is_some_and(|c| c.is_ascii_uppercase() || c == b'_') && b.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
}

/// Where a file goes in the agent's container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Root {
    /// The runner user's home directory.
    Home,
    /// The runner's working directory (a mounted repository).
    Project,
    /// The runner's data directory (MicroClaw's `data_dir`).
    Data,
}

impl Root {
    pub fn dir(self) -> &'static str {
        match self {
            Root::Home => "home",
            Root::Project => "project",
            Root::Data => "data",
        }
    }
}

/// One file a runner reads.
#[derive(Debug)]
pub struct FileSpec {
    pub root: Root,
    /// Relative to the root.
    pub path: &'static str,
    /// What it is for, in runner.json and the docs.
    pub role: &'static str,
    pub syntax: Syntax,
    /// What clawc owns in it, when `clawc merge` merges it into a user's file.
    pub owns: &'static [Own],
}

/// How a file is read and edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// JSON; comments and trailing commas (JSONC, as VS Code writes) are read and kept.
    Json,
    /// JSON5 (unquoted keys, single quotes, hex numbers, …), read and kept.
    Json5,
    /// TOML, edited with `toml_edit`.
    Toml,
    /// YAML, edited line by line (see `yaml.rs`).
    Yaml,
}

impl Syntax {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Syntax::Json => "JSON (comments and trailing commas allowed)",
            Syntax::Json5 => "JSON5",
            Syntax::Toml => "TOML",
            Syntax::Yaml => "YAML",
        }
    }
}

/// How the items of an owned list name the server they belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A Claude permission rule: `mcp__<server>` or `mcp__<server>__<tool…>`.
    ClaudePermission,
    /// The item is a server name.
    ServerName,
}

/// One thing clawc owns in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Own {
    /// The entries of the object at this path: an entry the fragment has replaces the
    /// target's entry of that name whole; the target's other entries are kept.
    Entries(&'static [&'static str]),
    /// A list whose items belong to servers: the target's items of the servers the
    /// fragment names (in any list of this kind in the file) are removed, then the
    /// fragment's items appended; the user's other items keep their order.
    ServerItems(&'static [&'static str], Item),
    /// A list merged as a set union: the target's items, then the fragment's that are new.
    Union(&'static [&'static str]),
    /// A value clawc sets when the fragment has it.
    Scalar(&'static [&'static str]),
    /// The entries of the object at `map` whose key is `<server>_…` for a server that the
    /// fragment defines in the object at `servers` (the longest server name wins, so a
    /// user's server `a_b` keeps `a_b_x` when clawc owns `a`).
    ServerKeys { map: &'static [&'static str], servers: &'static [&'static str] },
}

impl Own {
    pub(crate) fn path(self) -> &'static [&'static str] {
        match self {
            Own::Entries(p) | Own::ServerItems(p, _) | Own::Union(p) | Own::Scalar(p) | Own::ServerKeys { map: p, .. } => p,
        }
    }
}

/// A runner's native MCP projection: one per runner file.
#[derive(Debug)]
pub struct Native {
    pub filter: Filter,
    pub secrets: Secrets,
    /// The runner user's home and working directory in the container (container paths in
    /// runner.json).
    pub home: &'static str,
    pub workdir: &'static str,
    pub data: &'static str,
    pub files: &'static [FileSpec],
    /// The name the model sees for a tool of a server.
    pub names: Names,
    /// The runner version clawc's output was proven against in the real CLI, or why it
    /// is not driven.
    pub verified: Verified,
    /// Renders the runner's files (same order as `files`).
    pub render: fn(&[Server]) -> Vec<Vec<u8>>,
    /// One line for docs/runners.md: what clawc writes.
    pub emits: &'static str,
}

impl Native {
    /// Where the container reads `file`.
    pub fn mount(&self, file: &FileSpec) -> String {
        let base = match file.root {
            Root::Home => self.home,
            Root::Project => self.workdir,
            Root::Data => self.data,
        };
        format!("{base}/{}", file.path)
    }
}

/// How a runner names a server's tool for its model: `<prefix><server><separator><tool>`,
/// each part with every character but ASCII letters, digits, `_` and `extra` turned into
/// `_` (what the model provider accepts), at most `max` long.
#[derive(Debug)]
pub struct Names {
    pub prefix: &'static str,
    pub separator: &'static str,
    pub extra: &'static str,
    pub max: usize,
}

impl Names {
    pub fn model(&self, server: &str, tool: &str) -> String {
        format!("{}{}{}{}", self.prefix, sanitise(server, self.extra), self.separator, sanitise(tool, self.extra))
    }

    /// The server name as the runner normalises it (two servers must not collide).
    pub fn server_key(&self, server: &str) -> String {
        sanitise(server, self.extra)
    }

    /// Whether the provider accepts `c` in a model-visible name.
    pub fn allows(&self, c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_' || self.extra.contains(c)
    }
}

/// How clawc's output for a runner was proven.
#[derive(Clone, Copy, Debug)]
pub enum Verified {
    /// Driven in CI: `(npm/PyPI package, version)`.
    Driven { package: &'static str, version: &'static str },
    /// Golden files only, and why.
    NotDriven(&'static str),
}

/// One granted MCP server, as a runner file writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// The pod service name (validated: `^[A-Za-z][A-Za-z0-9_-]*$`, no `__`).
    pub name: String,
    pub url: String,
    /// The granted tools' raw MCP names, in grant order.
    pub granted: Vec<String>,
    /// The server's other declared tools (for call-gate runners' deny lists).
    pub denied: Vec<String>,
    pub timeout_ms: u64,
    pub auth: Option<Auth>,
}

/// A bearer token as this runner's file writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Auth {
    pub env: String,
    /// The header value to write (`Bearer ${VAR}`, or the literal with `--secrets inline`);
    /// for [`Secrets::EnvName`] only `env` is used.
    pub header: String,
}

impl Server {
    /// `{"Authorization": "<header>"}` when the server needs a token.
    pub fn headers(&self) -> Option<Value> {
        self.auth.as_ref().map(|a| serde_json::json!({ "Authorization": a.header }))
    }

    pub fn timeout_s(&self) -> u64 {
        self.timeout_ms.div_ceil(1000)
    }
}

/// A map of server entries by name, each made by `entry` and given the server's
/// `headers` when it needs a token.
pub(crate) fn server_map(servers: &[Server], entry: impl Fn(&Server) -> Value) -> Value {
    let mut map = serde_json::Map::new();
    for s in servers {
        let mut e = entry(s);
        if let Some(h) = s.headers() {
            e["headers"] = h;
        }
        map.insert(s.name.clone(), e);
    }
    Value::Object(map)
}

/// Pretty JSON with a final newline (keys sorted: `serde_json::Map` is a BTreeMap).
pub(crate) fn json(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("in-memory JSON serializes");
    out.push(b'\n');
    out
}

/// A string as a TOML basic string or a YAML double-quoted scalar: JSON's escapes are
/// valid in both, and projection has already refused names with other characters.
pub(crate) fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// `["a", "b"]` for TOML and YAML flow sequences.
pub(crate) fn quoted_list(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| quoted(s)).collect();
    format!("[{}]", inner.join(", "))
}

/// Keeps `[A-Za-z0-9_]` plus `extra`, maps every other character to `_`.
pub(crate) fn sanitise(s: &str, extra: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || extra.contains(c) { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_follow_each_syntax() {
        let dollar = Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: true };
        assert_eq!(dollar.reference("TOKEN_1").as_deref(), Some("${TOKEN_1}"));
        assert_eq!(dollar.reference("token"), None);
        assert_eq!(Secrets::Literal.reference("X"), None);
        assert_eq!(Secrets::EnvName.reference("X").as_deref(), Some("X"));
        assert_eq!(quoted("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(sanitise("my-api.x", "-"), "my-api_x");
    }
}
