//! Where a service's description came from: the descriptor sources, named as the report,
//! the lock and `clawc describe` name them. A leaf every layer may use.

use serde::Serialize;

/// Which source a descriptor was found by (Clawdapus' order, `--descriptor` first).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OriginKind {
    /// A descriptor `claw up` builds in for a service it injects (claw-api, claw-wall).
    BuiltIn,
    CommandLine,
    DescribeFile,
    Discovered,
    Image,
    BuildContext,
}

impl OriginKind {
    /// The kebab-case name used in the report and the lock.
    pub fn as_str(self) -> &'static str {
        match self {
            OriginKind::BuiltIn => "built-in",
            OriginKind::CommandLine => "command-line",
            OriginKind::DescribeFile => "describe-file",
            OriginKind::Discovered => "discovered",
            OriginKind::Image => "image",
            OriginKind::BuildContext => "build-context",
        }
    }
}
