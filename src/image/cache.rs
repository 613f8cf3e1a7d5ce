//! What was read out of an image, kept by image ID under the user cache directory
//! (`$XDG_CACHE_HOME/clawc/images/v1/<id>.json`). An image ID is a content address, so a
//! cached answer never goes stale; a second compile of an unchanged pod inspects each
//! image and extracts nothing. The cache only ever speeds things up: an unreadable or
//! unwritable cache is ignored.

use super::FileRead;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
        Cache { dir: crate::disk::user_cache_dir().map(|d| d.join("images").join("v1")) }
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

    /// Every path of `paths` cached for image `id`, or `None` when one is not cached.
    pub fn get(&self, id: &str, paths: &[String]) -> Option<BTreeMap<String, FileRead>> {
        let all = self.load(id)?;
        paths.iter().map(|p| all.get(p).map(|r| (p.clone(), r.clone()))).collect()
    }

    fn load(&self, id: &str) -> Option<BTreeMap<String, FileRead>> {
        let bytes = std::fs::read(self.file(id)?).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Adds `files` to the entry of image `id`.
    pub fn put(&self, id: &str, files: &BTreeMap<String, FileRead>) {
        let Some(path) = self.file(id) else { return };
        let mut all = self.load(id).unwrap_or_default();
        all.extend(files.iter().map(|(k, v)| (k.clone(), v.clone())));
        let _ = write_atomic(&path, &serde_json::to_vec(&all).unwrap_or_default());
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
        assert_eq!(cache.get("sha256:ab", &["/a".into()]), None);
        cache.put("sha256:ab", &files);
        assert_eq!(cache.get("sha256:ab", &["/a".into(), "/b".into()]), Some(files));
        assert_eq!(cache.get("sha256:ab", &["/c".into()]), None, "a path never read is a miss");
        assert_eq!(cache.get("sha256:cd", &["/a".into()]), None);
        assert_eq!(Cache::at(None).get("sha256:ab", &["/a".into()]), None);
    }
}
