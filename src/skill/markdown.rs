//! A markdown skill as SPEC-0023 ("Skills-based tool orchestration") describes one: which
//! of the spec's sections it has, its tier requirement, its Tool Discovery candidates and
//! its scope rules. Pure (text in, [`Markdown`] out): the pod compile decides what is an
//! error and resolves the candidates against an agent's tools ([`super::resolve`]).
//!
//! How a skill is read (`docs/skills.md` states the same rules for users):
//!
//! - The text is CommonMark. YAML frontmatter between `---` lines at the very top is
//!   metadata, not content.
//! - **Title** is the first level-1 heading (`# …`, or a line underlined with `===`),
//!   inline markup flattened to its text. It is the Title section.
//! - Any other heading, at any level, starts a section when its text names one. The
//!   comparison ignores case, surrounding space, a leading ordinal (`1.`, `2)`), a trailing
//!   `:`, a trailing parenthetical (`Tool Discovery (in order of preference)`), and treats
//!   runs of spaces and hyphens alike. Names: `Purpose`, `Tool Discovery`, `Execution`,
//!   `Validation`, `Tier Requirement(s)`, `Scope Rules`, `Dry-Run Behavior` (also
//!   `Behaviour`, or just `Dry-Run`).
//! - A section runs until the next heading of the same or a higher level (fewer `#`), or
//!   the next heading naming a section. When a section is named twice, the first counts
//!   and the repeat's content is ignored.
//! - **Tier Requirement**: the first `tier` word followed by a number (`Tier 2 minimum`,
//!   `tier: 2`, `Requires Tier 2+`, any case) gives the minimum tier, 1 to 3. Anything
//!   else (no number, `Tier 4`) is unreadable.
//! - **Tool Discovery**: each top-level list item (bulleted or numbered, every list in the
//!   section) is one candidate, in order; nested items are instructions, not candidates.
//!   The item's first inline code span names the tool; an item without one names none.
//! - A span starting `mcp__`, or of the form `service.tool`, is an MCP tool, named by the
//!   whole span. A span whose first word is `curl` or `wget`, a span that is an `http://`
//!   or `https://` URL, or an item whose other text has the word `HTTP`, is the HTTP path.
//!   Anything else is a CLI. CLI and HTTP tools are named by the span's first word (`gh pr
//!   create` is `gh`); a trailing `*` makes the name a prefix (`mcp__gitea__*`, `docker*`).
//! - **Scope Rules**: the text of every list item of the section, nested ones included, in
//!   document order (inline code kept as its text); with no list, its paragraphs.
//! - At most 1,000 candidates and 1,000 scope rules are read, and any name, title or rule
//!   is cut to 1,000 characters.

use super::resolve::{Candidate, ToolKind};
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::BTreeMap;
use std::ops::Range;

/// Most Tool Discovery candidates, and most scope rules, read from one skill.
pub(crate) const MAX_ENTRIES: usize = 1_000;
/// Most characters kept of a title, a tool name or a scope rule.
pub(crate) const MAX_CHARS: usize = 1_000;
/// Most characters of an unreadable Tier Requirement quoted back in a message.
const MAX_TIER_QUOTE: usize = 200;

/// The sections SPEC-0023 names, in the order the spec lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub(crate) enum Section {
    Title,
    Purpose,
    ToolDiscovery,
    Execution,
    Validation,
    TierRequirement,
    ScopeRules,
    DryRun,
}

impl Section {
    /// The sections REQ-1 says every skill MUST have.
    pub(crate) const REQUIRED: [Section; 5] =
        [Section::Title, Section::Purpose, Section::ToolDiscovery, Section::Execution, Section::Validation];
    #[cfg(test)]
    pub(crate) const ALL: [Section; 8] = [
        Section::Title,
        Section::Purpose,
        Section::ToolDiscovery,
        Section::Execution,
        Section::Validation,
        Section::TierRequirement,
        Section::ScopeRules,
        Section::DryRun,
    ];

    /// How the spec and messages write it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Section::Title => "Title",
            Section::Purpose => "Purpose",
            Section::ToolDiscovery => "Tool Discovery",
            Section::Execution => "Execution",
            Section::Validation => "Validation",
            Section::TierRequirement => "Tier Requirement",
            Section::ScopeRules => "Scope Rules",
            Section::DryRun => "Dry-Run Behavior",
        }
    }

    /// The section a heading's text names, if any (Title is positional, never named).
    fn named(heading: &str) -> Option<Section> {
        Some(match normalise(heading).as_str() {
            "purpose" => Section::Purpose,
            "tool discovery" => Section::ToolDiscovery,
            "execution" => Section::Execution,
            "validation" => Section::Validation,
            "tier requirement" | "tier requirements" => Section::TierRequirement,
            "scope rules" => Section::ScopeRules,
            "dry run behavior" | "dry run behaviour" | "dry run" => Section::DryRun,
            _ => return None,
        })
    }
}

/// A skill's Tier Requirement.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Tier {
    /// The minimum tier, 1 to 3.
    Min(u8),
    /// No tier could be read: the section's text, trimmed, at most 200 characters.
    Unreadable(String),
}

/// What a markdown skill says, as far as the compile checks it.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Markdown {
    /// The text of the first level-1 heading (as written, inline markup flattened to text).
    pub title: Option<String>,
    /// Sections present, sorted by `Section` order, each once, with the 1-based line of its heading.
    pub found: Vec<(Section, u32)>,
    /// `None`: no Tier Requirement section.
    pub tier: Option<Tier>,
    /// The Tool Discovery candidates in list order.
    pub discovery: Vec<Candidate>,
    /// Scope Rules: each list item's text (nested items too, in document order), or the
    /// section's paragraphs when it has no list; trimmed, empty ones dropped.
    pub scope_rules: Vec<String>,
}

/// Reads a skill. Never fails: what is missing or unreadable shows in the result.
pub(crate) fn parse(text: &str) -> Markdown {
    let lines = Lines::new(text);
    let mut split = split(text, &lines);
    split.found.sort_unstable();
    let has = |s: Section| split.found.iter().any(|(f, _)| *f == s);
    let content = |s: Section| split.content.get(&s).map_or(&[][..], Vec::as_slice);
    Markdown {
        tier: has(Section::TierRequirement).then(|| tier(content(Section::TierRequirement))),
        discovery: discovery(content(Section::ToolDiscovery), &lines),
        scope_rules: scope_rules(content(Section::ScopeRules)),
        title: split.title,
        found: split.found,
    }
}

impl Markdown {
    /// Whether it looks like a SPEC-0023 skill: it has a Tool Discovery section.
    pub(crate) fn is_spec(&self) -> bool {
        self.has(Section::ToolDiscovery)
    }

    /// The required sections it lacks, in `Section` order.
    pub(crate) fn missing(&self) -> Vec<Section> {
        Section::REQUIRED.into_iter().filter(|s| !self.has(*s)).collect()
    }

    /// The capability the ERROR line names: the title without a leading `Skill:`, trimmed;
    /// `fallback` (the skill's name) when there is no title or nothing is left of it.
    pub(crate) fn capability(&self, fallback: &str) -> String {
        let title = self.title.as_deref().unwrap_or_default().trim();
        let title = match title.get(..6) {
            Some(prefix) if prefix.eq_ignore_ascii_case("skill:") => title[6..].trim(),
            _ => title,
        };
        if title.is_empty() { fallback.to_string() } else { title.to_string() }
    }

    fn has(&self, section: Section) -> bool {
        self.found.iter().any(|(s, _)| *s == section)
    }
}

/// Parser events with their byte ranges in the text.
type Events<'a> = Vec<(Event<'a>, Range<usize>)>;

/// The CommonMark reading: frontmatter is a metadata block, not a paragraph and a
/// setext heading.
fn options() -> Options {
    Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
}

/// 1-based line numbers from byte offsets.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Self {
        Lines(memchr::memchr_iter(b'\n', text.as_bytes()).collect())
    }

    fn at(&self, offset: usize) -> u32 {
        u32::try_from(self.0.partition_point(|&nl| nl < offset) + 1).unwrap_or(u32::MAX)
    }
}

/// The document cut at its headings: the title, the sections found, and each section's
/// content (the events under its heading, subheadings included).
#[derive(Default)]
struct Split<'a> {
    title: Option<String>,
    found: Vec<(Section, u32)>,
    content: BTreeMap<Section, Events<'a>>,
}

/// The section being read and the level of its heading.
type Open = Option<(Section, HeadingLevel)>;

fn split<'a>(text: &'a str, lines: &Lines) -> Split<'a> {
    let mut split = Split::default();
    let mut open: Open = None;
    // A heading's events are held until its text says whether it starts a section.
    let mut heading: Option<(HeadingLevel, usize, Events<'a>)> = None;
    let mut in_metadata = false;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match &event {
            Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
            Event::End(TagEnd::MetadataBlock(_)) => in_metadata = false,
            _ if in_metadata => {}
            Event::Start(Tag::Heading { level, .. }) => heading = Some((*level, range.start, vec![(event, range)])),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, mut events)) = heading.take() {
                    events.push((event, range));
                    open = split.heading(level, lines.at(start), events, open);
                }
            }
            _ => match (&mut heading, open) {
                (Some((_, _, events)), _) => events.push((event, range)),
                (None, Some((section, _))) => split.content.entry(section).or_default().push((event, range)),
                (None, None) => {}
            },
        }
    }
    split
}

impl<'a> Split<'a> {
    /// Takes in one heading and returns the section read after it.
    fn heading(&mut self, level: HeadingLevel, line: u32, events: Events<'a>, open: Open) -> Open {
        let text = flatten(&events);
        if level == HeadingLevel::H1 && self.title.is_none() {
            self.title = Some(bounded(text.trim()));
            self.found.push((Section::Title, line));
            return None;
        }
        if let Some(section) = Section::named(&text) {
            if self.found.iter().any(|(s, _)| *s == section) {
                return None;
            }
            self.found.push((section, line));
            return Some((section, level));
        }
        // Any other heading is part of the open section when it is below its heading.
        let (section, at) = open?;
        if level <= at {
            return None;
        }
        self.content.entry(section).or_default().extend(events);
        open
    }
}

/// A heading's text as compared with section names: lower case, no ordinal, trailing `:`
/// or parenthetical, and single spaces for runs of spaces and hyphens.
fn normalise(heading: &str) -> String {
    let text = strip_ordinal(heading.trim());
    let text = text.strip_suffix(':').unwrap_or(text).trim_end();
    let text = strip_parenthetical(text);
    let text = text.strip_suffix(':').unwrap_or(text);
    let words: Vec<String> = text.split(|c: char| c.is_whitespace() || c == '-').filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    words.join(" ")
}

/// `1. Purpose` and `2) Purpose` → `Purpose`.
fn strip_ordinal(text: &str) -> &str {
    let rest = text.trim_start_matches(|c: char| c.is_ascii_digit());
    if rest.len() == text.len() {
        return text;
    }
    match rest.strip_prefix(['.', ')']) {
        Some(after) if after.is_empty() || after.starts_with(char::is_whitespace) => after.trim_start(),
        _ => text,
    }
}

/// `Tool Discovery (in order of preference)` → `Tool Discovery`.
fn strip_parenthetical(text: &str) -> &str {
    match (text.ends_with(')'), text.rfind('(')) {
        (true, Some(at)) => text[..at].trim_end(),
        _ => text,
    }
}

/// The text of some events: inline text and code as written, breaks as spaces, a
/// newline after each block.
fn flatten(events: &[(Event<'_>, Range<usize>)]) -> String {
    let mut out = String::new();
    for (event, _) in events {
        push_inline(&mut out, event);
        if matches!(event, Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::CodeBlock)) {
            out.push('\n');
        }
    }
    out
}

/// Adds an inline event's text (code spans as their text, breaks as a space).
fn push_inline(out: &mut String, event: &Event<'_>) {
    match event {
        Event::Text(text) | Event::Code(text) => out.push_str(text),
        Event::SoftBreak | Event::HardBreak => out.push(' '),
        _ => {}
    }
}

/// At most [`MAX_CHARS`] characters of `text`, cut at a character boundary.
fn bounded(text: &str) -> String {
    cut(text, MAX_CHARS)
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => text[..at].to_string(),
        None => text.to_string(),
    }
}

fn tier(events: &[(Event<'_>, Range<usize>)]) -> Tier {
    let text = flatten(events);
    match tier_number(&text) {
        Some(n @ 1..=3) => Tier::Min(n),
        _ => Tier::Unreadable(cut(text.trim(), MAX_TIER_QUOTE)),
    }
}

/// The number after the first whole word `tier` that has one (any case); numbers too
/// large for a `u8` read as `u8::MAX`, which no tier is.
fn tier_number(text: &str) -> Option<u8> {
    // ASCII lowering: `tier` in any case, every other character left as it is.
    let lower = text.to_ascii_lowercase();
    lower.match_indices("tier").find_map(|(at, word)| {
        let starts_word = !lower[..at].chars().next_back().is_some_and(is_word_char);
        let rest = lower[at + word.len()..].trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '=' | '-' | '#'));
        let digits = &rest[..rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len()];
        (starts_word && !digits.is_empty()).then(|| digits.parse().unwrap_or(u8::MAX))
    })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A top-level Tool Discovery item being read.
struct Item {
    line: u32,
    /// Its first code span.
    code: Option<String>,
    /// Its other text (later code spans included).
    text: String,
}

impl Item {
    fn take(&mut self, event: &Event<'_>) {
        match (event, &self.code) {
            (Event::Code(code), None) => self.code = Some(code.to_string()),
            _ => push_inline(&mut self.text, event),
        }
    }

    fn candidate(self) -> Option<Candidate> {
        let code = self.code?;
        let (name, kind) = classify(code.trim(), &self.text)?;
        Some(Candidate { name: bounded(name), kind, line: self.line })
    }
}

/// The candidates of a Tool Discovery section: its top-level list items that have a code span.
fn discovery(events: &[(Event<'_>, Range<usize>)], lines: &Lines) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut item: Option<Item> = None;
    for (event, range) in events {
        match event {
            Event::Start(Tag::List(_)) => depth += 1,
            Event::End(TagEnd::List(_)) => depth = depth.saturating_sub(1),
            Event::Start(Tag::Item) if depth == 1 => {
                item = Some(Item { line: lines.at(range.start), code: None, text: String::new() });
            }
            Event::End(TagEnd::Item) if depth == 1 => {
                out.extend(item.take().and_then(Item::candidate));
                if out.len() == MAX_ENTRIES {
                    break;
                }
            }
            _ if depth == 1 => item.iter_mut().for_each(|i| i.take(event)),
            _ => {}
        }
    }
    out
}

/// A code span's tool name and kind, given the rest of its item's text; `None` for a
/// blank span.
fn classify<'s>(span: &'s str, rest: &str) -> Option<(&'s str, ToolKind)> {
    let first = span.split_whitespace().next()?;
    if span.starts_with("mcp__") || is_dotted(span) {
        return Some((span, ToolKind::Mcp));
    }
    let url = first.starts_with("http://") || first.starts_with("https://");
    let said = rest.split(|c: char| !is_word_char(c)).any(|w| w.eq_ignore_ascii_case("http"));
    let http = url || matches!(first, "curl" | "wget") || said;
    Some((first, if http { ToolKind::Http } else { ToolKind::Cli }))
}

/// `service.tool` (or the prefix `service.*`): one dot between two names of
/// `[A-Za-z0-9_-]`.
fn is_dotted(span: &str) -> bool {
    let is_name = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    let Some((service, tool)) = span.split_once('.') else {
        return false;
    };
    let stem = tool.strip_suffix('*').unwrap_or(tool);
    is_name(service) && (is_name(stem) || (stem.is_empty() && tool == "*"))
}

/// The Scope Rules: list items' texts, or paragraphs when the section has no list.
fn scope_rules(events: &[(Event<'_>, Range<usize>)]) -> Vec<String> {
    let has_list = events.iter().any(|(e, _)| matches!(e, Event::Start(Tag::List(_))));
    let rules = if has_list { list_items(events) } else { paragraphs(events) };
    rules.iter().map(|r| r.trim()).filter(|r| !r.is_empty()).take(MAX_ENTRIES).map(|r| bounded(r).trim_end().to_string()).collect()
}

/// Every list item's own text (not its nested items'), in the order the items start.
fn list_items(events: &[(Event<'_>, Range<usize>)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Indices in `out` of the items open around the current event, innermost last.
    let mut open: Vec<usize> = Vec::new();
    for (event, _) in events {
        match event {
            Event::Start(Tag::Item) => {
                open.push(out.len());
                out.push(String::new());
            }
            Event::End(TagEnd::Item) => {
                open.pop();
            }
            _ => {
                if let Some(&i) = open.last() {
                    push_inline(&mut out[i], event);
                    if matches!(event, Event::End(TagEnd::Paragraph)) {
                        out[i].push(' ');
                    }
                }
            }
        }
    }
    out
}

fn paragraphs(events: &[(Event<'_>, Range<usize>)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut paragraph: Option<String> = None;
    for (event, _) in events {
        match event {
            Event::Start(Tag::Paragraph) => paragraph = Some(String::new()),
            Event::End(TagEnd::Paragraph) => out.extend(paragraph.take()),
            _ => paragraph.iter_mut().for_each(|p| push_inline(p, event)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIT_PR: &str = "\
# Skill: Create Pull Request

## Purpose

Open a pull request on the repository's forge with a change the agent made.

## Tool Discovery (in order of preference)

1. `mcp__gitea__create_pull_request` (Gitea MCP)
   - Check: the tool appears in the session's tool listing.
2. `mcp__github__*` (GitHub MCP)
3. `gh pr create` (GitHub CLI)
   - Check: `which gh` succeeds.
   - Check: `gh auth status` is clean.
4. `tea pulls create` (Gitea CLI)
5. `curl` against the forge's REST API (HTTP)
   - Check: `command -v curl`.

## Execution

### Using MCP

Call the tool with the branch, title and body.

### Using gh

Run `gh pr create --fill`.

## Validation

The PR URL is printed and the PR is open.

## Tier Requirement

Tier 2 minimum.

## Scope Rules

Never open a PR that modifies:

- Inventory files: `ie.yaml`, `vms.yaml`
- Network configuration
  - Caddy config
  - WireGuard config
  - DNS records
- Secrets and credentials
- The Claude Ops runbook and prompt files

## Dry-Run Behavior

When `CLAUDEOPS_DRY_RUN` is `true`, log the tool, command and parameters only.
";

    fn candidate(name: &str, kind: ToolKind, line: u32) -> Candidate {
        Candidate { name: name.to_string(), kind, line }
    }

    #[test]
    fn reads_a_whole_spec_skill() {
        let md = parse(GIT_PR);
        assert_eq!(md.title.as_deref(), Some("Skill: Create Pull Request"));
        assert_eq!(
            md.found,
            vec![
                (Section::Title, 1),
                (Section::Purpose, 3),
                (Section::ToolDiscovery, 7),
                (Section::Execution, 19),
                (Section::Validation, 29),
                (Section::TierRequirement, 33),
                (Section::ScopeRules, 37),
                (Section::DryRun, 49),
            ]
        );
        assert_eq!(md.tier, Some(Tier::Min(2)));
        assert_eq!(
            md.discovery,
            vec![
                candidate("mcp__gitea__create_pull_request", ToolKind::Mcp, 9),
                candidate("mcp__github__*", ToolKind::Mcp, 11),
                candidate("gh", ToolKind::Cli, 12),
                candidate("tea", ToolKind::Cli, 15),
                candidate("curl", ToolKind::Http, 16),
            ]
        );
        assert_eq!(
            md.scope_rules,
            vec![
                "Inventory files: ie.yaml, vms.yaml",
                "Network configuration",
                "Caddy config",
                "WireGuard config",
                "DNS records",
                "Secrets and credentials",
                "The Claude Ops runbook and prompt files",
            ]
        );
        assert!(md.is_spec());
        assert!(md.missing().is_empty());
        assert_eq!(md.capability("git-pr"), "Create Pull Request");
    }

    #[test]
    fn frontmatter_is_not_content() {
        let md = parse("---\nname: git-pr\ndescription: x\n---\n# Create PR\n\n## Purpose\n\nx\n");
        assert_eq!(md.title.as_deref(), Some("Create PR"));
        assert_eq!(md.found, vec![(Section::Title, 5), (Section::Purpose, 7)]);
    }

    #[test]
    fn title_is_the_first_level_one_heading_setext_too() {
        let md = parse("## Purpose\n\nx\n\nCreate `PR` *now*\n===\n\n# Second\n");
        assert_eq!(md.title.as_deref(), Some("Create PR now"));
        assert_eq!(md.found, vec![(Section::Title, 5), (Section::Purpose, 1)]);
        assert_eq!(parse("## Only\n").title, None);
    }

    #[test]
    fn heading_names_are_compared_loosely() {
        for heading in [
            "Tool Discovery",
            "tool   discovery:",
            "1. Tool Discovery",
            "2) TOOL-DISCOVERY",
            "Tool Discovery (in order of preference):",
            "Tool Discovery:  (MCP first)",
        ] {
            assert_eq!(Section::named(heading), Some(Section::ToolDiscovery), "{heading}");
        }
        for (heading, section) in [
            ("Dry-Run Behavior", Section::DryRun),
            ("Dry Run Behavior", Section::DryRun),
            ("Dry-Run Behaviour", Section::DryRun),
            ("Dry-Run", Section::DryRun),
            ("Tier Requirements", Section::TierRequirement),
            ("Scope rules", Section::ScopeRules),
            ("purpose", Section::Purpose),
            ("Execution", Section::Execution),
            ("Validation", Section::Validation),
        ] {
            assert_eq!(Section::named(heading), Some(section), "{heading}");
        }
        for heading in ["Title", "Tool Discoveries", "12Purpose", "Purpose of this", "(Purpose)", ""] {
            assert_eq!(Section::named(heading), None, "{heading}");
        }
    }

    #[test]
    fn a_section_ends_at_a_heading_of_its_level_or_higher() {
        let text = "# T\n## Tool Discovery\n- `a`\n### Notes\n- `b`\n## Other\n- `c`\n# Again\n- `d`\n";
        let names: Vec<String> = parse(text).discovery.into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["a", "b"]);
        // A deeper heading that names a section starts that section.
        let md = parse("# T\n## Execution\n### Validation\nok\n");
        assert_eq!(md.found, vec![(Section::Title, 1), (Section::Execution, 2), (Section::Validation, 3)]);
    }

    #[test]
    fn a_repeated_section_counts_once() {
        let md = parse("# T\n## Tool Discovery\n- `a`\n## Tool Discovery\n- `b`\n");
        assert_eq!(md.found, vec![(Section::Title, 1), (Section::ToolDiscovery, 2)]);
        assert_eq!(md.discovery, vec![candidate("a", ToolKind::Cli, 3)]);
    }

    #[test]
    fn reads_the_tier() {
        let tier_of = |body: &str| parse(&format!("# T\n## Tier Requirement\n{body}\n")).tier;
        assert_eq!(tier_of("Tier 2 minimum"), Some(Tier::Min(2)));
        assert_eq!(tier_of("Tier 3"), Some(Tier::Min(3)));
        assert_eq!(tier_of("tier: 1"), Some(Tier::Min(1)));
        assert_eq!(tier_of("Requires **Tier 2+**"), Some(Tier::Min(2)));
        assert_eq!(tier_of("The minimum tier is Tier 2"), Some(Tier::Min(2)));
        assert_eq!(tier_of("Tier 4"), Some(Tier::Unreadable("Tier 4".into())));
        assert_eq!(tier_of("Tier 0"), Some(Tier::Unreadable("Tier 0".into())));
        assert_eq!(tier_of("Tier 300"), Some(Tier::Unreadable("Tier 300".into())));
        assert_eq!(tier_of("frontier 2"), Some(Tier::Unreadable("frontier 2".into())));
        assert_eq!(tier_of("  admins only  "), Some(Tier::Unreadable("admins only".into())));
        assert_eq!(tier_of(""), Some(Tier::Unreadable(String::new())));
        let long = format!("x{}", "y".repeat(500));
        assert_eq!(tier_of(&long), Some(Tier::Unreadable(long[..200].to_string())));
        assert_eq!(parse("# T\n## Purpose\nTier 2\n").tier, None);
    }

    #[test]
    fn classifies_candidates() {
        let one = |item: &str| parse(&format!("## Tool Discovery\n- {item}\n")).discovery.into_iter().next();
        let is = |item: &str, name: &str, kind| assert_eq!(one(item), Some(candidate(name, kind, 2)), "{item}");
        is("`mcp__docker__list_containers`", "mcp__docker__list_containers", ToolKind::Mcp);
        is("`gitea.create_pr` via MCP", "gitea.create_pr", ToolKind::Mcp);
        is("`gitea.*`", "gitea.*", ToolKind::Mcp);
        is("`gh pr create --fill`", "gh", ToolKind::Cli);
        is("`docker*`", "docker*", ToolKind::Cli);
        is("`a.b.c`", "a.b.c", ToolKind::Cli);
        is("`ie yaml.x`", "ie", ToolKind::Cli);
        is("`curl -X POST $API`", "curl", ToolKind::Http);
        is("`wget -qO-`", "wget", ToolKind::Http);
        is("`https://api.github.com/repos`", "https://api.github.com/repos", ToolKind::Http);
        is("`http` raw http request", "http", ToolKind::Http);
        is("Raw HTTP with `xh`", "xh", ToolKind::Http);
        is("`xh` (HTTPS client)", "xh", ToolKind::Cli);
        is("`xh` or `http`", "xh", ToolKind::Http);
        is("`xh` (HTTPie-like, no HTTP_)", "xh", ToolKind::Cli);
        assert_eq!(one("no code here"), None);
        assert_eq!(one("`  ` blank"), None);
    }

    #[test]
    fn candidates_are_top_level_items_of_every_list() {
        let text = "## Tool Discovery\nIntro `not-a-list`.\n\n* `a` first\n  1. `nested`\n* plain\n\nThen:\n\n3. `b`\n\n   `c` in a second paragraph\n";
        assert_eq!(parse(text).discovery, vec![candidate("a", ToolKind::Cli, 4), candidate("b", ToolKind::Cli, 10)]);
    }

    #[test]
    fn scope_rules_fall_back_to_paragraphs() {
        let md = parse("## Scope Rules\n\nNever touch `ie.yaml`.\n\n   \n\nNor secrets,\nanywhere.\n");
        assert_eq!(md.scope_rules, ["Never touch ie.yaml.", "Nor secrets, anywhere."]);
        let md = parse("## Scope Rules\n\nIntro.\n\n- a\n\n  more of a\n- \n");
        assert_eq!(md.scope_rules, ["a more of a"]);
    }

    #[test]
    fn missing_and_capability() {
        let md = parse("## Tool Discovery\n- `gh`\n");
        assert!(md.is_spec());
        assert_eq!(md.missing(), [Section::Title, Section::Purpose, Section::Execution, Section::Validation]);
        assert_eq!(md.capability("git-pr"), "git-pr");
        assert!(!parse("# Skill: x\n## Purpose\n").is_spec());
        assert_eq!(parse("# Skill:   \n").capability("git-pr"), "git-pr");
        assert_eq!(parse("# skill: Check health\n").capability("x"), "Check health");
        assert_eq!(parse("# Container health\n").capability("x"), "Container health");
        assert_eq!(parse("# Ünïcode\n").capability("x"), "Ünïcode");
    }

    #[test]
    fn labels_follow_the_spec() {
        let labels: Vec<&str> = Section::ALL.iter().map(|s| s.label()).collect();
        assert_eq!(
            labels,
            ["Title", "Purpose", "Tool Discovery", "Execution", "Validation", "Tier Requirement", "Scope Rules", "Dry-Run Behavior"]
        );
        assert!(Section::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn output_is_bounded() {
        let many: String = (0..1_500).map(|i| format!("- `t{i}`\n")).collect();
        let md = parse(&format!("## Tool Discovery\n{many}## Scope Rules\n{many}"));
        assert_eq!(md.discovery.len(), MAX_ENTRIES);
        assert_eq!(md.discovery[999].name, "t999");
        assert_eq!(md.scope_rules.len(), MAX_ENTRIES);
        let long = "é".repeat(3_000);
        let md = parse(&format!("# {long}\n## Tool Discovery\n- `{long}`\n## Scope Rules\n- {long}\n"));
        assert_eq!(md.title.map(|t| t.chars().count()), Some(MAX_CHARS));
        assert_eq!(md.discovery[0].name.chars().count(), MAX_CHARS);
        assert_eq!(md.scope_rules[0].chars().count(), MAX_CHARS);
    }

    #[test]
    fn weird_inputs_do_not_panic() {
        let nested: String = (0..300).map(|i| format!("{}- `n{i}`\n", "  ".repeat(i))).collect();
        let quotes = format!("## Tool Discovery\n{}- `q`\n", "> ".repeat(5_000));
        let inputs = [
            String::new(),
            "#".into(),
            "# \n## \n### \n#### Tool Discovery\n##### Scope Rules\n###### Tier Requirement".into(),
            format!("## Tool Discovery\n{nested}## Scope Rules\n{nested}"),
            quotes,
            "## Tool Discovery\n- `unclosed\n- ``\n- `a\0b`\n\0# \0\n".into(),
            format!("## Tier Requirement\ntier {}\n", "9".repeat(100_000)),
            format!("## Scope Rules\n{}", "x".repeat(1_000_000)),
            "---\n---\n---\n# x\n---\n".into(),
            "- # Tool Discovery\n  - `a`\n- `b`\n> ## Scope Rules\n> - r\n\nafter".into(),
            "## Tier Requirement\ntier\u{130}tier 2\n".into(),
            "\u{feff}# Title\r\n## Purpose\r\n\r\nx\r\n".into(),
        ];
        for input in &inputs {
            let md = parse(input);
            assert!(md.discovery.len() <= MAX_ENTRIES && md.scope_rules.len() <= MAX_ENTRIES);
            assert!(md.found.windows(2).all(|w| w[0].0 < w[1].0));
        }
        let md = parse("## Tier Requirement\ntier 2\u{130}\n");
        assert_eq!(md.tier, Some(Tier::Min(2)));
    }
}
