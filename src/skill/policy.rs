//! Timeout and retry of a `tool-manifest.yaml` tool: each field is taken from the tool
//! (`timeout_sec`, `retry.max_attempts`, `retry.backoff_ms`), else from the manifest's
//! runtime defaults (`runtime.default_timeout_sec`, `runtime.default_retry.*`), else from
//! the system default, one field at a time (a tool may set `retry.max_attempts` and
//! inherit `backoff_ms`).
//!
//! The Dynamic Skill Tools design names a "system fallback default" after the tool and
//! the runtime default, and asks for retry then degrade, but gives no numbers. clawc's are
//! [`SYSTEM_TIMEOUT_SEC`] (30 s), [`SYSTEM_MAX_ATTEMPTS`] (2: one try and one retry, then
//! degrade) and [`SYSTEM_BACKOFF_MS`] (500 ms); `docs/skills.md` lists them. Values are
//! bounded (the design's "max timeout per call"): a timeout of 1 to 3600 s, 1 to 10
//! attempts, a backoff of 0 to 600,000 ms.

use crate::sourcemap::Loc;
use crate::yaml::Node;
use serde::Serialize;

/// Seconds a call may take when neither the tool nor the runtime says.
pub(crate) const SYSTEM_TIMEOUT_SEC: u64 = 30;
/// Attempts of a call (the first included) when neither the tool nor the runtime says.
pub(crate) const SYSTEM_MAX_ATTEMPTS: u64 = 2;
/// Milliseconds between attempts when neither the tool nor the runtime says.
pub(crate) const SYSTEM_BACKOFF_MS: u64 = 500;

/// The accepted range of each field.
pub(crate) const TIMEOUT_SEC: (u64, u64) = (1, 3600);
pub(crate) const MAX_ATTEMPTS: (u64, u64) = (1, 10);
pub(crate) const BACKOFF_MS: (u64, u64) = (0, 600_000);

/// The fields one level (a tool, or the runtime defaults) sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Partial {
    pub timeout_sec: Option<u64>,
    pub max_attempts: Option<u64>,
    pub backoff_ms: Option<u64>,
}

/// The policy a tool runs with, as `dynamic_tools.json` writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Effective {
    pub timeout_sec: u64,
    pub retry: Retry,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Retry {
    pub max_attempts: u64,
    pub backoff_ms: u64,
}

/// Where a field's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Tool,
    Runtime,
    System,
}

/// Where each field of an [`Effective`] came from (the report shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Origins {
    pub timeout_sec: Level,
    pub max_attempts: Level,
    pub backoff_ms: Level,
}

/// Each field from the tool, else the runtime default, else the system default.
pub(crate) fn merge(tool: Partial, runtime: Partial) -> (Effective, Origins) {
    fn pick(tool: Option<u64>, runtime: Option<u64>, system: u64) -> (u64, Level) {
        match (tool, runtime) {
            (Some(v), _) => (v, Level::Tool),
            (None, Some(v)) => (v, Level::Runtime),
            (None, None) => (system, Level::System),
        }
    }
    let (timeout_sec, t) = pick(tool.timeout_sec, runtime.timeout_sec, SYSTEM_TIMEOUT_SEC);
    let (max_attempts, m) = pick(tool.max_attempts, runtime.max_attempts, SYSTEM_MAX_ATTEMPTS);
    let (backoff_ms, b) = pick(tool.backoff_ms, runtime.backoff_ms, SYSTEM_BACKOFF_MS);
    (Effective { timeout_sec, retry: Retry { max_attempts, backoff_ms } }, Origins { timeout_sec: t, max_attempts: m, backoff_ms: b })
}

/// A problem with a policy value: the message and where.
pub(crate) type Problem = (String, Loc);

/// An integer in `range`; `what` names the field in the message.
pub(crate) fn int(node: &Node, what: &str, (min, max): (u64, u64)) -> Result<u64, Problem> {
    match node.as_i64() {
        Some(v) if v >= 0 && (min..=max).contains(&v.unsigned_abs()) => Ok(v.unsigned_abs()),
        _ => {
            let shown: String = crate::diag::printable(node.as_str().unwrap_or(node.kind_name())).chars().take(40).collect();
            Err((format!("`{what}` must be an integer from {min} to {max}, not {shown}"), node.loc))
        }
    }
}

/// A `retry` (or `default_retry`) mapping: `max_attempts` and `backoff_ms`, each optional.
/// `what` is its name in messages.
pub(crate) fn retry(node: &Node, what: &str, into: &mut Partial) -> Vec<Problem> {
    let Some(entries) = node.as_map() else {
        return vec![(format!("`{what}` must be a mapping with max_attempts and/or backoff_ms, not {}", node.kind_name()), node.loc)];
    };
    let mut problems = Vec::new();
    for (k, v) in entries {
        match k.as_str() {
            Some("max_attempts") => match int(v, &format!("{what}.max_attempts"), MAX_ATTEMPTS) {
                Ok(n) => into.max_attempts = Some(n),
                Err(p) => problems.push(p),
            },
            Some("backoff_ms") => match int(v, &format!("{what}.backoff_ms"), BACKOFF_MS) {
                Ok(n) => into.backoff_ms = Some(n),
                Err(p) => problems.push(p),
            },
            other => {
                let shown = crate::diag::printable(other.unwrap_or("?"));
                problems.push((format!("`{what}` takes max_attempts and backoff_ms, not `{shown}`"), k.loc));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_is_merged_on_its_own() {
        let tool = Partial { timeout_sec: None, max_attempts: Some(5), backoff_ms: None };
        let runtime = Partial { timeout_sec: Some(10), max_attempts: Some(3), backoff_ms: None };
        let (e, o) = merge(tool, runtime);
        assert_eq!(e, Effective { timeout_sec: 10, retry: Retry { max_attempts: 5, backoff_ms: SYSTEM_BACKOFF_MS } });
        assert_eq!(o, Origins { timeout_sec: Level::Runtime, max_attempts: Level::Tool, backoff_ms: Level::System });
        let (e, _) = merge(Partial::default(), Partial::default());
        assert_eq!((e.timeout_sec, e.retry.max_attempts, e.retry.backoff_ms), (30, 2, 500));
    }
}
