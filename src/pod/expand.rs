//! Pod defaults: `surfaces|feeds|tools|skills-defaults` with the `...` spread, as
//! Clawdapus expands them. Absent key → inherit; declared → replace (`[]` = none); one
//! `...` → the defaults are spliced at its position; two spreads, or a spread with no
//! (or empty) defaults, are errors. No deduplication happens here.

use super::diags;
use crate::diag::Diagnostic;
use crate::sourcemap::Loc;

/// A list entry as written: a value, or the spread token `...`.
pub(super) enum Item<T> {
    Value(T),
    Spread(Loc),
}

/// A service's list, expanded against the pod defaults. `inherit` marks an entry that came
/// from the defaults (with the spread's location when it was spliced).
pub(super) fn expand_list<T: Clone>(
    key: &str,
    service: &str,
    own: Option<Vec<Item<T>>>,
    defaults: Option<&[T]>,
    inherit: impl Fn(T, Option<Loc>) -> T,
) -> Result<Vec<T>, Diagnostic> {
    let Some(own) = own else {
        return Ok(defaults.unwrap_or_default().iter().cloned().map(|d| inherit(d, None)).collect());
    };
    let spreads: Vec<Loc> = own.iter().filter_map(|i| if let Item::Spread(l) = i { Some(*l) } else { None }).collect();
    if let Some(second) = spreads.get(1) {
        return Err(Diagnostic::error(
            diags::DOUBLE_SPREAD,
            format!("service \"{service}\": {key}: spread token \"...\" may appear at most once"),
        )
        .at(*second)
        .label("second spread")
        .help("keep one `...` where the pod defaults should be spliced in"));
    }
    if let Some(spread) = spreads.first()
        && defaults.is_none_or(<[T]>::is_empty)
    {
        return Err(Diagnostic::error(
            diags::SPREAD_WITHOUT_DEFAULTS,
            format!("service \"{service}\": {key}: spread token \"...\" used but no pod-level {key}-defaults declared"),
        )
        .at(*spread)
        .help(format!("declare `{key}-defaults:` under the pod's top-level `x-claw`, or remove the `...`")));
    }
    let mut out = Vec::with_capacity(own.len() + defaults.map_or(0, <[T]>::len));
    for item in own {
        match item {
            Item::Value(v) => out.push(v),
            Item::Spread(loc) => out.extend(defaults.unwrap_or_default().iter().cloned().map(|d| inherit(d, Some(loc)))),
        }
    }
    Ok(out)
}

/// Object defaults (`tool-policy`, `memory`): applied only when the service key is absent;
/// a declaration replaces the default whole, and an explicit `null` suppresses it.
pub(super) fn expand_object<T: Clone>(own: Option<Option<T>>, default: Option<&T>) -> Option<T> {
    match own {
        None => default.cloned(),
        Some(declared) => declared,
    }
}
