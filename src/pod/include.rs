//! `persona` and `include`: what an agent's contract is composed with. `include` entries
//! need an id (unique, trimmed) and a file, and a mode of `enforce`, `guide` or
//! `reference` (lower-cased), with Clawdapus' messages; every field has its `${VAR}`
//! placeholders resolved. clawc does not read the files: it reports them in CLAWDAPUS.md.
//!
//! This is a child module of `parse` (it extends its `Cx`); it lives in its own file.

use super::{Cx, diags};
use crate::pod::{Include, Spanned};
use crate::yaml::Node;

const MODES: &[&str] = &["enforce", "guide", "reference"];

impl Cx<'_> {
    /// `persona`, placeholders resolved; blank counts as unset.
    pub(super) fn persona(&mut self, node: Option<&Node>) -> Option<Spanned<String>> {
        node.filter(|n| !n.is_null()).and_then(|n| self.interp(n, "persona")).filter(|p| !p.value.trim().is_empty())
    }

    /// `include`, in declaration order.
    pub(super) fn includes(&mut self, service: &str, node: Option<&Node>) -> Vec<Include> {
        let Some(list) = node.filter(|n| !n.is_null()).and_then(|n| self.list(n, "include")) else { return Vec::new() };
        let mut out: Vec<Include> = Vec::new();
        for (i, item) in list.iter().enumerate() {
            if self.map(item, &format!("include entry {i}")).is_none() {
                continue;
            }
            let field = |cx: &mut Self, key: &str| {
                item.get(key)
                    .filter(|n| !n.is_null())
                    .map(|n| cx.interp(n, &format!("include {i}: {key}")).map(|s| s.value.trim().to_string()))
            };
            let (id, file, mode, description) = (field(self, "id"), field(self, "file"), field(self, "mode"), field(self, "description"));
            let [Some(id), Some(file), Some(mode), Some(description)] =
                [id, file, mode, description].map(|f| f.unwrap_or(Some(String::new())))
            else {
                continue;
            };
            let err = |cx: &mut Self, code, msg: String, help: &str| {
                cx.error(code, format!("service \"{service}\": parse include: {msg}"), item.loc, help);
            };
            if id.is_empty() {
                err(self, diags::REQUIRED, format!("entry {i}: include id must not be empty"), "give the entry an `id:`");
                continue;
            }
            if out.iter().any(|e| e.id == id) {
                err(self, diags::INVALID_VALUE, format!("entry {i}: duplicate include id \"{id}\""), "give each include its own id");
                continue;
            }
            if file.is_empty() {
                err(
                    self,
                    diags::REQUIRED,
                    format!("entry {i} ({id}): include file must not be empty"),
                    "set `file:` to a path in the pod directory",
                );
                continue;
            }
            let lower = mode.to_lowercase();
            if !MODES.contains(&lower.as_str()) {
                err(
                    self,
                    diags::INVALID_VALUE,
                    format!("entry {i} ({id}): unsupported include mode \"{mode}\""),
                    "set `mode:` to enforce, guide or reference",
                );
                continue;
            }
            out.push(Include { id, file, mode: lower, description, loc: item.loc });
        }
        out
    }
}
