//! File reading for inputs: size limits, UTF-8, containment of paths that come from a
//! descriptor or a Dockerfile label, and pod-relative names for diagnostics/artifacts.

use super::diags;
use crate::diag::Diagnostic;
use std::path::{Component, Path, PathBuf};

pub(crate) use crate::disk::MAX_INPUT_BYTES;

/// Why a read failed: a bad input (exit 2) or the environment (exit 3).
pub(crate) enum ReadError {
    Missing,
    Invalid(Diagnostic),
    Io(Diagnostic),
}

/// The directory every input must resolve inside (after following symlinks): by default
/// the git work tree that holds the pod, else the pod's directory; `--root` sets it. In CI
/// the pod is as untrusted as everything else, so `describe-file: /home/runner/.ssh/id_rsa`
/// or a committed symlink to `/proc/self/environ` is refused before it is opened.
#[derive(Clone, Debug)]
pub(crate) struct InputRoot {
    real: PathBuf,
}

impl InputRoot {
    /// `dir`, which must exist.
    pub(crate) fn new(dir: &Path) -> std::io::Result<Self> {
        Ok(InputRoot { real: dir.canonicalize()? })
    }

    /// A root already resolved (by [`InputRoot::discover`], earlier in the same command).
    pub(crate) fn found(real: PathBuf) -> Self {
        InputRoot { real }
    }

    /// The git work tree holding `pod_dir` (the nearest ancestor with a `.git` entry), else
    /// `pod_dir` itself.
    pub(crate) fn discover(pod_dir: &Path) -> Self {
        Self::discover_real(&pod_dir.canonicalize().unwrap_or_else(|_| pod_dir.to_path_buf()))
    }

    /// [`InputRoot::discover`] from a directory whose symlinks the caller has resolved.
    pub(crate) fn discover_real(real: &Path) -> Self {
        let top = real.ancestors().find(|d| d.join(".git").symlink_metadata().is_ok()).unwrap_or(real).to_path_buf();
        InputRoot { real: top }
    }

    /// The directory, symlinks resolved.
    pub(crate) fn path(&self) -> &Path {
        &self.real
    }

    /// Whether `path` is inside the root and already its own canonical form, judged by
    /// `lstat`s alone: below the root (itself canonical) it has only plain names, and
    /// every directory on the way is a directory, not a symlink. The file itself is the
    /// caller's to judge. `false` only means "not shown": `canonicalize` decides then.
    fn plainly_holds(&self, path: &Path) -> bool {
        use crate::disk::{Dirs, Found, Kind, inspect_in, is_safe_relative};
        // Spelled as its components (no `.`, `//` or trailing `/`, which `lstat` would
        // follow through a last symlink), and below the root by plain names only.
        if path.components().collect::<PathBuf>().as_os_str() != path.as_os_str() {
            return false;
        }
        let Some(rest) = path.strip_prefix(&self.real).ok().and_then(Path::to_str).filter(|r| is_safe_relative(r)) else {
            return false;
        };
        // The directories are not remembered between inputs: the window in which one
        // swapped for a symlink goes unseen stays what `canonicalize`'s was, one read.
        rest.rsplit_once('/')
            .is_none_or(|(dir, _)| matches!(inspect_in(&self.real, dir, &mut Dirs::default()), Ok(Found::Other(Kind::Directory))))
    }

    /// Whether `path` (absolute) resolves inside the root: its longest existing ancestor
    /// with symlinks resolved, then the rest lexically (a path that does not exist yet,
    /// such as an output directory, is judged by where it would be created).
    pub(crate) fn holds(&self, path: &Path) -> bool {
        let path = normalize(path);
        let mut existing = path.as_path();
        let mut rest = Vec::new();
        loop {
            if let Ok(real) = existing.canonicalize() {
                let full = rest.iter().rev().fold(real, |p, c| p.join(c));
                return full.starts_with(&self.real);
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return false,
            }
        }
    }
}

/// Reads a UTF-8 text file of at most [`MAX_INPUT_BYTES`]. `name` is how diagnostics call
/// it. With a `root`, the path must resolve inside it. Only a regular file is read (a
/// FIFO, a device or `/dev/zero` is refused by type, never opened for reading), through a
/// reader that stops at the limit whatever size the file claims.
pub(crate) fn read_text(root: Option<&InputRoot>, path: &Path, name: &str) -> Result<String, ReadError> {
    read_text_limited(root, path, name, MAX_INPUT_BYTES)
}

/// [`read_text`] with a smaller size limit (`clawc.toml`).
pub(crate) fn read_text_limited(root: Option<&InputRoot>, path: &Path, name: &str, limit: u64) -> Result<String, ReadError> {
    read_text_stat(root, path, name, limit).map(|(text, _)| text)
}

/// [`read_text_limited`], with the `fstat` of what was read (when there was one).
pub(crate) fn read_text_stat(
    root: Option<&InputRoot>,
    path: &Path,
    name: &str,
    limit: u64,
) -> Result<(String, Option<std::fs::Metadata>), ReadError> {
    let (real, _) = resolve(root, path, name)?;
    let (bytes, meta) = read_regular(&real, name, limit)?;
    Ok((utf8(bytes, name)?, meta))
}

/// An input as `--check` sees it with a stat record at hand.
pub(crate) enum Seen {
    /// Its `lstat` (the file itself: the path is resolved first) satisfied the caller, so
    /// it was not read.
    Vouched(std::fs::Metadata),
    /// Read, with the `fstat` of what was read.
    Read(String, Option<std::fs::Metadata>),
}

/// [`read_text`], unless `vouch` accepts the `lstat` of the resolved file: the path is
/// confined to `root` (symlinks resolved) either way, so a vouched input is still one
/// inside the root.
pub(crate) fn read_text_unless(
    root: Option<&InputRoot>,
    path: &Path,
    name: &str,
    vouch: impl FnOnce(&std::fs::Metadata) -> bool,
) -> Result<Seen, ReadError> {
    let (real, seen) = resolve(root, path, name)?;
    if let Some(meta) = seen.or_else(|| std::fs::symlink_metadata(&real).ok())
        && meta.is_file()
        && vouch(&meta)
    {
        return Ok(Seen::Vouched(meta));
    }
    let (bytes, meta) = read_regular(&real, name, MAX_INPUT_BYTES)?;
    Ok(Seen::Read(utf8(bytes, name)?, meta))
}

/// `path` with symlinks resolved, if it is inside `root`.
/// With the path's `lstat` when that is the `lstat` of the file itself (no symlink on
/// the way), which saves the caller another.
fn resolve(root: Option<&InputRoot>, path: &Path, name: &str) -> Result<(PathBuf, Option<std::fs::Metadata>), ReadError> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        let d = Diagnostic::error(diags::INVALID_PATH, format!("the path of `{}` contains a NUL byte", name.replace('\0', "\\0")))
            .help("a file name cannot contain NUL; fix the path");
        return Err(ReadError::Invalid(d));
    }
    // An absent file is absent however its path resolves: one `lstat` says so, where
    // `canonicalize` spends a `readlink` per component (a service's absent Dockerfile or
    // tools snapshot is looked for on every compile and every `--check`).
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        m => m.ok(),
    };
    // The common case, a file in a plain directory of the checkout, without a `readlink`
    // per component of its path (the root's own ones included) on every run.
    if let (Some(root), Some(m)) = (root, &meta)
        && !m.is_symlink()
        && root.plainly_holds(path)
    {
        return Ok((path.to_path_buf(), meta));
    }
    let real = match path.canonicalize() {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let d = Diagnostic::error(diags::PATH_ESCAPE, format!("`{name}` is a symlink loop")).help("point at a real file");
            return Err(ReadError::Invalid(d));
        }
        Err(e) => return Err(ReadError::Io(io_error(name, &e))),
    };
    if let Some(root) = root
        && !real.starts_with(&root.real)
    {
        let d = Diagnostic::error(diags::PATH_ESCAPE, format!("`{name}` resolves outside the input root `{}`", root.real.display()))
            .help("inputs are read only inside the repository that holds the pod; move the file in, or widen the root with --root DIR");
        return Err(ReadError::Invalid(d));
    }
    Ok((real, None))
}

fn utf8(bytes: Vec<u8>, name: &str) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|e| {
        let d = Diagnostic::error(
            diags::NOT_UTF8,
            format!("`{name}` is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
        )
        .help("save the file as UTF-8");
        ReadError::Invalid(d)
    })
}

/// Reads `real` (a path without symlinks) if it is a regular file within the size limit.
fn read_regular(real: &Path, name: &str, limit: u64) -> Result<(Vec<u8>, Option<std::fs::Metadata>), ReadError> {
    use crate::disk::{Contents, read_regular_meta};
    let (found, meta) = read_regular_meta(real, limit, name).map_err(|e| ReadError::Io(io_error(name, &e)))?;
    match found {
        Contents::Bytes(b) => Ok((b, meta)),
        Contents::Missing => Err(ReadError::Missing),
        Contents::TooLarge(n) => Err(ReadError::Invalid(
            Diagnostic::error(diags::TOO_LARGE, format!("`{name}` is at least {n} bytes; the limit is {limit}"))
                .help("inputs this large are not pod configuration; check the path"),
        )),
        Contents::Foreign { kind, .. } => {
            let d = Diagnostic::error(diags::NOT_A_FILE, format!("`{name}` is {}, not a regular file", kind.describe()))
                .help("point at the file itself");
            Err(ReadError::Invalid(d))
        }
    }
}

pub(crate) fn io_error(name: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(diags::IO, format!("cannot read `{name}`: {e}")).help("check that the file exists and is readable")
}

/// What a [`contained`] path is confined to, as messages name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Boundary {
    /// A service's build context (its label paths; its descriptor's skill).
    BuildContext,
    /// The directory of a descriptor file, for the skill of a service with no build.
    DescriptorDir,
}

impl Boundary {
    /// "the build context" / "the descriptor's directory".
    pub(crate) fn the(self) -> &'static str {
        match self {
            Boundary::BuildContext => "the build context",
            Boundary::DescriptorDir => "the descriptor's directory",
        }
    }

    fn its(self) -> &'static str {
        match self {
            Boundary::BuildContext => "its build context",
            Boundary::DescriptorDir => "the descriptor's directory",
        }
    }
}

/// Joins a path taken from an input the pod author does not control (a descriptor's
/// `skill`, a Dockerfile `LABEL`) onto `root`, refusing any way out of `root`: `..`
/// components, absolute escapes and symlinks that resolve outside.
pub(crate) fn contained(root: &Path, untrusted: &str, boundary: Boundary) -> Result<PathBuf, String> {
    let joined = joined(root, untrusted, boundary)?;
    stays_in(root, &joined, untrusted, boundary)?;
    Ok(joined)
}

/// [`contained`]'s lexical half: `untrusted` under `root`, refused when it uses `..`.
pub(crate) fn joined(root: &Path, untrusted: &str, boundary: Boundary) -> Result<PathBuf, String> {
    let rel = untrusted.trim_start_matches('/');
    let mut joined = root.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => joined.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err(format!("\"{untrusted}\" uses `..` to leave {}", boundary.its())),
            Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Ok(joined)
}

/// [`contained`]'s other half: `joined`, with symlinks resolved, still under `root`.
fn stays_in(root: &Path, joined: &Path, untrusted: &str, boundary: Boundary) -> Result<(), String> {
    if no_symlink_below(root, joined) {
        return Ok(());
    }
    if let (Ok(real_root), Ok(real)) = (root.canonicalize(), joined.canonicalize())
        && !real.starts_with(&real_root)
    {
        return Err(format!("\"{untrusted}\" is a symlink that leads out of {}", boundary.its()));
    }
    Ok(())
}

/// Whether `joined` is `root` and plain names below it none of which is a symlink (looked
/// at one component at a time by [`crate::disk::inspect_in`], up to the first that does
/// not exist): then it resolves inside `root`, wherever `root` itself resolves, without
/// the `readlink` of every component from `/` that `canonicalize` spends twice (100 build
/// contexts' descriptors took 1,100 of them a compile). `false` only means "not shown":
/// `canonicalize` decides then.
fn no_symlink_below(root: &Path, joined: &Path) -> bool {
    use crate::disk::{Dirs, Found, Kind, inspect_in, is_safe_relative};
    let Some(rest) = joined.strip_prefix(root).ok().and_then(Path::to_str).filter(|r| is_safe_relative(r)) else { return false };
    // Missing: nothing further exists to resolve anywhere (as `canonicalize` failing says).
    matches!(inspect_in(root, rest, &mut Dirs::default()), Ok(Found::Missing | Found::File(_) | Found::Other(Kind::Directory)))
}

/// `path` relative to `base` (both absolute), with `..` where needed, `/`-separated.
pub(crate) fn relative_name(base: &Path, path: &Path) -> String {
    let b: Vec<Component> = base.components().collect();
    let p: Vec<Component> = path.components().collect();
    let common = b.iter().zip(&p).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); b.len() - common];
    parts.extend(p[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    if parts.is_empty() { ".".to_string() } else { parts.join("/") }
}

/// Lexically normalises `a/./b/../c` → `a/c` (no file system access).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names() {
        assert_eq!(relative_name(Path::new("/a/pod"), Path::new("/a/pod/d/x.json")), "d/x.json");
        assert_eq!(relative_name(Path::new("/a/pod"), Path::new("/a/svc/x.json")), "../svc/x.json");
    }

    #[test]
    fn absent_inputs_are_absent_and_the_rest_still_resolve_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root_dir = dir.path().join("repo");
        std::fs::create_dir(&root_dir).unwrap();
        let root = InputRoot::new(&root_dir).unwrap();
        let at = |p: &str| root_dir.join(p);
        std::fs::write(at("here.json"), "{}").unwrap();
        std::fs::write(dir.path().join("outside.json"), "{}").unwrap();
        std::os::unix::fs::symlink(at("nowhere"), at("dangling")).unwrap();
        std::os::unix::fs::symlink(dir.path(), at("up")).unwrap();
        std::os::unix::fs::symlink(at("loop"), at("loop")).unwrap();
        let read = |p: &str| read_text(Some(&root), &at(p), p);
        for absent in ["missing.json", "no/such/dir.json", "dangling", "up/missing.json"] {
            assert!(matches!(read(absent), Err(ReadError::Missing)), "{absent}");
        }
        assert_eq!(read("here.json").ok().as_deref(), Some("{}"));
        for refused in ["up/outside.json", "loop"] {
            assert!(matches!(read(refused), Err(ReadError::Invalid(d)) if d.code == diags::PATH_ESCAPE), "{refused}");
        }
    }

    #[test]
    fn only_plain_paths_skip_canonicalize_and_the_rest_resolve_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let root_dir = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(root_dir.join("a/b")).unwrap();
        let root = InputRoot::new(&root_dir).unwrap();
        let at = |p: &str| root_dir.join(p);
        std::fs::write(at("a/b/c.json"), "c").unwrap();
        std::fs::create_dir(dir.path().join("out")).unwrap();
        std::fs::write(dir.path().join("out/x.json"), "x").unwrap();
        std::os::unix::fs::symlink(at("a"), at("inside")).unwrap();
        std::os::unix::fs::symlink(at("a/b/c.json"), at("a/link.json")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("out"), at("a/up")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("out/x.json"), at("a/b/x.json")).unwrap();
        assert!(root.plainly_holds(&at("a/b/c.json")));
        for (p, plain) in
            [("inside/b/c.json", false), ("a/./b/c.json", false), ("a/up/x.json", false), ("a/up/", false), ("a/b/../b/c.json", false)]
        {
            assert_eq!(root.plainly_holds(&at(p)), plain, "{p}");
        }
        let read = |p: &str| read_text(Some(&root), &at(p), p);
        for (p, text) in [("a/b/c.json", "c"), ("inside/b/c.json", "c"), ("a/./b/c.json", "c"), ("a/link.json", "c")] {
            assert_eq!(read(p).ok().as_deref(), Some(text), "{p}");
        }
        for refused in ["a/up/x.json", "a/up/", "a/up/.", "a/b/x.json", "inside/up/x.json"] {
            assert!(matches!(read(refused), Err(ReadError::Invalid(d)) if d.code == diags::PATH_ESCAPE), "{refused}");
        }
        let vouched = read_text_unless(Some(&root), &at("a/b/c.json"), "c", |m| m.len() == 1);
        assert!(matches!(vouched, Ok(Seen::Vouched(m)) if m.is_file()));
    }

    #[test]
    fn containment() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ctx");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        let ctx = Boundary::BuildContext;
        assert!(contained(&root, "/x.json", ctx).unwrap().ends_with("ctx/x.json"));
        assert_eq!(contained(&root, "../secret", ctx).unwrap_err(), "\"../secret\" uses `..` to leave its build context");
        let beside = contained(&root, "../secret", Boundary::DescriptorDir).unwrap_err();
        assert_eq!(beside, "\"../secret\" uses `..` to leave the descriptor's directory");
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        assert!(contained(&root, "/link", ctx).unwrap_err().contains("symlink"));
        // A directory on the way that is a symlink: out is refused, in is taken.
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/x.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), root.join("away")).unwrap();
        assert!(contained(&root, "away/x.json", ctx).unwrap_err().contains("symlink"));
        assert!(contained(&root, "away/none.json", ctx).is_ok(), "nothing there to read");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/x.json"), "{}").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        assert!(contained(&root, "alias/x.json", ctx).unwrap().ends_with("ctx/alias/x.json"));
        // Plain names below a root that is itself a symlink, and names that do not exist.
        let linked = dir.path().join("linked-ctx");
        std::os::unix::fs::symlink(&root, &linked).unwrap();
        assert!(contained(&linked, "real/x.json", ctx).unwrap().ends_with("linked-ctx/real/x.json"));
        assert!(contained(&root, "missing/x.json", ctx).is_ok());
        assert!(contained(&root, "real/x.json/below", ctx).is_ok(), "not a directory: as canonicalize finds");
    }
}
