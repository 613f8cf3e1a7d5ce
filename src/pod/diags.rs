//! Stable codes of the parse and expand passes.

pub const NOT_A_POD: &str = "clawc::pod::not_a_pod";
pub const WRONG_TYPE: &str = "clawc::pod::wrong_type";
pub const REQUIRED: &str = "clawc::pod::required";
pub const INVALID_VALUE: &str = "clawc::pod::invalid_value";
pub const UNKNOWN_KEY: &str = "clawc::pod::unknown_key";
pub const MISPLACED_KEY: &str = "clawc::pod::misplaced_key";
pub const IGNORED: &str = "clawc::pod::ignored";
pub const MCP_STDIO_CONFLICT: &str = "clawc::pod::mcp_stdio_conflict";
pub const UNKNOWN_SOURCE: &str = "clawc::pod::unknown_feed_source";
pub const INVALID_SERVICE_NAME: &str = "clawc::pod::invalid_service_name";
pub const TOO_MANY_AGENTS: &str = "clawc::pod::too_many_agents";
pub const TOO_MANY_ENTRIES: &str = "clawc::pod::too_many_entries";
pub const PLACEHOLDER: &str = "clawc::expand::placeholder";
pub const DOUBLE_SPREAD: &str = "clawc::expand::double_spread";
pub const SPREAD_WITHOUT_DEFAULTS: &str = "clawc::expand::spread_without_defaults";
