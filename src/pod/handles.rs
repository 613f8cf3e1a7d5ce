//! `handles` and the pod's `handles-defaults`, as Clawdapus reads them: the defaults are
//! merged into each agent service per (lower-cased) platform before typing, a string or
//! integer shorthand counting as `{id: …}` and the service winning with a nested map merge
//! (`handles: {}` on a service means none). Then each platform is typed: an id (string or
//! integer), an optional username, and guilds with channels; ids, usernames and names have
//! their `${VAR}` placeholders resolved. Handles are identities, not secrets.
//!
//! This is a child module of `parse` (it extends its `Cx`); it lives in its own file.

use super::{Cx, diags};
use crate::diag::Diagnostic;
use crate::pod::{Channel, Guild, Handle, Service};
use crate::yaml::{Kind, Node};
use std::collections::BTreeMap;

/// Handles as written: lower-cased platform → value (not yet typed).
pub(super) type RawHandles = Vec<(String, Node)>;

/// A scalar as Go's YAML decoder types it: handle ids may be strings or integers.
enum Scalar<'n> {
    Str(&'n str),
    Int(String),
    /// Null, a boolean, a float, a list or a mapping.
    Other,
}

fn scalar(node: &Node) -> Scalar<'_> {
    let Kind::Scalar { text, plain } = &node.kind else { return Scalar::Other };
    if node.is_null() || node.as_bool().is_some() {
        return Scalar::Other;
    }
    if let Some(n) = node.as_i64() {
        return Scalar::Int(n.to_string());
    }
    if *plain && text.bytes().all(|b| b.is_ascii_digit()) {
        // Beyond i64: Go decodes it as an unsigned integer.
        return Scalar::Int(text.clone());
    }
    let float = *plain && text.bytes().any(|b| b.is_ascii_digit()) && text.parse::<f64>().is_ok();
    let special = *plain && matches!(text.trim_start_matches(['+', '-']), ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN");
    if float || special { Scalar::Other } else { Scalar::Str(text) }
}

/// A node's kind in error messages, floats named as such (they are not ids).
fn kind(node: &Node) -> &'static str {
    match (scalar(node), node.as_map().is_some() || node.as_seq().is_some() || node.is_null() || node.as_bool().is_some()) {
        (Scalar::Other, false) => "a float",
        _ => node.kind_name(),
    }
}

/// `{id: <scalar>}` for a string or integer shorthand; the entries of a mapping.
fn canonical(node: &Node) -> Option<Vec<(Node, Node)>> {
    if let Some(map) = node.as_map() {
        return Some(map.to_vec());
    }
    match scalar(node) {
        Scalar::Other => None,
        Scalar::Str(_) | Scalar::Int(_) => {
            let key = Node { kind: Kind::Scalar { text: "id".to_string(), plain: true }, loc: node.loc };
            Some(vec![(key, node.clone())])
        }
    }
}

/// Clawdapus' `mergeStringMap`: `over`'s keys win; two mappings under one key merge.
fn merge_maps(base: Vec<(Node, Node)>, over: &[(Node, Node)]) -> Vec<(Node, Node)> {
    let mut out = base;
    for (k, v) in over {
        let at = out.iter().position(|(bk, _)| bk.as_str().is_some() && bk.as_str() == k.as_str());
        match at {
            Some(i) => {
                let merged = match (out[i].1.as_map(), v.as_map()) {
                    (Some(b), Some(o)) => Node { kind: Kind::Map(merge_maps(b.to_vec(), o)), loc: v.loc },
                    _ => v.clone(),
                };
                out[i] = (k.clone(), merged);
            }
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

/// A default value with the service's over it: both canonical → merged; else the service's.
fn merge_value(default: &Node, service: &Node) -> Node {
    match (canonical(default), canonical(service)) {
        (Some(d), Some(s)) => Node { kind: Kind::Map(merge_maps(d, &s)), loc: service.loc },
        _ => service.clone(),
    }
}

impl Cx<'_> {
    /// One platform id belongs to one service, unless the pod sets
    /// `x-claw.sequential-conformance` (services that never run at the same time).
    pub(super) fn check_handle_identities(&mut self, root: &Node, services: &BTreeMap<String, Service>) {
        if root.get("x-claw").and_then(|x| x.get("sequential-conformance")).and_then(Node::as_bool) == Some(true) {
            return;
        }
        let mut owners: BTreeMap<(&str, &str), &str> = BTreeMap::new();
        for (name, svc) in services {
            for (platform, h) in svc.claw.iter().flat_map(|c| &c.handles) {
                match owners.get(&(platform.as_str(), h.id.as_str())) {
                    Some(first) => {
                        let msg = format!("service \"{name}\": handle {platform} id \"{}\" is already used by service \"{first}\"", h.id);
                        let help = "give each service its own identity, or set `sequential-conformance: true` under the pod's `x-claw` if they never run together";
                        self.error(diags::INVALID_VALUE, msg, h.loc, help);
                    }
                    None => {
                        owners.insert((platform, &h.id), name);
                    }
                }
            }
        }
    }

    fn handle_error(&mut self, code: crate::diag::Code, service: &str, platform: &str, msg: &str, node: &Node, help: &str) {
        let msg = format!("service \"{service}\": parse handles: platform \"{platform}\": {msg}");
        self.diags.push(Diagnostic::error(code, msg).at(node.loc).help(help));
    }

    /// A `handles` map as written, platforms trimmed and lower-cased (a later duplicate wins).
    /// `whose` starts its error messages.
    pub(super) fn raw_handles(&mut self, node: &Node, what: &str, whose: &str) -> Option<RawHandles> {
        let map = self.map(node, what)?;
        let mut out: RawHandles = Vec::new();
        for (k, v) in map {
            let Some(key) = self.string(k, "a handle platform") else { continue };
            let platform = key.value.trim().to_lowercase();
            if platform.is_empty() {
                let msg = format!("{whose}: platform name must not be empty");
                self.error(diags::INVALID_VALUE, msg, k.loc, "name the platform, e.g. `discord:`");
                continue;
            }
            out.retain(|(p, _)| *p != platform);
            out.push((platform, v.clone()));
        }
        Some(out)
    }

    /// A service's handles: its own `handles` (absent or null → the pod defaults; `{}` →
    /// none) merged over `defaults`, typed, placeholders resolved.
    pub(super) fn handles(
        &mut self,
        service: &str,
        count: u32,
        own: Option<&Node>,
        defaults: Option<&RawHandles>,
    ) -> BTreeMap<String, Handle> {
        let own = match own.filter(|n| !n.is_null()) {
            Some(n) => match self.raw_handles(n, "handles", &format!("service \"{service}\": parse handles")) {
                Some(h) => Some(h),
                None => return BTreeMap::new(),
            },
            None => None,
        };
        let merged: RawHandles = match (own, defaults) {
            (None, None) => return BTreeMap::new(),
            (None, Some(d)) => d.clone(),
            (Some(own), None) => own,
            (Some(own), Some(_)) if own.is_empty() => return BTreeMap::new(),
            (Some(own), Some(d)) => {
                let mut out: RawHandles = d
                    .iter()
                    .map(|(p, dv)| match own.iter().find(|(op, _)| op == p) {
                        Some((_, ov)) => (p.clone(), merge_value(dv, ov)),
                        None => (p.clone(), dv.clone()),
                    })
                    .collect();
                out.extend(own.into_iter().filter(|(p, _)| !d.iter().any(|(dp, _)| dp == p)));
                out
            }
        };
        let mut out = BTreeMap::new();
        for (platform, node) in merged {
            if let Some(h) = self.handle(service, &platform, &node) {
                if count > 1 {
                    let msg = format!(
                        "service \"{service}\": handle {platform} id \"{}\" cannot be used with count={count}; concurrent replicas need unique identities",
                        h.id
                    );
                    let help = "give each identity its own service, or drop `count`";
                    self.error(diags::INVALID_VALUE, msg, node.loc, help);
                }
                out.insert(platform, h);
            }
        }
        out
    }

    /// An id, username or name: a string (or, for ids, an integer) with placeholders resolved.
    fn handle_field(&mut self, service: &str, platform: &str, node: &Node, what: &str, int_ok: bool) -> Result<String, ()> {
        let text = match scalar(node) {
            Scalar::Str(s) => s.to_string(),
            Scalar::Int(n) if int_ok => n,
            _ => {
                let msg = format!("{what} must be a string");
                self.handle_error(diags::WRONG_TYPE, service, platform, &msg, node, "write it as a string");
                return Err(());
            }
        };
        let spanned = Node { kind: Kind::Scalar { text, plain: false }, loc: node.loc };
        let label = format!("handles.{platform}: {what}");
        self.interp(&spanned, &label).map(|s| s.value).ok_or(())
    }

    fn required_id(&mut self, service: &str, platform: &str, map: &Node, what: &str, msg: &str) -> Option<String> {
        let id = match map.get("id") {
            Some(n) => self.handle_field(service, platform, n, &format!("{what} id"), true).ok()?,
            None => String::new(),
        };
        if id.is_empty() {
            self.handle_error(diags::REQUIRED, service, platform, msg, map, &format!("give the {what} an `id:`"));
            return None;
        }
        Some(id)
    }

    fn optional(&mut self, service: &str, platform: &str, map: &Node, key: &str, what: &str) -> Result<String, ()> {
        match map.get(key) {
            Some(n) => self.handle_field(service, platform, n, what, false),
            None => Ok(String::new()),
        }
    }

    fn list_of<'n>(&mut self, service: &str, platform: &str, map: &'n Node, key: &str, what: &str) -> Result<&'n [Node], ()> {
        match map.get(key) {
            None => Ok(&[]),
            Some(n) => n.as_seq().ok_or_else(|| {
                let msg = format!("{what} must be a list");
                self.handle_error(diags::WRONG_TYPE, service, platform, &msg, n, &format!("write `{key}:` as a list"));
            }),
        }
    }

    fn handle(&mut self, service: &str, platform: &str, node: &Node) -> Option<Handle> {
        if node.as_map().is_none() {
            return match scalar(node) {
                Scalar::Other => {
                    let msg = format!("unsupported handle value type {}", kind(node));
                    let help = "write the handle as an id, or as `{id: …, username: …, guilds: […]}`";
                    self.handle_error(diags::WRONG_TYPE, service, platform, &msg, node, help);
                    None
                }
                _ => {
                    let id = self.handle_field(service, platform, node, "handle id", true).ok()?;
                    if id.is_empty() {
                        self.handle_error(
                            diags::INVALID_VALUE,
                            service,
                            platform,
                            "handle ID must not be empty",
                            node,
                            "give the handle's id",
                        );
                        return None;
                    }
                    Some(Handle { id, username: String::new(), guilds: Vec::new(), loc: node.loc })
                }
            };
        }
        let id = self.required_id(service, platform, node, "handle", "handle map must include a non-empty id");
        let username = self.optional(service, platform, node, "username", "handle username");
        let mut guilds = Vec::new();
        let mut ok = true;
        for (i, g) in
            self.list_of(service, platform, node, "guilds", "handle guilds").map_err(|()| ok = false).unwrap_or_default().iter().enumerate()
        {
            match self.guild(service, platform, g, i) {
                Some(g) => guilds.push(g),
                None => ok = false,
            }
        }
        let (id, username) = (id?, username.ok()?);
        ok.then_some(Handle { id, username, guilds, loc: node.loc })
    }

    fn guild(&mut self, service: &str, platform: &str, node: &Node, i: usize) -> Option<Guild> {
        if node.as_map().is_none() {
            let msg = format!("guild[{i}]: guild entry must be a map with id:");
            self.handle_error(diags::WRONG_TYPE, service, platform, &msg, node, "write the guild as `{id: …, name: …, channels: […]}`");
            return None;
        }
        let what = format!("guild[{i}]: guild");
        let id = self.required_id(service, platform, node, &what, &format!("guild[{i}]: guild must have a non-empty id"));
        let name = self.optional(service, platform, node, "name", &format!("{what} name"));
        let mut channels = Vec::new();
        let mut ok = true;
        let list =
            self.list_of(service, platform, node, "channels", &format!("{what} channels")).map_err(|()| ok = false).unwrap_or_default();
        for (j, c) in list.iter().enumerate() {
            match self.channel(service, platform, c, i, j) {
                Some(c) => channels.push(c),
                None => ok = false,
            }
        }
        let (id, name) = (id?, name.ok()?);
        ok.then_some(Guild { id, name, channels })
    }

    fn channel(&mut self, service: &str, platform: &str, node: &Node, i: usize, j: usize) -> Option<Channel> {
        let what = format!("guild[{i}]: channel[{j}]: channel");
        if node.as_map().is_none() {
            if matches!(scalar(node), Scalar::Other) {
                let msg = format!("guild[{i}]: channel[{j}]: unsupported channel entry type {}", kind(node));
                self.handle_error(diags::WRONG_TYPE, service, platform, &msg, node, "write the channel as an id, or as `{id: …, name: …}`");
                return None;
            }
            let id = self.handle_field(service, platform, node, &format!("{what} id"), true).ok()?;
            return Some(Channel { id, name: String::new() });
        }
        let id = self.required_id(service, platform, node, &what, &format!("guild[{i}]: channel[{j}]: channel must have a non-empty id"));
        let name = self.optional(service, platform, node, "name", &format!("{what} name"));
        Some(Channel { id: id?, name: name.ok()? })
    }
}
