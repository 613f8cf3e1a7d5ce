//! The pod: `claw-pod.yml` read into validated types, with pod defaults expanded and
//! `${VAR}` placeholders resolved. Everything keeps the location it came from.

pub(crate) mod diags;
pub(crate) mod env;
mod expand;
pub(crate) mod interp;
mod parse;
mod ports;

use crate::sourcemap::{FileId, Loc};
use std::collections::BTreeMap;

pub(crate) use parse::{parse_pod, parse_pod_on};

/// Most replicas one service may ask for with `x-claw.count`. Every replica is an agent
/// with its own context directory, so this bounds the output of one line of YAML.
pub(crate) const MAX_COUNT: u32 = 1_000;
/// Most agent ids in one pod (every agent service's `count`, summed). The benchmark's
/// largest pod has 3,000, and its growth is measured up to 30,000.
pub(crate) const MAX_AGENTS: u64 = 50_000;
/// Most `surfaces`, `feeds`, `tools` and `skills` entries in one pod after the pod
/// defaults are expanded, counting each replica: defaults are copied into every service,
/// so a long `*-defaults` list times many services must not exhaust memory.
pub(crate) const MAX_ENTRIES: u64 = 1_000_000;

/// A value and where it was written.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub loc: Loc,
}

#[derive(Clone, Debug, Hash)]
pub struct Pod {
    pub file: FileId,
    /// `x-claw.pod`, or empty.
    pub name: String,
    /// By name: the order of services in the YAML never matters.
    pub services: BTreeMap<String, Service>,
    /// `x-claw.master` (trimmed), when set.
    pub master: Option<String>,
    /// The services `claw up` adds to this pod (claw-api, claw-wall), by name.
    pub builtins: BTreeMap<String, Injected>,
}

impl Pod {
    /// How other containers reach `service`: `http://<service>:<first expose/ports entry,
    /// default 80>`, or the port an injected service listens on (the one place a base URL
    /// is made).
    pub fn base_url(&self, service: &str) -> String {
        if let Some(b) = self.builtins.get(service) {
            return format!("http://{service}:{}", b.port);
        }
        let port = self.services.get(service).and_then(|s| s.ports.first()).map_or("80", String::as_str);
        format!("http://{service}:{port}")
    }

    /// A service other containers can reach: one of the pod's, or one `claw up` injects.
    pub fn has_service(&self, service: &str) -> bool {
        self.services.contains_key(service) || self.builtins.contains_key(service)
    }
}

/// The governance API `claw up` injects into a pod with `x-claw.master` or any `invoke`.
pub(crate) const CLAW_API: &str = "claw-api";
/// The conversation wall `claw up` injects when a cllama agent's Discord handle lists channels.
pub(crate) const CLAW_WALL: &str = "claw-wall";

/// A service `claw up` adds to the pod (Clawdapus' auto-injection): not in the pod file,
/// yet agents reach it and it has a built-in descriptor.
#[derive(Clone, Debug, Hash)]
pub struct Injected {
    /// The port it listens on inside the pod.
    pub port: String,
    /// Why `claw up` injects it, as the report says (`x-claw.master`, …).
    pub why: String,
    /// What triggered it: where its problems are reported.
    pub loc: Loc,
    /// The services whose agents `claw up` hands this service's bearer token itself
    /// (`service-auth/`): the master for claw-api, the wall's agents for claw-wall. The
    /// token is made when the pod starts, so clawc writes a reference to it.
    pub projected: std::collections::BTreeSet<String>,
}

/// The variable a channel platform's bot token is read from (Clawdapus'
/// `PlatformTokenVar`); `None` for a platform it does not know.
pub(crate) fn platform_token_var(platform: &str) -> Option<&'static str> {
    Some(match platform.to_ascii_lowercase().as_str() {
        "discord" => "DISCORD_BOT_TOKEN",
        "dingtalk" => "DINGTALK_BOT_TOKEN",
        "feishu" => "FEISHU_BOT_TOKEN",
        "line" => "LINE_BOT_TOKEN",
        "maixcam" => "MAIXCAM_BOT_TOKEN",
        "matrix" => "MATRIX_BOT_TOKEN",
        "onebot" => "ONEBOT_BOT_TOKEN",
        "pico" => "PICO_BOT_TOKEN",
        "qq" => "QQ_BOT_TOKEN",
        "slack" => "SLACK_BOT_TOKEN",
        "telegram" => "TELEGRAM_BOT_TOKEN",
        "wecom" => "WECOM_BOT_TOKEN",
        "wecom_app" => "WECOM_APP_BOT_TOKEN",
        "whatsapp" => "WHATSAPP_BOT_TOKEN",
        _ => return None,
    })
}

/// `{claw_id}` in a feed name or path, replaced by the agent id (the one place it is).
pub(crate) fn for_agent(text: &str, agent: &str) -> String {
    text.replace("{claw_id}", agent)
}

#[derive(Clone, Debug, Hash)]
pub struct Service {
    pub name: String,
    /// The service's key in `services:`.
    pub loc: Loc,
    pub image: Option<Spanned<String>>,
    pub build: Option<Build>,
    /// `environment`, map or list form: a name declared without a value maps to `None`.
    pub environment: BTreeMap<String, Spanned<Option<String>>>,
    /// Container-side ports, `expose` first then `ports`, deduplicated in order.
    pub ports: Vec<String>,
    pub claw: Option<Claw>,
}

#[derive(Clone, Debug, Hash)]
pub struct Build {
    pub context: String,
    pub dockerfile: Option<String>,
    pub loc: Loc,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Role {
    /// Has `x-claw` and no `mcp-stdio`: gets an identity and (with cllama) a context.
    Agent,
    /// An `mcp-stdio` tool sidecar: describes tools, consumes nothing, inherits nothing.
    McpStdio,
}

/// A service's `x-claw` block after defaults expansion.
#[derive(Clone, Debug, Hash)]
pub struct Claw {
    pub loc: Loc,
    pub role: Role,
    pub describe_file: Option<Spanned<String>>,
    /// `describe-file` is the only key of the service's x-claw: a service that looks like
    /// a tool provider, yet is an agent (it has x-claw) and inherits the pod's defaults.
    pub describe_only: bool,
    /// The resolved cllama proxy types (the service's own, else `cllama-defaults.proxy`).
    pub cllama: Vec<String>,
    pub count: u32,
    pub surfaces: Vec<Surface>,
    pub feeds: Vec<FeedEntry>,
    pub tools: Vec<Grant>,
    /// The service wrote a `tools:` key (else its grants, if any, are inherited defaults).
    pub tools_declared: bool,
    pub skills: Vec<Spanned<String>>,
    pub tool_policy: ToolPolicy,
    pub memory: Option<MemoryRef>,
    /// `persona`, placeholders resolved.
    pub persona: Option<Spanned<String>>,
    /// `handles` merged over the pod's `handles-defaults`, by lower-cased platform.
    pub handles: BTreeMap<String, Handle>,
    /// `include`, in declaration order.
    pub include: Vec<Include>,
    /// `mcp-stdio` `command` and `args` (sidecars only), to detect stale discovery snapshots.
    pub stdio: Option<StdioCommand>,
    /// How the agent's granted tools run: `tool-execution` when written, else mediated
    /// with a cllama proxy and native without one (ADR-020).
    pub execution: Execution,
}

/// Where an agent's tools are executed (`x-claw.tool-execution`, a clawc extension).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Execution {
    /// The runner loads the pod's MCP servers itself, filtered to the grant.
    Native,
    /// The cllama proxy presents and executes the tools (`tools.json`).
    Mediated,
}

impl Execution {
    pub fn name(self) -> &'static str {
        match self {
            Execution::Native => "native",
            Execution::Mediated => "mediated",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct StdioCommand {
    pub command: String,
    pub args: Vec<String>,
}

impl Claw {
    /// Agent ids: the service name, or `<svc>-0 … <svc>-(N-1)` when `count > 1`.
    pub fn agent_ids(&self, service: &str) -> Vec<String> {
        if self.count <= 1 { vec![service.to_string()] } else { (0..self.count).map(|i| format!("{service}-{i}")).collect() }
    }
}

/// Where a list entry came from: the service itself, or the pod's `*-defaults` (inherited
/// because the key was absent, or spliced in by a `...` at the given position).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Origin {
    Service,
    Defaults {
        spread: Option<Loc>,
    },
    /// Added by `claw up`'s conversation wall: its tools for a cllama agent whose Discord
    /// handle lists channels (the grant points at that handle).
    Wall,
}

/// One `tools:` entry ("verb authority" over a service's tools).
#[derive(Clone, Debug, Hash)]
pub struct Grant {
    pub service: Spanned<String>,
    pub allow: Allow,
    pub loc: Loc,
    pub origin: Origin,
    /// Where it is written, as a key path: `tools[2]`, or `tools-defaults[0]` for a pod
    /// default (0-based, as the entry's position in that list).
    pub path: String,
}

#[derive(Clone, Debug, Hash)]
pub enum Allow {
    All,
    Named(Vec<Spanned<String>>),
}

#[derive(Clone, Debug, Hash)]
pub enum FeedEntry {
    /// A subscription by feed name, resolved against the feed registry.
    ByName(Spanned<String>),
    /// A map-form feed that names its source and path itself.
    Inline(InlineFeed),
}

#[derive(Clone, Debug, Hash)]
pub struct InlineFeed {
    pub name: String,
    pub source: Spanned<String>,
    pub path: String,
    pub ttl: u64,
    pub description: String,
    pub loc: Loc,
}

#[derive(Clone, Debug, Hash)]
pub struct Surface {
    pub scheme: String,
    pub target: String,
    pub access: Option<String>,
    pub loc: Loc,
}

/// `tool-policy`: each field overrides the compiled default on its own.
#[derive(Clone, Copy, Debug, Hash, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    pub max_rounds: Option<u64>,
    pub timeout_per_tool_ms: Option<u64>,
    pub total_timeout_ms: Option<u64>,
}

#[derive(Clone, Debug, Hash)]
pub struct MemoryRef {
    pub service: Spanned<String>,
    pub timeout_ms: u64,
    pub loc: Loc,
}

/// One platform's channel identity (`handles.<platform>`): an identity, not a secret.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Handle {
    pub id: String,
    /// Empty when not given.
    pub username: String,
    pub guilds: Vec<Guild>,
    pub loc: Loc,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Guild {
    pub id: String,
    /// Empty when not given.
    pub name: String,
    pub channels: Vec<Channel>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Channel {
    pub id: String,
    /// Empty when not given.
    pub name: String,
}

/// One `include` entry: a file composed into the contract, or mounted as a skill.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Include {
    pub id: String,
    /// As written (trimmed), relative to the pod directory.
    pub file: String,
    /// `enforce`, `guide` or `reference` (lower-cased).
    pub mode: String,
    pub description: String,
    pub loc: Loc,
}

impl Include {
    /// The skill a `reference` include is mounted as: `include-<id, unsafe chars → _><ext
    /// of file, default .md>` (Clawdapus' `includeSkillName`).
    pub fn skill_name(&self) -> String {
        let id: String = self.id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        let id = if id.is_empty() { "include".to_string() } else { id };
        let base = self.file.rsplit('/').next().unwrap_or(&self.file);
        let ext = base.rfind('.').map_or(".md", |i| &base[i..]);
        format!("include-{id}{ext}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_skill_names_follow_clawdapus() {
        let loc = Loc { file: FileId(0), span: Default::default() };
        let inc = |id: &str, file: &str| {
            Include { id: id.into(), file: file.into(), mode: "reference".into(), description: String::new(), loc }.skill_name()
        };
        assert_eq!(inc("playbook", "./policy/playbook.txt"), "include-playbook.txt");
        assert_eq!(inc("a b/c", "notes"), "include-a_b_c.md");
        assert_eq!(inc("", "x.v1.yaml"), "include-include.yaml");
        assert_eq!(inc("é", "dir.d/file"), "include-_.md");
    }
}
