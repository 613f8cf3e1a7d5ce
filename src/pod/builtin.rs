//! The services `claw up` injects into a pod, decided from the pod alone as Clawdapus
//! decides them (`cmd/claw/compose_up.go`):
//!
//! - `claw-api`, the governance API, when the pod has `x-claw.master` or any service has
//!   `invoke` entries. It listens on the port of `CLAW_API_ADDR` (default `:8080`).
//! - `claw-wall`, the conversation wall, when a cllama agent's Discord handle lists channel
//!   ids. Each such agent is given the wall's two tools (appended to its grants) and two
//!   feeds (`channel-awareness`, then `channel-context`, appended to its feeds), shaped by
//!   `context.channel` (the pod's, then the service's).
//!
//! A pod service may not take an injected service's name. The built-in descriptors
//! themselves belong to the describe stage (`source/builtin.rs`).
//!
//! This is a child module of `parse` (it extends its `Cx`); it lives in its own file.

use super::{Cx, diags};
use crate::diag::Diagnostic;
use crate::pod::{Allow, CLAW_API, CLAW_WALL, FeedEntry, Grant, Injected, InlineFeed, Origin, Role, Service, Spanned};
use crate::sourcemap::Loc;
use crate::yaml::Node;
use std::collections::{BTreeMap, BTreeSet};

/// The wall's tools, in the order `claw up` grants them.
const WALL_TOOLS: [&str; 2] = ["search_channel_context", "get_channel_messages"];
const WALL_PORT: &str = "8080";
const WALL_FEED_TTL: u64 = 30;

/// `context.channel`: what shapes the wall's feeds. Unset fields keep the defaults.
#[derive(Clone, Debug, Default)]
struct ChannelSettings {
    since: Option<String>,
    limit: Option<u64>,
    max_chars: Option<u64>,
}

impl ChannelSettings {
    /// `top`'s fields where it sets them, else these.
    fn overlay(&self, top: &ChannelSettings) -> ChannelSettings {
        ChannelSettings {
            since: top.since.clone().or_else(|| self.since.clone()),
            limit: top.limit.or(self.limit),
            max_chars: top.max_chars.or(self.max_chars),
        }
    }

    /// The two feeds, awareness first: a configured `limit` sets both feeds' limits.
    fn feeds(&self, channels: &str, digest: bool) -> [(&'static str, String); 2] {
        let since = self.since.as_deref().unwrap_or("24h");
        let max_chars = self.max_chars.unwrap_or(32 * 1024);
        let kind = if digest { "raw_window%2Bdigest" } else { "raw_window" };
        let awareness = format!(
            "/channel-awareness?channels={channels}&since={since}&limit={}&max_chars={max_chars}&context_kind={kind}",
            self.limit.unwrap_or(60)
        );
        let context = format!(
            "/channel-context?consumer={{claw_id}}&channels={channels}&mode=tail&since={since}&limit={}&max_chars={max_chars}",
            self.limit.unwrap_or(40)
        );
        [("channel-awareness", awareness), ("channel-context", context)]
    }
}

/// A service's Discord handle channel ids: trimmed, blank ones dropped, sorted, unique.
fn discord_channels(svc: &Service) -> BTreeSet<String> {
    let Some(h) = svc.claw.as_ref().and_then(|c| c.handles.get("discord")) else { return BTreeSet::new() };
    h.guilds.iter().flat_map(|g| &g.channels).map(|c| c.id.trim().to_string()).filter(|id| !id.is_empty()).collect()
}

/// The port of `CLAW_API_ADDR` (`host:port` or `:port`); 8080 when unset or unreadable.
fn api_port(addr: Option<&str>) -> String {
    addr.and_then(|a| a.rsplit_once(':')).map(|(_, p)| p.trim()).filter(|p| !p.is_empty()).unwrap_or("8080").to_string()
}

impl Cx<'_> {
    /// Decides which services `claw up` injects (checking the names they reserve) and gives
    /// the wall's agents its feeds and tools. `raw` is the pod's `services:` as written.
    pub(super) fn builtins(
        &mut self,
        root: &Node,
        raw: &[(Node, Node)],
        services: &mut BTreeMap<String, Service>,
        master: Option<&str>,
    ) -> BTreeMap<String, Injected> {
        let mut out = BTreeMap::new();
        self.requires_master(root, raw, master);
        if let Some(api) = self.claw_api(root, raw, services, master) {
            out.insert(CLAW_API.to_string(), api);
        }
        let digest = self.channel_memory(root, services);
        if let Some(wall) = self.wall(root, raw, services, digest) {
            out.insert(CLAW_WALL.to_string(), wall);
        }
        out
    }

    /// `x-claw.principals` and a service's `claw-api: self` need a master.
    fn requires_master(&mut self, root: &Node, raw: &[(Node, Node)], master: Option<&str>) {
        let principals = root.get("x-claw").and_then(|x| x.get("principals"));
        if let Some(p) = principals.filter(|p| p.as_seq().is_some_and(|l| !l.is_empty()))
            && master.is_none()
        {
            let help = "name the service that holds the principals in `x-claw.master`, or remove `principals`";
            self.diags
                .push(Diagnostic::error(diags::REQUIRES_MASTER, "x-claw.principals requires x-claw.master to be set").at(p.loc).help(help));
        }
        for (k, v) in raw {
            let (Some(name), Some(node)) = (k.as_str(), v.get("x-claw").and_then(|x| x.get("claw-api"))) else { continue };
            if node.is_null() {
                continue;
            }
            match node.as_str().filter(|_| node.as_map().is_none() && node.as_seq().is_none()) {
                Some("self") if master.is_none() => {
                    let msg = format!("service \"{name}\": claw-api: self requires x-claw.master to be set");
                    let help = "set `x-claw.master` at the pod level, or remove `claw-api: self`";
                    self.diags.push(Diagnostic::error(diags::REQUIRES_MASTER, msg).at(node.loc).help(help));
                }
                Some("self") => {}
                other => {
                    let shown = other.map_or_else(|| node.kind_name().to_string(), str::to_string);
                    let msg = format!("service \"{name}\": claw-api: unsupported value \"{shown}\", only \"self\" is valid");
                    self.error(diags::INVALID_VALUE, msg, node.loc, "write `claw-api: self`, or remove the key");
                }
            }
        }
    }

    /// claw-api, injected for a master or any `invoke`; the `invoke` entries are checked.
    fn claw_api(
        &mut self,
        root: &Node,
        raw: &[(Node, Node)],
        services: &BTreeMap<String, Service>,
        master: Option<&str>,
    ) -> Option<Injected> {
        let invoke = self.first_invoke(raw);
        let (why, loc) = match (master, invoke) {
            (Some(m), _) => {
                let loc = root.get("x-claw").and_then(|x| x.get("master")).map(|n| n.loc)?;
                (format!("x-claw.master is \"{m}\""), loc)
            }
            (None, Some((svc, loc))) => (format!("service \"{svc}\" has invoke entries"), loc),
            (None, None) => return None,
        };
        if let Some(svc) = services.get(CLAW_API) {
            let msg = format!("service name \"{CLAW_API}\" is reserved when claw-api auto-injection is active");
            let d = Diagnostic::error(diags::RESERVED_SERVICE, msg)
                .at(svc.loc)
                .also(loc, format!("claw up injects claw-api because {why}"))
                .help("rename this service: claw up adds its own claw-api (the governance API) to this pod");
            self.diags.push(d);
            return None;
        }
        let port = api_port(self.env.get("CLAW_API_ADDR"));
        Some(Injected { port, why, loc, projected: master.map(str::to_string).into_iter().collect() })
    }

    /// The first service (by name) with `invoke` entries, checking each entry has a
    /// `schedule` and a `message` as `claw up` requires.
    fn first_invoke(&mut self, raw: &[(Node, Node)]) -> Option<(String, Loc)> {
        let mut first: Option<(String, Loc)> = None;
        for (k, v) in raw {
            let (Some(name), Some(list)) = (k.as_str(), v.get("x-claw").and_then(|x| x.get("invoke"))) else { continue };
            let Some(items) = list.as_seq().filter(|l| !l.is_empty()) else { continue };
            for (i, item) in items.iter().enumerate() {
                if item.as_map().is_none() {
                    self.wrong_type(&format!("service \"{name}\": invoke[{i}]"), "a mapping", item);
                    continue;
                }
                for key in ["schedule", "message"] {
                    if item.get(key).and_then(Node::as_str).is_none_or(|s| s.trim().is_empty()) {
                        let msg = format!("service \"{name}\": invoke[{i}]: {key} is required");
                        self.error(diags::INVALID_VALUE, msg, item.loc, format!("give the invocation a `{key}`"));
                    }
                }
            }
            if first.as_ref().is_none_or(|(f, _)| name < f.as_str()) {
                first = Some((name.to_string(), list.loc));
            }
        }
        first
    }

    /// `x-claw.channel-memory: {service}`: whether the wall's awareness feed asks for a
    /// digest. The service must exist and must not be the wall.
    fn channel_memory(&mut self, root: &Node, services: &BTreeMap<String, Service>) -> bool {
        let Some(node) = root.get("x-claw").and_then(|x| x.get("channel-memory")).filter(|n| !n.is_null()) else { return false };
        let Some(_) = self.map(node, "x-claw.channel-memory") else { return false };
        let service = node.get("service").and_then(Node::as_str).map(str::trim).filter(|s| !s.is_empty());
        let (msg, help) = match service {
            None => ("x-claw.channel-memory: service is required".to_string(), "name the channel-memory service: `service: <name>`"),
            Some(CLAW_WALL) => (
                format!("x-claw.channel-memory: service \"{CLAW_WALL}\" is reserved for the conversation wall sidecar"),
                "name the service that keeps channel memory, not the wall",
            ),
            Some(s) if !services.contains_key(s) => {
                (format!("x-claw.channel-memory: service \"{s}\" does not exist"), "name a service of this pod")
            }
            Some(_) => return true,
        };
        let at = node.get("service").map_or(node.loc, |n| n.loc);
        self.error(diags::INVALID_VALUE, msg, at, help);
        false
    }

    /// claw-wall, injected when a cllama agent's Discord handle lists channels; each such
    /// agent gets the wall's feeds and tools.
    fn wall(&mut self, root: &Node, raw: &[(Node, Node)], services: &mut BTreeMap<String, Service>, digest: bool) -> Option<Injected> {
        let pod_settings = self.channel_settings(root.get("x-claw"), "x-claw");
        let raw_by_name: BTreeMap<&str, &Node> = raw.iter().filter_map(|(k, v)| Some((k.as_str()?, v))).collect();
        let mut triggers: Vec<(String, BTreeSet<String>, Loc, ChannelSettings)> = Vec::new();
        for (name, svc) in services.iter() {
            let Some(claw) = svc.claw.as_ref().filter(|c| c.role == Role::Agent && !c.cllama.is_empty()) else { continue };
            let channels = discord_channels(svc);
            let Some(handle) = claw.handles.get("discord").filter(|_| !channels.is_empty()) else { continue };
            let x = raw_by_name.get(name.as_str()).and_then(|n| n.get("x-claw"));
            let own = self.channel_settings(x, &format!("service \"{name}\": x-claw"));
            triggers.push((name.clone(), channels, handle.loc, pod_settings.overlay(&own)));
        }
        let (first, _, first_loc, _) = triggers.first()?;
        let why = format!("service \"{first}\" is a cllama agent whose Discord handle lists channels");
        let loc = *first_loc;
        if let Some(svc) = services.get(CLAW_WALL) {
            let msg = format!("service name \"{CLAW_WALL}\" is reserved for the conversation wall sidecar");
            let d = Diagnostic::error(diags::RESERVED_SERVICE, msg)
                .at(svc.loc)
                .also(loc, "claw up injects the conversation wall because of this handle")
                .help("rename this service: claw up adds its own claw-wall to this pod");
            self.diags.push(d);
            return None;
        }
        if !self.wall_readers(services, &triggers) {
            return None;
        }
        let projected = triggers.iter().map(|(name, ..)| name.clone()).collect();
        for (name, channels, handle_loc, settings) in triggers {
            let joined = channels.into_iter().collect::<Vec<_>>().join(",");
            let claw = services.get_mut(&name).and_then(|s| s.claw.as_mut()).expect("a trigger is an agent service");
            for (feed, path) in settings.feeds(&joined, digest) {
                let present = claw
                    .feeds
                    .iter()
                    .any(|f| matches!(f, FeedEntry::Inline(i) if i.name == feed && i.source.value == CLAW_WALL && i.path == path));
                if !present {
                    let source = Spanned { value: CLAW_WALL.to_string(), loc: handle_loc };
                    let inline = InlineFeed {
                        name: feed.to_string(),
                        source,
                        path,
                        ttl: WALL_FEED_TTL,
                        description: String::new(),
                        loc: handle_loc,
                    };
                    claw.feeds.push(FeedEntry::Inline(inline));
                }
            }
            let covered = claw.tools.iter().any(|g| {
                g.service.value == CLAW_WALL
                    && match &g.allow {
                        Allow::All => true,
                        Allow::Named(names) => WALL_TOOLS.iter().all(|t| names.iter().any(|n| n.value == *t)),
                    }
            });
            if !covered {
                let named = WALL_TOOLS.iter().map(|t| Spanned { value: t.to_string(), loc: handle_loc }).collect();
                claw.tools.push(Grant {
                    service: Spanned { value: CLAW_WALL.to_string(), loc: handle_loc },
                    allow: Allow::Named(named),
                    loc: handle_loc,
                    origin: Origin::Wall,
                    path: "handles.discord".to_string(),
                });
            }
        }
        Some(Injected { port: WALL_PORT.to_string(), why, loc, projected })
    }

    /// Every channel the wall reads needs a reader: a claw-managed service with a
    /// `DISCORD_BOT_TOKEN` in its `environment` whose own Discord handle lists the channel
    /// (at run time the master's is preferred; any one will do here). Returns whether every channel has one.
    fn wall_readers(
        &mut self,
        services: &BTreeMap<String, Service>,
        triggers: &[(String, BTreeSet<String>, Loc, ChannelSettings)],
    ) -> bool {
        let token = crate::pod::platform_token_var("discord").expect("discord has a bot token variable");
        let readers: Vec<(&str, BTreeSet<String>)> = services
            .values()
            .filter(|s| s.claw.is_some())
            .filter(|s| s.environment.get(token).and_then(|v| v.value.as_deref()).is_some_and(|t| !t.trim().is_empty()))
            .map(|s| (s.name.as_str(), discord_channels(s)))
            .collect();
        let mut ok = true;
        let mut reported = BTreeSet::new();
        for (name, channels, loc, _) in triggers {
            for channel in channels {
                if readers.iter().any(|(_, c)| c.contains(channel)) || !reported.insert(channel.clone()) {
                    continue;
                }
                ok = false;
                let msg = format!("conversation wall injection triggered but channel \"{channel}\" has no eligible Discord reader token");
                let help = format!(
                    "give a claw-managed service whose Discord handle lists channel {channel} (e.g. \"{name}\") a `{token}` in its `environment`"
                );
                self.diags.push(Diagnostic::error(diags::WALL_READER, msg).at(*loc).help(help));
            }
        }
        ok
    }

    /// `context.channel` of `x` (an x-claw block): `since` (a duration), `limit`,
    /// `max-chars` (or `max_chars`) and `buffer` (positive integers). `what` prefixes messages.
    fn channel_settings(&mut self, x: Option<&Node>, what: &str) -> ChannelSettings {
        let mut s = ChannelSettings::default();
        let Some(channel) = x.and_then(|x| x.get("context")).and_then(|c| c.get("channel")).filter(|c| !c.is_null()) else { return s };
        let what = format!("{what}.context.channel");
        if self.map(channel, &what).is_none() {
            return s;
        }
        if let Some(n) = channel.get("since").filter(|n| !n.is_null()) {
            match n.as_str().map(str::trim) {
                Some("") => {}
                Some(text) if is_duration(text) => s.since = Some(text.to_string()),
                _ => {
                    let msg = format!("{what}.since must be a non-negative duration like \"24h\" or \"90m\"");
                    self.error(
                        diags::INVALID_VALUE,
                        msg,
                        n.loc,
                        "write a Go duration: a number with a unit (ns, us, ms, s, m, h), e.g. `since: 24h`",
                    );
                }
            }
        }
        s.limit = self.channel_count(channel, &["limit"], &what);
        s.max_chars = self.channel_count(channel, &["max-chars", "max_chars"], &what);
        // `buffer` sizes the wall's own buffer, not the agents' feeds: only its type matters here.
        self.channel_count(channel, &["buffer"], &what);
        s
    }

    /// The first of `keys` in `channel` when it is a positive integer (`claw up` uses only
    /// those); a value that is not an integer is an error.
    fn channel_count(&mut self, channel: &Node, keys: &[&str], what: &str) -> Option<u64> {
        let n = keys.iter().find_map(|k| channel.get(k)).filter(|n| !n.is_null())?;
        match n.as_i64() {
            Some(v) => u64::try_from(v).ok().filter(|v| *v > 0),
            None => {
                self.wrong_type(&format!("{what}.{}", keys[0]), "an integer", n);
                None
            }
        }
    }
}

/// A non-negative Go duration (`time.ParseDuration`): numbers with units, e.g. `1h30m`.
fn is_duration(text: &str) -> bool {
    let t = text.strip_prefix('+').unwrap_or(text);
    if t == "0" {
        return true;
    }
    let mut rest = t;
    let mut any = false;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"].iter().find(|u| rest.starts_with(**u));
        // `ms` is listed before `m` and `s`, so the longest unit here is found.
        let Some(unit) = unit else { return false };
        rest = &rest[unit.len()..];
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_go() {
        for ok in ["24h", "90m", "1h30m", "0", "1.5h", "300ms", "2us", "+5s"] {
            assert!(is_duration(ok), "{ok}");
        }
        for bad in ["", "24", "h", "-1h", "1d", "1..5h", "abc", "5 m"] {
            assert!(!is_duration(bad), "{bad}");
        }
    }

    #[test]
    fn api_port_is_taken_after_the_last_colon() {
        assert_eq!(api_port(None), "8080");
        assert_eq!(api_port(Some(":9090")), "9090");
        assert_eq!(api_port(Some("0.0.0.0:7000")), "7000");
        assert_eq!(api_port(Some("7000")), "8080");
        assert_eq!(api_port(Some(":")), "8080");
    }

    #[test]
    fn wall_feeds_take_one_limit_for_both() {
        let s = ChannelSettings { since: Some("2h".into()), limit: Some(10), max_chars: None };
        let [(a, ap), (c, cp)] = s.feeds("1,2", true);
        assert_eq!((a, c), ("channel-awareness", "channel-context"));
        assert_eq!(ap, "/channel-awareness?channels=1,2&since=2h&limit=10&max_chars=32768&context_kind=raw_window%2Bdigest");
        assert_eq!(cp, "/channel-context?consumer={claw_id}&channels=1,2&mode=tail&since=2h&limit=10&max_chars=32768");
        let [(_, ap), (_, cp)] = ChannelSettings::default().feeds("9", false);
        assert!(ap.ends_with("&limit=60&max_chars=32768&context_kind=raw_window"), "{ap}");
        assert!(cp.contains("&limit=40&"), "{cp}");
    }
}
