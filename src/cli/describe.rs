//! `clawc describe PATH | --image REF | POD SERVICE`: what clawc reads from one service.

use super::inputs::PodArgs;
use crate::describe::{Described, ServiceDescriptor, ToolName, Transport};
use crate::grant::SecretMode;
use crate::inspect::{Target, inspect};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "What clawc reads from one service: its tools and transports, feeds, memory, auth, skill and runner, and where each came from",
    after_help = "Examples:
  clawc describe svc/api/.claw-describe.json      a descriptor file (version 1 or 2)
  clawc describe mcp/.claw-tools.json             a baked MCP tools/list snapshot
  clawc describe svc/api                          a build context (Dockerfile/Clawfile labels, CLAW_TYPE)
  clawc describe --image api:1 --images oci:img   an image, through the --images sources
  clawc describe claw-pod.yml trading-api         exactly what compile sees for one service

Exit codes: 0 described · 2 invalid input · 3 environment failure."
)]
pub struct DescribeArgs {
    /// A descriptor file, a .claw-tools.json snapshot, a build context directory, or (with SERVICE) a pod file
    #[arg(required_unless_present = "image")]
    target: Option<PathBuf>,
    /// A service of the pod TARGET
    #[arg(conflicts_with = "image")]
    service: Option<String>,
    /// Describe an image instead, read through the --images sources
    #[arg(long, value_name = "REF")]
    image: Option<String>,
    /// The service name for a path or image (used in a snapshot's description) [default: the file, directory or repository name]
    #[arg(long, value_name = "NAME", conflicts_with = "service")]
    name: Option<String>,
    #[command(flatten)]
    input: PodArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t = DescribeFormat::Text)]
    format: DescribeFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DescribeFormat {
    /// Readable text on stdout, diagnostics drawn on stderr
    #[value(alias = "human")]
    Text,
    /// One JSON document on stdout (schemas/describe.schema.json); on invalid input, one diagnostic per line
    Json,
}

pub(super) fn run(args: DescribeArgs) -> i32 {
    // clawc.toml is looked for from the pod's directory, the described path's (the
    // path itself when it is a build context), or the current directory for an image.
    let (target, pod, start) = match (&args.image, &args.target, &args.service) {
        (Some(r), _, _) => (Target::Image(r.clone()), PathBuf::from("claw-pod.yml"), None),
        (None, Some(pod), Some(s)) => (Target::Service(s.clone()), pod.clone(), None),
        (None, Some(p), None) => {
            let dir = if p.is_dir() { p.clone() } else { crate::compile::pod_dir(p) };
            (Target::Path(p.clone()), PathBuf::from("claw-pod.yml"), Some(dir))
        }
        (None, None, _) => unreachable!("clap requires TARGET unless --image"),
    };
    let format = if args.format == DescribeFormat::Json { super::Format::Json } else { super::Format::Human };
    let opts = match args.input.options(&pod, start.as_deref(), SecretMode::Redact) {
        Ok(o) => o,
        Err(r) => return r.print(format),
    };
    let out = inspect(&target, args.name.as_deref(), &opts);
    let Some(d) = out.described.as_ref() else {
        super::print_diagnostics(&out.diagnostics.0, &out.sources, format);
        return out.exit_code();
    };
    match args.format {
        DescribeFormat::Json => {
            let mut doc = to_json(d, &out.sources);
            doc["diagnostics"] = out.diagnostics.0.iter().map(|w| json!(w.to_json(&out.sources))).collect();
            println!("{}", serde_json::to_string_pretty(&doc).expect("JSON values serialize"));
        }
        DescribeFormat::Text => {
            super::print_diagnostics(&out.diagnostics.0, &out.sources, format);
            // Descriptions come from untrusted descriptors: no escape sequence reaches the terminal.
            let given = opts.descriptors.get(&d.name).map(PathBuf::as_path);
            let text = to_text(d, &out.sources, opts.images.is_empty() && matches!(target, Target::Service(_)), given);
            print!("{}", crate::diag::printable(&text));
        }
    }
    0
}

fn opt<T: serde::Serialize>(v: Option<T>) -> Value {
    v.map_or(Value::Null, |v| json!(v))
}

/// The JSON document (schemas/describe.schema.json).
fn to_json(d: &Described, sources: &crate::sourcemap::SourceMap) -> Value {
    let runner = d.runner.as_ref().map(|r| json!({"name": r.runner.as_str(), "known": r.runner.known().is_some(), "from": r.from}));
    json!({
        "version": 1,
        "service": d.name,
        "runner": runner,
        "descriptor": d.descriptor.as_ref().map(|s| descriptor_json(&d.name, s, sources)),
    })
}

fn descriptor_json(service: &str, s: &ServiceDescriptor, sources: &crate::sourcemap::SourceMap) -> Value {
    let desc = &s.descriptor;
    let tools: Vec<Value> = desc
        .tools
        .iter()
        .map(|t| {
            let name = ToolName::new(service, &t.name);
            let transport = match &t.transport {
                Transport::Http { method, path, body, body_key } => {
                    json!({"type": "http", "method": method, "path": path, "body": body, "body_key": body_key})
                }
                Transport::Mcp { path, tool_name } => json!({"type": "mcp", "path": path, "tool_name": tool_name}),
            };
            json!({
                "name": t.name,
                "canonical": name.to_string(),
                "alias": name.alias(),
                "description": t.description,
                "effect": t.effect(),
                "transport": transport,
                "inputSchema": t.input_schema,
                "annotations": t.annotations,
            })
        })
        .collect();
    let feeds: Vec<Value> =
        desc.feeds.iter().map(|f| json!({"name": f.name, "path": f.path, "ttl": f.ttl, "description": f.description})).collect();
    let endpoints: Vec<Value> =
        desc.endpoints.iter().map(|e| json!({"method": e.method, "path": e.path, "description": e.description})).collect();
    let auth = desc.auth.as_ref().map(|a| json!({"type": auth_kind(a), "env": opt(Some(&a.env).filter(|e| !e.is_empty()))}));
    let memory = desc.memory.as_ref().map(|m| json!({"recall": m.recall, "retain": m.retain, "forget": m.forget}));
    json!({
        "version": desc.version,
        "description": desc.description,
        "origin": s.origin.as_str(),
        "from": sources.name(s.file),
        "image": s.image.as_ref().map(|i| json!({"reference": i.reference, "id": i.id})),
        "snapshot": s.snapshot,
        "mcp": desc.mcp.as_ref().map(|m| json!({"path": m.path})),
        "auth": auth,
        "tools": tools,
        "feeds": feeds,
        "endpoints": endpoints,
        "memory": memory,
        "skill": s.skill.as_ref().map(|k| json!({"name": k.name, "from": k.source})),
    })
}

fn auth_kind(a: &crate::describe::Auth) -> &'static str {
    match a.kind {
        crate::describe::AuthType::Bearer => "bearer",
        crate::describe::AuthType::Header => "header",
        crate::describe::AuthType::None => "none",
    }
}

/// The text form: the service, then one section per kind of fact, each saying where it
/// came from.
/// `given`: the `--descriptor` path of this service as the command line (or clawc.toml,
/// made relative to the current directory) gave it, shown instead of the pod-relative
/// name so that what is shown is the path that was read.
fn to_text(d: &Described, sources: &crate::sourcemap::SourceMap, no_images: bool, given: Option<&std::path::Path>) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "service {}", d.name);
    match &d.runner {
        Some(r) if r.runner.known().is_some() => {
            let _ = writeln!(o, "  runner      {} (from {})", r.runner.as_str(), r.from);
        }
        Some(r) => {
            let _ = writeln!(o, "  runner      {} (not a runner clawc knows; from {})", r.runner.as_str(), r.from);
        }
        None => {}
    }
    let Some(s) = &d.descriptor else {
        let why = if no_images { "; images were not read (--images none)" } else { "" };
        let _ = writeln!(o, "  descriptor  none (no source describes this service{why})");
        return o;
    };
    let desc = &s.descriptor;
    let name = match given {
        Some(p) if s.origin == crate::origin::OriginKind::CommandLine => p.display().to_string(),
        _ => sources.name(s.file).to_string(),
    };
    if s.origin == crate::origin::OriginKind::BuiltIn {
        let _ = writeln!(o, "  descriptor  version {}, built into claw up (it injects this service)", desc.version);
    } else {
        let _ = writeln!(o, "  descriptor  version {}, from the {} `{name}`", desc.version, s.origin.as_str());
    }
    if let Some(i) = &s.image {
        let _ = writeln!(o, "  image       {} ({})", i.reference, i.id);
    }
    match &s.snapshot {
        Some(snap) if !sources.name(s.file).starts_with(snap.as_str()) => {
            let _ = writeln!(o, "  snapshot    `{snap}` (its tools join the descriptor's)");
        }
        _ => {}
    }
    if !desc.description.is_empty() {
        let _ = writeln!(o, "  about       {}", desc.description);
    }
    if let Some(m) = &desc.mcp {
        let _ = writeln!(o, "  mcp         Streamable HTTP at {}", m.path);
    }
    if let Some(a) = &desc.auth {
        let env = if a.env.is_empty() { String::new() } else { format!(", token in ${}", a.env) };
        let _ = writeln!(o, "  auth        {}{env}", auth_kind(a));
    }
    if let Some(k) = &s.skill {
        let _ = writeln!(o, "  skill       {} (from `{}`)", k.name, k.source);
    }
    if !desc.tools.is_empty() {
        let _ = writeln!(o, "tools ({})", desc.tools.len());
        let w = desc.tools.iter().map(|t| d.name.len() + 1 + t.name.len()).max().unwrap_or(0);
        for t in &desc.tools {
            let exec = match &t.transport {
                Transport::Http { method, path, body_key, .. } => {
                    let key = body_key.as_ref().map(|k| format!(" (arguments in \"{k}\")")).unwrap_or_default();
                    format!("http {method} {path}{key}")
                }
                Transport::Mcp { path, tool_name } => format!("mcp tools/call \"{tool_name}\" at {path}"),
            };
            let name = ToolName::new(&d.name, &t.name).to_string();
            let _ = writeln!(o, "  {name:<w$}  {exec}  [{}]", t.effect());
            let _ = writeln!(o, "  {:<w$}  {}", "", t.description);
        }
    }
    if !desc.feeds.is_empty() {
        let _ = writeln!(o, "feeds ({})", desc.feeds.len());
        for f in &desc.feeds {
            let _ = writeln!(
                o,
                "  {}  {}  ttl {}s{}",
                f.name,
                f.path,
                f.ttl,
                if f.description.is_empty() { String::new() } else { format!("  {}", f.description) }
            );
        }
    }
    if !desc.endpoints.is_empty() {
        let _ = writeln!(o, "endpoints ({})", desc.endpoints.len());
        for e in &desc.endpoints {
            let _ = writeln!(o, "{}", format!("  {} {}  {}", e.method, e.path, e.description).trim_end());
        }
    }
    if let Some(m) = &desc.memory {
        o.push_str("memory\n");
        for (op, path) in [("recall", &m.recall), ("retain", &m.retain), ("forget", &m.forget)] {
            if let Some(p) = path {
                let _ = writeln!(o, "  {op:<6}  {p}");
            }
        }
    }
    o
}
