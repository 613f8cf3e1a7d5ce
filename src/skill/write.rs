//! Writing `skill compile`'s files beside the manifest, as the output layer writes a
//! compiled tree: every file is staged in a temporary file of the folder (`O_CREAT |
//! O_EXCL`, mode 0644, synced) before the first is renamed over its name, so a failure to
//! write leaves the old files, and a reader sees an old file or a new one, never half of
//! one. The lock is renamed last. A rename replaces the
//! entry itself: a symlink planted at an output name is replaced, never written through.
//! A directory at an output name is refused before anything is written. A file whose bytes
//! are already right is left alone.

use crate::diag::Diagnostic;
use crate::diag::catalogue::output as codes;
use crate::disk::{self, Contents};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The prefix of the temporary files (left behind only by a crash; the lock skips them).
const TEMP_PREFIX: &str = ".dynamic_tools.";
const TEMP_MARK: &str = ".clawc-";

/// Whether a file name is one of the temporary files of a write.
pub(crate) fn is_temporary(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.contains(TEMP_MARK)
}

/// Writes `files` (name → bytes) into `dir`, in order. `shown` names the folder in
/// messages. Returns the names whose bytes changed.
pub(crate) fn write(dir: &Path, shown: &str, files: &[(&'static str, Vec<u8>)]) -> Result<Vec<&'static str>, Diagnostic> {
    let name_of = |n: &str| crate::diag::printable(&format!("{shown}{n}"));
    let io = |what: &str, n: &str, e: std::io::Error| {
        Diagnostic::error(codes::IO, format!("cannot {what} `{}`: {e}", name_of(n))).help("check that the skill folder is writable")
    };
    let mut changed = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        match path.symlink_metadata() {
            Ok(m) if m.is_dir() => {
                return Err(Diagnostic::error(codes::NOT_OWNED, format!("`{}` is a directory; refusing to replace it", name_of(name)))
                    .help("skill compile owns this file name in the skill folder; move the directory away"));
            }
            Ok(m) if m.file_type().is_file() => {
                if let Ok(Contents::Bytes(old)) = disk::read_regular(&path, disk::MAX_OUTPUT, name)
                    && old == *bytes
                    && m.permissions().mode() & 0o777 == 0o644
                {
                    continue;
                }
            }
            _ => {}
        }
        changed.push((*name, bytes));
    }
    let mut staged = Vec::new();
    for (name, bytes) in &changed {
        let mut tmp =
            tempfile::Builder::new().prefix(&format!(".{name}{TEMP_MARK}")).tempfile_in(dir).map_err(|e| io("write next to", name, e))?;
        tmp.write_all(bytes).map_err(|e| io("write", name, e))?;
        let f = tmp.as_file();
        f.set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(|e| io("set the mode of", name, e))?;
        f.sync_all().map_err(|e| io("write", name, e))?;
        staged.push((*name, tmp));
    }
    for (name, tmp) in staged {
        tmp.persist(dir.join(name)).map_err(|e| io("replace", name, e.error))?;
    }
    Ok(changed.into_iter().map(|(n, _)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_at_an_output_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let skill = dir.path().join("s");
        std::fs::create_dir(&skill).unwrap();
        std::os::unix::fs::symlink(&outside, skill.join("dynamic_tools.json")).unwrap();
        let written = write(&skill, "", &[("dynamic_tools.json", b"{}\n".to_vec())]).unwrap();
        assert_eq!(written, ["dynamic_tools.json"]);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        let m = skill.join("dynamic_tools.json").symlink_metadata().unwrap();
        assert!(m.file_type().is_file());
        assert_eq!(m.permissions().mode() & 0o777, 0o644);
        assert!(write(&skill, "", &[("dynamic_tools.json", b"{}\n".to_vec())]).unwrap().is_empty(), "unchanged bytes are not rewritten");
        assert!(is_temporary(".dynamic_tools.json.clawc-abc123") && !is_temporary("dynamic_tools.json"));
    }

    #[test]
    fn a_directory_at_an_output_name_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("dynamic_tools.lock.json")).unwrap();
        let files = [("dynamic_tools.json", b"{}\n".to_vec()), ("dynamic_tools.lock.json", b"{}\n".to_vec())];
        let e = write(dir.path(), "", &files).unwrap_err();
        assert_eq!(e.code, codes::NOT_OWNED);
        assert!(!dir.path().join("dynamic_tools.json").exists());
    }
}
