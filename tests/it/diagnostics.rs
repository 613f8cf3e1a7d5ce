//! The catalogue of diagnostic codes (`src/diag/catalogue.rs`) is the only place a code
//! is written: `docs/diagnostics.md` is rendered from it, no code string is restated in
//! `src/`, and every code the docs mention exists. `UPDATE_GOLDEN=1 cargo test --test it
//! diagnostics_doc` rewrites `docs/diagnostics.md`; review the diff.

use super::harness::rust_files;
use clawc::diag::catalogue::{ALL, markdown};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn diagnostics_doc_is_current() {
    super::harness::assert_generated_doc("docs/diagnostics.md", &markdown(), "UPDATE_GOLDEN=1 cargo test --test it diagnostics_doc");
}

#[test]
fn no_two_codes_collide() {
    let mut seen = BTreeSet::new();
    for c in ALL {
        assert!(seen.insert(c.as_str()), "{c} is in the catalogue twice");
    }
}

/// A code raised from a string the catalogue lacks would be a hole in the contract; with
/// a typed `Code` it cannot compile, and this keeps the string form out too.
#[test]
fn no_code_string_outside_the_catalogue() {
    let catalogue = root().join("src/diag/catalogue.rs");
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| **f != catalogue) {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("\"clawc::") {
                found.push(format!("{}:{}: {}", f.strip_prefix(root()).unwrap().display(), n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "code strings belong in src/diag/catalogue.rs:\n{}", found.join("\n"));
}

/// Every `clawc::<pass>::<name>` the README and docs mention is a code of the catalogue.
#[test]
fn the_docs_name_only_catalogued_codes() {
    let codes: BTreeSet<&str> = ALL.iter().map(|c| c.as_str()).collect();
    let passes: BTreeSet<&str> = ALL.iter().map(|c| c.as_str().split("::").nth(1).unwrap()).collect();
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let mut unknown = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (at, _) in text.match_indices("clawc::") {
            let word: String =
                text[at..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == ':').collect();
            let mut parts = word.split("::").skip(1);
            let (Some(pass), Some(name)) = (parts.next(), parts.next()) else { continue };
            if passes.contains(pass) && !name.is_empty() && !codes.contains(word.as_str()) {
                unknown.push(format!("{}: {word}", doc.display()));
            }
        }
    }
    assert!(unknown.is_empty(), "not in the catalogue:\n{}", unknown.join("\n"));
}

#[test]
fn explain_code_prints_the_catalogue_row() {
    let o = super::harness::clawc().args(["explain-code", "clawc::image::not_found"]).output().unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(out.contains("as an error or a warning") && out.contains("exit code of an error: 3"), "{out}");
    let o = super::harness::clawc().args(["explain-code", "clawc::pod::not_a_pd"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `clawc::pod::not_a_pod`?"));
}
