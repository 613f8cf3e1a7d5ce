//! The layers of `docs/ARCHITECTURE.md` hold: no module of `src/` uses a module of a
//! higher layer, and every top-level module is in the table.

use super::harness::rust_files;
use std::collections::BTreeMap;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Module → layer, from the table between the `layers:begin`/`end` markers.
fn layers() -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let table = doc.split("<!-- layers:begin -->").nth(1).and_then(|t| t.split("<!-- layers:end -->").next()).expect("layer table");
    let mut out = BTreeMap::new();
    for (rank, row) in table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| layer")).enumerate() {
        let modules = row.split('|').nth(2).unwrap();
        for m in modules.split(',') {
            let m = m.trim().trim_matches('`');
            assert!(out.insert(m.to_string(), rank).is_none(), "{m} is listed twice");
        }
    }
    out
}

/// Every `crate::<module>` a file names outside comments and `#[cfg(test)]` code.
fn uses(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" //").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
            continue;
        }
        let rest = &code[i + 7..];
        match rest.strip_prefix('{') {
            // `crate::{a, b::c}`: the first name of each top-level item.
            Some(group) => out.extend(top_level_items(group)),
            None => out.push(ident(rest)),
        }
    }
    out
}

fn ident(s: &str) -> String {
    s.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// The items of a `{…}` group up to its closing brace (nested groups skipped).
fn top_level_items(group: &str) -> Vec<String> {
    let mut out = vec![ident(group)];
    let mut depth = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => out.push(ident(&group[i + 1..])),
            _ => {}
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// The top-level module a file of `src/` belongs to (`None`: the binary, `lib.rs`).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    let name = first.trim_end_matches(".rs").to_string();
    (!matches!(name.as_str(), "main" | "lib" | "cli")).then_some(name)
}

#[test]
fn no_module_uses_one_above_it() {
    let layers = layers();
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let Some(module) = module_of(rel) else { continue };
        let Some(&rank) = layers.get(&module) else {
            problems.push(format!("src/{}: module `{module}` is not in the layer table of docs/ARCHITECTURE.md", rel.display()));
            continue;
        };
        for used in uses(&std::fs::read_to_string(&file).unwrap()) {
            match layers.get(&used) {
                Some(&r) if r > rank => {
                    problems.push(format!("src/{} (layer {rank}, `{module}`) uses `{used}` (layer {r})", rel.display()));
                }
                None if used != module => {
                    problems.push(format!("src/{}: uses `crate::{used}`, which the layer table lacks", rel.display()));
                }
                _ => {}
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "layering violations:\n{}", problems.join("\n"));
}

#[test]
fn the_edge_reader_sees_what_it_must() {
    let text = "use crate::grant::Plan;\nfn f() { crate::pod::for_agent(a, b); }\n// crate::output in a comment\nlet x = clawc::crate::no;\nuse crate::{\n    yaml, image::{a, b},\n    lock,\n};\n#[cfg(test)]\nuse crate::cli;\n";
    assert_eq!(uses(text), ["grant", "pod", "yaml", "image", "lock"]);
    assert!(layers().get("describe") < layers().get("grant"));
}
