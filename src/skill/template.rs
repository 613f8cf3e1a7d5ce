//! The templates of a `tool-manifest.yaml` executor (`args_template`, `url`,
//! `headers_template` values, `body_template`), checked with `minijinja` as a runtime would
//! compile them: the syntax, and every variable a template reads is an input property of
//! the tool (a top-level key of its `input_schema.properties`) or a built-in:
//!
//! - `args`: the whole argument object (`{{ args | tojson }}`);
//! - `env`: the runtime's environment variables (`{{ env.API_TOKEN }}`), so that a secret
//!   is named in the manifest, never written in it.
//!
//! `minijinja`'s own global functions (`range`, `dict`, `namespace`, …) may be used too.
//! A template stands alone: `include`, `extends`, `import` and `from` are refused (there
//! is no other template to load). Nothing is rendered.

use std::collections::BTreeSet;

/// The variables every template may read besides the tool's input properties.
pub(crate) const BUILTINS: &[&str] = &["args", "env"];

/// Why a template is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// It does not compile: minijinja's message, and the 1-based line in the template.
    Syntax { message: String, line: usize },
    /// It reads variables that are neither input properties nor built-ins (sorted).
    Unknown(Vec<String>),
    /// It loads another template (`include`, `extends`, `import`, `from`).
    Loads(&'static str),
}

/// Checks `source` against the tool's input property names.
pub(crate) fn check(source: &str, inputs: &BTreeSet<String>) -> Result<(), Problem> {
    let env = minijinja::Environment::new();
    let tmpl = env
        .template_from_str(source)
        .map_err(|e| Problem::Syntax { message: e.detail().unwrap_or("invalid template").to_string(), line: e.line().unwrap_or(1) })?;
    if let Some(tag) = loads(source) {
        return Err(Problem::Loads(tag));
    }
    let globals: BTreeSet<&str> = env.globals().map(|(k, _)| k).collect();
    let unknown: BTreeSet<String> = tmpl
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !inputs.contains(v) && !BUILTINS.contains(&v.as_str()) && !globals.contains(v.as_str()))
        .collect();
    if unknown.is_empty() { Ok(()) } else { Err(Problem::Unknown(unknown.into_iter().collect())) }
}

/// The first tag of `source` that loads another template.
fn loads(source: &str) -> Option<&'static str> {
    for block in source.split("{%").skip(1) {
        let word: String = block.trim_start_matches(['-', '+']).trim_start().chars().take_while(char::is_ascii_alphabetic).collect();
        for tag in ["include", "extends", "import", "from"] {
            if word == tag {
                return Some(tag);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn variables_are_inputs_or_builtins() {
        let ins = inputs(&["city", "units"]);
        assert_eq!(check("--city {{ city }} --units {{ units | default('metric') }}", &ins), Ok(()));
        assert_eq!(check("Bearer {{ env.TOKEN }} {{ args | tojson }}", &ins), Ok(()));
        assert_eq!(check("{% for i in range(3) %}{{ i }}{% endfor %}{% set x = city %}{{ x }}", &ins), Ok(()));
        assert_eq!(check("{{ cty }} {{ zip.code }}", &ins), Err(Problem::Unknown(vec!["cty".into(), "zip".into()])));
        assert!(matches!(check("{{ city ", &ins), Err(Problem::Syntax { .. })));
        assert!(matches!(check("line one\n{% if %}", &ins), Err(Problem::Syntax { line: 2, .. })));
        assert_eq!(check("{% include 'x' %}", &ins), Err(Problem::Loads("include")));
        assert_eq!(check("{%- from 'x' import y %}", &ins), Err(Problem::Loads("from")));
    }

    #[test]
    fn hostile_templates_are_refused_not_crashed_on() {
        let deep = format!("{{{{ {}1{} }}}}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(check(&deep, &BTreeSet::new()).is_err());
    }
}
