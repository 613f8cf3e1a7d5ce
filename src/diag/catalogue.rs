//! Every diagnostic code clawc can raise, in one table: its stable string, the pass that
//! raises it, how it is raised (error, warning or either), the exit class of an error, a
//! one-line explanation and an example. `docs/diagnostics.md` is rendered from this table
//! ([`markdown`]) and a test keeps the committed file in step.
//!
//! A [`Code`] can only be taken from this table (its field is private), so a code the
//! catalogue lacks cannot be raised. Each block of the table becomes a module of consts
//! that the passes re-export under their old names (`crate::pod::diags`,
//! `crate::grant::codes`, …). The code strings are a stable contract: never change one.

use std::fmt;

/// The pass (or command) that raises a code; `docs/diagnostics.md` is grouped by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    Config,
    Parse,
    Env,
    Pod,
    Expand,
    Source,
    Image,
    Describe,
    Skill,
    Register,
    Grant,
    Project,
    Secrets,
    Output,
    Access,
    Merge,
    Compat,
}

impl Pass {
    /// In the order the driver runs them (the order of `docs/diagnostics.md`).
    pub const ALL: [Pass; 17] = [
        Pass::Config,
        Pass::Parse,
        Pass::Env,
        Pass::Pod,
        Pass::Expand,
        Pass::Source,
        Pass::Image,
        Pass::Describe,
        Pass::Skill,
        Pass::Register,
        Pass::Grant,
        Pass::Project,
        Pass::Secrets,
        Pass::Output,
        Pass::Access,
        Pass::Merge,
        Pass::Compat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pass::Config => "config",
            Pass::Parse => "parse",
            Pass::Env => "env",
            Pass::Pod => "pod",
            Pass::Expand => "expand",
            Pass::Source => "source",
            Pass::Image => "image",
            Pass::Describe => "describe",
            Pass::Skill => "skill",
            Pass::Register => "register",
            Pass::Grant => "grant",
            Pass::Project => "project",
            Pass::Secrets => "secrets",
            Pass::Output => "output",
            Pass::Access => "access",
            Pass::Merge => "merge",
            Pass::Compat => "compat",
        }
    }

    fn about(self) -> &'static str {
        match self {
            Pass::Config => {
                "The settings: `clawc.toml`, the `CLAWC_*` variables, and the flags the command line cannot check alone (see [config.md](config.md))."
            }
            Pass::Parse => "Reading the YAML of the pod file, before any of it is interpreted.",
            Pass::Env => "Reading the `.env` file (or `--env-file`).",
            Pass::Pod => "The x-claw grammar of the pod, and the limits on its size.",
            Pass::Expand => "`*-defaults`, the `...` spread and `${VAR}` placeholders.",
            Pass::Source => "Finding and reading inputs: the pod, descriptors, snapshots, skills.",
            Pass::Image => "Reading descriptors, snapshots and skills out of images (see [images.md](images.md)).",
            Pass::Describe => "The rules of a service descriptor (`.claw-describe.json`, version 1 or 2).",
            Pass::Skill => {
                "Skill folders that bring tools: a Skill Tools package (`tools.json`) and a `tool-manifest.yaml`, as `clawc skill compile` checks them (see [skills.md](skills.md))."
            }
            Pass::Register => "Registering every descriptor into the pod-global registry.",
            Pass::Grant => "Resolving each agent's tool, feed and memory grants against the registry.",
            Pass::Project => "Writing each native agent's runner configuration (see [runners.md](runners.md)).",
            Pass::Secrets => "Keeping token values out of what is written or committed.",
            Pass::Output => "Writing (and, with `--check`, reading) the output directory.",
            Pass::Access => "The arguments of `clawc explain` and `clawc who-can`.",
            Pass::Merge => "`clawc merge FRAGMENT TARGET`: merging a runner file clawc wrote into yours (see [merge.md](merge.md)).",
            Pass::Compat => {
                "`clawc compat OLD NEW`: the sources, pods and accept file it reads (its findings are rules, see [compat-rules.md](compat-rules.md))."
            }
        }
    }
}

/// How a code is raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Raised {
    Error,
    Warning,
    /// An error or a warning, depending on the case (the explanation says which).
    Either,
}

/// What an error of this code makes the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Exit {
    /// `--check`: a finding in the committed tree (exit 1).
    Check,
    /// Invalid inputs or arguments (exit 2).
    Input,
    /// The environment failed: I/O, Docker, a missing image, an `--out` clawc refuses to
    /// write, an interruption (exit 3).
    Environment,
}

impl Exit {
    pub fn code(self) -> i32 {
        match self {
            Exit::Check => 1,
            Exit::Input => 2,
            Exit::Environment => 3,
        }
    }
}

/// One row of the catalogue.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Info {
    /// The stable string (`clawc::<pass>::<name>`), printed in every output.
    pub code: &'static str,
    pub pass: Pass,
    pub raised: Raised,
    pub exit: Exit,
    pub explanation: &'static str,
    pub example: &'static str,
    /// Why a diagnostic of this code has no file position, for the codes that never have
    /// one (about a command-line argument, a value, an output); empty for the others.
    pub unlocated: &'static [&'static str],
}

impl Info {
    /// Why this code's diagnostics have no file position, when they never have one.
    pub fn unlocated(&self) -> Option<&'static str> {
        self.unlocated.first().copied()
    }
}

/// A diagnostic code: one row of the catalogue. Compares, orders and hashes as its
/// string (the first field of [`Info`]; the strings are unique).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code(&'static Info);

impl Code {
    pub fn as_str(self) -> &'static str {
        self.0.code
    }

    pub fn info(self) -> &'static Info {
        self.0
    }

    /// The exit code an error of this code leads to.
    pub fn exit_code(self) -> i32 {
        self.0.exit.code()
    }

    pub fn is_environment_failure(self) -> bool {
        self.0.exit == Exit::Environment
    }

    /// Whether the catalogue allows raising this code with `severity`.
    pub fn allows(self, severity: super::Severity) -> bool {
        matches!(
            (self.0.raised, severity),
            (Raised::Either, _) | (Raised::Error, super::Severity::Error) | (Raised::Warning, super::Severity::Warning)
        )
    }

    /// The code whose string is `s`.
    pub fn find(s: &str) -> Option<Code> {
        ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.code, f)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.code)
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.code)
    }
}

/// The table. Each block is a module of consts (`NAME = "code" (pass, raised, exit)
/// "explanation" "example";`), re-exported by the pass that raises them. A code whose
/// diagnostics never have a file position says why after its exit class:
/// `(pass, raised, exit, "it is about a command-line argument")`.
macro_rules! catalogue {
    ($( $(#[$meta:meta])* mod $module:ident { $(
        $name:ident = $code:literal ($pass:ident, $raised:ident, $exit:ident $(, $unlocated:literal)?) $explanation:literal $example:literal;
    )* } )*) => {
        $( $(#[$meta])* pub(crate) mod $module {
            use super::{Code, Exit, Info, Pass, Raised};
            $(
                #[doc = $explanation]
                pub(crate) const $name: Code = Code(&Info {
                    code: $code,
                    pass: Pass::$pass,
                    raised: Raised::$raised,
                    exit: Exit::$exit,
                    explanation: $explanation,
                    example: $example,
                    unlocated: &[$($unlocated)?],
                });
            )*
        } )*

        /// Every code, in table order.
        pub const ALL: &[Code] = &[$( $( $module::$name, )* )*];
    };
}

catalogue! {
    /// `crate::config::codes`.
    mod config {
        SYNTAX = "clawc::config::syntax" (Config, Error, Input)
            "`clawc.toml` is not valid TOML (a key given twice included)."
            "invalid key-value pair, expected `=`";
        UNKNOWN_KEY = "clawc::config::unknown_key" (Config, Error, Input)
            "A `clawc.toml` key that names no setting (the keys are the long flags' names, listed in config.md)."
            "unknown key `image` in clawc.toml";
        NOT_SETTABLE = "clawc::config::not_settable" (Config, Error, Input)
            "A `clawc.toml` key names a flag that only the command line may set (`secrets`, `format`, `check`, `diff`, `config`, `no-config`)."
            "`secrets` cannot be set in clawc.toml";
        BAD_VALUE = "clawc::config::bad_value" (Config, Error, Input)
            "A setting's value has the wrong type or is not one the flag takes, in `clawc.toml`, a `CLAWC_*` variable or on the command line (a service given twice, `none` with other image sources)."
            "`image-jobs` must be an integer from 1 to 256, not \"eight\"";
    }

    /// `crate::yaml::codes`.
    mod yaml {
        SYNTAX = "clawc::parse::yaml_syntax" (Parse, Error, Input)
            "The pod file is not valid YAML (an alias to an undefined anchor included)."
            "invalid YAML: did not find expected ',' or ']'";
        TOO_DEEP = "clawc::parse::too_deep" (Parse, Error, Input)
            "The YAML nests deeper than 64 levels."
            "nesting deeper than 64 levels";
        ALIAS_BUDGET = "clawc::parse::alias_budget" (Parse, Error, Input)
            "Expanding aliases would pass 1,000,000 nodes or 32 MiB of scalar text (an alias bomb)."
            "document has more than 1000000 nodes";
        DUPLICATE_KEY = "clawc::parse::duplicate_key" (Parse, Error, Input)
            "A mapping holds the same key twice."
            "services: {a: {}, a: {}}";
        MULTIPLE_DOCUMENTS = "clawc::parse::multiple_documents" (Parse, Error, Input)
            "The file holds more than one YAML document (`---`); a pod is one."
            "the file holds more than one YAML document";
        BAD_MERGE = "clawc::parse::bad_merge_key" (Parse, Error, Input)
            "A merge key `<<` is given something other than a mapping or a list of mappings."
            "<<: 3";
    }

    /// `crate::pod::env::codes`.
    mod env {
        BAD_LINE = "clawc::env::bad_line" (Env, Error, Input)
            "A `.env` line is not `KEY=VALUE`, or its key is not a variable name (the line itself is never quoted)."
            "this `.env` line is not `KEY=VALUE`";
    }

    /// `crate::pod::diags`.
    mod pod {
        NOT_A_POD = "clawc::pod::not_a_pod" (Pod, Error, Input)
            "The file is not a mapping with `services:`."
            "the pod file has no `services:`";
        WRONG_TYPE = "clawc::pod::wrong_type" (Pod, Error, Input)
            "An x-claw value has the wrong YAML type."
            "count: two";
        REQUIRED = "clawc::pod::required" (Pod, Error, Input)
            "A required x-claw field is missing."
            "feeds[0]: source is required";
        INVALID_VALUE = "clawc::pod::invalid_value" (Pod, Error, Input)
            "An x-claw value has the right type but is not allowed (empty, not positive, a bad URI, `...` in pod defaults)."
            "feeds[0]: path \"prices\" must start with '/'";
        UNKNOWN_KEY = "clawc::pod::unknown_key" (Pod, Warning, Input)
            "An x-claw key no Clawdapus grammar knows; it is ignored."
            "unknown service x-claw key `agnet`";
        MISSPELT_GRANT_KEY = "clawc::pod::misspelt_grant_key" (Pod, Error, Input)
            "An unknown x-claw key within two edits of a grant key (`tools`, `feeds`, `surfaces`, `memory`, `tool-policy` on a service; their `*-defaults` on the pod). An error, not a warning: ignored, the misspelt grant would leave the service with the pod's defaults, so a typo could widen access."
            "service \"reporter\": unknown x-claw key `tool` looks like the grant key `tools` misspelt";
        MISPLACED_KEY = "clawc::pod::misplaced_key" (Pod, Error, Input)
            "A pod-level x-claw field is declared on a service: `alert-webhooks`, `alert-mentions`, or a grant default (`tools-defaults`, …), which the service would ignore and inherit instead."
            "service \"trader\": \"tool-policy-defaults\" is a pod-level field and cannot be declared on a service";
        IGNORED = "clawc::pod::ignored" (Pod, Warning, Input)
            "A value clawc reads but cannot honour, so it is ignored."
            "cllama-defaults is a string; only a mapping is honoured, so it is ignored";
        MCP_STDIO_CONFLICT = "clawc::pod::mcp_stdio_conflict" (Pod, Error, Input)
            "`mcp-stdio` combined with something a stdio sidecar cannot have (a tool policy, `count` > 1)."
            "service \"files\": mcp-stdio does not support count > 1";
        UNKNOWN_SOURCE = "clawc::pod::unknown_feed_source" (Pod, Error, Input)
            "A feed's `source` is not a service of the pod."
            "feeds: [{name: prices, source: pricing-ap, path: /prices}]";
        INVALID_SERVICE_NAME = "clawc::pod::invalid_service_name" (Pod, Error, Input)
            "A service name Compose would refuse (it names directories of the output too)."
            "service name \"Trader!\" is not a valid Compose service name";
        TOO_MANY_AGENTS = "clawc::pod::too_many_agents" (Pod, Error, Input)
            "`count` over 1,000 for a service, or over 50,000 agent ids in the pod."
            "count: 5000";
        TOO_MANY_ENTRIES = "clawc::pod::too_many_entries" (Pod, Error, Input)
            "Over 1,000,000 surfaces, feeds, tools or skills entries in the pod once defaults are copied into every service, each replica counted."
            "a 1,000-entry `tools-defaults` on 2,000 agents";
        PLACEHOLDER = "clawc::expand::placeholder" (Expand, Error, Input)
            "A `${VAR}` placeholder that is malformed or names a variable with no value."
            "environment: {TOKEN: ${TOKEN}} with no TOKEN in .env or the environment";
        DOUBLE_SPREAD = "clawc::expand::double_spread" (Expand, Error, Input)
            "The spread token `...` appears more than once in one list."
            "tools: [..., api, ...]";
        SPREAD_WITHOUT_DEFAULTS = "clawc::expand::spread_without_defaults" (Expand, Error, Input)
            "A list uses `...` but the pod declares no matching `*-defaults`."
            "service \"a\": tools: spread token \"...\" used but no pod-level tools-defaults declared";
        BAD_PORT = "clawc::pod::bad_port" (Pod, Either, Input)
            "An `expose` or `ports` entry with no readable container port (an error: the service URL would fall back to port 80), or a port range as a service's first port (a warning: its URL needs one port)."
            "ports: [\"8080:\"]";
        UNKNOWN_MASTER = "clawc::pod::unknown_master" (Pod, Error, Input)
            "`x-claw.master` names a service the pod does not have, or one without `x-claw`."
            "x-claw.master \"boss\" targets unknown service";
        MULTI_PROXY = "clawc::pod::multi_proxy" (Pod, Error, Input)
            "The pod's agents use more than one cllama proxy type (Clawdapus runs one proxy type per pod)."
            "multi-proxy chaining not yet supported: found proxy types [passthrough policy]; Phase 4 supports one proxy type per pod";
        REQUIRES_MASTER = "clawc::pod::requires_master" (Pod, Error, Input)
            "`x-claw.principals`, or a service's `claw-api: self`, in a pod without `x-claw.master` (claw-api principals belong to the master)."
            "service \"worker\": claw-api: self requires x-claw.master to be set";
        RESERVED_SERVICE = "clawc::pod::reserved_service" (Pod, Error, Input)
            "A pod service is named like a service `claw up` injects into this pod: `claw-api` (the pod has `x-claw.master` or `invoke`) or `claw-wall` (a cllama agent's Discord handle lists channels)."
            "service name \"claw-api\" is reserved when claw-api auto-injection is active";
        WALL_READER = "clawc::pod::wall_reader" (Pod, Error, Input)
            "The conversation wall reads a Discord channel no claw-managed service can read: none has a `DISCORD_BOT_TOKEN` in its `environment` and the channel in its own Discord handle."
            "conversation wall injection triggered but channel \"123\" has no eligible Discord reader token";
        BAD_TOOL_EXECUTION = "clawc::pod::bad_tool_execution" (Pod, Error, Input)
            "`tool-execution` is neither `native` nor `mediated`, or is `mediated` on a service without a cllama proxy."
            "service \"trader\": tool-execution is `mediated` but the service has no cllama proxy to mediate its tools";
    }

    /// `crate::source::diags`.
    mod source {
        IO = "clawc::source::io" (Source, Error, Environment)
            "An input could not be read (an I/O error)."
            "cannot read `api/.claw-describe.json`: Permission denied";
        NOT_A_FILE = "clawc::source::not_a_file" (Source, Error, Input)
            "An input path is a directory, FIFO, device or socket, not a regular file."
            "`api/.claw-describe.json` is a directory, not a regular file";
        TOO_LARGE = "clawc::source::too_large" (Source, Error, Input)
            "An input file is over 8 MiB."
            "`claw-pod.yml` is at least 8388609 bytes; the limit is 8388608";
        NOT_UTF8 = "clawc::source::not_utf8" (Source, Error, Input)
            "An input file is not UTF-8 text."
            "`api/.claw-describe.json` is not UTF-8 text (invalid byte at offset 12)";
        MISSING = "clawc::source::missing_file" (Source, Error, Input)
            "An input named by the pod, a descriptor or the command line does not exist."
            "pod file `claw-pod.yml` does not exist";
        PATH_ESCAPE = "clawc::source::path_escape" (Source, Error, Input)
            "An input resolves outside the input root, a label path or skill outside its build context (a skill of a service without one: outside its descriptor's directory), a file of a skill folder outside the folder, or is a symlink loop."
            "`../../etc/passwd` resolves outside the input root `/repo`";
        NO_SIDECAR_DESCRIPTOR = "clawc::source::no_sidecar_descriptor" (Source, Error, Input)
            "A stdio MCP sidecar has no descriptor snapshot."
            "service \"files\": stdio MCP sidecar has no descriptor snapshot; run 'claw discover files' or set x-claw.describe-file";
        STALE_SNAPSHOT = "clawc::source::stale_snapshot" (Source, Warning, Input)
            "A discovered descriptor is older than what it describes."
            "service \"files\" discovered descriptor is stale; run 'claw discover files' to refresh .claw-discovered";
        UNKNOWN_SERVICE = "clawc::source::unknown_service" (Source, Error, Input, "it is about a command-line argument")
            "`--descriptor SERVICE=PATH` names a service the pod does not have."
            "--descriptor names \"tradng-api\", which is not a service of this pod";
        SKILL_NOT_FOUND = "clawc::source::skill_not_found" (Source, Error, Input)
            "A descriptor's `skill` is not where it is resolved: the service's build context, else the descriptor file's directory."
            "descriptor skill \"skills/api.md\" was not found in the build context";
        INVALID_SKILL_NAME = "clawc::source::invalid_skill_name" (Source, Error, Input)
            "A skill path does not end in a file name, or a file inside a skill folder has a name an agent's tree cannot hold (a backslash, a control character, bytes that are not UTF-8)."
            "skill path \"skills/\" does not end in a file name";
        INVALID_PATH = "clawc::source::invalid_path" (Source, Error, Input)
            "An input path contains a NUL byte."
            "the path of `api\\0.json` contains a NUL byte";
    }

    /// `crate::image::diags`.
    mod image {
        DOCKER_UNREACHABLE = "clawc::image::docker_unreachable" (Image, Error, Environment)
            "`--images docker` and the Docker Engine does not answer."
            "--images docker: the Docker Engine at unix:///var/run/docker.sock is unreachable";
        DOCKER = "clawc::image::docker" (Image, Error, Environment)
            "The Docker Engine failed mid-way (inspect, create, archive)."
            "image trading-api:1.4: the Docker Engine failed: …";
        NOT_FOUND = "clawc::image::not_found" (Image, Either, Environment)
            "No image source has the image: an error when the pod uses something from it, else a warning."
            "service \"api\": image api:1.0 was not found (tried: docker); nothing the pod uses comes from it";
        FILE_MISSING = "clawc::image::file_missing" (Image, Error, Input)
            "A path a label names is not in the image."
            "image api:1.0: `/svc/descriptor.json` is not in the image";
        NOT_A_FILE = "clawc::image::not_a_file" (Image, Error, Input)
            "A path in the image is a directory (or device, FIFO)."
            "image api:1.0: `/svc` is a directory (or another non-file)";
        PATH_ESCAPE = "clawc::image::path_escape" (Image, Error, Input)
            "A link (symlink or hardlink) leads above the image root, or a chain of over 40 links."
            "image api:1.0: `/svc/descriptor.json` leads out of the image root (\"../../etc\")";
        TOO_LARGE = "clawc::image::too_large" (Image, Error, Input)
            "A file read from an image is over 8 MiB."
            "image api:1.0: `/svc/descriptor.json` is 9000000 bytes; the limit is 8388608";
        NOT_UTF8 = "clawc::image::not_utf8" (Image, Error, Input)
            "A file read from an image is not UTF-8 text."
            "image api:1.0: `/svc/descriptor.json` is not UTF-8 text (invalid byte at offset 0)";
        CORRUPT = "clawc::image::corrupt" (Image, Error, Input)
            "An OCI layout or archive that is not one: truncated, a blob that does not match its digest or size, or indexes nested over 8 deep."
            "--images oci:images: a blob does not match its digest";
        LAYER_TOO_LARGE = "clawc::image::layer_too_large" (Image, Error, Input)
            "A layer inflates past 8 GiB, the image past 32 GiB, it has over a million links and whiteouts, or a tar extension header over 1 MiB."
            "image api:1.0 in images.tar: a layer inflates past 8 GiB";
        INVALID_SNAPSHOT = "clawc::image::invalid_snapshot" (Image, Error, Input)
            "A baked `tools/list` snapshot that is not JSON or not a `tools/list` result."
            "`api:1.0:/svc/tools.json` is not valid JSON: expected value at line 1 column 1";
        TOOL_COLLISION = "clawc::image::tool_collision" (Image, Error, Input)
            "A tool is declared by both the image's descriptor and its baked snapshot."
            "tool \"quote\" is declared by both `api:1.0:/svc/descriptor.json` and `api:1.0:/svc/tools.json`";
        SNAPSHOT_CONFLICT = "clawc::image::snapshot_conflict" (Image, Error, Input)
            "A descriptor and a snapshot that cannot be joined (a version 1 descriptor, or HTTP tools next to MCP ones)."
            "`api:1.0:/svc/descriptor.json` is a version 1 descriptor, which cannot carry the tools of `api:1.0:/svc/tools.json`";
        BAD_SOURCE = "clawc::image::bad_source" (Image, Error, Input)
            "The image sources cannot answer the question: `clawc describe --image REF` with `--images none` (a malformed `--images` value is refused by the command line before any pass runs)."
            "--images none: there is no image source to read the image from";
        INTERRUPTED = "clawc::image::interrupted" (Image, Error, Environment)
            "Interrupted (Ctrl-C) while reading images; temporary containers were removed."
            "interrupted; temporary containers were removed";
        PARTIAL_SNAPSHOT = "clawc::image::partial_snapshot" (Image, Warning, Input)
            "A baked snapshot holds one page of `tools/list` (it has a `nextCursor`), so tools may be missing."
            "`api:1.0:/svc/tools.json` has a nextCursor: it holds one page of tools/list";
    }

    /// `crate::describe::diags`.
    mod describe {
        INVALID_JSON = "clawc::describe::invalid_json" (Describe, Error, Input)
            "A descriptor is not valid JSON."
            "{\"version\": 2,}";
        WRONG_TYPE = "clawc::describe::wrong_type" (Describe, Error, Input)
            "A descriptor value has the wrong JSON type."
            "\"feeds\": {}";
        VERSION = "clawc::describe::version" (Describe, Error, Input)
            "The descriptor `version` is missing or not 1 or 2."
            "descriptor version must be 1 or 2, got 3";
        FEED = "clawc::describe::feed" (Describe, Error, Input)
            "A descriptor feed without a name, with a duplicate name, a bad path or a ttl that is not positive."
            "feeds[0]: ttl must be > 0";
        ENDPOINT = "clawc::describe::endpoint" (Describe, Error, Input)
            "A descriptor endpoint without a method or with a bad path."
            "endpoints[0]: method is required";
        V1_CAPABILITY = "clawc::describe::v1_capability" (Describe, Error, Input)
            "A version 1 descriptor declares tools, mcp or memory (version 2 only)."
            "descriptor version 1 does not support tools";
        MCP = "clawc::describe::mcp" (Describe, Error, Input)
            "The descriptor's `mcp` block has an unsupported transport or a bad path."
            "mcp.path \"mcp\" must start with '/'";
        TOOL = "clawc::describe::tool" (Describe, Error, Input)
            "A descriptor tool without a name or description, a duplicate, or a bad `http` block."
            "tools[0]: duplicate tool name \"quote\"";
        INPUT_SCHEMA = "clawc::describe::input_schema" (Describe, Error, Input)
            "A tool's `inputSchema` is missing, not an object schema, or invalid against its draft's meta-schema."
            "tools[0]: inputSchema.type must be \"object\"";
        ANNOTATION = "clawc::describe::annotation" (Describe, Error, Input)
            "A tool's `x-claw.terminalOnSuccess` annotation that is not a boolean (other annotations pass through unchecked, as in Clawdapus)."
            "\"annotations\": {\"x-claw\": {\"terminalOnSuccess\": \"true\"}}";
        MEMORY = "clawc::describe::memory" (Describe, Error, Input)
            "The descriptor's `memory` block lacks recall and retain, or has a bad path."
            "memory: at least one of recall or retain must be declared";
        AUTH = "clawc::describe::auth" (Describe, Error, Input)
            "The descriptor's `auth` block has an unsupported type or lacks a field it needs."
            "auth.type \"basic\" is unsupported";
    }

    /// `crate::skill::codes`.
    mod skill {
        INVALID_PACKAGE = "clawc::skill::invalid_package" (Skill, Error, Input)
            "A Skill Tools package as a whole is broken: a folder name the Agent Skills rules refuse or that differs from the `name` in `SKILL.md`'s frontmatter, no `SKILL.md` (or no frontmatter `name`), `tools.json` that is not JSON or not an array, or over 10,000 tools. The message names the file."
            "`tools.json` is not an array of tools (it is an object)";
        INVALID_TOOL = "clawc::skill::invalid_tool" (Skill, Warning, Input)
            "One tool of a `tools.json` or a `tool-manifest.yaml` breaks a rule (the message names the tool and the rule: shape, name, description, duplicate, script, parameters, input_schema, executor, template, timeout, retry, misspelt_key). The tool is skipped; the rest load."
            "tool \"Get-Weather\" is skipped: rule `name`: the name \"Get-Weather\" must match ^[a-z][a-z0-9_]*$";
        INVALID_MANIFEST = "clawc::skill::invalid_manifest" (Skill, Either, Input)
            "`tool-manifest.yaml` cannot be compiled: not a mapping, `tools` missing or not a list, over 10,000 tools, or a bad `runtime` default (an error: nothing is written). A key clawc does not know at the top level or in `runtime` is a warning and ignored."
            "`runtime.default_retry.max_attempts` must be an integer from 1 to 10, not \"many\"";
        SHADOWED_TOOL = "clawc::skill::shadowed_tool" (Skill, Warning, Input)
            "A dynamic tool has the name of a static tool (`--static-tools`): the static tool wins and the dynamic one is left out of `dynamic_tools.json`."
            "dynamic tool \"search\" is shadowed by the static tool \"search\"";
        TOO_LARGE = "clawc::skill::too_large" (Skill, Error, Input)
            "A skill folder holds over 10,000 files, nests deeper than 32 directories or holds over 256 MiB in all, or the skills a pod lists hold over 256 MiB together (one file over 8 MiB is `clawc::source::too_large`)."
            "the skill folder `skills/weather` holds more than 10000 files";
        NOT_FOUND = "clawc::skill::not_found" (Skill, Error, Input)
            "An `x-claw.skills` entry (after `skills-defaults`) names a path that does not exist relative to the pod's directory. It must be a markdown file or a skill folder holding `SKILL.md`."
            "skill \"skills/git-pr.md\" was not found";
        DUPLICATE_NAME = "clawc::skill::duplicate_name" (Skill, Warning, Input)
            "Two skills of one layer of an agent (two descriptor skills of its service surfaces, or two `x-claw.skills` entries) have the same name: the later replaces the earlier, as `claw up` merges them. A pod skill replacing a descriptor skill is a deliberate override and only reported."
            "skill \"api.md\" of surface \"billing\" replaces the one of surface \"crm\"";
        MISSING_SECTION = "clawc::skill::missing_section" (Skill, Warning, Input)
            "A SPEC-0023 skill (it has a Tool Discovery section, or every markdown skill under `--strict`) lacks a required section: Title, Purpose, Tool Discovery, Execution or Validation."
            "skill \"git-pr\" has no Validation section";
        BAD_TIER = "clawc::skill::bad_tier" (Skill, Warning, Input)
            "An agent's `CLAUDEOPS_TIER` is not 1, 2 or 3 (the agent is treated as tier 1), or a skill's Tier Requirement names no tier clawc can read (the skill is held back)."
            "CLAUDEOPS_TIER \"high\" is not 1, 2 or 3; the agent is treated as tier 1";
        NO_TOOL = "clawc::skill::no_tool" (Skill, Error, Input)
            "No candidate of a skill's Tool Discovery list is in the agent's tool inventory (its granted tools and the CLIs of its image), and the skill is not held back by its tier."
            "[skill:container-health] ERROR: No suitable tool found for Container Health";
    }

    /// `crate::registry::codes`.
    mod registry {
        FEED_COLLISION = "clawc::register::feed_collision" (Register, Error, Input)
            "Two services declare a feed of the same name (feed names are global across the pod)."
            "feed name \"shared\" is declared by both \"alpha\" and \"zeta\"";
    }

    /// `crate::grant::codes`.
    mod grant {
        UNKNOWN_TOOL_SERVICE = "clawc::grant::unknown_tool_service" (Grant, Error, Input)
            "A tool policy names a service that is not described or declares no tools."
            "service \"trader\": tools[0] references unknown tool service \"tradng-api\"";
        UNKNOWN_TOOL = "clawc::grant::unknown_tool" (Grant, Error, Input)
            "A tool policy allows a tool its service does not declare."
            "service \"trader\": tool policy for \"trading-api\" references unknown tool \"excute_trade\"";
        UNKNOWN_FEED = "clawc::grant::unknown_feed" (Grant, Error, Input)
            "An agent subscribes to a feed no descriptor declares."
            "service \"trader\": feed \"prices\" was not found in the descriptor registry";
        MEMORY_TARGET = "clawc::grant::memory_target" (Grant, Error, Input)
            "A memory grant names a service with no descriptor or no memory capability."
            "service \"trader\": memory target \"notes\" does not declare a memory capability";
        REQUIRES_CLLAMA = "clawc::grant::requires_cllama" (Grant, Error, Input)
            "Memory on a service without `cllama`: memory is mediated-only (tools on such a service run natively)."
            "add `cllama: passthrough` to this service's x-claw";
        PROVIDER_IS_AGENT = "clawc::grant::provider_is_agent" (Grant, Either, Input)
            "A service whose only x-claw key is `describe-file` inherits grants from the pod's `*-defaults`: as in Clawdapus, any service with x-claw is an agent. An error when it has no cllama proxy (Clawdapus refuses it too), else a warning (it compiles as an agent)."
            "service \"api\" is an agent because it has x-claw (only describe-file), so it inherits the pod's tools-defaults, and it has no cllama proxy to run them through";
        AUTH_ENV = "clawc::grant::auth_env" (Grant, Error, Input)
            "A provider's auth needs a variable the consuming service's environment does not give."
            "service env has no value for \"API_TOKEN\" (required by descriptor auth.env for bearer auth)";
        TOO_MANY_GRANTS = "clawc::grant::too_many_grants" (Grant, Error, Input)
            "Over 1,000,000 granted tools in the pod, each replica counted."
            "`allow: all` on a 10,000-tool service for 200 agents";
    }

    /// `crate::project::native::codes`.
    mod project {
        NO_RUNNER = "clawc::project::no_runner" (Project, Error, Input)
            "A native agent with tools whose runner clawc does not know (no `claw.type`, `CLAW_TYPE` or `--runner`, or a name it does not know)."
            "service \"coder\": its tools run natively, but clawc does not know its runner";
        RUNNER_CANNOT_FILTER = "clawc::project::runner_cannot_filter" (Project, Error, Input)
            "A native agent is granted some, not all, of a service's tools, and its runner has no per-tool filter to hold it to them."
            "service \"coder\": picoclaw cannot filter tools per server, and the agent is granted 2 of the 5 tools of \"github\"";
        HTTP_ONLY_TOOL = "clawc::project::http_only_tool" (Project, Error, Input)
            "A native agent is granted a tool its service offers only over HTTP (no MCP endpoint): a runner loads MCP servers, not HTTP routes."
            "service \"coder\": tool \"trading-api.get_quote\" is an HTTP route; a native runner can only load MCP tools";
        BAD_SERVER_NAME = "clawc::project::bad_server_name" (Project, Error, Input)
            "A granted service's name cannot name a runner's MCP server (a `.`, `__`, or not starting with a letter), or two collide once the runner normalises them."
            "service \"coder\": hermes names servers \"my-api\" and \"my_api\" both \"my_api\"";
        BAD_MODEL_NAME = "clawc::project::bad_model_name" (Project, Error, Input)
            "The name a runner's model would see for a granted tool is too long for the provider, holds characters it refuses, or collides with another granted tool's."
            "service \"coder\": codex would show tool \"api.get.quote\" as \"mcp__api__get_quote\", as it shows \"api.get_quote\"";
        NEEDS_INLINE_SECRET = "clawc::project::needs_inline_secret" (Project, Warning, Input)
            "A runner that cannot read environment variables needs a token: the file holds a `${VAR}` placeholder until it is compiled with `--secrets inline`."
            "service \"bot\": nanobot cannot read API_TOKEN from its environment; compile with --secrets inline at deploy time";
    }

    /// `crate::secrets::codes`.
    mod secrets {
        LEAK = "clawc::secrets::leak" (Secrets, Error, Input)
            "A resolved token value would be written outside the auth of tools.json, feeds.json or memory.json; nothing is written. It points at the input the value is found in (`.env` when a placeholder carries it), as `file:line:column` without the line's text; with no position when the value comes from the process environment alone."
            "the secret value of API_TOKEN would be written to `trader/AGENTS.md`";
        TOO_SHORT = "clawc::secrets::too_short_to_scan" (Secrets, Warning, Input, "it is about a value, which is never shown")
            "A token value too short to scan artifacts for without false hits."
            "the value of PIN is shorter than 8 characters, so artifacts are not scanned for it";
        COMMITTED = "clawc::secrets::committed_secret" (Secrets, Error, Check, "the committed file is not an input; the help gives the line and column of the first hit")
            "`--check`: the committed tree holds the literal value of a token (never shown)."
            "`trader/tools.json` holds the literal value of API_TOKEN";
    }

    /// `crate::output::write::codes`.
    mod output {
        IO = "clawc::output::io" (Output, Error, Environment)
            "The output directory could not be written (or, with `--check`, read)."
            "cannot write `.claw-compiled/trader/tools.json`: No space left on device";
        INVALID_NAME = "clawc::output::invalid_name" (Output, Error, Environment)
            "An output path built from a name would hold `.`, `..`, `/` or an empty part."
            "refusing to write the output path \"../x\"";
        NOT_A_DIRECTORY = "clawc::output::not_a_directory" (Output, Error, Environment)
            "The output directory, or one on the way, is a symlink or a file; clawc never writes through it."
            "the output directory `.claw-compiled` is a symlink";
        NOT_OWNED = "clawc::output::not_owned" (Output, Error, Environment)
            "A file or directory clawc would replace that clawc did not write."
            "`.claw-compiled/trader/tools.json` is a file that clawc did not write; refusing to replace it";
        LOCK_UNREADABLE = "clawc::output::lock_unreadable" (Output, Error, Environment)
            "`clawc.lock` cannot be read to prove clawc wrote what it would replace."
            "`.claw-compiled` is a directory clawc would replace, and `clawc.lock` there cannot be read to prove that clawc wrote it";
        BUSY = "clawc::output::busy" (Output, Error, Environment)
            "Another clawc kept writing the same output directory for too long."
            "another clawc has been writing `.claw-compiled` for 120 s";
        INTERRUPTED = "clawc::output::interrupted" (Output, Error, Environment)
            "SIGINT, SIGTERM or SIGHUP before the new tree was committed; the previous tree is unchanged."
            "interrupted before the new tree was committed; the previous tree is unchanged";
        KEPT = "clawc::output::kept_modified" (Output, Warning, Input)
            "A file clawc no longer writes was edited by hand, so it is left in place."
            "left `trader/notes.md` in place: clawc no longer writes it, but it is not the file clawc wrote";
    }

    /// `crate::access::codes`.
    mod access {
        UNKNOWN_AGENT = "clawc::access::unknown_agent" (Access, Error, Input, "it is about a command-line argument")
            "`explain` names an agent the pod does not have."
            "\"tradr\" is not an agent of this pod";
        UNKNOWN_TARGET = "clawc::access::unknown_tool" (Access, Error, Input, "it is about a command-line argument")
            "`explain` or `who-can` names a tool or tool service the pod does not have."
            "\"trading-api.excute_trade\" is not a tool of this pod";
    }

    /// `crate::merge::codes`.
    mod merge {
        UNKNOWN_FILE = "clawc::merge::unknown_file" (Merge, Error, Input)
            "The fragment's path ends with no runner file clawc writes (or with one that several runners write) and `--runner` does not decide; the message lists the files."
            "`out/x.json` is not a runner file clawc writes; pass --runner NAME";
        UNKNOWN_RUNNER = "clawc::merge::unknown_runner" (Merge, Error, Input)
            "`--runner` names no runner clawc knows."
            "--runner codx";
        NOT_A_FILE = "clawc::merge::not_a_file" (Merge, Error, Input)
            "FRAGMENT or TARGET is a symlink, directory, FIFO, socket or device; merge reads and replaces regular files only."
            "`~/.codex/config.toml` is a symlink; merge into the file it points to";
        MISSING = "clawc::merge::missing_fragment" (Merge, Error, Input)
            "FRAGMENT does not exist."
            "`runners/a/home/.codex/config.toml` does not exist";
        TOO_LARGE = "clawc::merge::too_large" (Merge, Error, Input)
            "FRAGMENT or TARGET is over 8 MiB, an object or list in it holds over 10,000 entries, or the merge would make over 1,000 edits."
            "`config.toml` is at least 8388609 bytes; the limit is 8388608";
        INVALID = "clawc::merge::invalid_file" (Merge, Error, Input)
            "FRAGMENT or TARGET is not UTF-8 text in its format (JSON, JSON5, TOML, YAML), or an object holds a key twice."
            "`config.toml` is not valid TOML: invalid table header";
        TOO_DEEP = "clawc::merge::too_deep" (Merge, Error, Input)
            "FRAGMENT or TARGET nests deeper than 64 levels."
            "`settings.json` nests deeper than 64 levels";
        TYPE_CONFLICT = "clawc::merge::type_conflict" (Merge, Error, Input)
            "A value clawc owns, or one on the way to it, has another type in one file than merge needs (e.g. `mcpServers` is a list)."
            "`mcpServers` in `~/.claude.json` is a list, not an object";
        CANNOT_EDIT = "clawc::merge::cannot_edit" (Merge, Error, Input)
            "The edited text would not read back as the merged document (a layout merge cannot edit in place); nothing is written."
            "the merged `config.toml` would not read back as the merge";
        KEPT = "clawc::merge::kept_value" (Merge, Warning, Input)
            "The fragment has a key clawc does not own with another value than TARGET; TARGET's is kept (the value is not shown)."
            "kept your value of `mcp.timeout` (the fragment has another)";
        COMMENTS_LOST = "clawc::merge::comments_lost" (Merge, Warning, Input)
            "A YAML layout line editing cannot change was written again in block style, and the comments in it are lost."
            "3 comments of `config.yaml` are lost: `mcp_servers` is a flow mapping";
        WOULD_CHANGE = "clawc::merge::would_change" (Merge, Error, Check)
            "`--check`: merging would change TARGET (the diff is printed)."
            "`~/.codex/config.toml` would change";
        IO = "clawc::merge::io" (Merge, Error, Environment)
            "FRAGMENT or TARGET could not be read, or TARGET could not be written."
            "cannot write `~/.codex/config.toml`: Permission denied";
    }

    /// `crate::compat::codes`.
    mod compat {
        BAD_SOURCE = "clawc::compat::bad_source" (Compat, Error, Input)
            "OLD or NEW is not a source compat can read: empty, `image:` without a reference, or a `git:REV:PATH` with an empty or option-like revision, or a path that is absolute or has `..`."
            "git:HEAD:../secrets.json: the path must stay inside the repository";
        GIT_OBJECT = "clawc::compat::git_object" (Compat, Error, Input)
            "`git:REV:PATH`: the current directory is not in a git repository, the revision does not exist, or PATH at it is not a file of at most 8 MiB."
            "git:v1.4.0:svc/api.json: no such file at revision v1.4.0";
        GIT = "clawc::compat::git" (Compat, Error, Environment)
            "`git:REV:PATH`: git could not be run."
            "git:HEAD:svc/api.json: cannot run git: No such file or directory";
        NO_DESCRIPTOR = "clawc::compat::no_descriptor" (Compat, Error, Input)
            "OLD or NEW loads but describes no service: a build context or image without a descriptor or snapshot."
            "`svc/api` has no descriptor: nothing to compare";
        SERVICE = "clawc::compat::service" (Compat, Error, Input)
            "`--pod`: the service under test cannot be told (no service, or several, has OLD or NEW as its describe-file or --descriptor), or `--service` names a service the pod lacks."
            "claw-pod.yml: no service's describe-file or --descriptor is old.json or new.json";
        ACCEPT_FILE = "clawc::compat::accept_file" (Compat, Error, Input)
            "The `--accept` file is not a YAML list of entries, each with a `reason` and either a `fingerprint` or a `rule` and `tool`, or names a rule the catalogue lacks."
            "entry 2: `reason` is required";
        STALE_ACCEPT = "clawc::compat::stale_accept" (Compat, Warning, Input)
            "An `--accept` entry matches no finding: remove it so the file does not rot (it counts as a WARN for `--fail-on`)."
            "accept entry for TOOL_REMOVED on `legacy_quote` matches no finding";
        TOO_COMPLEX = "clawc::compat::too_complex" (Compat, Warning, Input)
            "A schema nests deeper than 64 levels once `$ref`s are followed, or comparing it visits over 100,000 schema nodes: the rest is reported as `*_UNCLASSIFIED` (WARN), never passed silently."
            "tool \"deep\": inputSchema: the schema nests deeper than 64 levels once $refs are followed";
    }
}

/// `docs/diagnostics.md`: every code, grouped by pass.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Diagnostic codes\n\n\
         <!-- Generated from src/diag/catalogue.rs; do not edit. Regenerate with\n     \
         `UPDATE_GOLDEN=1 cargo test --test it diagnostics_doc`. -->\n\n\
         Every diagnostic clawc prints has one of these codes. The codes are stable: scripts\n\
         may match on them. *Raised* says whether the code is an error, a warning, or either\n\
         (the explanation says when). *Exit* is the exit code an error of that code leads to:\n\
         2 for invalid inputs, 3 for an environment failure (3 wins when both occur), 1 for a\n\
         `--check` finding; a warning alone never fails a run. A diagnostic about a place in\n\
         an input file has its file, line and column. *No file position* marks the codes that\n\
         never have one, and says why; a diagnostic of another code about something that is\n\
         not an input file (an output, an image, a missing file) names it in its message.\n\
         `clawc explain-code CODE` prints one row. See [the guide](guide.md#diagnostics) for\n\
         how diagnostics are printed.\n",
    );
    for pass in Pass::ALL {
        let codes: Vec<&Info> = ALL.iter().map(|c| c.info()).filter(|i| i.pass == pass).collect();
        if codes.is_empty() {
            continue;
        }
        out.push_str(&format!("\n## {}\n\n{}\n\n", pass.name(), pass.about()));
        out.push_str("| code | raised | exit | explanation | example |\n|---|---|---|---|---|\n");
        for i in codes {
            let raised = match i.raised {
                Raised::Error => "error",
                Raised::Warning => "warning",
                Raised::Either => "error or warning",
            };
            let exit = if i.raised == Raised::Warning { "—".to_string() } else { i.exit.code().to_string() };
            let explanation = match i.unlocated() {
                Some(why) => format!("{} *No file position: {why}.*", i.explanation),
                None => i.explanation.to_string(),
            };
            out.push_str(&format!("| `{}` | {raised} | {exit} | {} | {} |\n", i.code, cell(&explanation), code_cell(i.example)));
        }
    }
    out
}

/// A table cell of prose: `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A table cell holding an example as code (backticks inside are doubled around).
fn code_cell(s: &str) -> String {
    let s = s.replace('|', "\\|");
    if s.contains('`') { format!("`` {s} ``") } else { format!("`{s}`") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = BTreeSet::new();
        for c in ALL {
            assert!(seen.insert(c.as_str()), "{c} is in the catalogue twice");
            let rest = c.as_str().strip_prefix("clawc::").unwrap_or_else(|| panic!("{c}: no clawc:: prefix"));
            let (_, name) = rest.split_once("::").unwrap_or_else(|| panic!("{c}: not clawc::<pass>::<name>"));
            assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{c}");
            assert!(!c.info().explanation.is_empty() && !c.info().example.is_empty(), "{c}: document it");
            assert_eq!(Code::find(c.as_str()), Some(*c));
        }
    }

    #[test]
    fn codes_without_a_file_position_say_why() {
        assert_eq!(access::UNKNOWN_AGENT.info().unlocated(), Some("it is about a command-line argument"));
        assert!(secrets::COMMITTED.info().unlocated().is_some_and(|w| w.contains("line and column")));
        assert_eq!(grant::AUTH_ENV.info().unlocated(), None);
        assert!(markdown().contains("*No file position: it is about a value, which is never shown.*"));
    }

    #[test]
    fn the_exit_class_is_the_catalogues() {
        assert!(source::IO.is_environment_failure());
        assert!(image::NOT_FOUND.is_environment_failure());
        assert!(!pod::NOT_A_POD.is_environment_failure());
        assert_eq!(secrets::COMMITTED.exit_code(), 1);
        assert_eq!(
            format!("{:?} {}", grant::UNKNOWN_TOOL, grant::UNKNOWN_TOOL),
            "\"clawc::grant::unknown_tool\" clawc::grant::unknown_tool"
        );
    }
}
