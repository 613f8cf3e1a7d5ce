//! Test support: a document (or a marked section of one) that is rendered from a table
//! the code reads (`docs/runners.md`, `docs/config.md`, `docs/compat-rules.md`) must be
//! current; `UPDATE_GOLDEN=1` rewrites it.

use std::path::Path;

/// Asserts that `rel` (from the repository root) holds `body`: the whole file, or with
/// `section` the text between `<!-- SECTION:begin -->` and `<!-- SECTION:end -->`.
/// `regenerate` is the command that rewrites it, for the failure message.
pub(crate) fn assert_current(rel: &str, section: Option<&str>, body: &str, regenerate: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let want = match section {
        None => body.to_string(),
        Some(name) => {
            let (begin, end) = (format!("<!-- {name}:begin -->\n"), format!("<!-- {name}:end -->"));
            let (head, rest) = doc.split_once(&begin).unwrap_or_else(|| panic!("{rel}: no {begin:?} marker"));
            let (_, tail) = rest.split_once(&end).unwrap_or_else(|| panic!("{rel}: no {end:?} marker"));
            format!("{head}{begin}{body}{end}{tail}")
        }
    };
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{rel}: {e}"));
        return;
    }
    assert!(doc == want, "{rel} is stale: run `{regenerate}` and review the diff");
}
