//! `clawc who-can POD SERVICE.TOOL|SERVICE`.

use super::Format;
use super::inputs::{PodArgs, StrictArg};
use crate::access;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "Every agent that can call a tool (or any tool of a service), and through which grant",
    after_help = "Exit codes: 0 answered (whether or not any agent can call it) · 2 invalid inputs, settings or command line, an unknown tool or service, or a warning with --strict · 3 environment failure (I/O, the Docker Engine unreachable with --images docker, an image the pod uses that no source has)."
)]
pub struct WhoCanArgs {
    /// The pod file
    pod: PathBuf,
    #[command(flatten)]
    input: PodArgs,
    #[command(flatten)]
    strict: StrictArg,
    /// A tool as <service>.<tool>, or a service for all its tools
    target: String,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
}

pub(super) fn run(args: WhoCanArgs) -> i32 {
    let compiled = match args.input.analyze(&args.pod, &args.strict, args.format) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let a = compiled.analysis.as_ref().expect("analyze returns an analysis");
    let (service, _, tool) = match access::target(a, &args.target) {
        Ok(t) => t,
        Err(d) => {
            super::print_diagnostics(std::slice::from_ref(&d), &compiled.sources, args.format);
            return 2;
        }
    };
    let holders = access::who_can(a, &compiled.sources, service, tool);
    if args.format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "target": args.target, "holders": holders })).expect("holders serialize")
        );
        return 0;
    }
    if holders.is_empty() {
        println!("no agent can call {} (deny by default: no grant names it)", args.target);
        return 0;
    }
    let rows: Vec<Vec<String>> = holders
        .iter()
        .map(|h| {
            vec![
                h.agent.clone(),
                h.tool.clone(),
                h.grant.clone(),
                format!("{} ({}); shown as `{}` by {}", h.via, h.allow, h.shown_as, h.via_runner),
            ]
        })
        .collect();
    print!("{}", super::table(&rows, ""));
    0
}
