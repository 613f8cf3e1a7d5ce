//! The `clawc` binary: parse the command line, run, exit with the command's code.

mod cli;

fn main() {
    std::process::exit(cli::run());
}
