//! Two releases of one service → findings: tools (matched by name, renames paired),
//! transports, input and output schemas (direction-aware, [`super::schema`]), privilege
//! annotations (effective MCP hints), feeds, endpoints, memory, auth and the release
//! version.

use super::model::{Release, ToolSpec};
use super::rules::{self, RuleRef, Severity};
use super::schema::{self, Dir};
use super::{Finding, Subject};
use crate::describe::Transport;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The findings, and the tools whose schema comparison was cut short (tool, why).
pub(crate) struct Compared {
    pub findings: Vec<Finding>,
    pub limited: Vec<(String, String)>,
}

struct Out<'a> {
    new: &'a Release,
    /// Lines in NEW's text, each container scanned once.
    locator: crate::describe::json_span::Locator<'a>,
    findings: Vec<Finding>,
    limited: Vec<(String, String)>,
}

impl Out<'_> {
    /// A finding about tool `tool` (or the service) at `path` (segments below the tool,
    /// or below the descriptor), pointing at `at` in NEW's text.
    fn push(&mut self, rule: RuleRef, subject: Subject, path: &[String], at: Vec<String>, message: String, keyword: Option<String>) {
        let tool = subject.tool().map(str::to_string);
        let line = self.new.line_of(&mut self.locator, &at);
        self.findings.push(Finding::new(
            rule,
            &self.new.service,
            tool,
            schema::pointer(path),
            message,
            keyword,
            subject,
            &self.new.file,
            line,
        ));
    }

    /// A finding on a tool: its path is below the tool, and so is where it points.
    fn tool(&mut self, rule: RuleRef, tool: &str, path: &[&str], message: String) {
        let path: Vec<String> = path.iter().map(|s| (*s).to_string()).collect();
        let at = self.tool_at(tool, &path);
        self.push(rule, Subject::Tool(tool.to_string()), &path, at, message, None);
    }

    fn tool_at(&self, tool: &str, path: &[String]) -> Vec<String> {
        match self.new.tool_path(tool) {
            Some(base) => base.iter().chain(path).cloned().collect(),
            // Not in NEW: the line where NEW's tools start (the first one, so that finding
            // the line never scans the whole list).
            None => first(self.new.tool_path_any()),
        }
    }

    /// A finding on the service as a whole.
    fn service(&mut self, rule: RuleRef, subject: Subject, path: &[&str], message: String) {
        let path: Vec<String> = path.iter().map(|s| (*s).to_string()).collect();
        let at = path.clone();
        self.push(rule, subject, &path, at, message, None);
    }
}

/// The path of the first element of a list (`None`: the document).
fn first(list: Option<&[String]>) -> Vec<String> {
    list.map(<[String]>::to_vec).unwrap_or_default()
}

/// Compares two releases of one service.
pub(crate) fn compare(old: &Release, new: &Release) -> Compared {
    let mut o = Out { new, locator: crate::describe::json_span::Locator::new(&new.source), findings: Vec::new(), limited: Vec::new() };
    service(&mut o, old, new);
    let transport_changed = old.mcp.is_some() != new.mcp.is_some();
    tools(&mut o, old, new, transport_changed);
    feeds(&mut o, old, new);
    memory(&mut o, old, new);
    version(&mut o, old, new);
    Compared { findings: o.findings, limited: o.limited }
}

fn service(o: &mut Out, old: &Release, new: &Release) {
    if old.version != new.version {
        o.service(
            rules::VERSION_FORMAT_CHANGED,
            Subject::Service,
            &["version"],
            format!("descriptor format version {} → {}", old.version, new.version),
        );
    }
    if old.description != new.description {
        o.service(rules::SERVICE_METADATA_CHANGED, Subject::Service, &["description"], "service description changed".into());
    }
    if old.skill != new.skill {
        let show = |s: &Option<String>| s.as_deref().map_or_else(|| "none".to_string(), |s| format!("`{s}`"));
        o.service(
            rules::SERVICE_METADATA_CHANGED,
            Subject::Service,
            &["skill"],
            format!("skill {} → {}", show(&old.skill), show(&new.skill)),
        );
    }
    match (&old.mcp, &new.mcp) {
        (None, Some(p)) => o.service(
            rules::TRANSPORT_CHANGED,
            Subject::AllTools,
            &["mcp"],
            format!("the service moved from HTTP routes to MCP at {p}: compiled tools.json calls the old routes"),
        ),
        (Some(p), None) => o.service(
            rules::TRANSPORT_CHANGED,
            Subject::AllTools,
            &["mcp"],
            format!("the service moved from MCP at {p} to HTTP routes: compiled tools.json calls the old endpoint"),
        ),
        (Some(a), Some(b)) if a != b => {
            o.service(rules::TRANSPORT_MCP_PATH_CHANGED, Subject::AllTools, &["mcp", "path"], format!("mcp.path {a} → {b}"));
        }
        _ => {}
    }
    if old.auth.0 != new.auth.0 {
        let msg = format!("auth.type {} → {}", old.auth.0, new.auth.0);
        o.service(rules::AUTH_TYPE_CHANGED, Subject::Auth, &["auth", "type"], msg);
    } else if old.auth.0 == "bearer" && old.auth.1 != new.auth.1 {
        let msg = format!("bearer auth.env {} → {}: every consumer must provide the new variable", old.auth.1, new.auth.1);
        o.service(rules::AUTH_ENV_CHANGED, Subject::Auth, &["auth", "env"], msg);
    }
    for (key, desc) in &old.endpoints {
        let name = format!("{} {}", key.0, key.1);
        match new.endpoints.get(key) {
            None => {
                let path = vec!["endpoints".to_string(), name.clone()];
                o.push(
                    rules::SERVICE_ENDPOINT_REMOVED,
                    Subject::Service,
                    &path,
                    vec!["endpoints".into()],
                    format!("endpoint {name} removed"),
                    None,
                );
            }
            Some(d) if d != desc => {
                let path = vec!["endpoints".to_string(), name.clone(), "description".to_string()];
                let at = new.endpoint_path(key).unwrap_or_default();
                o.push(rules::SERVICE_METADATA_CHANGED, Subject::Service, &path, at, format!("endpoint {name}: description changed"), None);
            }
            Some(_) => {}
        }
    }
    for key in new.endpoints.keys().filter(|k| !old.endpoints.contains_key(*k)) {
        let name = format!("{} {}", key.0, key.1);
        let path = vec!["endpoints".to_string(), name.clone()];
        let at = new.endpoint_path(key).unwrap_or_default();
        o.push(rules::SERVICE_ENDPOINT_ADDED, Subject::Service, &path, at, format!("endpoint {name} added"), None);
    }
}

/// Canonical input and output schemas of a tool, for rename pairing (`None`: the tool
/// has no parameter, so it never pairs).
fn signature(t: &ToolSpec) -> Option<(Value, Option<Value>)> {
    let input = schema::canonical(&t.input, &t.input);
    let has_property = input.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    has_property.then(|| (input, t.output.as_ref().map(|s| schema::canonical(s, s))))
}

fn tools(o: &mut Out, old: &Release, new: &Release, transport_changed: bool) {
    let removed: Vec<&ToolSpec> = old.tools.values().filter(|t| !new.tools.contains_key(&t.name)).collect();
    let added: Vec<&ToolSpec> = new.tools.values().filter(|t| !old.tools.contains_key(&t.name)).collect();
    // Renames: a removed and an added tool whose signatures match each other only.
    let (sr, sa): (Vec<_>, Vec<_>) = (removed.iter().map(|t| signature(t)).collect(), added.iter().map(|t| signature(t)).collect());
    let mut paired_r = BTreeSet::new();
    let mut paired_a = BTreeSet::new();
    for (i, s) in sr.iter().enumerate() {
        let Some(s) = s else { continue };
        let matches: Vec<usize> = (0..sa.len()).filter(|&j| sa[j].as_ref() == Some(s)).collect();
        if let [j] = matches[..]
            && sr.iter().filter(|x| x.as_ref() == Some(s)).count() == 1
        {
            paired_r.insert(i);
            paired_a.insert(j);
            let (r, a) = (&removed[i].name, &added[j].name);
            let msg = format!("tool `{r}` is likely renamed to `{a}` (same schemas): callers of `{r}` fail");
            let at = o.tool_at(a, &[]);
            o.push(rules::TOOL_RENAMED_LIKELY, Subject::Tool(r.clone()), &[], at, msg, None);
        }
    }
    for (i, t) in removed.iter().enumerate().filter(|(i, _)| !paired_r.contains(i)) {
        let _ = i;
        o.tool(rules::TOOL_REMOVED, &t.name, &[], format!("tool `{}` removed: callers fail", t.name));
    }
    for (j, t) in added.iter().enumerate().filter(|(j, _)| !paired_a.contains(j)) {
        let _ = j;
        let effect = if t.read_only() { "read-only" } else { "not read-only" };
        let at = o.tool_at(&t.name, &[]);
        o.push(rules::TOOL_ADDED, Subject::NewTool(t.name.clone()), &[], at, format!("tool `{}` added ({effect})", t.name), None);
    }
    for (name, a) in &old.tools {
        let Some(b) = new.tools.get(name) else { continue };
        tool(o, a, b, transport_changed);
    }
}

fn tool(o: &mut Out, a: &ToolSpec, b: &ToolSpec, transport_changed: bool) {
    let name = a.name.as_str();
    if a.description != b.description {
        o.tool(rules::TOOL_DESCRIPTION_CHANGED, name, &["description"], "description changed".into());
    }
    if a.title != b.title {
        o.tool(rules::TOOL_DESCRIPTION_CHANGED, name, &["title"], "title changed".into());
    }
    if !transport_changed
        && let (
            Transport::Http { method: ma, path: pa, body: ba, body_key: ka },
            Transport::Http { method: mb, path: pb, body: bb, body_key: kb },
        ) = (&a.transport, &b.transport)
    {
        if ma != mb {
            o.tool(rules::TRANSPORT_HTTP_METHOD_CHANGED, name, &["http", "method"], format!("http.method {ma} → {mb}"));
        }
        if pa != pb {
            o.tool(rules::TRANSPORT_HTTP_PATH_CHANGED, name, &["http", "path"], format!("http.path {pa} → {pb}"));
        }
        let show = |b: &Option<String>, k: &Option<String>| {
            format!("{}{}", b.as_deref().unwrap_or("default"), k.as_ref().map(|k| format!(" in \"{k}\"")).unwrap_or_default())
        };
        if ba != bb || ka != kb {
            let which = if ka == kb { "body" } else { "body_key" };
            let msg = format!("request body {} → {}", show(ba, ka), show(bb, kb));
            o.tool(rules::TRANSPORT_HTTP_BODY_CHANGED, name, &["http", which], msg);
        }
    }
    schemas(o, name, "inputSchema", &a.input, &b.input, Dir::In);
    match (&a.output, &b.output) {
        (Some(_), None) => {
            o.tool(
                rules::OUTPUT_SCHEMA_REMOVED,
                name,
                &["outputSchema"],
                "outputSchema dropped: structuredContent is no longer promised".into(),
            );
        }
        (None, Some(_)) => o.tool(rules::OUTPUT_SCHEMA_ADDED, name, &["outputSchema"], "outputSchema added".into()),
        (Some(x), Some(y)) => schemas(o, name, "outputSchema", x, y, Dir::Out),
        (None, None) => {}
    }
    annotations(o, name, &a.annotations, &b.annotations);
}

fn schemas(o: &mut Out, tool: &str, key: &str, a: &Value, b: &Value, dir: Dir) {
    let outcome = schema::compare(a, b, dir);
    for f in outcome.findings {
        let mut path = vec![key.to_string()];
        path.extend(f.path);
        let at = o.tool_at(tool, &path);
        o.push(f.rule, Subject::Tool(tool.to_string()), &path, at, f.message, f.keyword);
    }
    if let Some(why) = outcome.limited {
        o.limited.push((tool.to_string(), format!("{key}: {why}")));
    }
}

/// Effective MCP hints (spec 2025-11-25) and Clawdapus `readOnly`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Hints {
    read_only: bool,
    read_only_hint: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

const PRIVILEGE_KEYS: [&str; 5] = ["readOnly", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];

fn hints(a: &Map<String, Value>) -> Hints {
    let flag = |k: &str, default: bool| a.get(k).and_then(Value::as_bool).unwrap_or(default);
    Hints {
        read_only: flag("readOnly", false),
        read_only_hint: flag("readOnlyHint", false),
        destructive: flag("destructiveHint", true),
        idempotent: flag("idempotentHint", false),
        open_world: flag("openWorldHint", true),
    }
}

fn annotations(o: &mut Out, tool: &str, a: &Map<String, Value>, b: &Map<String, Value>) {
    let (ha, hb) = (hints(a), hints(b));
    fn at(k: &str) -> [&str; 2] {
        ["annotations", k]
    }
    if ha.read_only && !hb.read_only {
        o.tool(
            rules::PRIVILEGE_READONLY_CLEARED,
            tool,
            &at("readOnly"),
            "annotations.readOnly true → false: the tool may now change state".into(),
        );
    }
    if ha.read_only_hint && !hb.read_only_hint {
        let msg = "readOnlyHint true → false: clients that auto-approve read-only tools stop asking".to_string();
        o.tool(rules::PRIVILEGE_READONLY_HINT_CLEARED, tool, &at("readOnlyHint"), msg);
    }
    if (!ha.read_only && hb.read_only) || (!ha.read_only_hint && hb.read_only_hint) {
        let k = if !ha.read_only_hint && hb.read_only_hint { "readOnlyHint" } else { "readOnly" };
        o.tool(rules::PRIVILEGE_REDUCED, tool, &at(k), format!("{k} set: the tool now promises to be read-only"));
    }
    // Destructive and idempotent are meaningless while the tool is read-only.
    if !ha.read_only_hint && !hb.read_only_hint {
        if !ha.destructive && hb.destructive {
            let msg = "effective destructiveHint false → true: the tool may now destroy data".to_string();
            o.tool(rules::PRIVILEGE_DESTRUCTIVE_HINT_SET, tool, &at("destructiveHint"), msg);
        } else if ha.destructive && !hb.destructive {
            o.tool(rules::PRIVILEGE_REDUCED, tool, &at("destructiveHint"), "destructiveHint cleared".into());
        }
        if ha.idempotent && !hb.idempotent {
            let msg = "idempotentHint true → false: retries may repeat the effect".to_string();
            o.tool(rules::PRIVILEGE_IDEMPOTENT_HINT_CLEARED, tool, &at("idempotentHint"), msg);
        } else if !ha.idempotent && hb.idempotent {
            o.tool(rules::PRIVILEGE_REDUCED, tool, &at("idempotentHint"), "idempotentHint set: retries are now safe".into());
        }
    }
    if !ha.open_world && hb.open_world {
        let msg = "effective openWorldHint false → true: the tool may now reach outside systems".to_string();
        o.tool(rules::PRIVILEGE_OPEN_WORLD_HINT_SET, tool, &at("openWorldHint"), msg);
    } else if ha.open_world && !hb.open_world {
        o.tool(rules::PRIVILEGE_REDUCED, tool, &at("openWorldHint"), "openWorldHint cleared".into());
    }
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).filter(|k| !PRIVILEGE_KEYS.contains(&k.as_str())).collect();
    for k in keys {
        if a.get(k.as_str()) != b.get(k.as_str()) {
            o.tool(rules::TOOL_ANNOTATION_CHANGED, tool, &at(k), format!("annotation `{k}` changed"));
        }
    }
}

fn feeds(o: &mut Out, old: &Release, new: &Release) {
    let removed: Vec<&String> = old.feeds.keys().filter(|n| !new.feeds.contains_key(*n)).collect();
    let added: Vec<&String> = new.feeds.keys().filter(|n| !old.feeds.contains_key(*n)).collect();
    let mut paired = BTreeSet::new();
    let mut renamed = BTreeSet::new();
    for r in &removed {
        let path = &old.feeds[*r].path;
        let same: Vec<&&String> = added.iter().filter(|a| new.feeds[**a].path == *path).collect();
        let rivals = removed.iter().filter(|x| old.feeds[**x].path == *path).count();
        if let [a] = same[..]
            && rivals == 1
        {
            paired.insert((*a).clone());
            renamed.insert((*r).clone());
            let subject = Subject::Feed { name: (*r).clone(), path: path.clone() };
            let at = new.feed_path(a).unwrap_or_default();
            let msg = format!("feed `{r}` is likely renamed to `{a}` (same path {path}): subscriptions to `{r}` stop resolving");
            o.push(rules::FEED_RENAMED_LIKELY, subject, &["feeds".into(), (*r).clone()], at, msg, None);
        }
    }
    for r in removed.iter().filter(|r| !renamed.contains(**r)) {
        let subject = Subject::Feed { name: (*r).clone(), path: old.feeds[*r].path.clone() };
        let msg = format!("feed `{r}` removed: subscriptions to it stop resolving");
        let at = new.feeds.keys().next().and_then(|k| new.feed_path(k)).unwrap_or_default();
        o.push(rules::FEED_REMOVED, subject, &["feeds".into(), (*r).clone()], at, msg, None);
    }
    for a in added.iter().filter(|a| !paired.contains(**a)) {
        let at = new.feed_path(a).unwrap_or_default();
        let subject = Subject::Feed { name: (*a).clone(), path: new.feeds[*a].path.clone() };
        o.push(rules::FEED_ADDED, subject, &["feeds".into(), (*a).clone()], at, format!("feed `{a}` added"), None);
    }
    for (name, f) in &old.feeds {
        let Some(g) = new.feeds.get(name) else { continue };
        let subject = || Subject::Feed { name: name.clone(), path: f.path.clone() };
        let at = |k: &str| {
            let mut p = new.feed_path(name).unwrap_or_default();
            p.push(k.to_string());
            p
        };
        let path = |k: &str| vec!["feeds".to_string(), name.clone(), k.to_string()];
        if f.path != g.path {
            let msg = format!("feed `{name}` path {} → {}: compiled feeds.json fetches the old path", f.path, g.path);
            o.push(rules::FEED_PATH_CHANGED, subject(), &path("path"), at("path"), msg, None);
        }
        if f.ttl != g.ttl {
            o.push(rules::FEED_TTL_CHANGED, subject(), &path("ttl"), at("ttl"), format!("feed `{name}` ttl {}s → {}s", f.ttl, g.ttl), None);
        }
        if f.description != g.description {
            let msg = format!("feed `{name}` description changed");
            o.push(rules::SERVICE_METADATA_CHANGED, subject(), &path("description"), at("description"), msg, None);
        }
    }
}

fn memory(o: &mut Out, old: &Release, new: &Release) {
    match (&old.memory, &new.memory) {
        (None, None) => {}
        (Some(_), None) => o.service(rules::MEMORY_OP_REMOVED, Subject::Memory, &["memory"], "the memory block was removed".into()),
        (a, b) => {
            let ops = |m: Option<&crate::describe::Memory>| {
                m.map(|m| [("recall", m.recall.clone()), ("retain", m.retain.clone()), ("forget", m.forget.clone())]).unwrap_or([
                    ("recall", None),
                    ("retain", None),
                    ("forget", None),
                ])
            };
            for ((op, pa), (_, pb)) in ops(a.as_ref()).into_iter().zip(ops(b.as_ref())) {
                match (pa, pb) {
                    (Some(_), None) => {
                        o.service(rules::MEMORY_OP_REMOVED, Subject::Memory, &["memory", op], format!("memory op `{op}` removed"));
                    }
                    (None, Some(p)) => {
                        o.service(rules::MEMORY_OP_ADDED, Subject::Memory, &["memory", op], format!("memory op `{op}` added at {p}"));
                    }
                    (Some(x), Some(y)) if x != y => {
                        o.service(
                            rules::MEMORY_PATH_CHANGED,
                            Subject::Memory,
                            &["memory", op, "path"],
                            format!("memory `{op}` path {x} → {y}"),
                        );
                    }
                    _ => {}
                }
            }
        }
    }
}

/// `MAJOR.MINOR.PATCH` (a pre-release or build suffix allowed).
fn semver(s: &str) -> Option<(u64, u64, u64)> {
    let core = s.trim().trim_start_matches('v').split(['-', '+']).next()?;
    let mut it = core.split('.').map(|p| p.parse::<u64>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(v)
}

fn version(o: &mut Out, old: &Release, new: &Release) {
    let (Some(a), Some(b)) = (old.release.as_deref().and_then(semver), new.release.as_deref().and_then(semver)) else { return };
    let breaking = o.findings.iter().filter(|f| f.rule.severity() == Severity::Err).count();
    if breaking == 0 {
        return;
    }
    let bumped = b.0 > a.0 || (a.0 == 0 && b.0 == 0 && b.1 > a.1);
    if !bumped {
        let need = if a.0 == 0 { "a minor bump below 1.0.0" } else { "a major bump" };
        let msg = format!(
            "{breaking} breaking finding(s), but release {} → {} is not {need}",
            old.release.as_deref().unwrap_or_default(),
            new.release.as_deref().unwrap_or_default()
        );
        o.service(rules::VERSION_NOT_BUMPED, Subject::Service, &["release"], msg);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn semver_reads_releases() {
        assert_eq!(super::semver("1.2.3"), Some((1, 2, 3)));
        assert_eq!(super::semver("v2.0.0-rc.1+x"), Some((2, 0, 0)));
        assert_eq!(super::semver("1.2"), None);
        assert_eq!(super::semver("a.b.c"), None);
    }
}
