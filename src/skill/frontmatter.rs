//! `SKILL.md`'s YAML frontmatter (Agent Skills): the block between a first line `---` and
//! the next line `---` (or `...`). It is parsed with the project's bounded YAML reader
//! ([`crate::yaml`]), on the file's own offsets, so a diagnostic points at `SKILL.md`'s
//! line and column.

use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, SourceFile};
use crate::yaml::{self, Node};

/// The frontmatter of `src` as a YAML node, `Ok(None)` when the file has none (it does not
/// start with a `---` line), or why it cannot be read (not closed, not YAML).
pub(crate) fn parse(file: FileId, src: &SourceFile) -> Result<Option<Node>, Vec<Diagnostic>> {
    let text: &str = &src.text;
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_line = body.split('\n').next().unwrap_or("");
    if first_line.trim_end() != "---" {
        return Ok(None);
    }
    // The offset of the line that closes the block.
    let mut offset = text.len() - body.len() + first_line.len() + 1;
    let mut close = None;
    while offset <= text.len() {
        let line = text[offset..].split('\n').next().unwrap_or("");
        if matches!(line.trim_end(), "---" | "...") {
            close = Some(offset);
            break;
        }
        if offset + line.len() >= text.len() {
            break;
        }
        offset += line.len() + 1;
    }
    let Some(close) = close else {
        let d =
            Diagnostic::error(super::codes::INVALID_PACKAGE, format!("`{}`: the YAML frontmatter is not closed by a `---` line", src.name))
                .in_file(file)
                .help("end the frontmatter with a line `---` before the markdown body");
        return Err(vec![d]);
    };
    let front = SourceFile::new(src.name.clone(), &text[..close]);
    yaml::parse(file, &front).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(text: &str) -> Result<Option<String>, Vec<Diagnostic>> {
        let src = SourceFile::new("SKILL.md", text);
        Ok(parse(FileId(0), &src)?.and_then(|n| n.get("name").and_then(|v| v.as_str().map(str::to_string))))
    }

    #[test]
    fn the_name_is_read_from_the_frontmatter() {
        assert_eq!(name_of("---\nname: count-words\ndescription: x\n---\n# Body\n---\n").unwrap().as_deref(), Some("count-words"));
        assert_eq!(name_of("---\r\nname: a\r\n---\r\n").unwrap().as_deref(), Some("a"));
        assert_eq!(name_of("# No frontmatter\n").unwrap(), None);
        assert_eq!(name_of("---\nname: a\n...\nbody").unwrap().as_deref(), Some("a"));
        assert!(name_of("---\nname: a\n").is_err(), "not closed");
        assert!(name_of("---\nname: [a\n---\n").is_err(), "not YAML");
        assert_eq!(name_of("---\n---\n").unwrap(), None);
    }

    #[test]
    fn positions_are_the_files_own() {
        let src = SourceFile::new("SKILL.md", "---\ndescription: d\nname: x\n---\n");
        let node = parse(FileId(0), &src).unwrap().unwrap();
        let span = node.get("name").unwrap().loc.span;
        assert_eq!((span.line, span.col), (3, 7));
    }
}
