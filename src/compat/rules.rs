//! The rule catalogue of `clawc compat`: one table, in the order of the specification
//! (`docs/compat-rules.md` is rendered from it by [`markdown`], `clawc compat
//! --list-rules` prints it, and a test keeps the committed file in step). Each rule has a
//! stable ID, a category, a severity, the direction it reads a change in, and a one-line
//! meaning. The JSON Schema keywords the schema rules read are classified in [`KEYWORDS`].

use serde::Serialize;
use std::fmt;

/// How bad a finding is. Ordered: `Info < Warn < Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub(crate) enum Severity {
    #[serde(rename = "INFO")]
    Info,
    #[serde(rename = "WARN")]
    Warn,
    #[serde(rename = "ERR")]
    Err,
}

impl Severity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Err => "ERR",
            Severity::Warn => "WARN",
            Severity::Info => "INFO",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a rule is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum Category {
    Tool,
    Transport,
    Input,
    Output,
    Privilege,
    Feed,
    Memory,
    Auth,
    Version,
}

impl Category {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Category::Tool => "TOOL",
            Category::Transport => "TRANSPORT",
            Category::Input => "INPUT",
            Category::Output => "OUTPUT",
            Category::Privilege => "PRIVILEGE",
            Category::Feed => "FEED",
            Category::Memory => "MEMORY",
            Category::Auth => "AUTH",
            Category::Version => "VERSION",
        }
    }
}

/// Which way a change is read (see the specification, section 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub(crate) enum Direction {
    /// Data the caller sends: NEW must accept what OLD accepted.
    #[serde(rename = "in")]
    In,
    /// Data the consumer receives: NEW must produce only what OLD could.
    #[serde(rename = "out")]
    Out,
    /// How and where a tool, feed or memory operation is reached.
    #[serde(rename = "call")]
    Call,
    /// What granted agents may now do.
    #[serde(rename = "grant")]
    Grant,
    /// Metadata.
    #[serde(rename = "—")]
    Meta,
}

impl Direction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::Call => "call",
            Direction::Grant => "grant",
            Direction::Meta => "—",
        }
    }
}

/// One row of the catalogue.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rule {
    pub id: &'static str,
    pub category: Category,
    pub severity: Severity,
    pub direction: Direction,
    pub meaning: &'static str,
}

/// A rule of the table (only the table makes them), compared by its row.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RuleRef(&'static Rule);

impl RuleRef {
    pub(crate) fn id(self) -> &'static str {
        self.0.id
    }

    pub(crate) fn rule(self) -> &'static Rule {
        self.0
    }

    pub(crate) fn severity(self) -> Severity {
        self.0.severity
    }

    /// The rule whose ID is `id`.
    pub(crate) fn find(id: &str) -> Option<RuleRef> {
        ALL.iter().copied().find(|r| r.id() == id)
    }
}

impl fmt::Debug for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.id)
    }
}

impl Serialize for RuleRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.id)
    }
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.id)
    }
}

macro_rules! rules {
    ($( $id:ident ($cat:ident, $sev:ident, $dir:ident) $meaning:literal; )*) => {
        $(
            #[doc = $meaning]
            pub(crate) const $id: RuleRef = RuleRef(&Rule {
                id: stringify!($id),
                category: Category::$cat,
                severity: Severity::$sev,
                direction: Direction::$dir,
                meaning: $meaning,
            });
        )*

        /// Every rule, in catalogue order.
        pub(crate) const ALL: &[RuleRef] = &[$( $id, )*];
    };
}

rules! {
    TOOL_REMOVED (Tool, Err, Call)
        "A tool of OLD is not in NEW (and is not paired as a rename).";
    TOOL_RENAMED_LIKELY (Tool, Err, Call)
        "Exactly one removed and one added tool have the same canonical `inputSchema` (and `outputSchema`, and at least one property): reported once, instead of `TOOL_REMOVED`+`TOOL_ADDED`; callers of the old name still fail.";
    TOOL_ADDED (Tool, Info, Call)
        "A new tool. Grants by name cannot reach it; `allow: all` can (see `PRIVILEGE_ALL_GRANT_*`).";
    TOOL_DESCRIPTION_CHANGED (Tool, Info, Meta)
        "Tool `description` or `title` changed. The model reads it; raise to WARN to review every wording change (tool pinning).";
    TOOL_ANNOTATION_CHANGED (Tool, Info, Meta)
        "An annotation outside the privilege set changed (`x-claw.terminalOnSuccess`, `annotations.title`, vendor keys).";
    TOOL_GRANT_DANGLING (Tool, Err, Grant)
        "(`--pod`) A pod grants by name a tool NEW lacks: that pod no longer compiles. Names the pod file:line and the agents.";
    SERVICE_METADATA_CHANGED (Tool, Info, Meta)
        "Service `description` or `skill` path changed.";
    TRANSPORT_CHANGED (Transport, Err, Call)
        "The service moved between HTTP and MCP execution (`mcp` block added or removed).";
    TRANSPORT_HTTP_METHOD_CHANGED (Transport, Err, Call)
        "`http.method` changed.";
    TRANSPORT_HTTP_PATH_CHANGED (Transport, Err, Call)
        "`http.path` changed (placeholders included).";
    TRANSPORT_HTTP_BODY_CHANGED (Transport, Err, Call)
        "`http.body` or `http.body_key` changed: the request encoding differs.";
    TRANSPORT_MCP_PATH_CHANGED (Transport, Err, Call)
        "`mcp.path` changed.";
    SERVICE_ENDPOINT_REMOVED (Transport, Warn, Call)
        "An `endpoints[]` entry removed (agents see endpoints in CLAWDAPUS.md when the service has no tools).";
    SERVICE_ENDPOINT_ADDED (Transport, Info, Call)
        "An `endpoints[]` entry added.";
    INPUT_PROPERTY_REMOVED (Input, Err, In)
        "Property removed from a **closed** object (`additionalProperties`/`unevaluatedProperties` false): calls that send it are rejected.";
    INPUT_PROPERTY_REMOVED_OPEN (Input, Warn, In)
        "Property removed from an open object: still accepted, now unconstrained and probably ignored.";
    INPUT_PROPERTY_ADDED (Input, Info, In)
        "Optional property added (also on open objects: [DECISION] Confluent's open-content-model objection is not applied; callers do not send undeclared keys).";
    INPUT_REQUIRED_ADDED (Input, Err, In)
        "A property newly required, or a new required property, at any depth; a `default` does not rescue it.";
    INPUT_REQUIRED_REMOVED (Input, Info, In)
        "A property no longer required.";
    INPUT_TYPE_NARROWED (Input, Err, In)
        "A JSON type no longer accepted: `null` dropped, `number`→`integer`, type changed.";
    INPUT_TYPE_WIDENED (Input, Info, In)
        "More types accepted (`integer`→`number`, `null` added).";
    INPUT_ENUM_VALUE_REMOVED (Input, Err, In)
        "An enum value removed, or an enum introduced on a property that had none.";
    INPUT_ENUM_VALUE_ADDED (Input, Info, In)
        "An enum value added, or the enum dropped.";
    INPUT_CONST_ADDED (Input, Err, In)
        "`const` set or changed.";
    INPUT_CONST_REMOVED (Input, Info, In)
        "`const` dropped.";
    INPUT_CONSTRAINT_TIGHTENED (Input, Err, In)
        "A bound set or tightened: `minimum`/`exclusiveMinimum`/`minLength`/`minItems`/`minProperties`/`minContains` raised or set, `maximum`/`exclusiveMaximum`/`maxLength`/`maxItems`/`maxProperties`/`maxContains` lowered or set, `multipleOf` set or no longer dividing the old one, `uniqueItems` set. The finding names the `keyword`.";
    INPUT_CONSTRAINT_LOOSENED (Input, Info, In)
        "The reverse of the above, and `pattern` or `format` removed.";
    INPUT_PATTERN_ADDED (Input, Err, In)
        "`pattern` set where there was none.";
    INPUT_PATTERN_CHANGED (Input, Warn, In)
        "`pattern` changed: regex inclusion is not decided.";
    INPUT_FORMAT_CHANGED (Input, Warn, In)
        "`format` added or changed: an annotation by default in 2020-12, asserted by many servers.";
    INPUT_ADDITIONAL_PROPERTIES_CLOSED (Input, Err, In)
        "`additionalProperties` absent/true → false, or its schema narrowed.";
    INPUT_ADDITIONAL_PROPERTIES_OPENED (Input, Info, In)
        "The reverse.";
    INPUT_VARIANT_REMOVED (Input, Err, In)
        "An `anyOf`/`oneOf` branch removed.";
    INPUT_VARIANT_ADDED (Input, Info, In)
        "An `anyOf` branch added, or a `oneOf` branch provably disjoint from the others (different `type`s or `const`/`enum` discriminators).";
    INPUT_DEFAULT_CHANGED (Input, Warn, In)
        "`default` added, changed or removed: callers that omit the property get other behaviour.";
    INPUT_ANNOTATION_CHANGED (Input, Info, Meta)
        "`description`, `title`, `examples`, `deprecated`, `$comment`, `readOnly`/`writeOnly`, `content*` changed inside the schema.";
    INPUT_UNCLASSIFIED (Input, Warn, In)
        "A change the rules cannot classify: under `not`, `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`, `patternProperties`, `propertyNames`, `contains`, `unevaluated*`; a `oneOf` branch added that may overlap; a `oneOf`/`anyOf` branch modified; an `allOf` that cannot be flattened. Never silent.";
    OUTPUT_SCHEMA_REMOVED (Output, Err, Out)
        "`outputSchema` dropped: `structuredContent` is no longer promised.";
    OUTPUT_SCHEMA_ADDED (Output, Info, Out)
        "`outputSchema` added: the tool must now return conforming `structuredContent`.";
    OUTPUT_PROPERTY_REMOVED (Output, Err, Out)
        "A **required** result property removed: consumers reading it break.";
    OUTPUT_OPTIONAL_PROPERTY_REMOVED (Output, Warn, Out)
        "An optional result property removed (consumers had to tolerate absence, but lose the data).";
    OUTPUT_PROPERTY_ADDED (Output, Info, Out)
        "A result property added.";
    OUTPUT_REQUIRED_REMOVED (Output, Err, Out)
        "A result property became optional: it may now be absent.";
    OUTPUT_REQUIRED_ADDED (Output, Info, Out)
        "A result property is now always present.";
    OUTPUT_TYPE_WIDENED (Output, Err, Out)
        "A new type may be returned, including `null`.";
    OUTPUT_TYPE_NARROWED (Output, Info, Out)
        "Fewer types returned.";
    OUTPUT_ENUM_VALUE_ADDED (Output, Warn, Out)
        "A new enum value (or no enum) may be returned: [DECISION] WARN like oasdiff, consumers with exhaustive switches must decide.";
    OUTPUT_ENUM_VALUE_REMOVED (Output, Info, Out)
        "An enum value will no longer be returned.";
    OUTPUT_CONST_REMOVED (Output, Err, Out)
        "A result `const` dropped or changed.";
    OUTPUT_CONSTRAINT_LOOSENED (Output, Err, Out)
        "A bound relaxed or removed (same keywords as the input rule): values old consumers never saw.";
    OUTPUT_CONSTRAINT_TIGHTENED (Output, Info, Out)
        "A bound added or tightened, `pattern`/`format` added, `const` added.";
    OUTPUT_STRING_FORMAT_CHANGED (Output, Warn, Out)
        "`pattern` or `format` of a result string removed or changed: consumers that parse it must check.";
    OUTPUT_ADDITIONAL_PROPERTIES_OPENED (Output, Warn, Out)
        "Undeclared keys may now appear in results.";
    OUTPUT_ADDITIONAL_PROPERTIES_CLOSED (Output, Info, Out)
        "The reverse.";
    OUTPUT_VARIANT_ADDED (Output, Err, Out)
        "An `anyOf`/`oneOf` branch added: a new result shape.";
    OUTPUT_VARIANT_REMOVED (Output, Info, Out)
        "A result branch removed.";
    OUTPUT_ANNOTATION_CHANGED (Output, Info, Meta)
        "Annotation keywords changed inside `outputSchema`.";
    OUTPUT_UNCLASSIFIED (Output, Warn, Out)
        "As `INPUT_UNCLASSIFIED`, for results.";
    PRIVILEGE_READONLY_CLEARED (Privilege, Err, Grant)
        "Clawdapus `annotations.readOnly` true → false or absent.";
    PRIVILEGE_READONLY_HINT_CLEARED (Privilege, Err, Grant)
        "Effective `readOnlyHint` true → false (clients auto-approve read-only tools).";
    PRIVILEGE_DESTRUCTIVE_HINT_SET (Privilege, Err, Grant)
        "Effective `destructiveHint` false → true, including dropping an explicit `false` (default true).";
    PRIVILEGE_OPEN_WORLD_HINT_SET (Privilege, Err, Grant)
        "Effective `openWorldHint` false → true, including dropping an explicit `false`.";
    PRIVILEGE_IDEMPOTENT_HINT_CLEARED (Privilege, Warn, Grant)
        "Effective `idempotentHint` true → false: retries may repeat the effect (cf. buf `RPC_SAME_IDEMPOTENCY_LEVEL`).";
    PRIVILEGE_REDUCED (Privilege, Info, Grant)
        "An annotation now promises less power (read-only set, destructive or open-world cleared).";
    PRIVILEGE_ALL_GRANT_GAINS_WRITE_TOOL (Privilege, Err, Grant)
        "(`--pod`) A new tool that is not read-only (`readOnly`/`readOnlyHint`) reaches agents through `allow: all`, a bare service name or inherited `tools-defaults`. Names them.";
    PRIVILEGE_ALL_GRANT_GAINS_TOOL (Privilege, Warn, Grant)
        "(`--pod`) The same for a read-only tool.";
    FEED_REMOVED (Feed, Err, Call)
        "A feed removed: scalar subscriptions stop resolving (compile error).";
    FEED_RENAMED_LIKELY (Feed, Err, Call)
        "One removed and one added feed share `path`: one finding instead of REMOVED+ADDED.";
    FEED_ADDED (Feed, Info, Call)
        "A feed added.";
    FEED_PATH_CHANGED (Feed, Err, Call)
        "Same name, new path: compiled `feeds.json` and map-form subscriptions hit the old path.";
    FEED_TTL_CHANGED (Feed, Info, Call)
        "`ttl` changed.";
    MEMORY_OP_REMOVED (Memory, Err, Call)
        "`recall`/`retain`/`forget` removed, or the whole `memory` block.";
    MEMORY_PATH_CHANGED (Memory, Err, Call)
        "A memory op's path changed.";
    MEMORY_OP_ADDED (Memory, Info, Call)
        "A memory op added.";
    AUTH_TYPE_CHANGED (Auth, Err, Call)
        "`auth.type` changed (absent = `none`): consumers send the wrong credential, or protection is dropped.";
    AUTH_ENV_CHANGED (Auth, Err, Call)
        "Bearer `auth.env` renamed: every consumer must provide the new variable or its compile fails.";
    VERSION_NOT_BUMPED (Version, Warn, Meta)
        "An ERR finding while the release version did not get a semver major bump (below 1.0.0: minor). Silent when either side has no semver release version.";
    VERSION_FORMAT_CHANGED (Version, Info, Meta)
        "Descriptor format `version` 1 ↔ 2.";
}

/// How the schema rules read a JSON Schema keyword (specification, section 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Handling {
    /// `type`: a set of types, `integer` ⊂ `number`.
    Type,
    /// `enum`, `const`: sets of values (a one-value `enum` is a `const`).
    Value,
    /// `properties`, `required`, `additionalProperties`.
    Object,
    /// Numeric, length and count bounds, `multipleOf`, `uniqueItems`.
    Bound,
    /// `pattern`, `format`.
    StringShape,
    /// `items`, `prefixItems` (and the pre-2020 `additionalItems`): recursed.
    Items,
    /// `$ref`, `$defs`, `definitions`, `$anchor`: resolved, compared at the use site.
    Reference,
    /// `anyOf`, `oneOf`.
    Variant,
    /// `allOf`: flattened when its conjuncts are object schemas.
    AllOf,
    /// Any change is `*_UNCLASSIFIED` (WARN).
    Unclassified,
    /// `default`.
    Default,
    /// Annotations: `*_ANNOTATION_CHANGED` (INFO).
    Annotation,
    /// The dialect: a change is `*_UNCLASSIFIED`.
    Dialect,
}

impl Handling {
    fn describe(self) -> &'static str {
        match self {
            Handling::Type => {
                "`*_TYPE_NARROWED` / `*_TYPE_WIDENED` (sets; `integer` ⊂ `number`; `[T, \"null\"]` ≡ a nullable `anyOf`/`oneOf`)"
            }
            Handling::Value => "`*_ENUM_*`, `*_CONST_*` (a one-value `enum` ≡ `const`; values compared as JSON, `1` = `1.0`)",
            Handling::Object => {
                "`*_PROPERTY_*`, `*_REQUIRED_*`, `*_ADDITIONAL_PROPERTIES_*`; a schema-form `additionalProperties` is recursed"
            }
            Handling::Bound => {
                "`*_CONSTRAINT_TIGHTENED` / `_LOOSENED` with `keyword` (exact decimals; `minimum`/`exclusiveMinimum` and `maximum`/`exclusiveMaximum` compared as one bound)"
            }
            Handling::StringShape => "`INPUT_PATTERN_*`, `INPUT_FORMAT_CHANGED`, `OUTPUT_STRING_FORMAT_CHANGED`; removal loosens an input",
            Handling::Items => "recursed (`prefixItems` by position, a position beyond it against `items`)",
            Handling::Reference => {
                "resolved locally (JSON pointer or anchor), compared at the use site with cycle detection; external refs are rejected at load (exit 2)"
            }
            Handling::Variant => "`*_VARIANT_*` when a branch is added or removed and the rule is provable, else `*_UNCLASSIFIED`",
            Handling::AllOf => "flattened when its conjuncts are object schemas, else `*_UNCLASSIFIED` on a change",
            Handling::Unclassified => "`*_UNCLASSIFIED` on any change (WARN)",
            Handling::Default => "`INPUT_DEFAULT_CHANGED` (output: `OUTPUT_ANNOTATION_CHANGED`)",
            Handling::Annotation => "`*_ANNOTATION_CHANGED` (INFO)",
            Handling::Dialect => "a dialect change → `*_UNCLASSIFIED`",
        }
    }
}

/// Every JSON Schema keyword the rules know (2020-12, plus the draft 4–2019-09 spellings a
/// descriptor may still use), with how it is read. Anything else is an unknown keyword:
/// validators ignore it, so a change is an annotation change.
pub(crate) const KEYWORDS: &[(&str, Handling)] = &[
    ("type", Handling::Type),
    ("enum", Handling::Value),
    ("const", Handling::Value),
    ("properties", Handling::Object),
    ("required", Handling::Object),
    ("additionalProperties", Handling::Object),
    ("minimum", Handling::Bound),
    ("maximum", Handling::Bound),
    ("exclusiveMinimum", Handling::Bound),
    ("exclusiveMaximum", Handling::Bound),
    ("multipleOf", Handling::Bound),
    ("minLength", Handling::Bound),
    ("maxLength", Handling::Bound),
    ("minItems", Handling::Bound),
    ("maxItems", Handling::Bound),
    ("uniqueItems", Handling::Bound),
    ("minProperties", Handling::Bound),
    ("maxProperties", Handling::Bound),
    ("minContains", Handling::Bound),
    ("maxContains", Handling::Bound),
    ("pattern", Handling::StringShape),
    ("format", Handling::StringShape),
    ("items", Handling::Items),
    ("prefixItems", Handling::Items),
    ("additionalItems", Handling::Items),
    ("$ref", Handling::Reference),
    ("$defs", Handling::Reference),
    ("definitions", Handling::Reference),
    ("$anchor", Handling::Reference),
    ("anyOf", Handling::Variant),
    ("oneOf", Handling::Variant),
    ("allOf", Handling::AllOf),
    ("not", Handling::Unclassified),
    ("if", Handling::Unclassified),
    ("then", Handling::Unclassified),
    ("else", Handling::Unclassified),
    ("dependentRequired", Handling::Unclassified),
    ("dependentSchemas", Handling::Unclassified),
    ("dependencies", Handling::Unclassified),
    ("patternProperties", Handling::Unclassified),
    ("propertyNames", Handling::Unclassified),
    ("contains", Handling::Unclassified),
    ("unevaluatedProperties", Handling::Unclassified),
    ("unevaluatedItems", Handling::Unclassified),
    ("$dynamicRef", Handling::Unclassified),
    ("$dynamicAnchor", Handling::Unclassified),
    ("$recursiveRef", Handling::Unclassified),
    ("$recursiveAnchor", Handling::Unclassified),
    ("default", Handling::Default),
    ("title", Handling::Annotation),
    ("description", Handling::Annotation),
    ("examples", Handling::Annotation),
    ("deprecated", Handling::Annotation),
    ("readOnly", Handling::Annotation),
    ("writeOnly", Handling::Annotation),
    ("$comment", Handling::Annotation),
    ("contentEncoding", Handling::Annotation),
    ("contentMediaType", Handling::Annotation),
    ("contentSchema", Handling::Annotation),
    ("$schema", Handling::Dialect),
    ("$id", Handling::Dialect),
    ("$vocabulary", Handling::Dialect),
];

/// How `keyword` is read; `None` for a keyword no draft defines.
pub(crate) fn handling(keyword: &str) -> Option<Handling> {
    KEYWORDS.iter().find(|(k, _)| *k == keyword).map(|(_, h)| *h)
}

/// A table cell of prose: `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `docs/compat-rules.md`: the catalogue and the keyword table.
pub(crate) fn markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "# `clawc compat` rules\n\n\
         <!-- Generated from src/compat/rules.rs; do not edit. Regenerate with\n     \
         `UPDATE_GOLDEN=1 cargo test --lib compat::tests::rules_doc`. -->\n\n\
         Every difference `clawc compat OLD NEW` finds between two releases of a service's\n\
         descriptor is a finding of exactly one of these rules. The IDs are stable. See\n\
         [compat.md](compat.md) for the command, its outputs and the accept file.\n\n\
         *Severity*: `ERR` — something that worked against OLD provably fails against NEW, or an\n\
         agent gains power no operator approved (the gate refuses with the default\n\
         `--fail-on err`); `WARN` — the documents alone cannot decide, a human does; `INFO` —\n\
         compatible, for the changelog.\n\n\
         *Direction*: `in` — data the caller sends (NEW must accept every call OLD accepted);\n\
         `out` — data the consumer receives (NEW may return only what OLD could); `call` — how\n\
         and where a tool, feed or memory operation is reached; `grant` — what granted agents\n\
         may now do; `—` — metadata.\n\n",
    );
    let _ = writeln!(out, "## Catalogue ({} rules)\n", ALL.len());
    out.push_str("| Rule ID | Cat. | Sev. | Dir. | Meaning |\n|---|---|---|---|---|\n");
    for r in ALL {
        let r = r.rule();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            r.id,
            r.category.as_str(),
            r.severity.as_str(),
            r.direction.as_str(),
            cell(r.meaning)
        );
    }
    out.push_str(
        "\nAccept-file bookkeeping is not a rule: an accepted finding is reported as accepted,\n\
         and an accept entry that matches no finding is a WARN (`clawc::compat::stale_accept`).\n\n\
         ## JSON Schema keywords\n\n\
         Every keyword of JSON Schema 2020-12 (and the older drafts' spellings) is read one of\n\
         these ways; a keyword no draft defines is ignored by validators and reported as an\n\
         annotation change.\n\n\
         | Keywords | Handling |\n|---|---|\n",
    );
    let mut groups: Vec<(Handling, Vec<&str>)> = Vec::new();
    for (k, h) in KEYWORDS {
        match groups.iter_mut().find(|(g, _)| g == h) {
            Some((_, ks)) => ks.push(k),
            None => groups.push((*h, vec![k])),
        }
    }
    for (h, ks) in groups {
        let ks: Vec<String> = ks.iter().map(|k| format!("`{k}`")).collect();
        let _ = writeln!(out, "| {} | {} |", ks.join(" "), cell(h.describe()));
    }
    out.push_str("| unknown keywords | ignored by validators; reported as `*_ANNOTATION_CHANGED` |\n");
    out
}
