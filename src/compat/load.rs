//! OLD and NEW: what they name, and loading them through the describe stage
//! ([`crate::inspect`], exactly as `compile` and `clawc describe` load a descriptor) —
//! a descriptor file, a `.claw-tools.json` snapshot, a build context, `image:REF`, or
//! `git:REV:PATH`, a file at a revision of the current repository.
//!
//! `git:REV:PATH` never goes through a shell: git is run with an argument vector, the
//! revision is resolved with `--end-of-options` (so `-`-led text is refused before, and
//! never read as an option), PATH must be a plain relative path, and the blob is read
//! through a reader that stops at the input size limit whatever git says. The file (and
//! the skill file it names, when the revision has it) is written under a private
//! temporary directory mirroring the repository, and described from there; diagnostics
//! name it `git:REV:PATH`.

use super::codes;
use super::model::Release;
use crate::compile::Options;
use crate::describe::Described;
use crate::diag::{Diagnostic, Diagnostics};
use crate::inspect::{Target, inspect};
use crate::sourcemap::SourceMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What OLD or NEW names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A descriptor file, a `.claw-tools.json` snapshot, or a build context directory.
    Path(PathBuf),
    /// `image:REF`, read through the `--images` sources.
    Image(String),
    /// `git:REV:PATH`: PATH (relative to the repository's top) at revision REV.
    Git { rev: String, path: String },
}

impl Source {
    /// Reads a command-line argument.
    pub(crate) fn parse(arg: &str) -> Result<Source, Diagnostic> {
        let bad = |msg: String, help: &str| Err(Diagnostic::error(codes::BAD_SOURCE, msg).help(help.to_string()));
        if arg.is_empty() {
            return bad("an empty OLD or NEW".into(), "name a descriptor file, a snapshot, a build context, image:REF or git:REV:PATH");
        }
        if let Some(r) = arg.strip_prefix("image:") {
            if r.trim().is_empty() {
                return bad("`image:` without a reference".into(), "write image:REPOSITORY:TAG, e.g. image:trading-api:1.4");
            }
            return Ok(Source::Image(r.trim().to_string()));
        }
        let Some(rest) = arg.strip_prefix("git:") else { return Ok(Source::Path(PathBuf::from(arg))) };
        let shown = crate::diag::printable(arg);
        let Some((rev, path)) = rest.split_once(':') else {
            return bad(format!("`{shown}` is not git:REV:PATH"), "write git:REV:PATH, e.g. git:origin/main:svc/.claw-describe.json");
        };
        if rev.is_empty() || rev.starts_with('-') || rev.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return bad(
                format!("`{shown}`: the revision must be a non-empty revision name that does not start with `-`"),
                "write git:REV:PATH, e.g. git:HEAD~1:svc/.claw-describe.json",
            );
        }
        let path = path.trim_start_matches("./");
        if !crate::disk::is_safe_relative(path) || path.chars().any(char::is_control) {
            return bad(
                format!("`{shown}`: the path must be relative to the repository's top and stay inside it (no `..`, no leading `/`)"),
                "write the path as git shows it, e.g. git:HEAD:svc/.claw-describe.json",
            );
        }
        Ok(Source::Git { rev: rev.to_string(), path: path.to_string() })
    }
}

/// The image label that gives an image's release when its descriptor has no `release`.
const VERSION_LABEL: &str = "org.opencontainers.image.version";

/// A loaded side.
pub(crate) struct Loaded {
    pub release: Release,
    /// What the describe stage made of it (its descriptor's file is in `sources`).
    pub described: Described,
    pub sources: SourceMap,
    /// Warnings of the describe stage.
    pub diagnostics: Diagnostics,
    /// Names to show instead of temporary paths (`git:` sides).
    pub renames: Vec<(String, String)>,
    /// The file or directory on disk this side is (for finding the service in a pod):
    /// the path itself, or for `git:` the same path in the work tree.
    pub on_disk: Option<PathBuf>,
    /// The temporary copy of a `git:` side, removed when the side is dropped.
    _tmp: Option<tempfile::TempDir>,
}

impl Loaded {
    /// Ends the side without freeing it (the process is about to exit): only the temporary
    /// copy of a `git:` side is removed.
    pub(crate) fn leak(self) {
        let Loaded { release, described, sources, diagnostics, _tmp, .. } = self;
        drop(_tmp);
        std::mem::forget((release, described, sources, diagnostics));
    }
}

/// A side that did not load: its diagnostics (exit 2 or 3).
pub(crate) struct Failed {
    pub diagnostics: Diagnostics,
    pub sources: SourceMap,
    pub renames: Vec<(String, String)>,
}

impl Failed {
    fn one(d: Diagnostic) -> Failed {
        Failed { diagnostics: Diagnostics(vec![d]), sources: SourceMap::default(), renames: Vec::new() }
    }

    pub(crate) fn exit_code(&self) -> i32 {
        crate::compile::exit_code(&self.diagnostics).max(2)
    }
}

/// Loads NEW and OLD at once (each is a whole describe stage), OLD under NEW's service
/// name (`service`, else the name NEW is described as). OLD is loaded under the name NEW
/// would get from its path or reference; in the rare case the describe stage names NEW
/// otherwise, OLD is loaded again under that name, so the result is always that of
/// loading NEW, then OLD.
pub(crate) fn load_pair(old: &Source, new: &Source, service: Option<&str>, opts: &Options) -> Result<(Loaded, Loaded), Failed> {
    let guess = service.map(str::to_string).or_else(|| default_name(new));
    let (new_side, old_side) = std::thread::scope(|s| {
        let old_side = s.spawn(|| guess.as_deref().map(|name| load(old, Some(name), opts)));
        let new_side = load(new, service, opts);
        (new_side, old_side.join().ok().flatten())
    });
    let new_side = new_side?;
    let old_side = match old_side {
        Some(o) if guess.as_deref() == Some(new_side.described.name.as_str()) => o?,
        _ => load(old, Some(&new_side.described.name.clone()), opts)?,
    };
    Ok((old_side, new_side))
}

/// The service name the describe stage gives a source without `--service`, when it can
/// be known before reading it.
fn default_name(source: &Source) -> Option<String> {
    match source {
        Source::Path(p) => Some(crate::inspect::default_name(&Target::Path(p.clone()))),
        Source::Image(r) => Some(crate::inspect::default_name(&Target::Image(r.clone()))),
        Source::Git { .. } => None,
    }
}

/// Loads `source` as the service `name` (default: what the describe stage names it).
pub(crate) fn load(source: &Source, name: Option<&str>, opts: &Options) -> Result<Loaded, Failed> {
    let (target, tmp, renames, shown, snapshot_bytes, on_disk) = match source {
        Source::Path(p) => {
            let on_disk = p.canonicalize().ok();
            (Target::Path(p.clone()), None, Vec::new(), p.display().to_string(), None, on_disk)
        }
        Source::Image(r) => (Target::Image(r.clone()), None, Vec::new(), format!("image:{r}"), None, None),
        Source::Git { rev, path } => {
            let (tmp, file, top, bytes) = git_checkout(rev, path)?;
            let prefix = format!("{}/", tmp.path().display());
            let renames = vec![(prefix, format!("git:{rev}:"))];
            let on_disk = top.join(path).canonicalize().ok();
            (Target::Path(file), Some(tmp), renames, format!("git:{rev}:{path}"), Some(bytes), on_disk)
        }
    };
    let out = inspect(&target, name, opts);
    let Some(mut described) = out.described else {
        return Err(Failed { diagnostics: out.diagnostics, sources: out.sources, renames });
    };
    let Some(sd) = described.descriptor.as_mut() else {
        let d =
            Diagnostic::error(codes::NO_DESCRIPTOR, format!("`{}` has no descriptor: nothing to compare", crate::diag::printable(&shown)))
                .help("point at the descriptor file, a .claw-tools.json snapshot, or a build context or image that ships one");
        let mut diagnostics = out.diagnostics;
        diagnostics.push(d);
        return Err(Failed { diagnostics, sources: out.sources, renames });
    };
    // A converted snapshot: its text as written keeps outputSchema and title.
    let converted = sd.snapshot.is_some() && out.sources.name(sd.file).ends_with(" (as descriptor)");
    let snapshot = if converted {
        let text = match (&snapshot_bytes, source, &out.image) {
            (Some(b), _, _) => String::from_utf8(b.clone()).ok(),
            (None, Source::Path(p), _) => crate::source::fs::read_text(None, p, &shown).ok(),
            // Baked in an image: the file as read out of it.
            (None, Source::Image(_), Some(facts)) => match facts.files.get(&facts.tools_path().0) {
                Some(crate::image::FileRead::Text(t)) => Some(t.clone()),
                _ => None,
            },
            _ => None,
        };
        text.map(|t| (shown.clone(), t))
    } else {
        None
    };
    let file = out.sources.get(sd.file);
    let mut release = Release::new(&described.name, sd, (&file.name, file.text.clone()), snapshot);
    for (from, to) in &renames {
        release.file = release.file.replace(from, to);
    }
    // An image's release, when its descriptor names none: the OCI version label.
    if release.release.is_none() {
        release.release = out.image.as_ref().and_then(|f| f.label(VERSION_LABEL)).map(str::to_string);
    }
    Ok(Loaded { release, described, sources: out.sources, diagnostics: out.diagnostics, renames, on_disk, _tmp: tmp })
}

/// Runs git with `args` in the current directory; stdout up to `limit` bytes (`None`
/// when it had more), stderr dropped.
fn git(args: &[&str], limit: u64) -> Result<(bool, Option<Vec<u8>>), std::io::Error> {
    let mut child = Command::new("git")
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut out = Vec::new();
    let read = child.stdout.take().map_or(Ok(0), |s| s.take(limit + 1).read_to_end(&mut out));
    if read.is_err() || out.len() as u64 > limit {
        let _ = child.kill();
        let _ = child.wait();
        return Ok((false, None));
    }
    let status = child.wait()?;
    Ok((status.success(), Some(out)))
}

/// `git:REV:PATH` → a temporary directory holding PATH (and the skill file its
/// descriptor names, when the revision has it), the file's path there, the repository's
/// top, and the file's bytes.
fn git_checkout(rev: &str, path: &str) -> Result<(tempfile::TempDir, PathBuf, PathBuf, Vec<u8>), Failed> {
    let shown = crate::diag::printable(&format!("git:{rev}:{path}"));
    let env_failure = |e: &std::io::Error| {
        Failed::one(Diagnostic::error(codes::GIT, format!("{shown}: cannot run git: {e}")).help("install git, or compare files on disk"))
    };
    let input =
        |msg: String, help: &str| Failed::one(Diagnostic::error(codes::GIT_OBJECT, format!("{shown}: {msg}")).help(help.to_string()));
    let small = 64 * 1024;
    let top = match git(&["rev-parse", "--show-toplevel"], small).map_err(|e| env_failure(&e))? {
        (true, Some(out)) => PathBuf::from(String::from_utf8_lossy(&out).trim_end_matches(['\n', '\r'])),
        _ => return Err(input("the current directory is not in a git repository".into(), "run clawc compat inside the repository")),
    };
    let spec = format!("{rev}^{{commit}}");
    let commit = match git(&["rev-parse", "--verify", "--quiet", "--end-of-options", &spec], small).map_err(|e| env_failure(&e))? {
        (true, Some(out)) => String::from_utf8_lossy(&out).trim().to_string(),
        _ => {
            return Err(input(format!("no revision `{}` in this repository", crate::diag::printable(rev)), "name a branch, tag or commit"));
        }
    };
    if commit.is_empty() || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(input(format!("no revision `{}` in this repository", crate::diag::printable(rev)), "name a branch, tag or commit"));
    }
    let read_blob = |p: &str| -> Result<Vec<u8>, Failed> {
        let object = format!("{commit}:{p}");
        let kind = match git(&["cat-file", "-t", &object], small).map_err(|e| env_failure(&e))? {
            (true, Some(out)) => String::from_utf8_lossy(&out).trim().to_string(),
            _ => return Err(input(format!("no file `{p}` at revision {rev}"), "the path is relative to the repository's top")),
        };
        if kind != "blob" {
            return Err(input(format!("`{p}` at revision {rev} is a {kind}, not a file"), "name the descriptor or snapshot file itself"));
        }
        let limit = crate::source::fs::MAX_INPUT_BYTES;
        match git(&["cat-file", "blob", &object], limit).map_err(|e| env_failure(&e))? {
            (true, Some(bytes)) => Ok(bytes),
            (_, None) => Err(input(format!("`{p}` at revision {rev} is over {limit} bytes"), "inputs this large are not descriptors")),
            (false, Some(_)) => Err(input(format!("git could not read `{p}` at revision {rev}"), "check the revision and path")),
        }
    };
    let bytes = read_blob(path)?;
    let tmp = tempfile::Builder::new().prefix("clawc-compat-").tempdir().map_err(|e| {
        Failed::one(
            Diagnostic::error(crate::diag::catalogue::source::IO, format!("cannot create a temporary directory: {e}")).help("check TMPDIR"),
        )
    })?;
    let write = |rel: &str, b: &[u8]| -> Result<PathBuf, Failed> {
        let dst = tmp.path().join(rel);
        let made = dst.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&dst, b));
        made.map(|()| dst).map_err(|e| {
            Failed::one(
                Diagnostic::error(crate::diag::catalogue::source::IO, format!("cannot write a temporary copy: {e}")).help("check TMPDIR"),
            )
        })
    };
    let file = write(path, &bytes)?;
    // The skill file the descriptor names, beside it at the same revision.
    let skill = serde_json::from_slice::<serde_json::Value>(&bytes).ok().and_then(|v| {
        v.as_object()
            .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case("skill")).and_then(|(_, s)| s.as_str().map(str::to_string)))
    });
    if let Some(skill) = skill.map(|s| s.trim().trim_start_matches("./").to_string()).filter(|s| crate::disk::is_safe_relative(s)) {
        let dir = Path::new(path).parent().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
        let rel = if dir.is_empty() { skill } else { format!("{dir}/{skill}") };
        if let Ok(b) = read_blob(&rel) {
            write(&rel, &b)?;
        }
    }
    Ok((tmp, file, top, bytes))
}

#[cfg(test)]
mod tests {
    use super::Source;

    #[test]
    fn sources_are_read_without_surprises() {
        assert_eq!(Source::parse("a/b.json").unwrap(), Source::Path("a/b.json".into()));
        assert_eq!(Source::parse("image:api:1.4").unwrap(), Source::Image("api:1.4".into()));
        assert_eq!(Source::parse("git:HEAD~1:svc/api.json").unwrap(), Source::Git { rev: "HEAD~1".into(), path: "svc/api.json".into() });
        assert_eq!(Source::parse("git:v1:./x.json").unwrap(), Source::Git { rev: "v1".into(), path: "x.json".into() });
        for bad in [
            "",
            "image:",
            "git:HEAD",
            "git::x.json",
            "git:--output=/tmp/x:a.json",
            "git:HEAD:../x.json",
            "git:HEAD:/etc/passwd",
            "git:HEAD:a/../../b",
            "git:a b:x.json",
        ] {
            assert!(Source::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
