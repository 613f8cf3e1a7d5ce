//! The runners an agent container can run: one table that the rest of clawc reads (names,
//! aliases, and each runner's native MCP projection, one file per runner under this
//! directory). A runner is named by the image label `claw.type`, the Clawfile directive
//! `CLAW_TYPE`, a Dockerfile `LABEL claw.type=`, or `--runner SERVICE=TYPE`.

mod claude_code;
mod codex;
mod cursor;
mod gemini;
mod goose;
mod hermes;
mod microclaw;
mod nanobot;
mod nanoclaw;
pub(crate) mod native;
mod nullclaw;
mod openclaw;
mod opencode;
mod picoclaw;
mod vscode;

pub(crate) use native::Native;
use serde::Serialize;
use std::fmt;

/// A runner clawc knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum Runner {
    OpenClaw,
    Hermes,
    Nanobot,
    PicoClaw,
    NullClaw,
    MicroClaw,
    NanoClaw,
    ClaudeCode,
    Codex,
    Gemini,
    OpenCode,
    Cursor,
    VsCode,
    Goose,
}

/// Where a runner comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// A Clawdapus runner (`CLAW_TYPE` in Clawdapus' own docs).
    Clawdapus,
    /// A mainstream coding-agent CLI or editor.
    Mainstream,
}

/// One row of [`RUNNERS`].
#[derive(Debug)]
pub struct Spec {
    pub runner: Runner,
    /// The canonical name (what `claw.type` says, and what clawc prints).
    pub name: &'static str,
    /// Other spellings accepted for it.
    pub aliases: &'static [&'static str],
    pub family: Family,
    /// How its native MCP configuration is written.
    pub native: &'static Native,
}

/// Every runner, in the order the docs list them.
pub(crate) const RUNNERS: &[Spec] = &[
    Spec { runner: Runner::OpenClaw, name: "openclaw", aliases: &[], family: Family::Clawdapus, native: &openclaw::NATIVE },
    Spec { runner: Runner::Hermes, name: "hermes", aliases: &["hermes-agent"], family: Family::Clawdapus, native: &hermes::NATIVE },
    Spec { runner: Runner::Nanobot, name: "nanobot", aliases: &[], family: Family::Clawdapus, native: &nanobot::NATIVE },
    Spec { runner: Runner::PicoClaw, name: "picoclaw", aliases: &[], family: Family::Clawdapus, native: &picoclaw::NATIVE },
    Spec { runner: Runner::NullClaw, name: "nullclaw", aliases: &[], family: Family::Clawdapus, native: &nullclaw::NATIVE },
    Spec { runner: Runner::MicroClaw, name: "microclaw", aliases: &[], family: Family::Clawdapus, native: &microclaw::NATIVE },
    Spec { runner: Runner::NanoClaw, name: "nanoclaw", aliases: &[], family: Family::Clawdapus, native: &nanoclaw::NATIVE },
    Spec {
        runner: Runner::ClaudeCode,
        name: "claude-code",
        aliases: &["claude", "claude_code"],
        family: Family::Mainstream,
        native: &claude_code::NATIVE,
    },
    Spec { runner: Runner::Codex, name: "codex", aliases: &["codex-cli"], family: Family::Mainstream, native: &codex::NATIVE },
    Spec { runner: Runner::Gemini, name: "gemini", aliases: &["gemini-cli"], family: Family::Mainstream, native: &gemini::NATIVE },
    Spec { runner: Runner::OpenCode, name: "opencode", aliases: &[], family: Family::Mainstream, native: &opencode::NATIVE },
    Spec { runner: Runner::Cursor, name: "cursor", aliases: &["cursor-agent"], family: Family::Mainstream, native: &cursor::NATIVE },
    Spec { runner: Runner::VsCode, name: "vscode", aliases: &["vs-code", "copilot"], family: Family::Mainstream, native: &vscode::NATIVE },
    Spec { runner: Runner::Goose, name: "goose", aliases: &[], family: Family::Mainstream, native: &goose::NATIVE },
];

impl Runner {
    /// The runner a name or alias stands for (ASCII case-insensitive, trimmed).
    pub fn parse(name: &str) -> Option<Runner> {
        let name = name.trim();
        RUNNERS
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name) || s.aliases.iter().any(|a| a.eq_ignore_ascii_case(name)))
            .map(|s| s.runner)
    }

    /// This runner's row of [`RUNNERS`].
    pub fn spec(self) -> &'static Spec {
        RUNNERS.iter().find(|s| s.runner == self).expect("every runner has a row")
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The canonical names, for help texts ("one of …").
    pub fn names() -> impl Iterator<Item = &'static str> {
        RUNNERS.iter().map(|s| s.name)
    }
}

impl From<Runner> for &'static str {
    fn from(r: Runner) -> Self {
        r.name()
    }
}

impl fmt::Display for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A runner as a service declares it: one clawc knows, or a name it does not (kept as
/// written, so `CLAWDAPUS.md` still says what the image says).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum Declared {
    Known(Runner),
    Unknown(String),
}

impl Declared {
    pub fn parse(value: &str) -> Self {
        Runner::parse(value).map_or_else(|| Declared::Unknown(value.trim().to_string()), Declared::Known)
    }

    /// The canonical name of a known runner, else the name as written.
    pub fn as_str(&self) -> &str {
        match self {
            Declared::Known(r) => r.name(),
            Declared::Unknown(s) => s,
        }
    }

    pub fn known(&self) -> Option<Runner> {
        match self {
            Declared::Known(r) => Some(*r),
            Declared::Unknown(_) => None,
        }
    }
}

/// The runner matrix of `docs/runners.md` (between its `runners:begin/end` markers),
/// rendered from [`RUNNERS`] (only the docs test needs it).
#[cfg(test)]
fn matrix_markdown() -> String {
    let mut out = String::from(
        "| runner | files clawc writes (container path) | filter | token reference | the model sees `loop.alpha` as | what clawc writes | proven in |\n|---|---|---|---|---|---|---|\n",
    );
    for s in RUNNERS {
        let n = s.native;
        let files: Vec<String> = n.files.iter().map(|f| format!("`{}/{}` ({})", f.root.dir(), f.path, n.mount(f))).collect();
        let verified = match n.verified {
            native::Verified::Driven { package, version } => format!("the real CLI, `{package}` {version}"),
            native::Verified::NotDriven(why) => format!("golden files only: {why}"),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | `{}` | {} | {} |\n",
            s.name,
            files.join("<br>"),
            n.filter.describe(),
            n.secrets.syntax(),
            n.names.model("loop", "alpha"),
            n.emits,
            verified
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every runner renders one file per `files` row, each parsable in its declared syntax.
    #[test]
    fn every_runner_renders_each_of_its_files() {
        let server = native::Server {
            name: "loop".into(),
            url: "http://loop:80/mcp".into(),
            granted: vec!["alpha".into()],
            denied: vec!["beta".into()],
            timeout_ms: 1500,
            auth: Some(native::Auth { env: "LOOP_TOKEN".into(), header: "Bearer ${LOOP_TOKEN}".into() }),
        };
        for s in RUNNERS {
            let files = (s.native.render)(std::slice::from_ref(&server));
            assert_eq!(files.len(), s.native.files.len(), "{}: rendered files vs its table row", s.name);
            for (f, bytes) in s.native.files.iter().zip(&files) {
                let text = std::str::from_utf8(bytes).unwrap();
                let ok = match f.syntax {
                    native::Syntax::Json | native::Syntax::Json5 => serde_json::from_str::<serde_json::Value>(text).is_ok(),
                    native::Syntax::Toml => text.parse::<toml_edit::DocumentMut>().is_ok(),
                    native::Syntax::Yaml => !text.is_empty(),
                };
                assert!(ok, "{} {}: not {:?}:\n{text}", s.name, f.path, f.syntax);
                assert!(text.contains("loop") || f.role != "mcp-servers", "{} {}", s.name, f.path);
            }
        }
    }

    /// `docs/runners.md` carries the matrix this table renders
    /// (`UPDATE_GOLDEN=1 cargo test --lib runner` rewrites it).
    #[test]
    fn the_runner_matrix_in_the_docs_is_current() {
        crate::generated_doc::assert_current(
            "docs/runners.md",
            Some("runners"),
            &matrix_markdown(),
            "UPDATE_GOLDEN=1 cargo test --lib runner",
        );
    }

    #[test]
    fn names_and_aliases_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for s in RUNNERS {
            for n in std::iter::once(&s.name).chain(s.aliases) {
                assert!(seen.insert(n.to_ascii_lowercase()), "{n} twice");
                assert_eq!(Runner::parse(n), Some(s.runner));
            }
            assert_eq!(s.runner.spec().name, s.name);
        }
        assert_eq!(RUNNERS.len(), 14);
        assert_eq!(Runner::parse(" Claude "), Some(Runner::ClaudeCode));
        assert_eq!(Declared::parse("custom-bot"), Declared::Unknown("custom-bot".into()));
        assert_eq!(Declared::parse("OpenClaw").as_str(), "openclaw");
    }

    /// The guide lists the runners in table order (the list is kept from this table).
    #[test]
    fn the_guide_lists_every_runner_in_table_order() {
        let guide = include_str!("../../docs/guide.md");
        let list = guide.split("The\nknown runners are ").nth(1).and_then(|t| t.split("\n(aliases").next()).expect("runner list in guide");
        let names: Vec<String> = list.split('`').skip(1).step_by(2).map(str::to_string).collect();
        assert_eq!(names, Runner::names().collect::<Vec<_>>(), "docs/guide.md lists other runners than src/runner/mod.rs");
    }
}
