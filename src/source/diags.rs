//! Stable codes of the descriptor sources.

pub const IO: &str = "clawc::source::io";
pub const NOT_A_FILE: &str = "clawc::source::not_a_file";
pub const TOO_LARGE: &str = "clawc::source::too_large";
pub const NOT_UTF8: &str = "clawc::source::not_utf8";
pub const MISSING: &str = "clawc::source::missing_file";
pub const PATH_ESCAPE: &str = "clawc::source::path_escape";
pub const NO_SIDECAR_DESCRIPTOR: &str = "clawc::source::no_sidecar_descriptor";
pub const STALE_SNAPSHOT: &str = "clawc::source::stale_snapshot";
pub const UNKNOWN_SERVICE: &str = "clawc::source::unknown_service";
pub const SKILL_NOT_FOUND: &str = "clawc::source::skill_not_found";
pub const INVALID_SKILL_NAME: &str = "clawc::source::invalid_skill_name";
pub const INVALID_PATH: &str = "clawc::source::invalid_path";
