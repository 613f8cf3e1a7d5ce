//! `clawc explain POD AGENT [SERVICE.TOOL]`.

use super::Format;
use super::inputs::{PodArgs, StrictArg};
use crate::access;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "Why an agent can (or cannot) call a tool, and the smallest grant that would change it",
    after_help = "Exit codes: 0 answered (whether or not the agent can call the tool) · 2 invalid inputs, settings or command line, an unknown agent or tool, or a warning with --strict · 3 environment failure (I/O, the Docker Engine unreachable with --images docker, an image the pod uses that no source has)."
)]
pub struct ExplainArgs {
    /// The pod file
    pod: PathBuf,
    #[command(flatten)]
    input: PodArgs,
    #[command(flatten)]
    strict: StrictArg,
    /// The agent id (a service name, or <service>-<n> for replicas)
    agent: String,
    /// A tool as <service>.<tool>; without it, every granted tool with its reason
    tool: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
}

pub(super) fn run(args: ExplainArgs) -> i32 {
    let compiled = match args.input.analyze(&args.pod, &args.strict, args.format) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let a = compiled.analysis.as_ref().expect("analyze returns an analysis");
    let fail = |d: crate::diag::Diagnostic| {
        super::print_diagnostics(std::slice::from_ref(&d), &compiled.sources, args.format);
        2
    };
    let service = match access::agent_service(a, &args.agent) {
        Ok(s) => s,
        Err(d) => return fail(d),
    };
    let Some(tool) = &args.tool else {
        return list(a, &compiled.sources, &args.agent, service, args.format);
    };
    let (svc, _, index) = match access::target(a, tool) {
        Ok(t) => t,
        Err(d) => return fail(d),
    };
    let Some(index) = index else {
        return fail(
            crate::diag::Diagnostic::error(access::codes::UNKNOWN_TARGET, format!("\"{tool}\" is a service; explain takes one tool")).help(
                format!(
                    "name a tool, e.g. `{svc}.{}`, or leave it out to list every granted tool",
                    a.registry.services[svc].descriptor.tools[0].name
                ),
            ),
        );
    };
    let e = access::explain(a, &compiled.sources, &args.agent, svc, index);
    if args.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&e).expect("explanation serializes"));
        return 0;
    }
    if e.granted {
        println!("{} can call {} (shown to the model as `{}`):", e.agent, e.tool, e.alias);
        let rows: Vec<Vec<String>> = e
            .chain
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let at = s.at.as_deref().map(|a| format!("  [{a}]")).unwrap_or_default();
                vec![format!("{}.", i + 1), s.step.to_string(), format!("{}{at}", s.text)]
            })
            .collect();
        print!("{}", super::table(&rows, "  "));
    } else {
        println!("{} cannot call {}: {}.", e.agent, e.tool, e.why_not.as_deref().unwrap_or(""));
        if let Some(s) = &e.suggestion {
            println!("\nsmallest grant that adds it — {s}");
        }
    }
    0
}

fn list(a: &crate::compile::Analysis, sources: &crate::sourcemap::SourceMap, agent: &str, service: &str, format: Format) -> i32 {
    let tools = a.plans.get(service).map_or(&[][..], |p| &p.tools);
    let rows: Vec<serde_json::Value> = tools
        .iter()
        .map(|g| {
            let t = a.registry.tool(&g.service, g.index);
            serde_json::json!({
                "tool": a.registry.tool_name(&g.service, g.index).to_string(),
                "shown_as": access::shown_as(a, service, &g.service, g.index),
                "via_runner": access::executor(a, service),
                "effect": access::effect(t),
                "grant": access::at(&g.via, sources),
                "via": access::route(&g.via, sources),
                "allow": if g.via.all { "all" } else { "named" },
            })
        })
        .collect();
    let brought = skill_tools(a, service);
    if format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "agent": agent, "service": service, "tools": rows, "skill_tools": brought }))
                .expect("list serializes")
        );
        return 0;
    }
    if rows.is_empty() {
        println!("{agent} can call no tools (deny by default).");
        print_skill_tools(agent, &brought);
        return 0;
    }
    let by = access::executor(a, service);
    println!(
        "{agent} can call {} tool{} ({}):",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        if by == "cllama" { "mediated by cllama".to_string() } else { format!("loaded natively by {by}") }
    );
    let cell = |r: &serde_json::Value, k: &str| r[k].as_str().unwrap_or("").to_string();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![cell(r, "tool"), cell(r, "effect"), cell(r, "grant"), format!("{}  [shown as `{}`]", cell(r, "via"), cell(r, "shown_as"))]
        })
        .collect();
    print!("{}", super::table(&table, "  "));
    print_skill_tools(agent, &brought);
    0
}

/// The tools an agent's skills bring (not held back), with the skill each comes from and
/// whether a granted tool shadows it.
fn skill_tools(a: &crate::compile::Analysis, service: &str) -> Vec<serde_json::Value> {
    let judged = a.skills.get(service).map_or(&[][..], Vec::as_slice);
    judged
        .iter()
        .filter(|j| j.held_back.is_none())
        .flat_map(|j| {
            let skill = &j.entry.skill;
            skill.tools().iter().map(move |t| {
                let by = j.shadowed.iter().find(|(n, _)| *n == t.name).map(|(_, by)| by.clone());
                serde_json::json!({
                    "tool": t.name,
                    "skill": skill.name,
                    "source": skill.source,
                    "kind": skill.kind(),
                    "shadowed_by": by,
                })
            })
        })
        .collect()
}

/// Prints the skill-brought tools, after the granted ones.
fn print_skill_tools(agent: &str, brought: &[serde_json::Value]) {
    if brought.is_empty() {
        return;
    }
    let cell = |r: &serde_json::Value, k: &str| r[k].as_str().unwrap_or("").to_string();
    let table: Vec<Vec<String>> = brought
        .iter()
        .map(|r| {
            let status = r["shadowed_by"].as_str().map_or_else(|| "brought".to_string(), |by| format!("shadowed by {by}"));
            vec![cell(r, "tool"), format!("skill {} ({})", cell(r, "skill"), cell(r, "source")), status]
        })
        .collect();
    println!();
    println!("{agent}'s skills bring {} tool{}:", brought.len(), if brought.len() == 1 { "" } else { "s" });
    print!("{}", super::table(&table, "  "));
}
