//! Container-side ports from Compose `expose` and `ports` (short, long and map forms).

use crate::yaml::Node;

/// The container port of one `ports` entry: `"8080:80"` → `80`,
/// `"127.0.0.1:8080:80/tcp"` → `80`, `{target: 80}` → `80`.
pub(super) fn container_port(node: &Node) -> Option<String> {
    if node.as_map().is_some() {
        return node.get("target").and_then(Node::as_str).map(|s| s.trim().to_string());
    }
    let text = node.as_str()?.trim();
    let no_proto = text.split('/').next().unwrap_or(text);
    let port = no_proto.rsplit(':').next().unwrap_or(no_proto).trim();
    (!port.is_empty()).then(|| port.to_string())
}

/// An `expose` entry: `"4000"`, `4000` or `"4000/tcp"` → `4000`.
pub(super) fn exposed_port(node: &Node) -> Option<String> {
    let text = node.as_str()?.trim();
    let port = text.split('/').next().unwrap_or(text).trim();
    (!port.is_empty()).then(|| port.to_string())
}
