//! Grant resolution: what each consumer may see and call, deny by default, with the
//! provenance of every granted tool. Also resolves feed subscriptions, memory, base URLs
//! and bearer auth (from the consumer's own `environment`).

use crate::describe::{Descriptor, Memory};
use crate::diag::{Diagnostic, suggest};
use crate::pod::env::Env;
use crate::pod::{Allow, FeedEntry, Origin, Pod, Role, Service, interp};
use crate::registry::Registry;
use crate::sourcemap::Loc;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most tools granted in one pod, counting each replica of a consumer: what the output
/// lists per agent. `allow: all` over a large descriptor, times many agents, stops here.
/// The benchmark's largest pod grants 90,000.
pub(crate) const MAX_GRANTED_TOOLS: u64 = 1_000_000;
/// "Did you mean" suggestions one resolution computes; later unknown names get the plain
/// help (each suggestion compares against every candidate).
const MAX_SUGGESTIONS: usize = 50;
/// Tool names listed in one "declares: …" help.
const MAX_LISTED: usize = 20;

pub(crate) use crate::diag::catalogue::grant as codes;

/// How resolved secrets are written.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Default)]
pub enum SecretMode {
    /// `${VAR}` instead of the value; only a declaration of VAR is needed.
    #[default]
    Redact,
    /// The value itself, as Clawdapus writes it.
    Inline,
}

/// A bearer token: the variable that holds it and, when known, its value.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Token {
    pub env: String,
    pub value: Option<String>,
}

/// Why a tool is visible: the grant line, and whether it came through the pod defaults.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Provenance {
    pub grant: Loc,
    pub origin: Origin,
    /// The grant was `allow: all` (or a bare service name).
    pub all: bool,
}

/// A tool granted to a consumer. The provider's name, address and token are shared by
/// every tool of that provider the consumer was granted (and the name and address by every
/// consumer), and the grant line's provenance by the tools it grants: a pod of 30,000
/// agent ids grants 90,000 tools, and a copy of each for each tool was a fifth of a
/// compile's peak memory.
#[derive(Clone, Debug, Hash)]
pub struct GrantedTool {
    pub service: Arc<str>,
    /// Index into the service descriptor's `tools`.
    pub index: usize,
    /// Shared by the tools of one grant line.
    pub via: Arc<Provenance>,
    pub base_url: Arc<str>,
    pub auth: Option<Arc<Token>>,
}

#[derive(Clone, Debug, Hash)]
pub struct ResolvedFeed {
    pub name: String,
    pub source: String,
    pub path: String,
    pub ttl: u64,
    pub description: String,
    pub base_url: String,
    pub auth: Option<Token>,
    pub loc: Loc,
}

impl ResolvedFeed {
    /// The feed's name as agent `agent` subscribes to it.
    pub fn name_for(&self, agent: &str) -> String {
        crate::pod::for_agent(&self.name, agent)
    }

    /// The feed's path and full URL for agent `agent`.
    pub fn path_and_url_for(&self, agent: &str) -> (String, String) {
        let path = crate::pod::for_agent(&self.path, agent);
        let url = format!("{}{path}", self.base_url);
        (path, url)
    }
}

#[derive(Clone, Debug, Hash)]
pub struct ResolvedMemory {
    pub service: String,
    pub base_url: String,
    pub ops: Memory,
    pub timeout_ms: u64,
    pub auth: Option<Token>,
}

/// Everything one consumer service was granted (shared by its replicas).
#[derive(Clone, Debug, Hash, Default)]
pub struct Plan {
    pub tools: Vec<GrantedTool>,
    pub feeds: Vec<ResolvedFeed>,
    pub memory: Option<ResolvedMemory>,
}

/// Resolves every agent service's grants. Plans are keyed by service name.
pub(crate) fn resolve(pod: &Pod, reg: &Registry, env: &Env, mode: SecretMode) -> (BTreeMap<String, Plan>, Vec<Diagnostic>) {
    let agents: Vec<&Service> = pod.services.values().filter(|s| is_agent(s)).collect();
    let mut r = Resolver::new(pod, reg, env, mode);
    let plans = agents.iter().map(|svc| (svc.name.clone(), r.plan(svc))).collect();
    (plans, crate::diag::cap(r.diags))
}

/// [`resolve`] on up to `threads` threads, with the same result whatever their number:
/// each run of services has a resolver of its own, and a pod whose runs report anything,
/// or grant past [`MAX_GRANTED_TOOLS`] together, is resolved again on one thread (what is
/// reported, the suggestions' budget and each missing token reported once, is the pod's,
/// in the services' order). Most pods report nothing.
pub(crate) fn resolve_on(
    pod: &Pod,
    reg: &Registry,
    env: &Env,
    mode: SecretMode,
    threads: usize,
) -> (BTreeMap<String, Plan>, Vec<Diagnostic>) {
    let agents: Vec<&Service> = pod.services.values().filter(|s| is_agent(s)).collect();
    if threads < 2 || agents.len() < 2 * MIN_RUN {
        return resolve(pod, reg, env, mode);
    }
    // Each run looks its variables up in a copy of its own (the lookups are recorded for
    // the lock), added back to `env` when the runs are taken.
    let runs = crate::jobs::map_runs_owning(
        &agents,
        threads,
        MIN_RUN,
        || env.clone(),
        |env, run| {
            let mut r = Resolver::new(pod, reg, &env, mode);
            let plans: Vec<(String, Plan)> = run.iter().map(|svc| (svc.name.clone(), r.plan(svc))).collect();
            let (clean, granted) = (r.diags.is_empty(), r.granted);
            (plans, clean, granted, env)
        },
    );
    let granted = runs.iter().fold(0u64, |n, run| n.saturating_add(run.2));
    if runs.iter().any(|run| !run.1) || granted > MAX_GRANTED_TOOLS {
        return resolve(pod, reg, env, mode);
    }
    let mut plans = BTreeMap::new();
    for (run, _, _, looked) in runs {
        env.absorb(&looked);
        plans.extend(run);
    }
    (plans, Vec::new())
}

/// Fewest agent services a thread resolves (below, one thread resolves them faster).
const MIN_RUN: usize = 64;

fn is_agent(svc: &Service) -> bool {
    svc.claw.as_ref().is_some_and(|c| c.role == Role::Agent)
}

struct Resolver<'a> {
    pod: &'a Pod,
    reg: &'a Registry,
    env: &'a Env,
    mode: SecretMode,
    diags: Vec<Diagnostic>,
    /// (consumer, provider) pairs whose missing token was already reported.
    auth_reported: HashSet<(String, String)>,
    /// Tool name → index, per tool service, built on first use (a grant list may name
    /// 30,000 tools of a descriptor declaring 20,000).
    tool_names: HashMap<&'a str, HashMap<&'a str, usize>>,
    suggestions_left: usize,
    /// Tools granted so far, each replica counted (bounded by [`MAX_GRANTED_TOOLS`]).
    granted: u64,
    /// Each provider's name and address, made once for all the tools granted of it.
    providers: HashMap<&'a str, (Arc<str>, Arc<str>)>,
}

impl<'a> Resolver<'a> {
    fn new(pod: &'a Pod, reg: &'a Registry, env: &'a Env, mode: SecretMode) -> Self {
        Resolver {
            pod,
            reg,
            env,
            mode,
            diags: Vec::new(),
            auth_reported: HashSet::new(),
            tool_names: HashMap::new(),
            suggestions_left: MAX_SUGGESTIONS,
            granted: 0,
            providers: HashMap::new(),
        }
    }

    /// An agent service's plan.
    fn plan(&mut self, svc: &'a Service) -> Plan {
        if !self.provider_is_agent(svc) {
            self.require_cllama(svc);
        }
        let memory = svc.claw.as_ref().and_then(|c| c.memory.as_ref()).and_then(|m| self.memory(svc, m));
        Plan { tools: self.tools(svc), feeds: self.feeds(svc), memory }
    }

    /// [`suggest`] while the run's budget lasts, then just the fallback.
    fn suggest<'c>(&mut self, needle: &str, candidates: impl IntoIterator<Item = &'c str>, fallback: impl Into<String>) -> String {
        if self.suggestions_left == 0 {
            return fallback.into();
        }
        self.suggestions_left -= 1;
        suggest(needle, candidates, fallback)
    }

    /// A service whose x-claw holds only `describe-file` looks like a tool provider, but it
    /// is an agent (Clawdapus: any service with x-claw is agent-managed) and inherits the
    /// pod's grant defaults. Without a cllama proxy that is an error (Clawdapus refuses it:
    /// tools and memory need cllama; clawc would run the tools natively with no runner),
    /// reported here, in place of the runner or memory errors that would otherwise point
    /// at the defaults and advise adding cllama to the provider. With a proxy it compiles
    /// as an agent, with a warning. Returns whether an error was reported.
    fn provider_is_agent(&mut self, svc: &Service) -> bool {
        let Some(claw) = svc.claw.as_ref().filter(|c| c.describe_only) else { return false };
        let Some(file) = &claw.describe_file else { return false };
        let feed_loc = |f: &FeedEntry| match f {
            FeedEntry::Inline(f) => f.loc,
            FeedEntry::ByName(n) => n.loc,
        };
        let inherited: Vec<(&str, Loc)> = [
            ("tools-defaults", claw.tools.first().map(|g| g.loc)),
            ("feeds-defaults", claw.feeds.first().map(feed_loc)),
            ("memory-defaults", claw.memory.as_ref().map(|m| m.loc)),
        ]
        .into_iter()
        .filter_map(|(k, loc)| Some((k, loc?)))
        .collect();
        if inherited.is_empty() {
            return false;
        }
        let name = &svc.name;
        let keys: Vec<&str> = inherited.iter().map(|(k, _)| *k).collect();
        let msg = format!(
            "service \"{name}\" is an agent because it has x-claw (only describe-file), so it inherits the pod's {}",
            keys.join(" and ")
        );
        let provider = format!(
            "if \"{name}\" provides tools rather than using them, describe it without x-claw: `--descriptor {name}={}`, or a build context (`build:` holding .claw-describe.json or a Dockerfile `LABEL claw.describe`), and remove its x-claw block",
            file.value
        );
        let error = claw.cllama.is_empty();
        let d = if error {
            Diagnostic::error(codes::PROVIDER_IS_AGENT, format!("{msg}, and it has no cllama proxy to run them through")).help(format!(
                "{provider}; if it is meant to be an agent that takes nothing, give it `tools: []`, `feeds: []` and `memory: null`"
            ))
        } else {
            Diagnostic::warning(codes::PROVIDER_IS_AGENT, format!("{msg} and is compiled as an agent with them"))
                .help(format!("{provider}; to keep it an agent that takes nothing, give it `tools: []`, `feeds: []` and `memory: null`"))
        };
        let mut d = d.at(file.loc).label("its only x-claw key");
        for (key, loc) in inherited {
            d = d.also(loc, format!("inherited from {key}"));
        }
        self.diags.push(d);
        error
    }

    /// Memory is recalled and retained by the cllama proxy around each inference turn; a
    /// native runner has no such hook (its tools run natively, see `tool-execution`).
    fn require_cllama(&mut self, svc: &Service) {
        let Some(claw) = &svc.claw else { return };
        let Some(memory) = claw.memory.as_ref().filter(|_| claw.cllama.is_empty()) else { return };
        let msg = format!(
            "service \"{}\": x-claw.memory requires x-claw.cllama on the consuming service; memory is mediated-only (native runners load tools, not memory)",
            svc.name
        );
        self.diags.push(
            Diagnostic::error(codes::REQUIRES_CLLAMA, msg)
                .at(memory.loc)
                .help("add `cllama: passthrough` (or another proxy type) to this service's x-claw, or `cllama-defaults` to the pod"),
        );
    }

    fn tools(&mut self, svc: &'a Service) -> Vec<GrantedTool> {
        let Some(claw) = &svc.claw else { return Vec::new() };
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        // A consumer presents one token to a provider, whichever of its tools it calls:
        // looked up once (a pod may grant thousands of tools), reported at the first.
        let mut tokens: HashMap<&str, Option<Arc<Token>>> = HashMap::new();
        for g in &claw.tools {
            let target = &g.service.value;
            let reg: &'a Registry = self.reg;
            let Some(desc) = reg.services.get(target).map(|d| &d.descriptor).filter(|d| !d.tools.is_empty()) else {
                self.unknown_service(svc, &g.path, target, g.service.loc);
                continue;
            };
            let indices: Vec<usize> = match &g.allow {
                Allow::All => (0..desc.tools.len()).collect(),
                Allow::Named(names) => names.iter().filter_map(|n| self.tool_index(svc, target, desc, n)).collect(),
            };
            if !self.within_grant_limit(svc, claw.count, indices.len(), g.loc) {
                return Vec::new();
            }
            let via = Arc::new(Provenance { grant: g.loc, origin: g.origin, all: matches!(g.allow, Allow::All) });
            let (service, base_url) = self.provider(target);
            // Grown once per grant, not doubled tool by tool: at 300 agent services of 30
            // tools each, the rehashing was a third of resolving the grants.
            seen.reserve(indices.len());
            out.reserve(indices.len());
            for index in indices {
                if seen.insert((target.as_str(), index)) {
                    let auth = match tokens.get(target.as_str()) {
                        Some(token) => token.clone(),
                        None => {
                            let name = crate::describe::ToolName::new(target, &desc.tools[index].name);
                            let token = self.auth(svc, target, desc, &format_args!("tool \"{name}\""), g.loc).map(Arc::new);
                            tokens.insert(target, token.clone());
                            token
                        }
                    };
                    out.push(GrantedTool { service: service.clone(), index, via: via.clone(), base_url: base_url.clone(), auth });
                }
            }
        }
        out
    }

    /// Charges `n` more tools for each of `count` replicas against [`MAX_GRANTED_TOOLS`];
    /// past it, reports once and grants nothing more.
    fn within_grant_limit(&mut self, svc: &Service, count: u32, n: usize, loc: Loc) -> bool {
        let before = self.granted;
        self.granted = before.saturating_add((n as u64).saturating_mul(u64::from(count)));
        if self.granted <= MAX_GRANTED_TOOLS {
            return true;
        }
        if before <= MAX_GRANTED_TOOLS {
            let msg = format!(
                "service \"{}\": the pod grants more than {MAX_GRANTED_TOOLS} tools (each replica counted); the limit is reached here",
                svc.name
            );
            let help = "grant named tools instead of `allow: all`, or fewer replicas; every granted tool is listed for every agent";
            self.diags.push(Diagnostic::error(codes::TOO_MANY_GRANTS, msg).at(loc).help(help));
        }
        false
    }

    fn unknown_service(&mut self, svc: &Service, path: &str, target: &str, loc: Loc) {
        let msg = format!("service \"{}\": {path} references unknown tool service \"{target}\"", svc.name);
        let help = match (self.pod.services.get(target), self.reg.services.get(target)) {
            (Some(_), Some(_)) => format!("the descriptor of \"{target}\" declares no tools"),
            (Some(_), None) => format!(
                "clawc found no descriptor for \"{target}\": give it one with `x-claw.describe-file`, `--descriptor {target}=PATH`, or a build context with .claw-describe.json"
            ),
            (None, _) => {
                let reg = self.reg;
                self.suggest(target, reg.tool_services().map(|(s, _)| s), "name a pod service whose descriptor declares tools")
            }
        };
        self.diags.push(Diagnostic::error(codes::UNKNOWN_TOOL_SERVICE, msg).at(loc).help(help));
    }

    fn tool_index(&mut self, svc: &Service, target: &'a str, desc: &'a Descriptor, name: &crate::pod::Spanned<String>) -> Option<usize> {
        let index = self.tool_names.entry(target).or_insert_with(|| {
            // The first of duplicate names wins, as a scan from the front would find it.
            let mut m = HashMap::with_capacity(desc.tools.len());
            for (i, t) in desc.tools.iter().enumerate() {
                m.entry(t.name.as_str()).or_insert(i);
            }
            m
        });
        let found = index.get(name.value.as_str()).copied();
        if found.is_none() {
            let msg = format!("service \"{}\": tool policy for \"{target}\" references unknown tool \"{}\"", svc.name, name.value);
            let names = desc.tools.iter().map(|t| t.name.as_str());
            let help = self.suggest(&name.value, names.clone(), format!("\"{target}\" declares: {}", listed(names, desc.tools.len())));
            self.diags.push(Diagnostic::error(codes::UNKNOWN_TOOL, msg).at(name.loc).help(help));
        }
        found
    }

    fn feeds(&mut self, svc: &Service) -> Vec<ResolvedFeed> {
        let Some(claw) = &svc.claw else { return Vec::new() };
        let mut out = Vec::new();
        for entry in &claw.feeds {
            let (name, source, path, ttl, description, loc) = match entry {
                FeedEntry::Inline(f) => (f.name.clone(), f.source.value.clone(), f.path.clone(), f.ttl, f.description.clone(), f.loc),
                FeedEntry::ByName(n) => match self.reg.feeds.get(&n.value) {
                    Some(def) => {
                        (n.value.clone(), def.source.clone(), def.spec.path.clone(), def.spec.ttl, def.spec.description.clone(), n.loc)
                    }
                    None => {
                        let msg = format!("service \"{}\": feed \"{}\" was not found in the descriptor registry", svc.name, n.value);
                        let reg = self.reg;
                        let help = self.suggest(
                            &n.value,
                            reg.feeds.keys().map(String::as_str),
                            "subscribe to a feed that a service descriptor declares in \"feeds\"",
                        );
                        self.diags.push(Diagnostic::error(codes::UNKNOWN_FEED, msg).at(n.loc).help(help));
                        continue;
                    }
                },
            };
            let auth = match self.reg.services.get(&source) {
                Some(d) => self.auth(svc, &source, &d.descriptor, &format_args!("feed \"{name}\""), loc),
                None => None,
            };
            out.push(ResolvedFeed { base_url: self.base_url(&source), name, source, path, ttl, description, auth, loc });
        }
        out
    }

    fn memory(&mut self, svc: &Service, m: &crate::pod::MemoryRef) -> Option<ResolvedMemory> {
        let target = &m.service.value;
        let Some(d) = self.reg.services.get(target) else {
            let msg = format!("service \"{}\": memory target \"{target}\" has no descriptor", svc.name);
            let pod = self.pod;
            let help = self.suggest(
                target,
                pod.services.keys().map(String::as_str),
                "give the memory service a descriptor with a \"memory\" block",
            );
            self.diags.push(Diagnostic::error(codes::MEMORY_TARGET, msg).at(m.service.loc).help(help));
            return None;
        };
        let Some(ops) = d.descriptor.memory.clone() else {
            let msg = format!("service \"{}\": memory target \"{target}\" does not declare a memory capability", svc.name);
            self.diags.push(
                Diagnostic::error(codes::MEMORY_TARGET, msg)
                    .at(m.service.loc)
                    .help("its descriptor needs \"version\": 2 and a \"memory\" block with recall and/or retain"),
            );
            return None;
        };
        let auth = self.auth(svc, target, &d.descriptor, &"memory", m.loc);
        Some(ResolvedMemory { service: target.clone(), base_url: self.base_url(target), ops, timeout_ms: m.timeout_ms, auth })
    }

    fn base_url(&self, service: &str) -> String {
        self.pod.base_url(service)
    }

    /// `service`'s name and address, shared.
    fn provider(&mut self, service: &'a str) -> (Arc<str>, Arc<str>) {
        let pod = self.pod;
        self.providers.entry(service).or_insert_with(|| (service.into(), pod.base_url(service).into())).clone()
    }

    /// The bearer token a consumer presents to `provider`: projected by `claw up` for an
    /// injected service's own agents, else read from the consumer's own `environment`
    /// (never the provider's). A variable declared there without a value
    /// (`- VAR`, `VAR:`) is passed through, as Compose does: its value is the one `.env`
    /// or the environment clawc runs in gives it.
    fn auth(&mut self, consumer: &Service, provider: &str, desc: &Descriptor, what: &dyn std::fmt::Display, loc: Loc) -> Option<Token> {
        let var = desc.auth.as_ref()?.bearer_env()?;
        if self.pod.builtins.get(provider).is_some_and(|b| b.projected.contains(&consumer.name)) {
            // `claw up` makes this token when the pod starts and hands it to the agent
            // itself: there is no value to read, only the reference to write.
            return Some(Token { env: var.to_string(), value: None });
        }
        let declared = consumer.environment.get(var);
        let passed_through = declared.is_some_and(|v| v.value.is_none());
        let raw = declared.and_then(|v| v.value.as_deref()).filter(|v| !v.trim().is_empty());
        let value = match raw {
            Some(v) if v.contains("${") => match self.env.secret_scope(|| interp::expand(v, self.env)) {
                Ok(x) => Some(x),
                Err(e) if self.mode == SecretMode::Inline => {
                    self.auth_error(consumer, provider, what, var, loc, &format!("{e}"));
                    return None;
                }
                Err(_) => None,
            },
            Some(v) => Some(v.to_string()),
            None if passed_through => self.env.secret_scope(|| self.env.get(var)).map(str::to_string),
            None => None,
        };
        let ok = match self.mode {
            SecretMode::Inline => value.as_ref().is_some_and(|v| !v.trim().is_empty()),
            SecretMode::Redact => declared.is_some(),
        };
        if !ok {
            let why = if passed_through {
                format!(
                    "service env passes \"{var}\" through without a value, and neither .env nor the environment sets it (required by descriptor auth.env for bearer auth)"
                )
            } else {
                format!("service env has no value for \"{var}\" (required by descriptor auth.env for bearer auth)")
            };
            self.auth_error(consumer, provider, what, var, loc, &why);
            return None;
        }
        Some(Token { env: var.to_string(), value: value.filter(|v| !v.is_empty()) })
    }

    /// `what` (the tool, feed or memory that needs the token) is only rendered here, on
    /// the way to a diagnostic.
    fn auth_error(&mut self, consumer: &Service, provider: &str, what: &dyn std::fmt::Display, var: &str, loc: Loc, why: &str) {
        if !self.auth_reported.insert((consumer.name.clone(), provider.to_string())) {
            return;
        }
        let what = what.to_string();
        let auth_kind = if what.starts_with("feed") { "feed auth" } else { "auth" };
        let msg = format!("service \"{}\": {what}: {auth_kind}: {why}", consumer.name);
        let passed_through = consumer.environment.get(var).is_some_and(|v| v.value.is_none());
        let help = match self.mode {
            SecretMode::Inline if passed_through => format!(
                "set {var} in the pod's .env or in the environment clawc runs in: `{var}` in the `environment` of \"{}\" takes its value from there, as Compose does",
                consumer.name
            ),
            SecretMode::Redact => format!(
                "declare {var} in the `environment` of \"{}\" (e.g. `{var}: ${{{var}}}`); \"{provider}\" requires a bearer token",
                consumer.name
            ),
            SecretMode::Inline => {
                format!("give {var} a value in the `environment` of \"{}\", or set it in .env and write `{var}: ${{{var}}}`", consumer.name)
            }
        };
        let mut d = Diagnostic::error(codes::AUTH_ENV, msg).at(loc).help(help);
        if let Some(decl) = consumer.environment.get(var).filter(|v| v.value.is_none()) {
            d = d.also(decl.loc, format!("{var} is passed through here"));
        }
        self.diags.push(d);
    }
}

/// The first [`MAX_LISTED`] names, and how many there are when that is not all of them.
fn listed<'n>(names: impl Iterator<Item = &'n str>, total: usize) -> String {
    let shown: Vec<&str> = names.take(MAX_LISTED).collect();
    if total > shown.len() { format!("{}, … ({total} tools)", shown.join(", ")) } else { shown.join(", ") }
}
