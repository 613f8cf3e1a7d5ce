//! The naming rules skills are held to: a skill folder's name (the Agent Skills rules the
//! Skill Tools specification adopts), a Skill Tools tool name (`^[a-z][a-z0-9_]*$`), and
//! a `tool-manifest.yaml` tool name (the function-name rule of the OpenAI and Anthropic
//! APIs the manifest's tools are offered through: `^[A-Za-z0-9_-]{1,64}$`).

/// Longest skill folder name.
pub(crate) const MAX_SKILL_NAME: usize = 64;
/// Longest `tool-manifest.yaml` tool name.
pub(crate) const MAX_MANIFEST_TOOL_NAME: usize = 64;

/// Why `name` is not a valid skill folder name (lowercase letters, digits and hyphens, at
/// most 64 characters, no `--`, not starting or ending with `-`), or `None` if it is.
pub(crate) fn skill_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".to_string());
    }
    if name.len() > MAX_SKILL_NAME {
        return Some(format!("it is {} characters long; the limit is {MAX_SKILL_NAME}", name.chars().count()));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return Some(format!("it holds {:?}; only lowercase letters, digits and hyphens are allowed", c));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("it starts or ends with a hyphen".to_string());
    }
    if name.contains("--") {
        return Some("it holds two hyphens in a row".to_string());
    }
    None
}

/// Whether `name` matches `^[a-z][a-z0-9_]*$` (a Skill Tools tool name).
pub(crate) fn is_skill_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase()) && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Whether `name` matches `^[A-Za-z0-9_-]{1,64}$` (a manifest tool name).
pub(crate) fn is_manifest_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_MANIFEST_TOOL_NAME && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_folder_names() {
        for ok in ["count-words", "a", "a1-b2", &"x".repeat(64)] {
            assert_eq!(skill_name_problem(ok), None, "{ok}");
        }
        for bad in ["", "Count-Words", "count_words", "-a", "a-", "a--b", &"x".repeat(65), "café", "a b", "a.b"] {
            assert!(skill_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn tool_names() {
        assert!(is_skill_tool_name("count_words") && is_skill_tool_name("a1"));
        for bad in ["", "Count", "1a", "_a", "a-b", "a.b", "a b"] {
            assert!(!is_skill_tool_name(bad), "{bad}");
        }
        assert!(is_manifest_tool_name("Get-Weather_2"));
        assert!(!is_manifest_tool_name("a.b") && !is_manifest_tool_name("") && !is_manifest_tool_name(&"a".repeat(65)));
    }
}
