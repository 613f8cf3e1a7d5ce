//! Reads every image a pod names, before the pure passes run: each reference is looked
//! up in the `--images` sources in order (the first that has it wins), its labels are
//! read, and the files its labels name (or the implicit paths) are extracted, with at
//! most `jobs` images in flight and answers cached by image ID. The pass over an OCI
//! layout's or an archive's layers that extracts the files also tells the image's
//! executables; the Docker Engine hands out named files only, so it tells none.

use super::cache::{Cache, Hit};
use super::docker::{self, Engine};
use super::layers::Extracted;
use super::layout::Layout;
use super::{FileRead, ImageFacts, ImageInfo, ImageSet, ImageSource, SKILL_EMIT_LABEL, diags, image_path};
use crate::diag::Diagnostic;
use futures_util::StreamExt;
use std::collections::{BTreeMap, BTreeSet};

/// What to read.
pub(crate) struct Plan {
    /// Image references → whether to extract files (`false`: labels only).
    pub references: BTreeMap<String, bool>,
    pub sources: Vec<ImageSource>,
    pub cache: Cache,
    /// Images in flight at once.
    pub jobs: usize,
}

enum Store {
    Docker(Engine),
    Layout { name: String, layout: Layout },
}

impl Store {
    fn name(&self) -> String {
        match self {
            Store::Docker(e) => format!("docker ({})", e.host),
            Store::Layout { name, .. } => name.clone(),
        }
    }
}

/// Reads the images of `plan`. `Err` holds fatal diagnostics (an engine that must
/// answer and does not, a corrupt layout, an engine error, Ctrl-C).
pub(crate) fn fetch(plan: &Plan) -> Result<ImageSet, Vec<Diagnostic>> {
    if plan.sources.iter().all(|s| *s == ImageSource::None) {
        return Ok(ImageSet { disabled: true, tried: vec!["none".to_string()], ..ImageSet::default() });
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        vec![Diagnostic::error(diags::DOCKER, format!("cannot start the I/O runtime: {e}")).help("this is a bug or a resource limit")]
    })?;
    runtime.block_on(fetch_async(plan))
}

async fn fetch_async(plan: &Plan) -> Result<ImageSet, Vec<Diagnostic>> {
    let (stores, tried) = open_stores(&plan.sources).await?;
    let mut set = ImageSet { tried, ..ImageSet::default() };
    let work = futures_util::stream::iter(plan.references.iter())
        .map(|(r, files)| {
            let stores = &stores;
            async move { (r.clone(), one(stores, &plan.cache, r, *files).await) }
        })
        .buffer_unordered(plan.jobs.max(1))
        .collect::<Vec<_>>();
    let results = tokio::select! {
        r = work => r,
        _ = tokio::signal::ctrl_c() => {
            for s in &stores {
                if let Store::Docker(e) = s {
                    e.remove_leftovers().await;
                }
            }
            return Err(vec![Diagnostic::error(diags::INTERRUPTED, "interrupted; temporary containers were removed")]);
        }
    };
    let mut errors = Vec::new();
    for (r, result) in results {
        match result {
            Ok(Found::Yes(facts)) => {
                set.found.insert(r, std::sync::Arc::new(facts));
            }
            Ok(Found::No(why)) => {
                set.missing.insert(r, why);
            }
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() { Ok(set) } else { Err(errors) }
}

/// Opens the sources in order. An unreachable engine is skipped under `auto` and fatal
/// under `docker`.
async fn open_stores(sources: &[ImageSource]) -> Result<(Vec<Store>, Vec<String>), Vec<Diagnostic>> {
    let mut stores = Vec::new();
    let mut tried = Vec::new();
    let mut errors = Vec::new();
    for s in sources {
        match s {
            ImageSource::None | ImageSource::Oci(_) | ImageSource::Archive(_) => match Layout::from_source(s) {
                Some(Ok(layout)) => {
                    tried.push(s.to_string());
                    stores.push(Store::Layout { name: s.to_string(), layout });
                }
                Some(Err(e)) => errors.push(corrupt(s, &e.message)),
                None => {}
            },
            ImageSource::Auto | ImageSource::Docker => match Engine::connect().await {
                Ok(e) => {
                    tried.push(format!("docker ({})", e.host));
                    stores.push(Store::Docker(e));
                }
                Err(why) if *s == ImageSource::Auto => tried.push(format!("docker ({}, unreachable: {why})", docker::host())),
                Err(why) => errors.push(
                    Diagnostic::error(
                        diags::DOCKER_UNREACHABLE,
                        format!("--images docker: the Docker Engine at {} is unreachable: {why}", docker::host()),
                    )
                    .help(
                        "start the engine, or point DOCKER_HOST at one (e.g. DOCKER_HOST=unix:///run/user/1000/docker.sock or \
                         tcp://host:2375); without a daemon use --images oci:DIR or --images archive:TAR",
                    ),
                ),
            },
        }
    }
    if errors.is_empty() { Ok((stores, tried)) } else { Err(errors) }
}

fn corrupt(source: &ImageSource, why: &str) -> Diagnostic {
    Diagnostic::error(diags::CORRUPT, format!("--images {source}: {why}"))
        .help("recreate it, e.g. `docker save IMAGE -o images.tar` or `skopeo copy docker-daemon:IMAGE oci:DIR:IMAGE`")
}

enum Found {
    Yes(ImageFacts),
    /// What each source said.
    No(Vec<String>),
}

async fn one(stores: &[Store], cache: &Cache, reference: &str, files: bool) -> Result<Found, Diagnostic> {
    let mut why = Vec::new();
    for store in stores {
        let info = match store {
            Store::Docker(e) => e.inspect(reference).await.map_err(|m| docker_error(reference, &m))?,
            Store::Layout { layout, .. } => layout.inspect(reference),
        };
        let Some(info) = info else {
            why.push(match store {
                Store::Layout { layout, name } if !layout.references().is_empty() => {
                    format!("{name} holds {}", layout.references().join(", "))
                }
                _ => format!("not in {}", store.name()),
            });
            continue;
        };
        let mut facts =
            ImageFacts { reference: reference.to_string(), source: store.name(), info, files: BTreeMap::new(), executables: None };
        if files {
            (facts.files, facts.executables) = read_files(store, cache, reference, &facts).await?;
        }
        return Ok(Found::Yes(facts));
    }
    Ok(Found::No(why))
}

/// The files an image's labels name and its executables.
type Files = (BTreeMap<String, FileRead>, Option<BTreeSet<String>>);

/// Extracts the descriptor, the snapshot and the emitted skill, then the descriptor's
/// own `skill` (known only once the descriptor is read); the executables come with the
/// first read of the layers (or of the cache).
async fn read_files(store: &Store, cache: &Cache, reference: &str, facts: &ImageFacts) -> Result<Files, Diagnostic> {
    let mut reader = Reader { store, cache, reference, info: &facts.info, container: None, executables: None };
    let result = reader.descriptor_and_skill(facts).await;
    // With Docker: one container per image, removed whatever happened.
    if let (Store::Docker(engine), Some(cid)) = (store, reader.container.take()) {
        engine.remove(&cid).await;
    }
    Ok((result?, reader.executables))
}

/// Reads files of one image, from the cache when it has them.
struct Reader<'a> {
    store: &'a Store,
    cache: &'a Cache,
    reference: &'a str,
    info: &'a ImageInfo,
    /// The Docker container opened on the first cache miss.
    container: Option<String>,
    /// The image's executables, once a read told them.
    executables: Option<BTreeSet<String>>,
}

impl Reader<'_> {
    async fn descriptor_and_skill(&mut self, facts: &ImageFacts) -> Result<BTreeMap<String, FileRead>, Diagnostic> {
        let mut wanted = vec![facts.describe_path().0, facts.tools_path().0];
        wanted.extend(facts.label(SKILL_EMIT_LABEL).map(str::to_string));
        let mut files = self.read(&wanted).await?;
        if let Some(FileRead::Text(text)) = files.get(&facts.describe_path().0)
            && let Some(skill) = descriptor_skill(text)
        {
            files.extend(self.read(&[skill]).await?);
        }
        Ok(files)
    }

    /// `raw` paths as labels and descriptors write them → what reading each gave.
    async fn read(&mut self, raw: &[String]) -> Result<BTreeMap<String, FileRead>, Diagnostic> {
        let mut out = BTreeMap::new();
        let mut paths = BTreeSet::new();
        for r in raw {
            match image_path(r) {
                Some(p) => {
                    paths.insert(p);
                }
                None => {
                    out.insert(r.clone(), FileRead::Escape(r.clone()));
                }
            }
        }
        let paths: Vec<String> = paths.into_iter().collect();
        if paths.is_empty() {
            return Ok(out);
        }
        // Only a read of the layers tells the executables: a layout's read asks the cache
        // for them too, and misses (reads the layers) when an earlier read did not tell them.
        let tells = matches!(self.store, Store::Layout { .. });
        let Hit { files: read, executables } = match self.cache.get(&self.info.id, &paths, tells) {
            Some(hit) => hit,
            None => {
                let got = self.extract(&paths).await?;
                self.cache.put(&self.info.id, &got.files, got.executables.as_ref());
                Hit { files: got.files, executables: got.executables }
            }
        };
        if self.executables.is_none() {
            self.executables = executables;
        }
        for r in raw {
            if let Some(p) = image_path(r) {
                out.insert(r.clone(), read.get(&p).cloned().unwrap_or(FileRead::Missing));
            }
        }
        Ok(out)
    }

    async fn extract(&mut self, paths: &[String]) -> Result<Extracted, Diagnostic> {
        let reference = self.reference;
        match self.store {
            Store::Docker(e) => {
                if self.container.is_none() {
                    self.container = Some(e.create(&self.info.id).await.map_err(|m| docker_error(reference, &m))?);
                }
                let cid = self.container.as_deref().unwrap_or_default();
                // The archive API hands out named paths; listing the PATH directories
                // through it would stream every file in them, so Docker tells none.
                let files = e.read(cid, paths).await.map_err(|m| docker_error(reference, &m))?;
                Ok(Extracted { files, executables: None })
            }
            Store::Layout { layout, name } => layout.read_with_executables(reference, paths).map_err(|e| {
                let help = if e.code == diags::LAYER_TOO_LARGE {
                    "clawc inflates at most 8 GiB per layer and 32 GiB per image, and indexes at most a million links; \
                     this looks like a decompression bomb (a real image this large can be read with --images docker)"
                } else {
                    "the layout or archive is damaged; recreate it"
                };
                Diagnostic::error(e.code, format!("image {reference} in {name}: {}", e.message)).help(help)
            }),
        }
    }
}

/// The executables [`fetch`] tells for the image `reference` in `source` (`oci:DIR`,
/// `archive:TAR`, `docker`), its files wanted when `files` (`false`: labels only), with
/// the cache in `cache_dir` (`None`: no cache). `Err`: the diagnostics' messages, or that
/// no source had it. For the image tests (`tests/it/images.rs`), which see the facts of
/// the real fetch path no other way: nothing in the output reports them yet.
#[doc(hidden)]
pub fn fetched_executables(
    source: &str,
    reference: &str,
    files: bool,
    cache_dir: Option<std::path::PathBuf>,
) -> Result<Option<BTreeSet<String>>, String> {
    let sources = vec![source.parse::<ImageSource>()?];
    let plan = Plan { references: [(reference.to_string(), files)].into(), sources, cache: Cache::at(cache_dir), jobs: 1 };
    let set = fetch(&plan).map_err(|ds| ds.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))?;
    let facts = set.found.get(reference).ok_or_else(|| format!("{reference} was not found: {:?}", set.tried_for(reference)))?;
    Ok(facts.executables.clone())
}

fn docker_error(reference: &str, message: &str) -> Diagnostic {
    Diagnostic::error(diags::DOCKER, format!("image {reference}: the Docker Engine failed: {message}"))
        .help("check the engine (`docker info`) and retry")
}

/// The `skill` field of a descriptor's JSON (Go-style case-insensitive), if any.
pub(crate) fn descriptor_skill(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    let s = obj.get("skill").or_else(|| obj.iter().find(|(k, _)| k.eq_ignore_ascii_case("skill")).map(|(_, v)| v))?;
    s.as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}
