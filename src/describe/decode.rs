//! Descriptor JSON → [`Descriptor`], with Clawdapus' checks and messages
//! (`tools[i]: name is required`, …). Like Go's `encoding/json`, unknown fields are
//! ignored and field names match case-insensitively; unlike Clawdapus, every problem is
//! reported rather than only the first.

use super::json_span::{Locator, Seg};
use super::{Auth, AuthType, Descriptor, Endpoint, FeedSpec, FreeForm, McpEndpoint, Memory, Tool, Transport, diags, schema};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceFile};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Decodes and validates one descriptor. Returns it only when it has no error.
pub(crate) fn decode(file: FileId, src: &SourceFile) -> (Option<Descriptor>, Vec<Diagnostic>) {
    let mut d = Dec { file, src, locator: Locator::new(src), diags: Vec::new(), pattern_budget: schema::PATTERN_BUDGET };
    let desc = d.descriptor();
    let ok = !d.diags.iter().any(Diagnostic::is_error);
    (desc.filter(|_| ok), crate::diag::cap(d.diags))
}

struct Dec<'a> {
    file: FileId,
    src: &'a SourceFile,
    /// Locates every reported value without rescanning the text.
    locator: Locator<'a>,
    diags: Vec<Diagnostic>,
    /// What this descriptor's schema patterns may still match (see [`schema::PATTERN_BUDGET`]).
    pattern_budget: usize,
}

/// A path into the descriptor, built as fields are visited.
fn at(base: &[Seg], seg: Seg) -> Vec<Seg> {
    // Sized once: `to_vec` then `push` allocated every path twice.
    let mut p = Vec::with_capacity(base.len() + 1);
    p.extend_from_slice(base);
    p.push(seg);
    p
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// Go's field matching: the exact name, else the first case-insensitive match.
pub(crate) fn field<'v>(obj: &'v Map<String, Value>, name: &str) -> Option<(&'v str, &'v Value)> {
    if let Some((k, v)) = obj.get_key_value(name) {
        return Some((k, v));
    }
    obj.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(k, v)| (k.as_str(), v))
}

/// A string field no projection reads (`release`, `title`): trimmed, empty or of another
/// type is absent, never an error.
pub(crate) fn loose_string(obj: &Map<String, Value>, name: &str) -> Option<String> {
    field(obj, name).and_then(|(_, v)| v.as_str()).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// Moves each decoded tool's free-form JSON (`inputSchema`, `outputSchema`,
/// `annotations`) out of the parsed document, once nothing borrows it: the schemas are
/// most of a large descriptor's bytes, and cloning them was most of decoding it.
fn adopt_free_form(root: &mut Value, tools: Vec<(usize, Tool)>) -> Vec<Tool> {
    let mut raw = root.as_object_mut().and_then(|o| take_field(o, "tools"));
    let entries = raw.as_mut().and_then(Value::as_array_mut);
    let entries = entries.map(Vec::as_mut_slice).unwrap_or_default();
    tools
        .into_iter()
        .map(|(i, mut t)| {
            if let Some(entry) = entries.get_mut(i).and_then(Value::as_object_mut) {
                t.input_schema = take_field(entry, "inputSchema").unwrap_or_default().into();
                t.output_schema = take_field(entry, "outputSchema").filter(|v| !v.is_null());
                // Checked to be an object, or absent (null counts as absent), by `annotations`.
                t.annotations = take_field(entry, "annotations").filter(Value::is_object);
            }
            t
        })
        .collect()
}

/// Removes and returns the field [`field`] finds.
fn take_field(obj: &mut Map<String, Value>, name: &str) -> Option<Value> {
    let key = field(obj, name)?.0.to_string();
    obj.remove(&key)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Dec<'_> {
    fn loc(&mut self, path: &[Seg]) -> Loc {
        Loc { file: self.file, span: self.locator.span_of(path) }
    }

    fn err(&mut self, code: crate::diag::Code, msg: impl Into<String>, path: &[Seg], help: impl Into<String>) {
        let d = Diagnostic::error(code, msg).at(self.loc(path)).help(help);
        self.diags.push(d);
    }

    fn wrong_type(&mut self, what: impl std::fmt::Display, want: &str, v: &Value, path: &[Seg]) {
        let msg = format!("{what} must be {want}, got {}", type_name(v));
        self.err(diags::WRONG_TYPE, msg, path, format!("write {what} as {want}"));
    }

    /// A field of `obj` (null counts as absent, as in Go), with its path.
    fn get<'v>(&self, obj: &'v Map<String, Value>, base: &[Seg], name: &str) -> Option<(&'v Value, Vec<Seg>)> {
        let (k, v) = field(obj, name)?;
        (!v.is_null()).then(|| (v, at(base, key(k))))
    }

    fn string(&mut self, obj: &Map<String, Value>, base: &[Seg], name: &str, what: std::fmt::Arguments<'_>) -> Option<(String, Vec<Seg>)> {
        let (v, path) = self.get(obj, base, name)?;
        match v.as_str() {
            Some(s) => Some((s.trim().to_string(), path)),
            None => {
                self.wrong_type(what, "a string", v, &path);
                None
            }
        }
    }

    fn object<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        base: &[Seg],
        name: &str,
        what: std::fmt::Arguments<'_>,
    ) -> Option<(&'v Map<String, Value>, Vec<Seg>)> {
        let (v, path) = self.get(obj, base, name)?;
        match v.as_object() {
            Some(o) => Some((o, path)),
            None => {
                self.wrong_type(what, "an object", v, &path);
                None
            }
        }
    }

    fn array<'v>(&mut self, obj: &'v Map<String, Value>, base: &[Seg], name: &str) -> Vec<(&'v Value, Vec<Seg>)> {
        let Some((v, path)) = self.get(obj, base, name) else { return Vec::new() };
        match v.as_array() {
            Some(items) => items.iter().enumerate().map(|(i, it)| (it, at(&path, Seg::Index(i)))).collect(),
            None => {
                self.wrong_type(name, "an array", v, &path);
                Vec::new()
            }
        }
    }

    fn descriptor(&mut self) -> Option<Descriptor> {
        let mut root: Value = match serde_json::from_str(&self.src.text) {
            Ok(v) => v,
            Err(e) => {
                let offset = line_col_offset(&self.src.text, e.line(), e.column());
                let loc = Loc { file: self.file, span: self.src.span(offset, offset) };
                let msg = format!("invalid descriptor JSON: {e}");
                self.diags
                    .push(Diagnostic::error(diags::INVALID_JSON, msg).at(loc).help("a descriptor is one JSON object; fix the syntax here"));
                return None;
            }
        };
        let Some(obj) = root.as_object() else {
            self.wrong_type("a descriptor", "a JSON object", &root, &[]);
            return None;
        };
        let version = self.version(obj)?;
        let feeds = self.feeds(obj);
        let endpoints = self.endpoints(obj);
        if version == 1 {
            for cap in ["tools", "mcp", "memory"] {
                if let Some((_, path)) = self.get(obj, &[], cap) {
                    let msg = format!("descriptor version 1 does not support {cap}");
                    self.err(diags::V1_CAPABILITY, msg, &path, "set \"version\": 2 to declare tools, mcp or memory");
                }
            }
        }
        let v2 = version == 2;
        let mcp = if v2 { self.mcp(obj) } else { None };
        let tools = if v2 { self.tools(obj, mcp.as_ref()) } else { Vec::new() };
        let memory = if v2 { self.memory(obj) } else { None };
        let auth = self.auth(obj);
        let description = self.string(obj, &[], "description", format_args!("description")).map(|(s, _)| s).unwrap_or_default();
        let skill = self.string(obj, &[], "skill", format_args!("skill")).map(|(s, _)| s).filter(|s| !s.is_empty());
        let release = loose_string(obj, "release");
        let tools = adopt_free_form(&mut root, tools);
        Some(Descriptor { version, description, feeds, endpoints, auth, skill, tools, mcp, memory, release })
    }

    fn version(&mut self, obj: &Map<String, Value>) -> Option<u8> {
        let help = "start the descriptor with \"version\": 1 (feeds and endpoints) or 2 (also tools, mcp and memory)";
        let Some((v, path)) = self.get(obj, &[], "version") else {
            self.err(diags::VERSION, "descriptor version must be 1 or 2, got 0", &[], help);
            return None;
        };
        match v.as_i64() {
            Some(n @ (1 | 2)) => Some(n as u8),
            Some(n) => {
                self.err(diags::VERSION, format!("descriptor version must be 1 or 2, got {n}"), &path, help);
                None
            }
            None => {
                self.wrong_type("version", "an integer", v, &path);
                None
            }
        }
    }

    fn feeds(&mut self, obj: &Map<String, Value>) -> Vec<FeedSpec> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, (v, path)) in self.array(obj, &[], "feeds").into_iter().enumerate() {
            let Some(f) = v.as_object() else {
                self.wrong_type(format_args!("feeds[{i}]"), "an object", v, &path);
                continue;
            };
            let name = self.string(f, &path, "name", format_args!("feeds[{i}].name"));
            let fpath = self.string(f, &path, "path", format_args!("feeds[{i}].path"));
            let description =
                self.string(f, &path, "description", format_args!("feeds[{i}].description")).map(|(s, _)| s).unwrap_or_default();
            let ttl = self.get(f, &path, "ttl");
            let name = match name.filter(|(n, _)| !n.is_empty()) {
                None => {
                    self.err(diags::FEED, format!("feeds[{i}]: name is required"), &path, "give the feed a \"name\"");
                    continue;
                }
                Some((n, npath)) => {
                    if !seen.insert(n.clone()) {
                        self.err(
                            diags::FEED,
                            format!("feeds[{i}]: duplicate feed name \"{n}\""),
                            &npath,
                            "feed names are unique within a descriptor",
                        );
                        continue;
                    }
                    n
                }
            };
            let Some(fpath) = self.http_path(fpath, format_args!("feeds[{i}]"), &path, diags::FEED) else { continue };
            let ttl = match ttl {
                Some((t, tpath)) => match t.as_i64() {
                    Some(n) if n > 0 => n as u64,
                    Some(_) => {
                        self.err(diags::FEED, format!("feeds[{i}]: ttl must be > 0"), &tpath, "ttl is a whole number of seconds");
                        continue;
                    }
                    None => {
                        self.wrong_type(format_args!("feeds[{i}].ttl"), "an integer number of seconds", t, &tpath);
                        continue;
                    }
                },
                None => {
                    self.err(diags::FEED, format!("feeds[{i}]: ttl must be > 0"), &path, "set \"ttl\" in seconds");
                    continue;
                }
            };
            out.push(FeedSpec { name, path: fpath, ttl, description });
        }
        out
    }

    /// A required HTTP path that starts with `/` (shared by feeds, endpoints and tools).
    fn http_path(
        &mut self,
        p: Option<(String, Vec<Seg>)>,
        prefix: std::fmt::Arguments<'_>,
        parent: &[Seg],
        code: crate::diag::Code,
    ) -> Option<String> {
        match p.filter(|(s, _)| !s.is_empty()) {
            None => {
                self.err(code, format!("{prefix}: path is required"), parent, "set \"path\" to an absolute HTTP path");
                None
            }
            Some((s, path)) if !s.starts_with('/') => {
                self.err(code, format!("{prefix}: path \"{s}\" must start with '/'"), &path, format!("write \"/{s}\""));
                None
            }
            Some((s, _)) => Some(s),
        }
    }

    fn endpoints(&mut self, obj: &Map<String, Value>) -> Vec<Endpoint> {
        let mut out = Vec::new();
        for (i, (v, path)) in self.array(obj, &[], "endpoints").into_iter().enumerate() {
            let Some(e) = v.as_object() else {
                self.wrong_type(format_args!("endpoints[{i}]"), "an object", v, &path);
                continue;
            };
            let method = self
                .string(e, &path, "method", format_args!("endpoints[{i}].method"))
                .map(|(m, _)| m.to_uppercase())
                .filter(|m| !m.is_empty());
            let epath = self.string(e, &path, "path", format_args!("endpoints[{i}].path"));
            let description =
                self.string(e, &path, "description", format_args!("endpoints[{i}].description")).map(|(s, _)| s).unwrap_or_default();
            let Some(method) = method else {
                self.err(diags::ENDPOINT, format!("endpoints[{i}]: method is required"), &path, "set \"method\", e.g. \"GET\"");
                continue;
            };
            let Some(epath) = self.http_path(epath, format_args!("endpoints[{i}]"), &path, diags::ENDPOINT) else { continue };
            out.push(Endpoint { method, path: epath, description });
        }
        out
    }

    fn mcp(&mut self, obj: &Map<String, Value>) -> Option<McpEndpoint> {
        let (m, path) = self.object(obj, &[], "mcp", format_args!("mcp"))?;
        if let Some((t, tpath)) = self.string(m, &path, "transport", format_args!("mcp.transport")) {
            let t = t.to_lowercase();
            if !matches!(t.as_str(), "" | "http" | "streamable_http" | "streamable-http") {
                self.err(
                    diags::MCP,
                    format!("mcp.transport \"{t}\" is unsupported"),
                    &tpath,
                    "clawc compiles the MCP Streamable HTTP transport: use \"streamable_http\"",
                );
            }
        }
        let p = match self.string(m, &path, "path", format_args!("mcp.path")) {
            Some((p, _)) if p.is_empty() => "/mcp".to_string(),
            Some((p, ppath)) if !p.starts_with('/') => {
                self.err(diags::MCP, format!("mcp.path \"{p}\" must start with '/'"), &ppath, format!("write \"/{p}\""));
                return None;
            }
            Some((p, _)) => p,
            None => "/mcp".to_string(),
        };
        Some(McpEndpoint { path: p })
    }

    /// The tools that decoded, each with its index in `tools` (their schemas still in the
    /// document: see [`adopt_free_form`]).
    fn tools(&mut self, obj: &Map<String, Value>, mcp: Option<&McpEndpoint>) -> Vec<(usize, Tool)> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        // An `mcp` that failed to decode still makes the tools MCP tools (its error is
        // already reported, so the path is never used).
        let declared = field(obj, "mcp").is_some_and(|(_, v)| !v.is_null());
        let mcp_declared = mcp.map(|m| m.path.as_str()).or(declared.then_some("/mcp"));
        for (i, (v, path)) in self.array(obj, &[], "tools").into_iter().enumerate() {
            let Some(t) = v.as_object() else {
                self.wrong_type(format_args!("tools[{i}]"), "an object", v, &path);
                continue;
            };
            if let Some(tool) = self.tool(i, t, &path, mcp_declared, &mut seen) {
                out.push((i, tool));
            }
        }
        out
    }

    fn tool(&mut self, i: usize, t: &Map<String, Value>, path: &[Seg], mcp: Option<&str>, seen: &mut HashSet<String>) -> Option<Tool> {
        let errors_before = self.diags.len();
        let name = match self.string(t, path, "name", format_args!("tools[{i}].name")).filter(|(n, _)| !n.is_empty()) {
            None => {
                self.err(diags::TOOL, format!("tools[{i}]: name is required"), path, "give the tool a \"name\"");
                None
            }
            Some((n, npath)) => {
                if !seen.insert(n.clone()) {
                    self.err(
                        diags::TOOL,
                        format!("tools[{i}]: duplicate tool name \"{n}\""),
                        &npath,
                        "tool names are unique within a descriptor",
                    );
                }
                Some(n)
            }
        };
        let description =
            self.string(t, path, "description", format_args!("tools[{i}].description")).map(|(s, _)| s).filter(|s| !s.is_empty());
        if description.is_none() {
            self.err(diags::TOOL, format!("tools[{i}]: description is required"), path, "describe what the tool does; the model reads it");
        }
        let input_schema = self.input_schema(i, t, path);
        let http = self.http(i, t, path, mcp.is_some());
        self.annotations(i, t, path);
        if self.diags.len() > errors_before {
            return None;
        }
        let name = name?;
        let transport = match mcp {
            Some(p) => Transport::Mcp { path: p.to_string(), tool_name: name.clone() },
            None => http?,
        };
        input_schema?;
        let title = loose_string(t, "title");
        Some(Tool {
            name,
            description: description?,
            input_schema: FreeForm::default(),
            annotations: None,
            transport,
            title,
            output_schema: None,
        })
    }

    /// Checks tool `i`'s `inputSchema` (`None`: an error was reported).
    fn input_schema(&mut self, i: usize, t: &Map<String, Value>, path: &[Seg]) -> Option<()> {
        let Some((s, spath)) = self.get(t, path, "inputSchema") else {
            self.err(
                diags::TOOL,
                format!("tools[{i}]: inputSchema is required"),
                path,
                "add \"inputSchema\": {\"type\": \"object\", \"properties\": {}}",
            );
            return None;
        };
        let Some(obj) = s.as_object() else {
            self.wrong_type(format_args!("tools[{i}].inputSchema"), "an object", s, &spath);
            return None;
        };
        let is_object = obj.get("type").and_then(Value::as_str).is_some_and(|ty| ty.trim().eq_ignore_ascii_case("object"));
        if !is_object {
            let tpath = if obj.contains_key("type") { at(&spath, key("type")) } else { spath.clone() };
            self.err(
                diags::TOOL,
                format!("tools[{i}]: inputSchema.type must be \"object\""),
                &tpath,
                "tool arguments are a JSON object: set \"type\": \"object\"",
            );
            return None;
        }
        if let Err(problem) = schema::check(s, &mut self.pattern_budget) {
            let mut ppath = spath.clone();
            ppath.extend(problem.path);
            let msg = format!("tools[{i}]: inputSchema is not a valid JSON Schema: {}", problem.message);
            self.err(
                diags::INPUT_SCHEMA,
                msg,
                &ppath,
                "fix the schema; it is checked against its draft's meta-schema (2020-12 unless $schema says otherwise)",
            );
            return None;
        }
        Some(())
    }

    fn http(&mut self, i: usize, t: &Map<String, Value>, path: &[Seg], mcp: bool) -> Option<Transport> {
        let http = self.get(t, path, "http");
        if mcp {
            if let Some((_, hpath)) = http {
                self.err(
                    diags::TOOL,
                    format!("tools[{i}]: http must not be set when descriptor mcp is set"),
                    &hpath,
                    "MCP tools run through the descriptor's mcp endpoint; remove \"http\"",
                );
            }
            return None;
        }
        let Some((h, hpath)) = http else {
            self.err(
                diags::TOOL,
                format!("tools[{i}]: http is required"),
                path,
                "add \"http\": {\"method\": …, \"path\": …}, or declare \"mcp\" on the descriptor",
            );
            return None;
        };
        let Some(h) = h.as_object() else {
            self.wrong_type(format_args!("tools[{i}].http"), "an object", h, &hpath);
            return None;
        };
        let method = self.string(h, &hpath, "method", format_args!("tools[{i}].http.method")).map(|(m, p)| (m.to_uppercase(), p));
        let method = match method {
            Some((m, _)) if matches!(m.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") => m,
            Some((m, mpath)) => {
                self.err(
                    diags::TOOL,
                    format!("tools[{i}]: http.method \"{m}\" is unsupported"),
                    &mpath,
                    "use GET, POST, PUT, PATCH or DELETE",
                );
                return None;
            }
            None => {
                self.err(
                    diags::TOOL,
                    format!("tools[{i}]: http.method \"\" is unsupported"),
                    &hpath,
                    "set \"method\" to GET, POST, PUT, PATCH or DELETE",
                );
                return None;
            }
        };
        let p = self.string(h, &hpath, "path", format_args!("tools[{i}].http.path"));
        let p = self.http_path(p, format_args!("tools[{i}]: http"), &hpath, diags::TOOL)?;
        let body = self.string(h, &hpath, "body", format_args!("tools[{i}].http.body")).map(|(b, p)| (b.to_lowercase(), p));
        if let Some((b, bpath)) = &body
            && !b.is_empty()
            && b != "json"
        {
            self.err(diags::TOOL, format!("tools[{i}]: http.body \"{b}\" is unsupported"), bpath, "the only body encoding is \"json\"");
            return None;
        }
        let body_key = self.string(h, &hpath, "body_key", format_args!("tools[{i}].http.body_key")).filter(|(k, _)| !k.is_empty());
        if let Some((_, kpath)) = &body_key
            && !matches!(method.as_str(), "POST" | "PUT" | "PATCH")
        {
            self.err(
                diags::TOOL,
                format!("tools[{i}]: http.body_key requires POST, PUT, or PATCH"),
                kpath,
                "remove body_key, or use a method with a body",
            );
            return None;
        }
        let body = body.map(|(b, _)| b).filter(|b| !b.is_empty());
        Some(Transport::Http { method, path: p, body, body_key: body_key.map(|(k, _)| k) })
    }

    /// Checks tool `i`'s `annotations` (taken later by [`adopt_free_form`]).
    fn annotations(&mut self, i: usize, t: &Map<String, Value>, path: &[Seg]) {
        let Some((a, apath)) = self.object(t, path, "annotations", format_args!("tools[{i}].annotations")) else { return };
        let nested = a
            .get("x-claw")
            .and_then(Value::as_object)
            .and_then(|x| x.get("terminalOnSuccess"))
            .map(|v| (v, vec![key("x-claw"), key("terminalOnSuccess")]));
        let flat = a.get("x-claw.terminalOnSuccess").map(|v| (v, vec![key("x-claw.terminalOnSuccess")]));
        for (v, rel) in nested.into_iter().chain(flat) {
            if !v.is_boolean() {
                let mut p = apath.clone();
                p.extend(rel);
                let msg = format!("tools[{i}]: annotations x-claw.terminalOnSuccess must be a boolean, got {}", type_name(v));
                self.err(diags::ANNOTATION, msg, &p, "write true or false (unquoted)");
            }
        }
    }

    fn memory(&mut self, obj: &Map<String, Value>) -> Option<Memory> {
        let (m, path) = self.object(obj, &[], "memory", format_args!("memory"))?;
        let mut out = Memory::default();
        let mut ok = true;
        for op in ["recall", "retain", "forget"] {
            let Some((o, opath)) = self.object(m, &path, op, format_args!("memory.{op}")) else { continue };
            let p = self.string(o, &opath, "path", format_args!("memory.{op}.path"));
            match p.filter(|(s, _)| !s.is_empty()) {
                None => {
                    self.err(diags::MEMORY, format!("memory.{op}.path is required"), &opath, "set \"path\" to the operation's HTTP path");
                    ok = false;
                }
                Some((s, ppath)) if !s.starts_with('/') => {
                    self.err(diags::MEMORY, format!("memory.{op}.path \"{s}\" must start with '/'"), &ppath, format!("write \"/{s}\""));
                    ok = false;
                }
                Some((s, _)) => match op {
                    "recall" => out.recall = Some(s),
                    "retain" => out.retain = Some(s),
                    _ => out.forget = Some(s),
                },
            }
        }
        let declared = |name| field(m, name).is_some_and(|(_, v)| !v.is_null());
        if !declared("recall") && !declared("retain") {
            self.err(
                diags::MEMORY,
                "memory: at least one of recall or retain must be declared",
                &path,
                "declare \"recall\": {\"path\": …} and/or \"retain\"",
            );
            ok = false;
        }
        ok.then_some(out)
    }

    fn auth(&mut self, obj: &Map<String, Value>) -> Option<Auth> {
        let (a, path) = self.object(obj, &[], "auth", format_args!("auth"))?;
        let (ty, tpath) = self.string(a, &path, "type", format_args!("auth.type")).unwrap_or_else(|| (String::new(), path.clone()));
        let ty = ty.to_lowercase();
        let kind = match ty.as_str() {
            "bearer" => AuthType::Bearer,
            "header" => AuthType::Header,
            "none" => AuthType::None,
            _ => {
                self.err(diags::AUTH, format!("auth.type \"{ty}\" is unsupported"), &tpath, "use \"bearer\", \"header\" or \"none\"");
                return None;
            }
        };
        let env = self.string(a, &path, "env", format_args!("auth.env")).map(|(s, _)| s).unwrap_or_default();
        Some(Auth { kind, env })
    }
}

/// Byte offset of serde_json's 1-based line and column.
fn line_col_offset(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (start + col.saturating_sub(1)).min(text.len())
}
