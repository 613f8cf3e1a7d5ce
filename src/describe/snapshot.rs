//! A baked MCP `tools/list` snapshot (`.claw-tools.json`) → a v2 descriptor, converted
//! exactly as `claw discover` converts a live `tools/list` answer: version 2, the
//! description "`<service> MCP stdio tools.`", `mcp` with the streamable HTTP transport,
//! and per tool a trimmed name and description (`MCP tool <name>.` when empty), the
//! `inputSchema` with `"type": "object"` added when missing, and `annotations` as they
//! are. The result then goes through the normal descriptor checks.

use serde_json::{Map, Value, json};

/// What was wrong with a snapshot's shape (its JSON already parsed).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SnapshotError(pub String);

/// Converts a snapshot: `{"tools": [...]}` (an MCP `tools/list` result, `nextCursor`
/// allowed) or a bare array of tools. Returns the descriptor and whether the snapshot
/// was one page of several (`nextCursor` set).
pub(crate) fn to_descriptor(service: &str, snapshot: &Value, mcp_path: &str) -> Result<(Value, bool), SnapshotError> {
    let (tools, partial) = match snapshot {
        Value::Array(a) => (a, false),
        Value::Object(o) => match o.get("tools") {
            Some(Value::Array(a)) => (a, o.get("nextCursor").is_some_and(|c| !c.is_null() && c != "")),
            Some(_) => return Err(SnapshotError("\"tools\" must be an array".into())),
            None => return Err(SnapshotError("expected a tools/list result: an object with \"tools\", or an array of tools".into())),
        },
        _ => return Err(SnapshotError("expected a tools/list result: an object with \"tools\", or an array of tools".into())),
    };
    let mut out = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        let Value::Object(t) = t else { return Err(SnapshotError(format!("tools[{i}] must be an object"))) };
        out.push(tool(t));
    }
    let description =
        if service.trim().is_empty() { "Discovered MCP stdio tools.".to_string() } else { format!("{service} MCP stdio tools.") };
    let descriptor = json!({
        "version": 2,
        "description": description,
        "mcp": { "transport": "streamable_http", "path": mcp_path },
        "tools": out,
    });
    Ok((descriptor, partial))
}

fn tool(t: &Map<String, Value>) -> Value {
    let name = t.get("name").and_then(Value::as_str).unwrap_or_default().trim().to_string();
    let description = t.get("description").and_then(Value::as_str).unwrap_or_default().trim();
    let description = if description.is_empty() { format!("MCP tool {name}.") } else { description.to_string() };
    let schema = match t.get("inputSchema") {
        None | Some(Value::Null) => json!({ "type": "object", "properties": {} }),
        Some(Value::Object(s)) if !s.contains_key("type") => {
            let mut s = s.clone();
            s.insert("type".into(), "object".into());
            Value::Object(s)
        }
        Some(s) => s.clone(),
    };
    let mut out = Map::new();
    out.insert("name".into(), name.into());
    out.insert("description".into(), description.into());
    out.insert("inputSchema".into(), schema);
    if let Some(a) = t.get("annotations").filter(|a| !a.is_null()) {
        out.insert("annotations".into(), a.clone());
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_like_claw_discover() {
        let snap = json!({"tools": [
            {"name": " search ", "description": "", "inputSchema": {"properties": {"q": {"type": "string"}}}, "annotations": {"readOnlyHint": true}},
            {"name": "ping"}
        ], "nextCursor": "p2"});
        let (d, partial) = to_descriptor("research", &snap, "/rpc").unwrap();
        assert!(partial);
        assert_eq!(d["description"], "research MCP stdio tools.");
        assert_eq!(d["mcp"], json!({"transport": "streamable_http", "path": "/rpc"}));
        assert_eq!(d["tools"][0]["name"], "search");
        assert_eq!(d["tools"][0]["description"], "MCP tool search.");
        assert_eq!(d["tools"][0]["inputSchema"]["type"], "object");
        assert_eq!(d["tools"][0]["annotations"]["readOnlyHint"], true);
        assert_eq!(d["tools"][1]["inputSchema"], json!({"type": "object", "properties": {}}));
        let (bare, partial) = to_descriptor("x", &json!([{"name": "a", "description": "A"}]), "/mcp").unwrap();
        assert!(!partial);
        assert_eq!(bare["tools"][0]["description"], "A");
        assert!(to_descriptor("x", &json!({"tools": 3}), "/mcp").is_err());
        assert!(to_descriptor("x", &json!("no"), "/mcp").is_err());
        assert!(to_descriptor("x", &json!([1]), "/mcp").is_err());
    }
}
