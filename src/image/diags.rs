//! Stable codes of the image pass.

pub const DOCKER_UNREACHABLE: &str = "clawc::image::docker_unreachable";
pub const DOCKER: &str = "clawc::image::docker";
pub const NOT_FOUND: &str = "clawc::image::not_found";
pub const FILE_MISSING: &str = "clawc::image::file_missing";
pub const NOT_A_FILE: &str = "clawc::image::not_a_file";
pub const PATH_ESCAPE: &str = "clawc::image::path_escape";
pub const TOO_LARGE: &str = "clawc::image::too_large";
pub const NOT_UTF8: &str = "clawc::image::not_utf8";
pub const CORRUPT: &str = "clawc::image::corrupt";
pub const LAYER_TOO_LARGE: &str = "clawc::image::layer_too_large";
pub const INVALID_SNAPSHOT: &str = "clawc::image::invalid_snapshot";
pub const TOOL_COLLISION: &str = "clawc::image::tool_collision";
pub const SNAPSHOT_CONFLICT: &str = "clawc::image::snapshot_conflict";
pub const BAD_SOURCE: &str = "clawc::image::bad_source";
pub const INTERRUPTED: &str = "clawc::image::interrupted";
pub const PARTIAL_SNAPSHOT: &str = "clawc::image::partial_snapshot";
