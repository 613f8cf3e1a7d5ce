//! `clawc explain-code`.

use clap::Args;

#[derive(Args, Debug)]
#[command(
    about = "What a diagnostic code means, when it is raised and its exit code (docs/diagnostics.md)",
    after_help = "Exit codes: 0 explained · 2 not a code clawc raises (a close one is suggested)."
)]
pub struct ExplainCodeArgs {
    /// A code, e.g. clawc::pod::not_a_pod
    code: String,
}

pub(super) fn run(args: ExplainCodeArgs) -> i32 {
    use crate::diag::catalogue::{ALL, Code, Raised};
    let code = args.code.as_str();
    let Some(c) = Code::find(code) else {
        let help = crate::diag::suggest(code, ALL.iter().map(|c| c.as_str()), "every code is listed in docs/diagnostics.md");
        eprintln!("unknown diagnostic code `{code}`: {help}");
        return 2;
    };
    let i = c.info();
    let raised = match i.raised {
        Raised::Error => "an error",
        Raised::Warning => "a warning",
        Raised::Either => "an error or a warning",
    };
    println!("{}\n\n{}\n\nraised by the {} pass as {raised}", i.code, i.explanation, i.pass.name());
    if i.raised != Raised::Warning {
        println!("exit code of an error: {}", i.exit.code());
    }
    println!("example: {}", i.example);
    0
}
