//! What was read out of an image, kept by image ID under the user cache directory
//! (`$XDG_CACHE_HOME/clawc/images/v2/<id>.json`): the files read, and the names of the
//! image's executables once a read of its layers told them. An image ID is a content
//! address, so a cached answer never goes stale; a second compile of an unchanged pod
//! inspects each image and extracts nothing. The cache only ever speeds things up: an
//! unreadable or unwritable cache is ignored.
//!
//! `v2` since entries hold the executables: a `v1` entry (files alone) read as one would
//! pass for an image without any, so the format's directory changed rather than the
//! reader guessing.

use super::FileRead;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The directory of this format under clawc's cache directory.
const FORMAT: &str = "v2";

/// What is kept for one image.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    files: BTreeMap<String, FileRead>,
    /// `None` until a read of the image's layers told them (reads through the Docker
    /// Engine never do).
    executables: Option<BTreeSet<String>>,
}

/// A cached answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Hit {
    pub files: BTreeMap<String, FileRead>,
    /// When asked for.
    pub executables: Option<BTreeSet<String>>,
}

#[derive(Clone, Debug, Default)]
pub struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// The cache at `dir` (`None`: no cache, as with `--no-cache`).
    pub fn at(dir: Option<PathBuf>) -> Cache {
        Cache { dir }
    }

    /// The user's cache: `$CLAWC_CACHE_DIR`, else the platform cache dir + `clawc`.
    pub fn user() -> Cache {
        Cache { dir: crate::disk::user_cache_dir().map(|d| d.join("images").join(FORMAT)) }
    }

    fn file(&self, id: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        // IDs are `sha256:<hex>`; anything else is hashed so it is a safe file name.
        let name = match id.split_once(':') {
            Some((alg, hex)) if hex.chars().all(|c| c.is_ascii_hexdigit()) && alg.chars().all(|c| c.is_ascii_alphanumeric()) => {
                format!("{alg}-{hex}.json")
            }
            _ => format!("id-{}.json", crate::digest::sha256_hex(id.as_bytes())),
        };
        Some(dir.join(name))
    }

    /// Every path of `paths` cached for image `id`, and with `executables` its
    /// executables, or `None` when one of them is not cached (a read that tells the
    /// executables is then needed; one that does not is never answered with them, so
    /// what a source gives does not depend on what another put in the cache).
    pub fn get(&self, id: &str, paths: &[String], executables: bool) -> Option<Hit> {
        let entry = self.load(id)?;
        let files = paths.iter().map(|p| entry.files.get(p).map(|r| (p.clone(), r.clone()))).collect::<Option<_>>()?;
        let executables = if executables { Some(entry.executables?) } else { None };
        Some(Hit { files, executables })
    }

    fn load(&self, id: &str) -> Option<Entry> {
        let bytes = std::fs::read(self.file(id)?).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Adds `files` to the entry of image `id`, and `executables` when given.
    pub fn put(&self, id: &str, files: &BTreeMap<String, FileRead>, executables: Option<&BTreeSet<String>>) {
        let Some(path) = self.file(id) else { return };
        let mut entry = self.load(id).unwrap_or_default();
        entry.files.extend(files.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(names) = executables {
            entry.executables = Some(names.clone());
        }
        let _ = write_atomic(&path, &serde_json::to_vec(&entry).unwrap_or_default());
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(Some(dir.path().to_path_buf()));
        let files: BTreeMap<String, FileRead> =
            [("/a".to_string(), FileRead::Text("x".into())), ("/b".to_string(), FileRead::Missing)].into();
        assert_eq!(cache.get("sha256:ab", &["/a".into()], false), None);
        cache.put("sha256:ab", &files, None);
        let hit = Hit { files: files.clone(), executables: None };
        assert_eq!(cache.get("sha256:ab", &["/a".into(), "/b".into()], false), Some(hit));
        assert_eq!(cache.get("sha256:ab", &["/c".into()], false), None, "a path never read is a miss");
        assert_eq!(cache.get("sha256:cd", &["/a".into()], false), None);
        assert_eq!(Cache::at(None).get("sha256:ab", &["/a".into()], false), None);
    }

    #[test]
    fn executables_are_kept_once_told_and_asked_for_only_by_who_tells_them() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(Some(dir.path().to_path_buf()));
        let files: BTreeMap<String, FileRead> = [("/a".to_string(), FileRead::Missing)].into();
        // Files read through Docker: a read that tells the executables misses.
        cache.put("sha256:ab", &files, None);
        assert_eq!(cache.get("sha256:ab", &["/a".into()], true), None);
        let names: BTreeSet<String> = ["gh".to_string(), "jq".to_string()].into();
        cache.put("sha256:ab", &BTreeMap::new(), Some(&names));
        assert_eq!(cache.get("sha256:ab", &["/a".into()], true), Some(Hit { files: files.clone(), executables: Some(names.clone()) }));
        // A later read that does not tell them keeps them, and is not answered with them.
        cache.put("sha256:ab", &[("/b".to_string(), FileRead::NotAFile)].into(), None);
        assert_eq!(cache.get("sha256:ab", &["/b".into()], true).unwrap().executables, Some(names));
        assert_eq!(cache.get("sha256:ab", &["/a".into()], false).unwrap().executables, None);
    }

    #[test]
    fn a_v1_entry_is_not_read() {
        // The v1 form (files alone) in the v2 directory, as a downgrade might leave it.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sha256-ab.json"), r#"{"/a":{"kind":"missing"}}"#).unwrap();
        let cache = Cache::at(Some(dir.path().to_path_buf()));
        assert_eq!(cache.get("sha256:ab", &["/a".into()], false), None);
        assert!(Cache::user().dir.is_none_or(|d| d.ends_with("images/v2")));
    }
}
