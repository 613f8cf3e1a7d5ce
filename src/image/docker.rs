//! The Docker Engine as an image store, through `bollard` (any Docker-compatible API;
//! `DOCKER_HOST` is honoured, the default is the local socket). Labels come from an
//! image inspect; a file comes out of a container that is created from the image ID and
//! never started, read with the archive API, and removed in every case: on success, on
//! error, and on Ctrl-C ([`Engine::remove_leftovers`]).

use super::layers::{self, MAX_FILE_BYTES};
use super::{FileRead, ImageInfo};
use bollard::Docker;
use bollard::errors::Error;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Go's `os.ModeSymlink`, as the engine reports a path's mode.
const GO_MODE_SYMLINK: u32 = 1 << 27;
/// How long to wait for the engine to answer a ping before calling it unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The label put on the temporary containers, so a user can find any a crash left.
pub(crate) const TEMP_LABEL: &str = "dev.clawc.temporary";

pub(crate) struct Engine {
    client: Docker,
    /// Where the engine was reached (`DOCKER_HOST`, or the default socket).
    pub host: String,
    /// Containers created and not yet removed.
    live: Arc<Mutex<BTreeSet<String>>>,
}

/// The engine's address as clawc will try it.
pub(crate) fn host() -> String {
    std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// What the archive API gave for one path.
enum Fetched {
    Done(FileRead),
    /// A symlink's target, taken from the link's directory.
    Symlink(String),
    /// A hardlink's target, taken from the image root.
    Hardlink(String),
}

impl Engine {
    /// Connects and pings; `Err` says why the engine is unreachable.
    pub(crate) async fn connect() -> Result<Engine, String> {
        let host = host();
        let client = Docker::connect_with_defaults().map_err(|e| e.to_string())?;
        let client = match tokio::time::timeout(CONNECT_TIMEOUT, client.negotiate_version()).await {
            Ok(r) => r.map_err(|e| e.to_string())?,
            Err(_) => return Err(format!("no answer within {}s", CONNECT_TIMEOUT.as_secs())),
        };
        client.ping().await.map_err(|e| e.to_string())?;
        Ok(Engine { client, host, live: Arc::default() })
    }

    /// The image's ID and labels, `None` when the engine does not have it.
    pub(crate) async fn inspect(&self, reference: &str) -> Result<Option<ImageInfo>, String> {
        match self.client.inspect_image(reference).await {
            Ok(i) => {
                let config = i.config.unwrap_or_default();
                let labels = config.labels.unwrap_or_default().into_iter().collect();
                let path = super::executables::env_path(config.env.iter().flatten().map(String::as_str));
                Ok(Some(ImageInfo { id: i.id.unwrap_or_default(), labels, path }))
            }
            Err(Error::DockerResponseServerError { status_code: 404, .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Creates a never-started container from the image with ID `id`, for [`Engine::read`].
    /// The caller removes it with [`Engine::remove`] whatever happens.
    pub(crate) async fn create(&self, id: &str) -> Result<String, String> {
        let body = ContainerCreateBody {
            image: Some(id.to_string()),
            // An image without CMD or ENTRYPOINT cannot be created otherwise; it never runs.
            cmd: Some(vec!["/clawc-never-runs".to_string()]),
            network_disabled: Some(true),
            labels: Some([(TEMP_LABEL.to_string(), "true".to_string())].into()),
            ..Default::default()
        };
        let created = self.client.create_container(Some(CreateContainerOptionsBuilder::default().build()), body).await;
        let cid = created.map_err(|e| format!("create a container from {id}: {e}"))?.id;
        self.live.lock().expect("container registry").insert(cid.clone());
        Ok(cid)
    }

    /// Reads `paths` out of container `cid`.
    pub(crate) async fn read(&self, cid: &str, paths: &[String]) -> Result<BTreeMap<String, FileRead>, String> {
        let mut out = BTreeMap::new();
        for p in paths {
            out.insert(p.clone(), self.read_one(cid, p).await?);
        }
        Ok(out)
    }

    pub(crate) async fn remove(&self, cid: &str) {
        let opts = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
        // A failed removal leaves a labelled, never-started container; nothing to undo.
        let _ = self.client.remove_container(cid, Some(opts)).await;
        self.live.lock().expect("container registry").remove(cid);
    }

    /// Removes every container this engine created and has not removed yet (Ctrl-C).
    pub(crate) async fn remove_leftovers(&self) {
        let left: Vec<String> = self.live.lock().expect("container registry").iter().cloned().collect();
        for cid in left {
            self.remove(&cid).await;
        }
    }

    /// One path, following symlinks inside the image root (the archive API hands a
    /// symlink back as itself). The directories on the way are followed here too: the
    /// engine would resolve them itself and keep a `..` that climbs above `/` at the root,
    /// where a layout or an archive refuses it.
    async fn read_one(&self, cid: &str, path: &str) -> Result<FileRead, String> {
        let mut path = layers::normalize(path);
        'hop: for _ in 0..=layers::MAX_HOPS {
            // Each ancestor is an API call: a label naming a megabyte-long path must not
            // make a million of them (and no longer path can be opened anyway).
            if path.len() > layers::PATH_MAX {
                return Ok(FileRead::Missing);
            }
            for anc in layers::ancestors(&path) {
                let Some(target) = self.symlink_at(cid, &anc).await? else { continue };
                let Some(base) = layers::resolve_link(&anc, &target) else { return Ok(FileRead::Escape(target)) };
                path = layers::normalize(&format!("{base}/{}", &path[anc.len()..]));
                continue 'hop;
            }
            let (from, target) = match self.fetch(cid, &path).await? {
                Fetched::Done(r) => return Ok(r),
                Fetched::Symlink(t) => (path.as_str(), t),
                Fetched::Hardlink(t) => ("/", t),
            };
            match layers::resolve_link(from, &target) {
                Some(next) => path = next,
                None => return Ok(FileRead::Escape(target)),
            }
        }
        Ok(FileRead::TooManyLinks)
    }

    /// The target of the symlink at `path` (whose own ancestors are no symlinks), `None`
    /// when it is something else or absent. A stat first, so a directory is not streamed.
    async fn symlink_at(&self, cid: &str, path: &str) -> Result<Option<String>, String> {
        let opts = ContainerArchiveInfoOptionsBuilder::default().path(path).build();
        match self.client.get_container_archive_info(cid, Some(opts)).await {
            Ok(stat) if stat.file_mode & GO_MODE_SYMLINK == 0 => return Ok(None),
            Err(Error::DockerResponseServerError { status_code: 404, .. }) => return Ok(None),
            // A symlink, or a stat the engine failed (it resolves a symlink fully to stat
            // it, so a loop fails here, and a HEAD answer carries no message to tell why):
            // the archive API hands the link back as itself either way.
            Ok(_) | Err(_) => {}
        }
        match self.fetch(cid, path).await? {
            Fetched::Symlink(t) => Ok(Some(t)),
            _ => Ok(None),
        }
    }

    async fn fetch(&self, cid: &str, path: &str) -> Result<Fetched, String> {
        let opts = DownloadFromContainerOptionsBuilder::default().path(path).build();
        let mut stream = self.client.download_from_container(cid, Some(opts));
        let mut buf: Vec<u8> = Vec::new();
        // A tar entry's header, padding and end blocks on top of the file itself.
        let cap = MAX_FILE_BYTES + 64 * 1024;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(b) => buf.extend_from_slice(&b),
                Err(Error::DockerResponseServerError { status_code: 404, .. }) => return Ok(Fetched::Done(FileRead::Missing)),
                // The engine resolves the directories on the way itself; a loop there is the
                // image's fault, as it is when clawc follows the links (exit 2, not 3).
                Err(Error::DockerResponseServerError { message, .. }) if is_link_loop(&message) => {
                    return Ok(Fetched::Done(FileRead::TooManyLinks));
                }
                Err(e) => return Err(format!("read {path}: {e}")),
            }
            if let Some(early) = early_answer(&buf) {
                return Ok(early);
            }
            if buf.len() as u64 > cap {
                break;
            }
        }
        first_entry(&buf).map_err(|e| format!("read {path}: the engine sent an unreadable archive: {e}"))
    }
}

/// Decides from the first header alone when the answer is "not a file" or "too large",
/// so a directory or a huge file is never streamed whole.
fn early_answer(buf: &[u8]) -> Option<Fetched> {
    let header = tar::Header::from_byte_slice(buf.get(..512)?);
    match header.entry_type() {
        tar::EntryType::Directory => Some(Fetched::Done(FileRead::NotAFile)),
        tar::EntryType::Regular => header.size().ok().filter(|s| *s > MAX_FILE_BYTES).map(|s| Fetched::Done(FileRead::TooLarge(s))),
        _ => None,
    }
}

fn first_entry(buf: &[u8]) -> std::io::Result<Fetched> {
    let mut archive = tar::Archive::new(buf);
    let Some(entry) = archive.entries()?.next() else { return Ok(Fetched::Done(FileRead::Missing)) };
    let mut entry = entry?;
    Ok(match entry.header().entry_type() {
        tar::EntryType::Regular | tar::EntryType::Continuous => {
            let size = entry.size();
            Fetched::Done(layers::read_entry(&mut entry, size)?)
        }
        tar::EntryType::Symlink => Fetched::Symlink(link_name(&entry)),
        tar::EntryType::Link => Fetched::Hardlink(link_name(&entry)),
        _ => Fetched::Done(FileRead::NotAFile),
    })
}

fn link_name(entry: &tar::Entry<impl std::io::Read>) -> String {
    entry.link_name_bytes().map(|l| String::from_utf8_lossy(&l).into_owned()).unwrap_or_default()
}

/// Whether an engine error says a path's links loop: Docker's own resolver ("too many
/// links") or the kernel's ELOOP ("too many levels of symbolic links").
fn is_link_loop(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("too many links") || m.contains("too many levels of symbolic links")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_link_loops_are_recognised() {
        assert!(is_link_loop(
            "Could not find the file /loop/d.json in container x: evalSymlinksInScope: too many links in /var/lib/x/loop/d.json"
        ));
        assert!(is_link_loop("lstat /x/loop: too many levels of symbolic links"));
        assert!(!is_link_loop("No such container: abc"));
    }
}
