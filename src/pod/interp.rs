//! `${VAR}` placeholders in x-claw fields, with every form Clawdapus accepts:
//! `${V}`, `${V:-d}`, `${V-d}`, `${V:?msg}`, `${V?msg}`, `${V:+alt}`, `${V+alt}`.
//! Operands are expanded recursively, and only when used. A `$` not followed by `{`
//! is literal.

use super::env::{Env, is_var_name};

/// Why a placeholder could not be expanded (the message is the diagnostic's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InterpError {
    Unresolved(String),
    Required(String),
    Malformed(String),
}

impl std::fmt::Display for InterpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InterpError::Unresolved(v) => write!(f, "unresolved x-claw placeholder \"${{{v}}}\""),
            InterpError::Required(msg) => f.write_str(msg),
            InterpError::Malformed(s) => write!(f, "malformed placeholder in \"{s}\""),
        }
    }
}

const MAX_NESTING: usize = 16;

pub(crate) fn expand(input: &str, env: &Env) -> Result<String, InterpError> {
    expand_depth(input, env, 0)
}

fn expand_depth(input: &str, env: &Env, depth: usize) -> Result<String, InterpError> {
    if depth > MAX_NESTING {
        return Err(InterpError::Malformed(input.to_string()));
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let body_start = i + 2;
        let end = matching_brace(&rest[body_start..]).ok_or_else(|| InterpError::Malformed(input.to_string()))?;
        let body = &rest[body_start..body_start + end];
        out.push_str(&expand_one(body, env, depth)?);
        rest = &rest[body_start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Index of the `}` closing a placeholder body, skipping nested `${...}`.
fn matching_brace(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

fn expand_one(body: &str, env: &Env, depth: usize) -> Result<String, InterpError> {
    let name_len = body.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(body.len());
    let (name, op) = body.split_at(name_len);
    if !is_var_name(name) {
        return Err(InterpError::Malformed(format!("${{{body}}}")));
    }
    let value = env.get(name);
    let set_nonempty = value.is_some_and(|v| !v.is_empty());
    let operand = |s: &str| expand_depth(s, env, depth + 1);
    let required = |msg: &str| -> Result<String, InterpError> {
        let msg = operand(msg)?;
        Err(InterpError::Required(if msg.is_empty() { format!("{name} is required") } else { msg }))
    };
    let pick = |cond: bool, then: &str| -> Result<String, InterpError> {
        if cond { operand(then) } else { Ok(value.unwrap_or_default().to_string()) }
    };
    if op.is_empty() {
        return value.map(str::to_string).ok_or_else(|| InterpError::Unresolved(name.to_string()));
    }
    if let Some(d) = op.strip_prefix(":-") {
        return pick(!set_nonempty, d);
    }
    if let Some(msg) = op.strip_prefix(":?") {
        return if set_nonempty { Ok(value.unwrap_or_default().to_string()) } else { required(msg) };
    }
    if let Some(alt) = op.strip_prefix(":+") {
        return if set_nonempty { operand(alt) } else { Ok(String::new()) };
    }
    if let Some(d) = op.strip_prefix('-') {
        return pick(value.is_none(), d);
    }
    if let Some(msg) = op.strip_prefix('?') {
        return if value.is_some() { Ok(value.unwrap_or_default().to_string()) } else { required(msg) };
    }
    if let Some(alt) = op.strip_prefix('+') {
        return if value.is_some() { operand(alt) } else { Ok(String::new()) };
    }
    Err(InterpError::Malformed(format!("${{{body}}}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::from_pairs([("SET".into(), "v".into()), ("EMPTY".into(), String::new()), ("lower".into(), "l".into())])
    }

    #[test]
    fn every_form() {
        let e = env();
        let cases = [
            ("${SET}", "v"),
            ("${lower}", "l"),
            ("${EMPTY}", ""),
            ("${UNSET:-d}", "d"),
            ("${EMPTY:-d}", "d"),
            ("${EMPTY-d}", ""),
            ("${UNSET-d}", "d"),
            ("${SET:+alt}", "alt"),
            ("${EMPTY:+alt}", ""),
            ("${EMPTY+alt}", "alt"),
            ("${UNSET+alt}", ""),
            ("${UNSET:-${SET}x}", "vx"),
            ("a$b ${SET}/$", "a$b v/$"),
            ("${SET:?boom}", "v"),
            ("${EMPTY?boom}", ""),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &e).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn errors() {
        let e = env();
        assert_eq!(expand("${UNSET}", &e).unwrap_err().to_string(), "unresolved x-claw placeholder \"${UNSET}\"");
        assert_eq!(expand("${EMPTY:?need it}", &e).unwrap_err().to_string(), "need it");
        assert_eq!(expand("${UNSET?}", &e).unwrap_err().to_string(), "UNSET is required");
        assert!(matches!(expand("${SET", &e), Err(InterpError::Malformed(_))));
        assert!(matches!(expand("${1X}", &e), Err(InterpError::Malformed(_))));
    }
}
