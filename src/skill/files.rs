//! The skill folder on disk, which is untrusted: it may come from a pull request or an
//! import, so any entry may be a symlink to `/proc/self/environ`, a FIFO, or a file of
//! gigabytes.
//!
//! Every read goes through the project's confined readers: [`crate::source::fs::read_text`]
//! with the folder as the input root (symlinks are resolved and must stay inside the
//! folder; only a regular file is opened, `O_NOFOLLOW | O_NONBLOCK`, through a reader that
//! stops at 8 MiB) and [`crate::disk::read_regular`] for the files the lock only hashes.
//! The walk that lists the folder for the lock never follows a symlinked directory, and
//! is bounded in files, depth and bytes.

use super::codes;
use crate::diag::Diagnostic;
use crate::digest::sha256_hex;
use crate::disk::{self, Contents, MAX_INPUT_BYTES};
use crate::source::diags as source_codes;
use crate::source::fs::{InputRoot, ReadError, read_text};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Most files a skill folder may hold (the lock lists each).
pub(crate) const MAX_FILES: usize = 10_000;
/// Deepest directory nesting inside a skill folder.
pub(crate) const MAX_DEPTH: usize = 32;
/// Most bytes all the files of a skill folder may hold together.
pub(crate) const MAX_TOTAL_BYTES: u64 = 256 << 20;

/// One file of a skill folder.
#[derive(Clone, Debug, Hash)]
pub(crate) struct FolderFile {
    pub sha256: String,
    /// Its bytes, when they were asked for ([`SkillDir::read_all`]).
    pub bytes: Option<std::sync::Arc<[u8]>>,
    /// Any execute bit is set (scripts keep it when copied).
    pub executable: bool,
}

/// A skill folder, and how diagnostics name its files.
#[derive(Debug)]
pub(crate) struct SkillDir {
    /// The folder, symlinks resolved.
    real: PathBuf,
    root: InputRoot,
    /// Prepended to a folder-relative path in diagnostics (`skills/weather/`, or empty).
    prefix: String,
    /// SHA-256 of every file read for checking, by folder-relative path: the lock records
    /// the bytes that were compiled, not a second read.
    read: RefCell<BTreeMap<String, String>>,
}

impl SkillDir {
    /// The folder at `dir`, which must be a directory. `prefix` is how diagnostics name it
    /// (`skills/weather/`; empty for the current directory).
    pub(crate) fn open(dir: &Path, prefix: &str) -> Result<SkillDir, Diagnostic> {
        let shown = if prefix.is_empty() { ".".to_string() } else { prefix.trim_end_matches('/').to_string() };
        let not_a_folder = || {
            Diagnostic::error(
                source_codes::MISSING,
                format!("`{shown}` is not a skill folder (a directory holding {} or {})", super::TOOL_MANIFEST, super::TOOLS_JSON),
            )
            .help("pass the directory that holds the skill's SKILL.md")
        };
        let real = dir.canonicalize().map_err(|_| not_a_folder())?;
        if !real.is_dir() {
            return Err(not_a_folder());
        }
        let root = InputRoot::new(&real).map_err(|e| crate::source::fs::io_error(&shown, &e))?;
        Ok(SkillDir { real, root, prefix: prefix.to_string(), read: RefCell::default() })
    }

    /// The folder's own name (the skill's name).
    pub(crate) fn name(&self) -> String {
        self.real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The folder, symlinks resolved.
    pub(crate) fn path(&self) -> &Path {
        &self.real
    }

    /// How diagnostics name the folder itself (`skills/weather`, or `.`).
    pub(crate) fn shown_dir(&self) -> String {
        match self.prefix.trim_end_matches('/') {
            "" => ".".to_string(),
            d => crate::diag::printable(d),
        }
    }

    /// How diagnostics name the folder-relative path `rel`.
    pub(crate) fn shown(&self, rel: &str) -> String {
        crate::diag::printable(&format!("{}{rel}", self.prefix))
    }

    /// Reads the UTF-8 file `rel` (a plain folder-relative path), confined to the folder.
    /// `Ok(None)`: there is no such file.
    pub(crate) fn read_text(&self, rel: &str) -> Result<Option<String>, Diagnostic> {
        match read_text(Some(&self.root), &self.real.join(rel), &self.shown(rel)) {
            Ok(text) => {
                self.read.borrow_mut().insert(rel.to_string(), sha256_hex(text.as_bytes()));
                Ok(Some(text))
            }
            Err(ReadError::Missing) => Ok(None),
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(d),
        }
    }

    /// Whether an entry named `rel` exists (without following it).
    pub(crate) fn has(&self, rel: &str) -> bool {
        self.real.join(rel).symlink_metadata().is_ok()
    }

    /// Resolves a handler path a manifest gives (`script`, `entry`): it must be relative,
    /// without `..`, stay inside the folder once symlinks are resolved, and name a regular
    /// file. Returns the path as normalised (`./scripts//x.py` → `scripts/x.py`), or why not.
    pub(crate) fn script(&self, untrusted: &str) -> Result<String, String> {
        let shown = crate::diag::printable(untrusted);
        if untrusted.trim().is_empty() {
            return Err("the path is empty".to_string());
        }
        if untrusted.contains('\0') {
            return Err(format!("\"{shown}\" contains a NUL byte"));
        }
        if untrusted.starts_with('/') {
            return Err(format!("\"{shown}\" is absolute; give a path relative to the skill folder"));
        }
        let mut parts = Vec::new();
        for c in Path::new(untrusted).components() {
            match c {
                Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => return Err(format!("\"{shown}\" uses `..` to leave the skill folder")),
                Component::RootDir | Component::Prefix(_) => return Err(format!("\"{shown}\" is absolute")),
            }
        }
        if parts.is_empty() {
            return Err(format!("\"{shown}\" names the skill folder itself, not a file"));
        }
        let rel = parts.join("/");
        let real = match self.real.join(&rel).canonicalize() {
            Ok(r) => r,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(format!("\"{shown}\" is a symlink loop")),
            Err(_) => return Err(format!("\"{shown}\" does not exist in the skill folder")),
        };
        if !real.starts_with(&self.real) {
            return Err(format!("\"{shown}\" is a symlink that leads out of the skill folder"));
        }
        match real.symlink_metadata() {
            Ok(m) if m.file_type().is_file() => Ok(rel),
            Ok(m) => Err(format!("\"{shown}\" is {}, not a file", disk::Kind::of(&m).describe())),
            Err(_) => Err(format!("\"{shown}\" does not exist in the skill folder")),
        }
    }

    /// Every file of the folder (but the names in `skip`, relative to the folder, and a
    /// `.git` directory at its root) with its SHA-256, by `/`-separated folder-relative
    /// path. A symlink is hashed as the file it leads to, which must be inside the folder;
    /// a symlinked directory is not followed (its files are listed where they are).
    pub(crate) fn hash_all(&self, skip: &BTreeSet<String>) -> Result<BTreeMap<String, String>, Vec<Diagnostic>> {
        Ok(self.walk(skip, false)?.into_iter().map(|(rel, f)| (rel, f.sha256)).collect())
    }

    /// Every file of the folder, as [`SkillDir::hash_all`] lists them, with its bytes and
    /// whether it is executable: the folder as a pod copies it into an agent's tree.
    pub(crate) fn read_all(&self) -> Result<BTreeMap<String, FolderFile>, Vec<Diagnostic>> {
        self.walk(&BTreeSet::new(), true)
    }

    fn walk(&self, skip: &BTreeSet<String>, keep: bool) -> Result<BTreeMap<String, FolderFile>, Vec<Diagnostic>> {
        let mut out = BTreeMap::new();
        let mut errors = Vec::new();
        let mut total: u64 = 0;
        let mut stack: Vec<(PathBuf, String, usize)> = vec![(self.real.clone(), String::new(), 0)];
        let too_large = |what: String| {
            Diagnostic::error(codes::TOO_LARGE, what)
                .help("a skill folder holds instructions, a manifest and small scripts; move large data elsewhere")
        };
        while let Some((dir, rel_dir, depth)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) => {
                    errors.push(crate::source::fs::io_error(&self.shown(&rel_dir), &e));
                    continue;
                }
            };
            let mut names: Vec<_> = entries.filter_map(Result::ok).map(|e| e.file_name()).collect();
            names.sort();
            for name in names {
                let name_s = name.to_string_lossy().into_owned();
                let rel = if rel_dir.is_empty() { name_s.clone() } else { format!("{rel_dir}/{name_s}") };
                if skip.contains(&rel) || (rel_dir.is_empty() && (name_s == ".git" || super::write::is_temporary(&name_s))) {
                    continue;
                }
                let path = dir.join(&name);
                let Ok(meta) = path.symlink_metadata() else { continue };
                let kind = disk::Kind::of(&meta);
                let target = match kind {
                    disk::Kind::Directory => {
                        if depth + 1 > MAX_DEPTH {
                            errors.push(too_large(format!(
                                "the skill folder `{}` nests deeper than {MAX_DEPTH} directories (at `{}`)",
                                self.shown_dir(),
                                self.shown(&rel)
                            )));
                            return Err(errors);
                        }
                        stack.push((path, rel, depth + 1));
                        continue;
                    }
                    disk::Kind::File => path,
                    disk::Kind::Symlink => match path.canonicalize() {
                        Ok(real) if !real.starts_with(&self.real) => {
                            errors.push(
                                Diagnostic::error(
                                    source_codes::PATH_ESCAPE,
                                    format!("`{}` is a symlink that leads out of the skill folder", self.shown(&rel)),
                                )
                                .help("a skill folder is read whole and confined to itself; copy the file in instead of linking to it"),
                            );
                            continue;
                        }
                        Ok(real) if real.is_dir() => continue,
                        Ok(real) => real,
                        Err(_) => {
                            errors.push(
                                Diagnostic::error(
                                    source_codes::MISSING,
                                    format!("`{}` is a symlink to nothing (or a symlink loop)", self.shown(&rel)),
                                )
                                .help("remove the dangling link or point it at a file inside the skill folder"),
                            );
                            continue;
                        }
                    },
                    other => {
                        errors.push(
                            Diagnostic::error(
                                source_codes::NOT_A_FILE,
                                format!("`{}` is {}, not a regular file", self.shown(&rel), other.describe()),
                            )
                            .help("a skill folder holds regular files and directories only"),
                        );
                        continue;
                    }
                };
                if out.len() >= MAX_FILES {
                    errors.push(too_large(format!("the skill folder `{}` holds more than {MAX_FILES} files", self.shown_dir())));
                    return Err(errors);
                }
                let known = if keep { None } else { self.read.borrow().get(&rel).cloned() };
                let executable = target.metadata().is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0);
                let file = match known {
                    Some(sha256) => FolderFile { sha256, bytes: None, executable },
                    None => match disk::read_regular(&target, MAX_INPUT_BYTES, &rel) {
                        Ok(Contents::Bytes(b)) => {
                            total += b.len() as u64;
                            FolderFile { sha256: sha256_hex(&b), bytes: keep.then(|| b.into()), executable }
                        }
                        Ok(Contents::TooLarge(n)) => {
                            errors.push(
                                Diagnostic::error(
                                    source_codes::TOO_LARGE,
                                    format!("`{}` is at least {n} bytes; the limit is {MAX_INPUT_BYTES}", self.shown(&rel)),
                                )
                                .help("a skill folder holds instructions, a manifest and small scripts; move large data elsewhere"),
                            );
                            continue;
                        }
                        Ok(Contents::Missing) => continue,
                        Ok(Contents::Foreign { kind, .. }) => {
                            errors.push(Diagnostic::error(
                                source_codes::NOT_A_FILE,
                                format!("`{}` is {}, not a regular file", self.shown(&rel), kind.describe()),
                            ));
                            continue;
                        }
                        Err(e) => {
                            errors.push(crate::source::fs::io_error(&self.shown(&rel), &e));
                            continue;
                        }
                    },
                };
                if total > MAX_TOTAL_BYTES {
                    errors.push(too_large(format!("the skill folder `{}` holds more than {MAX_TOTAL_BYTES} bytes", self.shown_dir())));
                    return Err(errors);
                }
                out.insert(rel, file);
            }
        }
        if errors.is_empty() { Ok(out) } else { Err(errors) }
    }
}
