//! `claw-pod.yml` (as a [`Node`] tree) → [`Pod`]: types checked, x-claw grammar applied,
//! defaults expanded, placeholders resolved. Every problem is collected.

use super::env::Env;
use super::expand::{Item, expand_list, expand_object};
use super::interp;
use super::{
    Allow, Build, Claw, Execution, FeedEntry, Grant, InlineFeed, MAX_AGENTS, MAX_COUNT, MAX_ENTRIES, MemoryRef, Origin, Pod, Role, Service,
    Spanned, StdioCommand, Surface, ToolPolicy, diags, ports,
};
use crate::diag::{Diagnostic, suggest};
use crate::sourcemap::{FileId, Loc};
use crate::yaml::Node;
use std::collections::BTreeMap;

#[path = "builtin.rs"]
mod builtin;
#[path = "handles.rs"]
mod handles;
#[path = "include.rs"]
mod include;

/// Service-level x-claw keys in any Clawdapus grammar. Those clawc does not use are
/// accepted and ignored (they belong to `claw up`).
const SERVICE_KEYS: &[&str] = &[
    "agent",
    "persona",
    "describe-file",
    "cllama",
    "cllama-env",
    "models",
    "count",
    "handles",
    "surfaces",
    "feeds",
    "tools",
    "tool-policy",
    "budget",
    "memory",
    "include",
    "skills",
    "invoke",
    "context",
    "claw-api",
    "mcp-stdio",
    "hermes",
    "tool-execution",
];
const POD_KEYS: &[&str] = &[
    "pod",
    "master",
    "sequential-conformance",
    "handles-defaults",
    "cllama-defaults",
    "models-defaults",
    "surfaces-defaults",
    "feeds-defaults",
    "tools-defaults",
    "skills-defaults",
    "tool-policy-defaults",
    "budget-defaults",
    "memory-defaults",
    "context",
    "channel-memory",
    "principals",
    "alert-webhooks",
    "alert-mentions",
];
/// The keys that grant access, each with its pod-level default. Ignored (misspelt, or a
/// default written on a service), such a key would leave the agent with the pod's
/// defaults instead of what was written: a typo would widen access, so near-misses of
/// these are errors where other unknown keys are warnings.
const GRANT_KEYS: &[(&str, &str)] = &[
    ("tools", "tools-defaults"),
    ("feeds", "feeds-defaults"),
    ("surfaces", "surfaces-defaults"),
    ("memory", "memory-defaults"),
    ("tool-policy", "tool-policy-defaults"),
];
/// Edits (see [`crate::diag::within_edits`]) within which an unknown key is a grant key
/// misspelt.
const MAX_GRANT_KEY_EDITS: usize = 2;
/// Pod-level keys that are an error (not just unknown) on a service.
const MISPLACED: &[&str] = &["alert-webhooks", "alert-mentions"];
const DEFAULT_MEMORY_TIMEOUT_MS: u64 = 300;
/// "Did you mean" suggestions against the pod's services one parse computes.
const MAX_SUGGESTIONS: usize = 50;

/// Parses the pod. Returns the pod when no error was found, and every diagnostic.
pub(crate) fn parse_pod(file: FileId, root: &Node, env: &Env) -> (Option<Pod>, Vec<Diagnostic>) {
    parse_pod_on(file, root, env, 1)
}

/// [`parse_pod`], the services read on up to `threads` threads (the same result whatever
/// their number: see [`Cx::services_on`]).
pub(crate) fn parse_pod_on(file: FileId, root: &Node, env: &Env, threads: usize) -> (Option<Pod>, Vec<Diagnostic>) {
    let mut cx = Cx::new(file, env);
    let pod = cx.pod(root, threads);
    let has_errors = cx.diags.iter().any(Diagnostic::is_error);
    (pod.filter(|_| !has_errors), crate::diag::cap(cx.diags))
}

#[derive(Default)]
struct Defaults {
    surfaces: Option<Vec<Surface>>,
    feeds: Option<Vec<FeedEntry>>,
    tools: Option<Vec<Grant>>,
    skills: Option<Vec<Spanned<String>>>,
    tool_policy: Option<ToolPolicy>,
    memory: Option<MemoryRef>,
    cllama: Vec<String>,
    handles: Option<handles::RawHandles>,
}

struct Cx<'e> {
    file: FileId,
    env: &'e Env,
    diags: Vec<Diagnostic>,
    /// Agent ids declared so far (bounded by [`MAX_AGENTS`]).
    agents: u64,
    /// List entries expanded so far, per replica (bounded by [`MAX_ENTRIES`]).
    entries: u64,
    /// "Did you mean" suggestions left for this pod (each compares against every service).
    suggestions_left: usize,
}

/// Fewest services a thread reads (below, one thread reads them faster).
const MIN_RUN: usize = 64;

impl<'e> Cx<'e> {
    fn new(file: FileId, env: &'e Env) -> Self {
        Cx { file, env, diags: Vec::new(), agents: 0, entries: 0, suggestions_left: MAX_SUGGESTIONS }
    }

    /// The services of `map`, in its order.
    fn services(&mut self, map: &[(Node, Node)], defaults: &Defaults) -> BTreeMap<String, Service> {
        let mut services = BTreeMap::new();
        for (k, v) in map {
            let Some(svc) = self.string(k, "a service name") else { continue };
            if !self.service_name(&svc) {
                continue;
            }
            if let Some(s) = self.service(&svc, v, defaults) {
                self.count_agents(&s);
                services.insert(svc.value.clone(), s);
            }
        }
        services
    }

    /// [`Cx::services`] on up to `threads` threads: runs of services, each read with a
    /// context and a copy of the variables of its own (their lookups added back for the
    /// lock). When a run reports anything, or the runs together pass the pod's budgets,
    /// the services are read again on this thread, so what is reported (and the order
    /// budgets run out in) is what one thread reports. Most pods report nothing.
    fn services_on(&mut self, map: &[(Node, Node)], defaults: &Defaults, threads: usize) -> BTreeMap<String, Service> {
        if threads < 2 || map.len() < 2 * MIN_RUN {
            return self.services(map, defaults);
        }
        let file = self.file;
        let runs = crate::jobs::map_runs_owning(
            map,
            threads,
            MIN_RUN,
            || self.env.clone(),
            |env, run| {
                let mut cx = Cx::new(file, &env);
                let services = cx.services(run, defaults);
                let (clean, agents, entries) = (cx.diags.is_empty(), cx.agents, cx.entries);
                (services, clean, agents, entries, env)
            },
        );
        let agents = runs.iter().fold(self.agents, |n, r| n.saturating_add(r.2));
        let entries = runs.iter().fold(self.entries, |n, r| n.saturating_add(r.3));
        if runs.iter().any(|r| !r.1) || agents > MAX_AGENTS || entries > MAX_ENTRIES {
            return self.services(map, defaults);
        }
        (self.agents, self.entries) = (agents, entries);
        let mut services = BTreeMap::new();
        for (run, _, _, _, looked) in runs {
            self.env.absorb(&looked);
            services.extend(run);
        }
        services
    }

    fn error(&mut self, code: crate::diag::Code, msg: impl Into<String>, loc: Loc, help: impl Into<String>) {
        self.diags.push(Diagnostic::error(code, msg).at(loc).help(help));
    }

    fn wrong_type(&mut self, what: &str, want: &str, node: &Node) {
        let msg = format!("{what} must be {want}, got {}", node.kind_name());
        self.diags.push(
            Diagnostic::error(diags::WRONG_TYPE, msg)
                .at(node.loc)
                .label(format!("expected {want}"))
                .help(format!("write {what} as {want}")),
        );
    }

    fn map<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [(Node, Node)]> {
        let m = node.as_map();
        if m.is_none() {
            self.wrong_type(what, "a mapping", node);
        }
        m
    }

    fn list<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        let l = node.as_seq();
        if l.is_none() {
            self.wrong_type(what, "a list", node);
        }
        l
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<Spanned<String>> {
        match node.as_str() {
            Some(s) if node.as_map().is_none() => Some(Spanned { value: s.to_string(), loc: node.loc }),
            _ => {
                self.wrong_type(what, "a string", node);
                None
            }
        }
    }

    /// A string with `${...}` placeholders resolved.
    fn interp(&mut self, node: &Node, what: &str) -> Option<Spanned<String>> {
        let s = self.string(node, what)?;
        match interp::expand(&s.value, self.env) {
            Ok(value) => Some(Spanned { value, loc: s.loc }),
            Err(e) => {
                self.placeholder_error(what, &e, s.loc);
                None
            }
        }
    }

    fn placeholder_error(&mut self, what: &str, e: &interp::InterpError, loc: Loc) {
        let help = match e {
            interp::InterpError::Unresolved(v) => {
                format!("set {v} in the pod's .env file or the environment, or give a default: ${{{v}:-value}}")
            }
            interp::InterpError::Required(_) => "set the variable in the pod's .env file or the environment".to_string(),
            interp::InterpError::Malformed(_) => {
                "placeholders look like ${NAME}, ${NAME:-default}, ${NAME:?message} or ${NAME:+alt}".to_string()
            }
        };
        self.error(diags::PLACEHOLDER, format!("{what}: {e}"), loc, help);
    }

    /// A positive integer; `what` names it in messages (`feeds[0]: ttl`), the help names
    /// the key alone.
    fn positive(&mut self, node: &Node, what: &str) -> Option<u64> {
        match node.as_i64() {
            Some(n) if n > 0 => Some(n as u64),
            Some(_) => {
                let key = what.rsplit([' ', '.']).next().unwrap_or(what);
                self.error(diags::INVALID_VALUE, format!("{what} must be > 0"), node.loc, format!("give `{key}` a positive whole number"));
                None
            }
            None => {
                self.wrong_type(what, "an integer", node);
                None
            }
        }
    }

    /// Warns about keys no Clawdapus grammar knows, except near-misses of a grant key,
    /// which are errors (see [`GRANT_KEYS`]). `service` is `None` at pod level.
    fn unknown_keys(&mut self, map: &[(Node, Node)], known: &[&str], service: Option<&str>) {
        for (k, _) in map {
            let Some(key) = k.as_str() else { continue };
            if known.contains(&key) || MISPLACED.contains(&key) {
                continue;
            }
            if self.misspelt_grant_key(key, k.loc, service) {
                continue;
            }
            let whose = if service.is_some() { "service-level" } else { "pod-level" };
            let help = suggest(key, known.iter().copied(), format!("known keys: {}", known.join(", ")));
            self.diags.push(
                Diagnostic::warning(diags::UNKNOWN_KEY, format!("unknown {whose} x-claw key `{key}`"))
                    .at(k.loc)
                    .label("not in any Clawdapus grammar")
                    .help(help),
            );
        }
    }

    /// An unknown `key` that is a grant key misspelt (within [`MAX_GRANT_KEY_EDITS`] of
    /// one), or a pod-level grant default written on a service: reported as an error,
    /// since either would be ignored and the agent would inherit the pod's defaults.
    fn misspelt_grant_key(&mut self, key: &str, loc: Loc, service: Option<&str>) -> bool {
        let Some(service) = service else {
            let defaults = GRANT_KEYS.iter().map(|(_, d)| *d);
            let Some(meant) = crate::diag::within_edits(key, defaults, MAX_GRANT_KEY_EDITS) else { return false };
            let own = GRANT_KEYS.iter().find(|(_, d)| *d == meant).map_or(meant, |(k, _)| *k);
            let msg = format!("unknown pod-level x-claw key `{key}` looks like the grant key `{meant}` misspelt");
            let help = format!(
                "did you mean `{meant}`? An unknown key is ignored, so what is written here would silently not be the pod's `{meant}`, which every agent that does not declare `{own}` inherits; a key this close to a grant key is an error, not a warning"
            );
            self.diags.push(Diagnostic::error(diags::MISSPELT_GRANT_KEY, msg).at(loc).label(format!("did you mean `{meant}`?")).help(help));
            return true;
        };
        if let Some((own, _)) = GRANT_KEYS.iter().find(|(_, d)| *d == key) {
            let msg = format!("service \"{service}\": \"{key}\" is a pod-level field and cannot be declared on a service");
            let help = format!(
                "on a service it would be ignored, and the service would inherit the pod's `{key}`; write `{own}:` to set this service's own grants, or move it under the pod's top-level `x-claw`"
            );
            self.diags.push(Diagnostic::error(diags::MISPLACED_KEY, msg).at(loc).label("a pod-level key").help(help));
            return true;
        }
        let candidates = GRANT_KEYS.iter().flat_map(|(k, d)| [*k, *d]);
        let Some(near) = crate::diag::within_edits(key, candidates, MAX_GRANT_KEY_EDITS) else { return false };
        // On a service, a near-miss of `tools-defaults` still means the service's `tools`.
        let meant = GRANT_KEYS.iter().find(|(k, d)| *k == near || *d == near).map_or(near, |(k, _)| *k);
        let msg = format!("service \"{service}\": unknown x-claw key `{key}` looks like the grant key `{meant}` misspelt");
        let help = format!(
            "did you mean `{meant}`? An unknown key is ignored, so this service would silently inherit the pod's `{meant}-defaults` instead of what is written here; a key this close to a grant key is an error, not a warning"
        );
        self.diags.push(Diagnostic::error(diags::MISSPELT_GRANT_KEY, msg).at(loc).label(format!("did you mean `{meant}`?")).help(help));
        true
    }

    fn pod(&mut self, root: &Node, threads: usize) -> Option<Pod> {
        if root.as_map().is_none() {
            self.error(
                diags::NOT_A_POD,
                format!("a pod file must be a mapping, got {}", root.kind_name()),
                root.loc,
                "a pod is a Compose file with a top-level `services:` mapping",
            );
            return None;
        }
        let Some(services_node) = root.get("services") else {
            self.error(
                diags::NOT_A_POD,
                "the pod file has no `services:`",
                root.loc,
                "a pod is a Compose file with a top-level `services:` mapping",
            );
            return None;
        };
        let services_map = self.map(services_node, "services")?;
        let (name, defaults) = match root.get("x-claw") {
            Some(x) if !x.is_null() => self.pod_claw(x),
            _ => (String::new(), Defaults::default()),
        };
        let mut services = self.services_on(services_map, &defaults, threads);
        let master =
            root.get("x-claw").and_then(|x| x.get("master")).and_then(Node::as_str).map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
        self.check_feed_sources(&services, master.is_some());
        self.check_master(root, services_map);
        self.check_proxy_types(root, services_map, &services);
        self.check_placeholders(root, services_map, &services);
        self.check_handle_identities(root, &services);
        let builtins = self.builtins(root, services_map, &mut services, master.as_deref());
        Some(Pod { file: self.file, name, services, master, builtins })
    }

    /// Compose's rule for service names. Names become directories of the output
    /// (`context/<service>/`), so anything else (`../x`, `a/b`) is refused here.
    fn service_name(&mut self, name: &Spanned<String>) -> bool {
        let mut chars = name.value.chars();
        let valid =
            chars.next().is_some_and(|c| c.is_ascii_alphanumeric()) && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !valid {
            self.diags.push(
                Diagnostic::error(
                    diags::INVALID_SERVICE_NAME,
                    format!("service name {:?} is not a valid Compose service name", name.value),
                )
                .at(name.loc)
                .label("not [a-zA-Z0-9][a-zA-Z0-9_.-]*")
                .help("start the name with a letter or digit and use only letters, digits, `_`, `.` and `-`"),
            );
        }
        valid
    }

    /// Adds a service's replicas to the pod's agent ids; past [`MAX_AGENTS`], reports once.
    fn count_agents(&mut self, s: &Service) {
        let Some(claw) = s.claw.as_ref().filter(|c| c.role == Role::Agent) else { return };
        let before = self.agents;
        self.agents += u64::from(claw.count);
        if before <= MAX_AGENTS && self.agents > MAX_AGENTS {
            let msg = format!("the pod declares more than {MAX_AGENTS} agent ids (the limit is reached at service \"{}\")", s.name);
            let help = "an agent id is a service, or one replica of `count`; split the pod, or lower the counts";
            self.error(diags::TOO_MANY_AGENTS, msg, s.loc, help);
        }
    }

    fn pod_claw(&mut self, x: &Node) -> (String, Defaults) {
        let mut d = Defaults::default();
        let Some(map) = self.map(x, "x-claw") else { return (String::new(), d) };
        self.unknown_keys(map, POD_KEYS, None);
        let name = x.get("pod").and_then(|n| self.interp(n, "x-claw.pod")).map(|s| s.value).unwrap_or_default();
        let from_defaults = Origin::Defaults { spread: None };
        d.surfaces = x.get("surfaces-defaults").and_then(|n| self.default_items(n, "surfaces-defaults", Self::surface));
        d.feeds = x.get("feeds-defaults").and_then(|n| self.default_items(n, "feeds-defaults", |cx, n, i| cx.feed(n, "feeds-defaults", i)));
        d.tools = x
            .get("tools-defaults")
            .and_then(|n| self.default_items(n, "tools-defaults", |cx, n, i| cx.grant(n, "tools-defaults", i, from_defaults)));
        d.skills = x.get("skills-defaults").and_then(|n| self.default_items(n, "skills-defaults", |cx, n, _| cx.interp(n, "skill")));
        d.tool_policy = x.get("tool-policy-defaults").filter(|n| !n.is_null()).and_then(|n| self.tool_policy(n));
        d.handles =
            x.get("handles-defaults").filter(|n| !n.is_null()).and_then(|n| self.raw_handles(n, "handles-defaults", "handles-defaults"));
        d.memory = x.get("memory-defaults").filter(|n| !n.is_null()).and_then(|n| self.memory(n));
        if let Some(c) = x.get("cllama-defaults") {
            if c.as_map().is_some() {
                if let Some(proxy) = c.get("proxy") {
                    d.cllama = self.cllama(proxy).unwrap_or_default();
                }
                if let Some(env) = c.get("env") {
                    self.map(env, "cllama-defaults.env");
                }
            } else if !c.is_null() {
                self.diags.push(
                    Diagnostic::warning(
                        diags::IGNORED,
                        format!("cllama-defaults is {}; only a mapping is honoured, so it is ignored", c.kind_name()),
                    )
                    .at(c.loc)
                    .help("write `cllama-defaults: {proxy: [passthrough]}`"),
                );
            }
        }
        (name, d)
    }

    /// A `*-defaults` list: like a service list, but a spread makes no sense in it.
    fn default_items<T>(&mut self, node: &Node, key: &str, parse: impl FnMut(&mut Self, &Node, usize) -> Option<T>) -> Option<Vec<T>> {
        let items = self.items(node, key, parse)?;
        let mut out = Vec::new();
        for item in items {
            match item {
                Item::Value(v) => out.push(v),
                Item::Spread(loc) => self.error(
                    diags::INVALID_VALUE,
                    format!("{key}: spread token \"...\" cannot be used in pod defaults"),
                    loc,
                    "remove the `...`",
                ),
            }
        }
        Some(out)
    }

    fn items<T>(&mut self, node: &Node, key: &str, mut parse: impl FnMut(&mut Self, &Node, usize) -> Option<T>) -> Option<Vec<Item<T>>> {
        if node.is_null() {
            return Some(Vec::new());
        }
        let list = self.list(node, key)?;
        let mut out = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            if item.as_map().is_none() && item.as_str().map(str::trim) == Some("...") {
                out.push(Item::Spread(item.loc));
            } else if let Some(v) = parse(self, item, i) {
                out.push(Item::Value(v));
            }
        }
        Some(out)
    }

    fn service(&mut self, name: &Spanned<String>, node: &Node, defaults: &Defaults) -> Option<Service> {
        self.map(node, &format!("service \"{}\"", name.value))?;
        let image = node.get("image").and_then(|n| self.string(n, "image"));
        let build = node.get("build").and_then(|n| self.build(n));
        let environment = node.get("environment").map(|n| self.environment(n)).unwrap_or_default();
        let ports = self.ports(&name.value, node);
        let claw = node.get("x-claw").and_then(|x| self.claw(&name.value, x, defaults));
        Some(Service { name: name.value.clone(), loc: name.loc, image, build, environment, ports, claw })
    }

    /// Container-side ports, `expose` then `ports`, deduplicated in order. An entry with
    /// no readable container port is an error at the entry (never skipped: the service URL
    /// would silently fall back to port 80); a range as the first port is a warning.
    fn ports(&mut self, service: &str, node: &Node) -> Vec<String> {
        let mut out: Vec<(String, Loc)> = Vec::new();
        for (key, read) in [("expose", ports::exposed_port as fn(&Node) -> ports::Port), ("ports", ports::container_port)] {
            let Some(list) = node.get(key).and_then(|n| self.list(n, key)) else { continue };
            for (i, entry) in list.iter().enumerate() {
                match read(entry) {
                    Ok(port) => out.extend(port.map(|p| (p, entry.loc))),
                    Err(problem) => self.port_problem(service, key, i, entry, problem),
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|(p, _)| seen.insert(p.clone()));
        if let Some((first, loc)) = out.first().filter(|(p, _)| ports::is_range(p)) {
            self.diags.push(
                Diagnostic::warning(
                    diags::BAD_PORT,
                    format!("service \"{service}\": its first port is the range \"{first}\"; its URL would be http://{service}:{first}"),
                )
                .at(*loc)
                .help("list the port feeds, tools and memory use first, in `expose`"),
            );
        }
        out.into_iter().map(|(p, _)| p).collect()
    }

    fn port_problem(&mut self, service: &str, key: &str, i: usize, entry: &Node, problem: ports::PortProblem) {
        let want = if key == "expose" { "a port" } else { "a port string or a long-form mapping" };
        let (msg, help) = match problem {
            ports::PortProblem::Shape(kind) => {
                let like = if key == "expose" { "4000" } else { "8080:80" };
                (format!("service \"{service}\": {key}[{i}] must be {want}, got {kind}"), format!("write `{key}` entries like \"{like}\""))
            }
            ports::PortProblem::NoTarget => (
                format!("service \"{service}\": {key}[{i}] has no `target`"),
                "give the long form the container port: `{target: 80, published: 8080}`".to_string(),
            ),
            ports::PortProblem::BadTarget(kind) => (
                format!("service \"{service}\": {key}[{i}].target must be a port number, got {kind}"),
                "give the long form the container port: `{target: 80, published: 8080}`".to_string(),
            ),
            ports::PortProblem::NoPort(text) => (
                format!("service \"{service}\": {key}[{i}] \"{text}\" has no usable container port"),
                "the container side must be a port from 1 to 65535 (or a range `8000-8010`)".to_string(),
            ),
        };
        self.diags.push(Diagnostic::error(diags::BAD_PORT, msg).at(entry.loc).label("no container port").help(help));
    }

    fn build(&mut self, node: &Node) -> Option<Build> {
        if node.as_map().is_none() {
            return self.string(node, "build").map(|s| Build { context: s.value, dockerfile: None, loc: s.loc });
        }
        let context = node.get("context").and_then(|n| self.string(n, "build.context")).map_or_else(|| ".".to_string(), |s| s.value);
        let dockerfile = node.get("dockerfile").and_then(|n| self.string(n, "build.dockerfile")).map(|s| s.value);
        Some(Build { context, dockerfile, loc: node.loc })
    }

    fn environment(&mut self, node: &Node) -> BTreeMap<String, Spanned<Option<String>>> {
        let mut out = BTreeMap::new();
        if let Some(map) = node.as_map() {
            for (k, v) in map {
                let Some(key) = self.string(k, "an environment name") else { continue };
                let value = if v.is_null() { None } else { self.string(v, &format!("environment.{}", key.value)).map(|s| s.value) };
                out.insert(key.value, Spanned { value, loc: k.loc });
            }
        } else if let Some(list) = self.list(node, "environment") {
            for item in list {
                let Some(entry) = self.string(item, "an environment entry") else { continue };
                let (key, value) = match entry.value.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (entry.value.clone(), None),
                };
                out.insert(key, Spanned { value, loc: entry.loc });
            }
        }
        out
    }

    fn claw(&mut self, service: &str, x: &Node, d: &Defaults) -> Option<Claw> {
        if !x.is_null() {
            let map = self.map(x, "x-claw")?;
            self.unknown_keys(map, SERVICE_KEYS, Some(service));
            for &key in MISPLACED {
                if let Some(k) = x.key_node(key) {
                    let msg = format!("service \"{service}\": \"{key}\" is a pod-level field and cannot be declared on a service");
                    self.error(diags::MISPLACED_KEY, msg, k.loc, "move it under the pod's top-level `x-claw`");
                }
            }
        }
        let mcp_stdio = x.get("mcp-stdio").filter(|n| !n.is_null());
        let role = if mcp_stdio.is_some() { Role::McpStdio } else { Role::Agent };
        let count = x.get("count").map_or(1, |n| self.count(service, n));
        // A `cllama` key that cannot be read is reported; it does not fall back to the
        // pod defaults (that would cascade, e.g. into a spurious multi-proxy error).
        let own_cllama = x.get("cllama").map(|n| self.cllama(n).unwrap_or_default());
        let stdio = mcp_stdio.and_then(|m| self.mcp_stdio(service, m, x, count));
        let describe_file = x
            .get("describe-file")
            .and_then(|n| self.string(n, "describe-file"))
            .map(|s| Spanned { value: s.value.trim().to_string(), loc: s.loc });
        // Sidecars inherit nothing from the pod defaults.
        let none = Defaults::default();
        let d = if role == Role::McpStdio { &none } else { d };
        let inherit = |mut g: Grant, spread: Option<Loc>| {
            g.origin = Origin::Defaults { spread };
            g
        };
        let at = |key: &str| (service, count, x.key_node(key).map_or(x.loc, |k| k.loc));
        let surfaces = x.get("surfaces").and_then(|n| self.items(n, "surfaces", Self::surface));
        let surfaces = self.expanded("surfaces", at("surfaces"), surfaces, d.surfaces.as_deref(), same);
        let feeds = x.get("feeds").and_then(|n| self.items(n, "feeds", |cx, n, i| cx.feed(n, "feeds", i)));
        let feeds = self.expanded("feeds", at("feeds"), feeds, d.feeds.as_deref(), same);
        let tools = x.get("tools").and_then(|n| self.items(n, "tools", |cx, n, i| cx.grant(n, "tools", i, Origin::Service)));
        let tools = self.expanded("tools", at("tools"), tools, d.tools.as_deref(), inherit);
        let skills = x.get("skills").and_then(|n| self.items(n, "skills", |cx, n, _| cx.interp(n, "skill")));
        let skills = self.expanded("skills", at("skills"), skills, d.skills.as_deref(), same);
        let tool_policy = x.get("tool-policy").map(|n| if n.is_null() { None } else { self.tool_policy(n) });
        let tool_policy = expand_object(tool_policy, d.tool_policy.as_ref()).unwrap_or_default();
        let memory = x.get("memory").map(|n| if n.is_null() { None } else { self.memory(n) });
        let memory = expand_object(memory, d.memory.as_ref());
        let cllama = own_cllama.unwrap_or_else(|| d.cllama.clone());
        let execution = self.execution(service, x.get("tool-execution"), &cllama);
        let tools_declared = x.get("tools").is_some();
        let (persona, include) = (self.persona(x.get("persona")), self.includes(service, x.get("include")));
        let handles = self.handles(service, count, x.get("handles"), d.handles.as_ref());
        let describe_only = describe_file.is_some() && x.as_map().is_some_and(|m| m.len() == 1);
        Some(Claw {
            loc: x.loc,
            role,
            describe_file,
            describe_only,
            cllama,
            count,
            surfaces,
            feeds,
            tools,
            tools_declared,
            skills,
            tool_policy,
            memory,
            persona,
            handles,
            include,
            stdio,
            execution,
        })
    }

    /// `tool-execution: native | mediated`; without it, mediated exactly when the agent
    /// has a cllama proxy. Mediated without a proxy has nothing to execute the tools.
    fn execution(&mut self, service: &str, node: Option<&Node>, cllama: &[String]) -> Execution {
        let derived = if cllama.is_empty() { Execution::Native } else { Execution::Mediated };
        let Some(node) = node.filter(|n| !n.is_null()) else { return derived };
        let Some(s) = self.string(node, "tool-execution") else { return derived };
        let explicit = match s.value.trim() {
            "native" => Execution::Native,
            "mediated" => Execution::Mediated,
            other => {
                let msg = format!("service \"{service}\": tool-execution \"{other}\" is neither `native` nor `mediated`");
                self.error(
                    diags::BAD_TOOL_EXECUTION,
                    msg,
                    s.loc,
                    "write `tool-execution: native` (the runner loads the MCP servers) or `mediated` (the cllama proxy runs the tools)",
                );
                return derived;
            }
        };
        if explicit == Execution::Mediated && cllama.is_empty() {
            let msg =
                format!("service \"{service}\": tool-execution is `mediated` but the service has no cllama proxy to mediate its tools");
            self.error(
                diags::BAD_TOOL_EXECUTION,
                msg,
                s.loc,
                "add `cllama: passthrough` (or `cllama-defaults` on the pod), or use `tool-execution: native`",
            );
        }
        explicit
    }

    /// `x-claw.count`: `≤ 1` is one agent named after the service; above [`MAX_COUNT`] is
    /// an error (and counts as 1, so nothing downstream allocates for it).
    fn count(&mut self, service: &str, n: &Node) -> u32 {
        let too_many = match n.as_i64() {
            Some(c) if c <= i64::from(MAX_COUNT) => return c.max(1) as u32,
            Some(_) => true,
            // Digits that do not fit an i64 are a count, just a huge one.
            None => n.as_str().is_some_and(|t| !t.is_empty() && t.trim_start_matches('+').bytes().all(|b| b.is_ascii_digit())),
        };
        if too_many {
            let msg = format!("service \"{service}\": count {} is over the limit of {MAX_COUNT} replicas", n.as_str().unwrap_or_default());
            self.error(diags::TOO_MANY_AGENTS, msg, n.loc, format!("give `count` a value from 1 to {MAX_COUNT}"));
        } else {
            self.wrong_type("count", "an integer", n);
        }
        1
    }

    fn expanded<T: Clone>(
        &mut self,
        key: &str,
        (service, count, loc): (&str, u32, Loc),
        own: Option<Vec<Item<T>>>,
        defaults: Option<&[T]>,
        inherit: impl Fn(T, Option<Loc>) -> T,
    ) -> Vec<T> {
        if !self.entries_fit(key, service, count, loc, own.as_deref(), defaults.map_or(0, <[T]>::len)) {
            return Vec::new();
        }
        expand_list(key, service, own, defaults, inherit).unwrap_or_else(|d| {
            self.diags.push(d);
            Vec::new()
        })
    }

    /// Charges what expanding a list will produce (each replica counted) against
    /// [`MAX_ENTRIES`] before anything is copied; past it, reports once and says no.
    fn entries_fit<T>(&mut self, key: &str, service: &str, count: u32, loc: Loc, own: Option<&[Item<T>]>, defaults: usize) -> bool {
        let len = match own {
            None => defaults as u64,
            Some(items) => items.iter().map(|i| if matches!(i, Item::Spread(_)) { defaults as u64 } else { 1 }).sum(),
        };
        let before = self.entries;
        self.entries = before.saturating_add(len.saturating_mul(u64::from(count)));
        if self.entries <= MAX_ENTRIES {
            return true;
        }
        if before <= MAX_ENTRIES {
            let msg = format!(
                "service \"{service}\": {key}: the pod's lists expand to more than {MAX_ENTRIES} entries (pod defaults are copied into every service and replica)"
            );
            self.error(diags::TOO_MANY_ENTRIES, msg, loc, "shorten the `*-defaults` lists, or declare the lists on fewer services");
        }
        false
    }

    fn mcp_stdio(&mut self, service: &str, m: &Node, x: &Node, count: u32) -> Option<StdioCommand> {
        self.map(m, "mcp-stdio")?;
        let written = m.get("command").filter(|c| !c.is_null());
        let read = written.map(|c| self.interp(c, "mcp-stdio.command"));
        let command = read.clone().flatten().map(|c| c.value.trim().to_string()).filter(|c| !c.is_empty());
        // An unreadable command (a placeholder, a wrong type) is already reported.
        if command.is_none() && !matches!(read, Some(None)) {
            self.error(
                diags::REQUIRED,
                format!("service \"{service}\": mcp-stdio command is required"),
                m.loc,
                "set `mcp-stdio.command` to the MCP server command",
            );
        }
        let mut args = Vec::new();
        if let Some(list) = m.get("args").and_then(|a| self.list(a, "mcp-stdio.args")) {
            args = list.iter().filter_map(|a| self.interp(a, "mcp-stdio.args")).map(|a| a.value).collect();
        }
        for (key, what) in [("agent", "agent"), ("cllama", "cllama")] {
            if let Some(k) = x.key_node(key) {
                let msg = format!("service \"{service}\": mcp-stdio cannot be combined with {what}");
                self.error(
                    diags::MCP_STDIO_CONFLICT,
                    msg,
                    k.loc,
                    "an mcp-stdio sidecar is a tool server, not an agent; move the agent to its own service",
                );
            }
        }
        if count > 1 {
            let loc = x.key_node("count").map_or(m.loc, |k| k.loc);
            self.error(
                diags::MCP_STDIO_CONFLICT,
                format!("service \"{service}\": mcp-stdio does not support count > 1"),
                loc,
                "remove `count`",
            );
        }
        Some(StdioCommand { command: command?, args })
    }

    fn cllama(&mut self, node: &Node) -> Option<Vec<String>> {
        if let Some(list) = node.as_seq() {
            let mut out = Vec::new();
            for (i, item) in list.iter().enumerate() {
                let s = self.interp(item, "cllama")?;
                if s.value.trim().is_empty() {
                    self.error(
                        diags::INVALID_VALUE,
                        format!("cllama: list item {i} must not be empty"),
                        item.loc,
                        "name a cllama proxy type, e.g. `passthrough`",
                    );
                    return None;
                }
                out.push(s.value.trim().to_string());
            }
            return Some(out);
        }
        let s = self.interp(node, "cllama")?;
        if s.value.trim().is_empty() {
            self.error(
                diags::INVALID_VALUE,
                "cllama: string value must not be empty",
                node.loc,
                "name a cllama proxy type, e.g. `passthrough`",
            );
            return None;
        }
        Some(vec![s.value.trim().to_string()])
    }

    fn surface(&mut self, node: &Node, _: usize) -> Option<Surface> {
        if let Some(map) = node.as_map() {
            let [(k, _)] = map else {
                self.error(
                    diags::INVALID_VALUE,
                    "a map-form surface must have exactly one key",
                    node.loc,
                    "write `- channel://discord: {...}`",
                );
                return None;
            };
            let uri = self.interp(k, "surface")?;
            let s = parse_surface(&uri.value, uri.loc);
            if s.as_ref().is_some_and(|s| s.scheme == "channel") {
                return s;
            }
            self.error(
                diags::INVALID_VALUE,
                format!("map-form surface \"{}\" must be a channel:// URI", uri.value),
                k.loc,
                "only channel surfaces take a configuration map",
            );
            return None;
        }
        let uri = self.interp(node, "surface")?;
        let s = parse_surface(&uri.value, uri.loc);
        if s.is_none() {
            let msg = format!("surface URI \"{}\" must have scheme and target", uri.value);
            self.error(diags::INVALID_VALUE, msg, node.loc, "write `service://<name>`, `volume://<name>`, `host:///path` …");
        }
        s
    }

    /// One feed entry, `list[index]` (`feeds[0]`, `feeds-defaults[1]`) in messages.
    fn feed(&mut self, node: &Node, list: &str, index: usize) -> Option<FeedEntry> {
        if node.as_map().is_none() {
            if node.as_seq().is_some() || node.is_null() {
                self.wrong_type(&format!("{list}[{index}]"), "a string or mapping", node);
                return None;
            }
            let name = self.interp(node, &format!("{list}[{index}]: feed name"))?;
            if name.value.trim().is_empty() {
                self.error(
                    diags::INVALID_VALUE,
                    format!("{list}[{index}]: feed name must not be empty"),
                    node.loc,
                    "name a feed from a service descriptor",
                );
                return None;
            }
            return Some(FeedEntry::ByName(Spanned { value: name.value.trim().to_string(), loc: name.loc }));
        }
        // A field that is present but unreadable (a placeholder, a wrong type) is already
        // reported: it is not also "required" (Clawdapus reports only the placeholder).
        let mut unreadable = false;
        let mut field = |cx: &mut Self, key: &str| {
            let n = node.get(key).filter(|n| !n.is_null())?;
            let v = cx.interp(n, &format!("{list}[{index}]: {key}"));
            unreadable |= v.is_none();
            v
        };
        let source = field(self, "source").map(|s| Spanned { value: s.value.trim().to_string(), loc: s.loc });
        let path = field(self, "path").map(|s| Spanned { value: s.value.trim().to_string(), loc: s.loc });
        let name = field(self, "name").map(|s| s.value.trim().to_string()).filter(|s| !s.is_empty());
        let description = field(self, "description").map(|s| s.value.trim().to_string()).unwrap_or_default();
        let ttl = match node.get("ttl") {
            Some(n) => self.positive(n, &format!("{list}[{index}]: ttl")),
            None => {
                self.error(diags::INVALID_VALUE, format!("{list}[{index}]: ttl must be > 0"), node.loc, "set `ttl:` in seconds");
                None
            }
        };
        if unreadable {
            return None;
        }
        let Some(source) = source.filter(|s| !s.value.is_empty()) else {
            self.error(diags::REQUIRED, format!("{list}[{index}]: source is required"), node.loc, "set `source:` to the providing service");
            return None;
        };
        let Some(path) = path.filter(|p| !p.value.is_empty()) else {
            self.error(diags::REQUIRED, format!("{list}[{index}]: path is required"), node.loc, "set `path:` to the feed's HTTP path");
            return None;
        };
        if !path.value.starts_with('/') {
            self.error(
                diags::INVALID_VALUE,
                format!("{list}[{index}]: path \"{}\" must start with '/'", path.value),
                path.loc,
                "write the path as `/…`",
            );
            return None;
        }
        let name = name.unwrap_or_else(|| derive_feed_name(&path.value, &source.value, index));
        Some(FeedEntry::Inline(InlineFeed { name, source, path: path.value, ttl: ttl?, description, loc: node.loc }))
    }

    /// One grant, `list[index]` (`tools[0]`, `tools-defaults[1]`) in messages and reports.
    fn grant(&mut self, node: &Node, list: &str, index: usize, origin: Origin) -> Option<Grant> {
        let at = format!("{list}[{index}]");
        if node.as_map().is_none() {
            if node.as_seq().is_some() || node.is_null() {
                self.wrong_type(&at, "a string or mapping", node);
                return None;
            }
            let service = self.string(node, &format!("{at}: tool service"))?;
            if service.value.trim().is_empty() {
                self.error(
                    diags::INVALID_VALUE,
                    format!("{at}: tool service must not be empty"),
                    node.loc,
                    "name a service whose descriptor declares tools",
                );
                return None;
            }
            let service = Spanned { value: service.value.trim().to_string(), loc: service.loc };
            return Some(Grant { service, allow: Allow::All, loc: node.loc, origin, path: at });
        }
        let service = match node.get("service").and_then(|n| self.string(n, &format!("{at}: service"))) {
            Some(s) if !s.value.trim().is_empty() => Spanned { value: s.value.trim().to_string(), loc: s.loc },
            _ => {
                self.error(diags::REQUIRED, format!("{at}: service is required"), node.loc, "write `- service: <name>`");
                return None;
            }
        };
        let allow = match node.get("allow").filter(|n| !n.is_null()) {
            None => Allow::All,
            Some(a) => self.allow(a, &at)?,
        };
        Some(Grant { service, allow, loc: node.loc, origin, path: at })
    }

    fn allow(&mut self, node: &Node, at: &str) -> Option<Allow> {
        let names: Vec<&Node> = match node.as_seq() {
            Some(list) => list.iter().collect(),
            None if node.as_map().is_none() && go_scalar_type(node).is_none() => vec![node],
            None => {
                let got = go_scalar_type(node).unwrap_or_else(|| node.kind_name());
                let msg = format!("{at}: allow must be a string or list, got {got}");
                self.error(diags::WRONG_TYPE, msg, node.loc, "write `allow: tool_name`, `allow: [a, b]` or `allow: all`");
                return None;
            }
        };
        if names.is_empty() {
            self.error(diags::INVALID_VALUE, format!("{at}: allow must not be empty"), node.loc, "list tool names, or write `allow: all`");
            return None;
        }
        let mut out = Vec::new();
        for (i, n) in names.iter().enumerate() {
            let Some(s) = n.as_str().filter(|_| n.as_map().is_none() && n.as_seq().is_none() && go_scalar_type(n).is_none()) else {
                let got = go_scalar_type(n).unwrap_or_else(|| n.kind_name());
                let msg = format!("{at}: allow[{i}] must be a string, got {got}");
                self.error(diags::WRONG_TYPE, msg, n.loc, "list tool names as strings");
                return None;
            };
            if s.trim().is_empty() {
                self.error(diags::INVALID_VALUE, format!("{at}: allow[{i}] must not be empty"), n.loc, "remove the blank entry");
                return None;
            }
            out.push(Spanned { value: s.trim().to_string(), loc: n.loc });
        }
        let has_all = out.iter().any(|s| s.value == "all");
        if has_all && out.len() > 1 {
            self.error(
                diags::INVALID_VALUE,
                format!("{at}: allow \"all\" must not be combined with named tools"),
                node.loc,
                "use either `allow: all` or a list of tool names",
            );
            return None;
        }
        Some(if has_all { Allow::All } else { Allow::Named(out) })
    }

    fn tool_policy(&mut self, node: &Node) -> Option<ToolPolicy> {
        self.map(node, "tool-policy")?;
        let p = ToolPolicy {
            max_rounds: node.get("max-rounds").and_then(|n| self.positive(n, "max-rounds")),
            timeout_per_tool_ms: node.get("timeout-per-tool-ms").and_then(|n| self.positive(n, "timeout-per-tool-ms")),
            total_timeout_ms: node.get("total-timeout-ms").and_then(|n| self.positive(n, "total-timeout-ms")),
        };
        if let (Some(per), Some(total)) = (p.timeout_per_tool_ms, p.total_timeout_ms)
            && total < per
        {
            let loc = node.get("total-timeout-ms").map_or(node.loc, |n| n.loc);
            self.error(
                diags::INVALID_VALUE,
                "total-timeout-ms must be >= timeout-per-tool-ms",
                loc,
                format!("raise total-timeout-ms to at least {per}"),
            );
        }
        Some(p)
    }

    fn memory(&mut self, node: &Node) -> Option<MemoryRef> {
        self.map(node, "memory")?;
        let service = node.get("service").and_then(|n| self.string(n, "memory.service")).filter(|s| !s.value.trim().is_empty());
        let Some(service) = service else {
            self.error(
                diags::REQUIRED,
                "memory: service is required",
                node.loc,
                "set `memory.service` to the service that provides memory",
            );
            return None;
        };
        let timeout_ms = match node.get("timeout-ms") {
            Some(n) => self.positive(n, "memory.timeout-ms")?,
            None => DEFAULT_MEMORY_TIMEOUT_MS,
        };
        let service = Spanned { value: service.value.trim().to_string(), loc: service.loc };
        Some(MemoryRef { service, timeout_ms, loc: node.loc })
    }

    /// `x-claw.master` (trimmed) must name a service of the pod that has `x-claw`. Read
    /// from the raw services, so a service refused for another reason does not cascade.
    fn check_master(&mut self, root: &Node, services: &[(Node, Node)]) {
        let Some(node) = root.get("x-claw").and_then(|x| x.get("master")).filter(|n| !n.is_null()) else { return };
        let Some(master) = self.string(node, "x-claw.master") else { return };
        let name = master.value.trim();
        if name.is_empty() {
            return;
        }
        let Some((_, svc)) = services.iter().find(|(k, _)| k.as_str() == Some(name)) else {
            let fallback = "name a claw-managed service of this pod";
            let help = suggest(name, services.iter().filter_map(|(k, _)| k.as_str()), fallback);
            let msg = format!("x-claw.master \"{name}\" targets unknown service");
            self.diags.push(Diagnostic::error(diags::UNKNOWN_MASTER, msg).at(node.loc).help(help));
            return;
        };
        if svc.key_node("x-claw").is_none() {
            let msg = format!("x-claw.master \"{name}\" must target a claw-managed service");
            let help = format!("give service \"{name}\" an `x-claw` block, or name a claw-managed service");
            self.diags.push(Diagnostic::error(diags::UNKNOWN_MASTER, msg).at(node.loc).help(help));
        }
    }

    /// Clawdapus runs one cllama proxy type per pod: the distinct types of every agent's
    /// resolved `cllama` (its own, else `cllama-defaults.proxy`) must be at most one.
    fn check_proxy_types(&mut self, root: &Node, raw: &[(Node, Node)], services: &BTreeMap<String, Service>) {
        let defaults_loc = root.get("x-claw").and_then(|x| x.get("cllama-defaults")).and_then(|c| c.get("proxy")).map(|p| p.loc);
        let own_cllama: std::collections::HashMap<&str, &Node> =
            raw.iter().filter_map(|(k, v)| Some((k.as_str()?, v.get("x-claw")?.get("cllama")?))).collect();
        let mut types: BTreeMap<&str, Loc> = BTreeMap::new();
        let mut second: Option<Loc> = None;
        for (name, svc) in services {
            let Some(claw) = svc.claw.as_ref().filter(|c| c.role == Role::Agent) else { continue };
            let own = own_cllama.get(name.as_str());
            let loc = own.map(|n| n.loc).or(defaults_loc).unwrap_or(claw.loc);
            for t in claw.cllama.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
                if !types.contains_key(t) && !types.is_empty() && second.is_none() {
                    second = Some(loc);
                }
                types.entry(t).or_insert(loc);
            }
        }
        let Some(at) = second else { return };
        let names: Vec<&str> = types.keys().copied().collect();
        let msg = format!(
            "multi-proxy chaining not yet supported: found proxy types [{}]; Phase 4 supports one proxy type per pod",
            names.join(" ")
        );
        let mut d = Diagnostic::error(diags::MULTI_PROXY, msg).at(at).label("a second proxy type");
        if let Some((t, loc)) = types.iter().find(|(_, l)| **l != at) {
            d = d.also(*loc, format!("proxy type \"{t}\""));
        }
        self.diags.push(d.help("use one cllama proxy type for every agent of the pod"));
    }

    /// `${...}` placeholders in the x-claw fields `claw up` expands that clawc does not
    /// read itself: `agent`, `cllama-env` values, `invoke` and channel surface
    /// configuration, with what agents inherit from `cllama-defaults.env` and
    /// `surfaces-defaults` (`persona`, `handles` and `include` are parsed, placeholders
    /// resolved, by `include.rs` and `handles.rs`). An unresolved
    /// one is an error wherever it is. Tool grants are never expanded. The variables are
    /// not recorded as used: these values never reach clawc's output.
    fn check_placeholders(&mut self, root: &Node, raw: &[(Node, Node)], services: &BTreeMap<String, Service>) {
        let env = self.env;
        env.unrecorded_scope(|| {
            let mut agents: Vec<&Node> = Vec::new();
            for (k, v) in raw {
                let Some(claw) = k.as_str().and_then(|name| services.get(name)).and_then(|s| s.claw.as_ref()) else { continue };
                let Some(x) = v.get("x-claw").filter(|x| x.as_map().is_some()) else { continue };
                if claw.role == Role::Agent {
                    agents.push(x);
                }
                // `persona`, `handles` and `include` are parsed (and their placeholders
                // resolved) by `include.rs` and `handles.rs`; walking them here too would
                // report each unresolved one twice.
                for key in ["agent", "cllama-env", "invoke"] {
                    if let Some(n) = x.get(key) {
                        self.walk_placeholders(n, key);
                    }
                }
                self.channel_placeholders(x.get("surfaces"), "surfaces");
            }
            let Some(pod) = root.get("x-claw").filter(|x| x.as_map().is_some()) else { return };
            if let Some(defaults) = pod.get("cllama-defaults").and_then(|c| c.get("env")).and_then(Node::as_map) {
                for (k, v) in defaults {
                    let key = k.as_str().unwrap_or_default();
                    if agents.iter().any(|x| x.get("cllama-env").is_none_or(|e| e.get(key).is_none())) {
                        self.walk_placeholders(v, &format!("cllama-defaults.env.{key}"));
                    }
                }
            }
            let spreads = |l: &Node| l.as_seq().is_some_and(|l| l.iter().any(|i| i.as_str().map(str::trim) == Some("...")));
            if agents.iter().any(|x| x.get("surfaces").is_none_or(spreads)) {
                self.channel_placeholders(pod.get("surfaces-defaults"), "surfaces-defaults");
            }
        });
    }

    /// The configuration maps of map-form (`channel://`) surfaces; their keys are read by
    /// [`Self::surface`].
    fn channel_placeholders(&mut self, surfaces: Option<&Node>, what: &str) {
        for (i, item) in surfaces.and_then(Node::as_seq).unwrap_or_default().iter().enumerate() {
            for (_, config) in item.as_map().unwrap_or_default() {
                self.walk_placeholders(config, &format!("{what}[{i}]"));
            }
        }
    }

    /// Every scalar value under `node` (not mapping keys), placeholders expanded and the
    /// result dropped: only an error matters.
    fn walk_placeholders(&mut self, node: &Node, what: &str) {
        if let Some(items) = node.as_seq() {
            for (i, item) in items.iter().enumerate() {
                self.walk_placeholders(item, &format!("{what}[{i}]"));
            }
        } else if let Some(entries) = node.as_map() {
            for (k, v) in entries {
                self.walk_placeholders(v, &format!("{what}.{}", k.as_str().unwrap_or_default()));
            }
        } else if let Some(text) = node.as_str().filter(|t| t.contains("${"))
            && let Err(e) = interp::expand(text, self.env)
        {
            self.placeholder_error(what, &e, node.loc);
        }
    }

    /// Map-form feeds must name a pod service as their source, or `claw-api` when the pod
    /// has a master (as `claw up` checks before it injects anything).
    fn check_feed_sources(&mut self, services: &BTreeMap<String, Service>, has_master: bool) {
        let mut errors = Vec::new();
        for (name, svc) in services {
            for feed in svc.claw.iter().flat_map(|c| &c.feeds) {
                if let FeedEntry::Inline(f) = feed
                    && !services.contains_key(&f.source.value)
                    && !(has_master && f.source.value == super::CLAW_API)
                {
                    let msg = format!("service \"{name}\": feed \"{}\" targets unknown source \"{}\"", f.name, f.source.value);
                    let fallback = "name a service of this pod as the feed source";
                    let help = if self.suggestions_left > 0 {
                        self.suggestions_left -= 1;
                        suggest(&f.source.value, services.keys().map(String::as_str), fallback)
                    } else {
                        fallback.to_string()
                    };
                    errors.push(Diagnostic::error(diags::UNKNOWN_SOURCE, msg).at(f.source.loc).help(help));
                }
            }
        }
        self.diags.extend(errors);
    }
}

fn same<T>(v: T, _: Option<Loc>) -> T {
    v
}

/// The Go type Clawdapus' YAML decoder gives a plain scalar that is not a string (`1` →
/// `int`, `1.5` → `float64`, `true` → `bool`), as its messages print it; `None` for
/// strings, nulls and collections.
fn go_scalar_type(node: &Node) -> Option<&'static str> {
    if node.is_null() || node.as_str().is_none() || node.as_map().is_some() || node.as_seq().is_some() {
        return None;
    }
    if node.as_bool().is_some() {
        return Some("bool");
    }
    if node.as_i64().is_some() {
        return Some("int");
    }
    let crate::yaml::Kind::Scalar { text, plain: true } = &node.kind else { return None };
    let t = text.strip_prefix(['+', '-']).unwrap_or(text);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if digits(t) {
        // Too large for an int: Go's decoder takes a uint64, then a float64.
        return Some(if text.starts_with('-') || t.parse::<u64>().is_err() { "float64" } else { "uint64" });
    }
    let (mantissa, exponent) = match t.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (t, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => (int.is_empty() && digits(frac)) || (digits(int) && (frac.is_empty() || digits(frac))),
        None => digits(mantissa),
    };
    let special = matches!(t, ".inf" | ".Inf" | ".INF") || matches!(text.as_str(), ".nan" | ".NaN" | ".NAN");
    (special || (mantissa_ok && exponent.is_none_or(digits))).then_some("float64")
}

/// `scheme://target [access mode …]` or `scheme:opaque`.
fn parse_surface(text: &str, loc: Loc) -> Option<Surface> {
    let mut words = text.split_whitespace();
    let uri = words.next()?;
    let access = words.collect::<Vec<_>>().join(" ");
    let (scheme, rest) = uri.split_once(':')?;
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return None;
    }
    let target = match rest.strip_prefix("//") {
        Some(authority_path) => authority_path.to_string(),
        None => rest.to_string(),
    };
    let target = target.trim_end_matches('/').to_string();
    let target = if target.is_empty() && rest.starts_with("///") { rest[2..].to_string() } else { target };
    if target.is_empty() {
        return None;
    }
    Some(Surface { scheme: scheme.to_ascii_lowercase(), target, access: (!access.is_empty()).then_some(access), loc })
}

/// Go's `path.Base` of the feed path, with `/` and `.` trimmed from its ends; else
/// `<source>-feed-<N+1>`.
fn derive_feed_name(path: &str, source: &str, index: usize) -> String {
    let trimmed = path.trim_end_matches('/');
    let base = if trimmed.is_empty() { "/" } else { trimmed.rsplit('/').next().unwrap_or(trimmed) };
    let name = base.trim_matches(|c| c == '/' || c == '.');
    if name.is_empty() { format!("{source}-feed-{}", index + 1) } else { name.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_names_derive_like_go_path_base() {
        assert_eq!(derive_feed_name("/fleet/alerts?since=15m", "s", 0), "alerts?since=15m");
        assert_eq!(derive_feed_name("/a/b/", "s", 0), "b");
        assert_eq!(derive_feed_name("/", "api", 2), "api-feed-3");
        assert_eq!(derive_feed_name("/x/..", "api", 0), "api-feed-1");
    }

    #[test]
    fn go_scalar_types_are_the_decoders() {
        let node = |text: &str, plain: bool| Node {
            kind: crate::yaml::Kind::Scalar { text: text.to_string(), plain },
            loc: Loc { file: FileId(0), span: Default::default() },
        };
        for (text, want) in [
            ("1", Some("int")),
            ("0x1f", Some("int")),
            ("true", Some("bool")),
            ("1.5", Some("float64")),
            ("-.5e3", Some("float64")),
            (".inf", Some("float64")),
            ("18446744073709551615", Some("uint64")),
            ("get_quote", None),
            ("1.2.3", None),
            ("~", None),
        ] {
            assert_eq!(go_scalar_type(&node(text, true)), want, "{text}");
        }
        assert_eq!(go_scalar_type(&node("1", false)), None);
    }

    #[test]
    fn surfaces_parse_every_target_form() {
        let loc = Loc { file: FileId(0), span: Default::default() };
        let s = parse_surface("service://trading-api read-only mode", loc).unwrap();
        assert_eq!((s.scheme.as_str(), s.target.as_str(), s.access.as_deref()), ("service", "trading-api", Some("read-only mode")));
        assert_eq!(parse_surface("host:///data/x", loc).unwrap().target, "/data/x");
        assert_eq!(parse_surface("volume:shared", loc).unwrap().target, "shared");
        assert!(parse_surface("nothing", loc).is_none());
        assert!(parse_surface("service://", loc).is_none());
    }
}
