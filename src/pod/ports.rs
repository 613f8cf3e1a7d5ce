//! Container-side ports from Compose `expose` and `ports` (short, long and map forms).
//! An entry clawc cannot read a container port from is a problem at the entry, never
//! skipped: a skipped port would silently move a service URL to the default port 80.

use crate::yaml::Node;

/// Why an `expose` or `ports` entry gives no container port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PortProblem {
    /// A list, a null, or (for `expose`) a mapping: not an entry Compose reads.
    Shape(&'static str),
    /// A scalar (or a long-form `target`) whose container side is not a port or range.
    NoPort(String),
    /// A long-form mapping with no `target`.
    NoTarget,
    /// A long-form `target` that is not a scalar.
    BadTarget(&'static str),
}

/// One entry's container port: a number (`"80"`) or a range (`"8000-8010"`), kept as
/// written. Text with a `$` is Compose's to interpolate: it is taken as written, unchecked
/// (`Ok(None)` when its container side is empty).
pub(super) type Port = Result<Option<String>, PortProblem>;

/// The container port of one `ports` entry: `"8080:80"` → `80`,
/// `"127.0.0.1:8080:80/tcp"` → `80`, `"[::1]:8080:80"` → `80`, `{target: 80}` → `80`.
pub(super) fn container_port(node: &Node) -> Port {
    if node.as_map().is_some() {
        let Some(target) = node.get("target") else { return Err(PortProblem::NoTarget) };
        let Some(text) = scalar(target) else { return Err(PortProblem::BadTarget(target.kind_name())) };
        return checked(text.trim(), text);
    }
    let Some(text) = scalar(node) else { return Err(PortProblem::Shape(node.kind_name())) };
    let no_proto = text.split('/').next().unwrap_or(text);
    checked(no_proto.rsplit(':').next().unwrap_or(no_proto).trim(), text)
}

/// An `expose` entry: `"4000"`, `4000`, `"4000/tcp"` or `"4000-4005"` → as written.
pub(super) fn exposed_port(node: &Node) -> Port {
    let Some(text) = scalar(node) else { return Err(PortProblem::Shape(node.kind_name())) };
    checked(text.split('/').next().unwrap_or(text).trim(), text)
}

/// A port as written is a range (`8000-8010`): a service URL needs one port.
pub(super) fn is_range(port: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    port.split_once('-').is_some_and(|(lo, hi)| digits(lo) && digits(hi))
}

fn scalar(node: &Node) -> Option<&str> {
    node.as_str().filter(|_| node.as_map().is_none() && node.as_seq().is_none())
}

fn checked(port: &str, whole: &str) -> Port {
    if whole.contains('$') {
        return Ok((!port.is_empty()).then(|| port.to_string()));
    }
    let number = |s: &str| {
        !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) && (1..=65_535).contains(&s.parse::<u32>().unwrap_or(0))
    };
    let ok = match port.split_once('-') {
        Some((lo, hi)) => number(lo) && number(hi) && lo.parse::<u32>().ok() <= hi.parse::<u32>().ok(),
        None => number(port),
    };
    if ok { Ok(Some(port.to_string())) } else { Err(PortProblem::NoPort(whole.trim().to_string())) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::{FileId, Loc};
    use crate::yaml::Kind;

    fn scalar_node(text: &str) -> Node {
        Node { kind: Kind::Scalar { text: text.to_string(), plain: true }, loc: Loc { file: FileId(0), span: Default::default() } }
    }

    #[test]
    fn every_short_form() {
        for (text, want) in [
            ("80", "80"),
            ("8080:80", "80"),
            ("127.0.0.1:8080:80/tcp", "80"),
            ("[::1]:8080:80", "80"),
            ("8000-8010:8000-8010", "8000-8010"),
            ("9090/udp", "9090"),
        ] {
            assert_eq!(container_port(&scalar_node(text)), Ok(Some(want.to_string())), "{text}");
        }
        assert_eq!(container_port(&scalar_node("8080:${P}")), Ok(Some("${P}".to_string())));
        for bad in ["8080:", "http", "8080:abc", "0", "70000", "10-5", ":/tcp"] {
            assert!(matches!(container_port(&scalar_node(bad)), Err(PortProblem::NoPort(_))), "{bad}");
        }
        assert!(matches!(exposed_port(&scalar_node("abc")), Err(PortProblem::NoPort(_))));
        assert!(is_range("8000-8010") && !is_range("${P:-80}") && !is_range("80"));
        assert_eq!(exposed_port(&scalar_node("4000/tcp")), Ok(Some("4000".to_string())));
    }
}
