//! The leak check: before anything is written, every artifact (in its redacted form) is
//! searched for every resolved secret value. A hit means a token would land somewhere
//! no token belongs (CLAWDAPUS.md, the report, a path or description), so nothing is
//! written. Diagnostics name the variable and the file, never the value.

use crate::diag::Diagnostic;
use crate::grant::{Plan, Token};
use crate::output::ArtifactSet;
use std::collections::BTreeMap;

pub mod codes {
    pub const LEAK: &str = "clawc::secrets::leak";
    pub const TOO_SHORT: &str = "clawc::secrets::too_short_to_scan";
    pub const COMMITTED: &str = "clawc::secrets::committed_secret";
}

/// Values shorter than this would match ordinary text, so they are not scanned for.
pub const MIN_SCANNED_LEN: usize = 8;

/// Resolved secret values → the variable that holds each.
pub fn collect(plans: &BTreeMap<String, Plan>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let tokens = plans.values().flat_map(|p| {
        p.tools
            .iter()
            .filter_map(|t| t.auth.as_ref())
            .chain(p.feeds.iter().filter_map(|f| f.auth.as_ref()))
            .chain(p.memory.iter().filter_map(|m| m.auth.as_ref()))
    });
    for Token { env, value } in tokens {
        if let Some(v) = value {
            out.entry(v.clone()).or_insert_with(|| env.clone());
        }
    }
    out
}

/// Scans `redacted` (artifacts rendered with `${VAR}` in place of every token).
pub fn scan(redacted: &ArtifactSet, secrets: &BTreeMap<String, String>) -> Vec<Diagnostic> {
    let files = redacted.0.iter().map(|(p, a)| (p.as_str(), a.bytes.as_slice()));
    find(files, secrets, |var, path| {
        Diagnostic::error(codes::LEAK, format!("the secret value of {var} would be written to `{path}`")).help(format!(
            "a token may only appear in the auth of tools.json, feeds.json or memory.json; find where the value of {var} is copied into descriptor or pod text and remove it"
        ))
    })
}

/// Scans a compiled tree as it is on disk (committed files) for literal token values.
pub fn scan_committed<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>, secrets: &BTreeMap<String, String>) -> Vec<Diagnostic> {
    find(files, secrets, |var, path| {
        Diagnostic::error(codes::COMMITTED, format!("`{path}` holds the literal value of {var}"))
            .help("recompile with `--secrets redact` (the default) and commit that tree; if it was pushed, rotate the token")
    })
}

fn find<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    secrets: &BTreeMap<String, String>,
    diag: impl Fn(&str, &str) -> Diagnostic,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let scanned: Vec<(&String, &String)> = secrets.iter().filter(|(v, _)| v.trim().len() >= MIN_SCANNED_LEN).collect();
    for var in secrets.iter().filter(|(v, _)| v.trim().len() < MIN_SCANNED_LEN).map(|(_, var)| var) {
        diags.push(
            Diagnostic::warning(
                codes::TOO_SHORT,
                format!("the value of {var} is shorter than {MIN_SCANNED_LEN} characters, so artifacts are not scanned for it"),
            )
            .help("use a real token; short values cannot be told apart from ordinary text"),
        );
    }
    for (path, bytes) in files {
        for (value, var) in &scanned {
            if bytes.windows(value.len()).any(|w| w == value.as_bytes()) {
                diags.push(diag(var, path));
            }
        }
    }
    diags
}

/// `bytes` with every scanned secret value replaced by `${VAR}` (for display only).
pub fn mask(bytes: &[u8], secrets: &BTreeMap<String, String>) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    for (value, var) in secrets.iter().filter(|(v, _)| v.trim().len() >= MIN_SCANNED_LEN) {
        text = text.replace(value.as_str(), &format!("${{{var}}}"));
    }
    text.into_bytes()
}
