//! Stable codes of the describe pass.

pub const INVALID_JSON: &str = "clawc::describe::invalid_json";
pub const WRONG_TYPE: &str = "clawc::describe::wrong_type";
pub const VERSION: &str = "clawc::describe::version";
pub const FEED: &str = "clawc::describe::feed";
pub const ENDPOINT: &str = "clawc::describe::endpoint";
pub const V1_CAPABILITY: &str = "clawc::describe::v1_capability";
pub const MCP: &str = "clawc::describe::mcp";
pub const TOOL: &str = "clawc::describe::tool";
pub const INPUT_SCHEMA: &str = "clawc::describe::input_schema";
pub const ANNOTATION: &str = "clawc::describe::annotation";
pub const MEMORY: &str = "clawc::describe::memory";
pub const AUTH: &str = "clawc::describe::auth";
