//! File reading for inputs: size limits, UTF-8, containment of paths that come from a
//! descriptor or a Dockerfile label, and pod-relative names for diagnostics/artifacts.

use super::diags;
use crate::diag::Diagnostic;
use std::path::{Component, Path, PathBuf};

/// Largest input file clawc reads (pods, descriptors, skills, Dockerfiles).
pub const MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;

/// Why a read failed: a bad input (exit 2) or the environment (exit 3).
pub enum ReadError {
    Missing,
    Invalid(Diagnostic),
    Io(Diagnostic),
}

/// Reads a UTF-8 text file of at most [`MAX_INPUT_BYTES`]. `name` is how diagnostics call it.
pub fn read_text(path: &Path, name: &str) -> Result<String, ReadError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Io(io_error(name, &e))),
    };
    if meta.is_dir() {
        let d = Diagnostic::error(diags::NOT_A_FILE, format!("`{name}` is a directory, not a file")).help("point at the file itself");
        return Err(ReadError::Invalid(d));
    }
    if meta.len() > MAX_INPUT_BYTES {
        let d = Diagnostic::error(diags::TOO_LARGE, format!("`{name}` is {} bytes; the limit is {MAX_INPUT_BYTES}", meta.len()))
            .help("inputs this large are not pod configuration; check the path");
        return Err(ReadError::Invalid(d));
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::Io(io_error(name, &e)))?;
    String::from_utf8(bytes).map_err(|e| {
        let d = Diagnostic::error(
            diags::NOT_UTF8,
            format!("`{name}` is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
        )
        .help("save the file as UTF-8");
        ReadError::Invalid(d)
    })
}

pub fn io_error(name: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(diags::IO, format!("cannot read `{name}`: {e}")).help("check that the file exists and is readable")
}

/// Joins a path taken from an input the pod author does not control (a descriptor's
/// `skill`, a Dockerfile `LABEL`) onto `root`, refusing any way out of `root`: `..`
/// components, absolute escapes and symlinks that resolve outside.
pub fn contained(root: &Path, untrusted: &str) -> Result<PathBuf, String> {
    let rel = untrusted.trim_start_matches('/');
    let mut joined = root.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => joined.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err(format!("\"{untrusted}\" uses `..` to leave its build context")),
            Component::RootDir | Component::Prefix(_) => {}
        }
    }
    if let (Ok(real_root), Ok(real)) = (root.canonicalize(), joined.canonicalize())
        && !real.starts_with(&real_root)
    {
        return Err(format!("\"{untrusted}\" is a symlink that leads out of its build context"));
    }
    Ok(joined)
}

/// `path` relative to `base` (both absolute), with `..` where needed, `/`-separated.
pub fn relative_name(base: &Path, path: &Path) -> String {
    let b: Vec<Component> = base.components().collect();
    let p: Vec<Component> = path.components().collect();
    let common = b.iter().zip(&p).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); b.len() - common];
    parts.extend(p[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    if parts.is_empty() { ".".to_string() } else { parts.join("/") }
}

/// Lexically normalises `a/./b/../c` → `a/c` (no file system access).
pub fn normalize(path: &Path) -> PathBuf {
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
    fn containment() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ctx");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        assert!(contained(&root, "/x.json").unwrap().ends_with("ctx/x.json"));
        assert!(contained(&root, "../secret").is_err());
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        assert!(contained(&root, "/link").unwrap_err().contains("symlink"));
    }
}
