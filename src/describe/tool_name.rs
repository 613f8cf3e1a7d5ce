//! A tool's pod-wide name, `<service>.<tool>`, and its provider-safe alias
//! (`PresentedToolName`), byte-compatible with cllama's own copy: names that are already
//! provider-safe pass through, others are sanitised and suffixed with 8 hex digits of
//! SHA-1 of the canonical name.

use sha1::{Digest, Sha1};
use std::fmt;

/// `<service>.<tool>`: how every artifact, the report and `explain` name a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName<'a> {
    pub service: &'a str,
    pub tool: &'a str,
}

impl<'a> ToolName<'a> {
    pub fn new(service: &'a str, tool: &'a str) -> Self {
        ToolName { service, tool }
    }

    /// The name the model is shown (see [`presented_name`]).
    pub fn alias(&self) -> String {
        presented_name(&self.to_string())
    }
}

impl fmt::Display for ToolName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.service, self.tool)
    }
}

const MAX_LEN: usize = 128;

fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

pub(crate) fn presented_name(canonical: &str) -> String {
    let name = canonical.trim();
    if name.is_empty() {
        return "managed_tool".to_string();
    }
    if name.chars().count() <= MAX_LEN && name.chars().all(safe) {
        return name.to_string();
    }
    let sanitized: String = name.chars().map(|c| if safe(c) { c } else { '_' }).collect();
    let base = sanitized.trim_matches('_');
    let base = if base.is_empty() { "managed_tool" } else { base };
    let digest = Sha1::digest(name.as_bytes());
    let suffix = format!("_{}", &hex::encode(digest)[..8]);
    let keep = base.len().min(MAX_LEN - suffix.len());
    format!("{}{suffix}", &base[..keep])
}

#[cfg(test)]
mod tests {
    use super::{ToolName, presented_name};

    #[test]
    fn canonical_and_alias() {
        let n = ToolName::new("trading-api", "execute_trade");
        assert_eq!(n.to_string(), "trading-api.execute_trade");
        assert_eq!(n.alias(), "trading-api_execute_trade_0fd7eea4");
    }

    #[test]
    fn reference_vectors() {
        assert_eq!(presented_name("claw-wall.search_channel_context"), "claw-wall_search_channel_context_2919442f");
        assert_eq!(presented_name("trading-api.get_market_context"), "trading-api_get_market_context_28a4e0c2");
        assert_eq!(presented_name("trading-api.execute_trade"), "trading-api_execute_trade_0fd7eea4");
        assert_eq!(presented_name("perplexity-mcp.search"), "perplexity-mcp_search_014893b2");
        assert_eq!(presented_name("a.b"), "a_b_69f6642c");
        assert_eq!(presented_name("get_quote"), "get_quote");
        assert_eq!(presented_name("  "), "managed_tool");
    }

    #[test]
    fn long_names_are_cut_to_128() {
        let long = format!("svc.{}", "x".repeat(300));
        let alias = presented_name(&long);
        assert_eq!(alias.len(), 128);
        assert!(alias.starts_with("svc_xxx"));
    }
}
