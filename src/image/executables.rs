//! The CLIs an image has: the names of the executables in its `PATH` directories, told
//! from the tar headers of the pass that reads its files ([`super::layers`]), so knowing
//! them costs no byte more than reading the files does.
//!
//! An executable is an entry directly inside a `PATH` directory, seen from the top of
//! the layer stack (upper layers win, whiteouts delete, opaque directories hide), that is
//! a regular file with an execute bit set, or a hardlink or symlink that leads to one.
//! Links are followed as [`super::layers`] follows them for files: inside the image root,
//! a symlink from its directory and a hardlink from the root, refused when `..` climbs
//! above `/`, at most [`MAX_HOPS`] of them. A `PATH` directory may itself be, or lie
//! under, a symlink (`/bin -> usr/bin` in a merged-`/usr` image); its entries are those
//! of the directory it leads to, named as there.
//!
//! What the pass keeps for this is bounded ([`Limits::exec_bytes`]), so is the work of
//! following links ([`Limits::exec_work`]) and the length of the list
//! ([`Limits::executables`], the first names in sorted order). An image past a bound
//! gets the list its kept entries and the work done so far tell, which depends on the
//! image alone: the same image always gives the same list.

use super::layers::{Layer, Limits, MAX_HOPS, Node, PATH_MAX, normalize, resolve_link};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// The `PATH` an image gets when its config sets none: Docker's default.
pub(crate) const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Most `PATH` directories looked in. Real ones have a dozen at most; each costs a walk
/// of the kept entries, so a hostile config's thousands are cut short.
pub(crate) const MAX_PATH_DIRS: usize = 64;

/// Linux's `NAME_MAX`: no longer file name can exist in a real file system.
const NAME_MAX: usize = 255;

/// The `PATH` of an image config's `Env` (`KEY=value` entries; the last `PATH` wins, as
/// Docker applies them), `None` when it sets none.
pub(crate) fn env_path<'a>(env: impl IntoIterator<Item = &'a str>) -> Option<String> {
    env.into_iter().filter_map(|e| e.strip_prefix("PATH=")).last().map(str::to_string)
}

/// The directories of `path` (the image's `PATH`, `None`: [`DEFAULT_PATH`]), normalised,
/// without repeats, at most [`MAX_PATH_DIRS`]. Empty and relative entries are skipped
/// (they name the container's working directory, not a place in the image), and so is an
/// entry whose `..` climbs above `/`, as links that do are refused rather than clamped.
pub(crate) fn path_dirs(path: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in path.unwrap_or(DEFAULT_PATH).split(':') {
        if out.len() == MAX_PATH_DIRS {
            break;
        }
        if !raw.starts_with('/') || raw.len() > PATH_MAX {
            continue;
        }
        if let Some(dir) = resolve_link("/", raw).filter(|d| !out.contains(d)) {
            out.push(dir);
        }
    }
    out
}

/// The kept entries of a whole image, as its top layer sees them.
type View = BTreeMap<String, Node>;

/// The budget of [`Limits::exec_work`] ran out.
struct Exhausted;

/// What following links may still cost: the bytes of the paths looked up (a lookup
/// compares its path against a few keys, so its cost grows with its length).
struct Work {
    left: u64,
}

impl Work {
    fn spend(&mut self, bytes: usize) -> Result<(), Exhausted> {
        let cost = bytes as u64 + 1;
        if cost > self.left {
            self.left = 0;
            return Err(Exhausted);
        }
        self.left -= cost;
        Ok(())
    }

    fn get<'v>(&mut self, view: &'v View, path: &str) -> Result<Option<&'v Node>, Exhausted> {
        self.spend(path.len())?;
        Ok(view.get(path))
    }
}

/// The executables of the image whose first pass kept `layers` (bottom first), in the
/// `PATH` directories `dirs`.
pub(super) fn collect(layers: Vec<Layer>, dirs: &[String], limits: &Limits) -> BTreeSet<String> {
    let view = merge(layers);
    let mut work = Work { left: limits.exec_work };
    let mut names = BTreeSet::new();
    // Out of budget: the names found so far are the answer (see the module docs).
    let _ = list(&view, dirs, &mut work, &mut names);
    names.into_iter().take(limits.executables).collect()
}

/// Applies the layers bottom first: each one's whiteouts and opaque markers delete what
/// the layers below said, then its own entries go on top. The same answer as looking a
/// path up layer by layer from the top, once for every path rather than per lookup, so
/// the cost does not grow with the number of layers times the number of names.
fn merge(layers: Vec<Layer>) -> View {
    let mut view = View::new();
    for layer in layers {
        for dir in &layer.opaque {
            remove_below(&mut view, dir);
        }
        for path in &layer.whiteouts {
            view.remove(path.as_str());
            // As the layer-by-layer lookup has it: only a real path deletes a subtree.
            if path != "/" {
                remove_below(&mut view, path);
            }
        }
        view.extend(layer.nodes);
    }
    view
}

/// `dir/` with a trailing slash (`/` for the root): the keys below `dir` are the ones
/// that start with it, and they sort together.
fn below(dir: &str) -> String {
    if dir == "/" { "/".to_string() } else { format!("{dir}/") }
}

fn remove_below(view: &mut View, dir: &str) {
    let prefix = below(dir);
    let doomed: Vec<String> = view
        .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
        .take_while(|(p, _)| p.starts_with(&prefix))
        .map(|(p, _)| p.clone())
        .collect();
    for p in doomed {
        view.remove(&p);
    }
}

/// Lists each `PATH` directory (once, however many name it) into `names`.
fn list(view: &View, dirs: &[String], work: &mut Work, names: &mut BTreeSet<String>) -> Result<(), Exhausted> {
    let mut listed = BTreeSet::new();
    for dir in dirs {
        // Not kept (None): a directory whose entry no layer has, or that no entry proves.
        let Some((real, None | Some(Node::Dir))) = follow(view, dir, work)? else { continue };
        if !listed.insert(real.clone()) {
            continue;
        }
        let prefix = below(&real);
        let entries =
            view.range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded)).take_while(|(p, _)| p.starts_with(&prefix));
        for (path, _) in entries {
            work.spend(path.len())?;
            let name = &path[prefix.len()..];
            if name.contains('/') || !plain_name(name) {
                continue;
            }
            if let Some((_, Some(Node::File(_, true)))) = follow(view, path, work)? {
                names.insert(name.to_string());
            }
        }
    }
    Ok(())
}

/// A name worth reporting: not empty, no longer than a file name can be, no control
/// character, and valid UTF-8 (layer paths are read lossily, so a U+FFFD stands for bytes
/// that were not; a real command name never holds one).
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= NAME_MAX && !name.chars().any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER)
}

/// Follows `start` through symlinks (its own and its directories') and hardlinks to what
/// it finally is: that path and its node (`None`: not kept, or absent). `None` when it
/// leads nowhere: above `/`, through a file, past [`MAX_HOPS`] links or [`PATH_MAX`].
fn follow<'v>(view: &'v View, start: &str, work: &mut Work) -> Result<Option<(String, Option<&'v Node>)>, Exhausted> {
    let mut path = start.to_string();
    'hop: for _ in 0..=MAX_HOPS {
        if path.len() > PATH_MAX {
            return Ok(None);
        }
        // The directories on the way, outermost first: `/a`, `/a/b` of `/a/b/c`.
        let slashes: Vec<usize> = path.match_indices('/').map(|(i, _)| i).skip(1).collect();
        for i in slashes {
            match work.get(view, &path[..i])? {
                Some(Node::Symlink(t)) => {
                    let Some(base) = resolve_link(&path[..i], t) else { return Ok(None) };
                    path = normalize(&format!("{base}{}", &path[i..]));
                    continue 'hop;
                }
                Some(Node::File(..) | Node::Hardlink(_)) => return Ok(None),
                Some(Node::Dir) | None => {}
            }
        }
        let next = match work.get(view, &path)? {
            Some(Node::Symlink(t)) => resolve_link(&path, t),
            // A hardlink names its target from the root of the image, as tar writes it.
            Some(Node::Hardlink(t)) => resolve_link("/", t),
            node => return Ok(Some((path, node))),
        };
        match next {
            Some(p) => path = p,
            None => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::layers::{LayerError, read_layers};
    use super::*;
    use std::cell::Cell;
    use std::io::Read;
    use tar::EntryType::{Directory as D, Link as H, Regular as F, Symlink as L};

    /// A layer of `(path, kind, mode, link target)` entries, files empty.
    fn layer(entries: &[(&str, tar::EntryType, u32, &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, mode, target) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(*mode);
            h.set_size(0);
            match kind {
                L | H => b.append_link(&mut h, path, target).unwrap(),
                _ => b.append_data(&mut h, path, &[][..]).unwrap(),
            }
        }
        b.into_inner().unwrap()
    }

    fn exes_within(limits: &Limits, layers: &[Vec<u8>], path: Option<&str>) -> Vec<String> {
        let open = |i: usize| Ok(Box::new(&layers[i][..]) as Box<dyn Read>);
        let got = read_layers(limits, layers.len(), open, &[], Some(&path_dirs(path))).unwrap();
        got.executables.unwrap().into_iter().collect()
    }

    fn exes(layers: &[Vec<u8>], path: Option<&str>) -> Vec<String> {
        exes_within(&Limits::DEFAULT, layers, path)
    }

    #[test]
    fn executable_files_in_path_directories_and_only_they() {
        let l = layer(&[
            ("usr", D, 0o755, ""),
            ("usr/bin", D, 0o755, ""),
            ("usr/bin/gh", F, 0o755, ""),
            ("usr/bin/README", F, 0o644, ""),
            ("usr/bin/owner-only", F, 0o700, ""),
            ("usr/bin/other-only", F, 0o601, ""),
            ("usr/bin/subdir", D, 0o755, ""),
            ("usr/bin/subdir/nested", F, 0o755, ""),
            ("usr/lib/tool", F, 0o755, ""),
            ("usr/bin/bad\u{7}name", F, 0o755, ""),
        ]);
        assert_eq!(exes(&[l], None), ["gh", "other-only", "owner-only"]);
    }

    #[test]
    fn whiteouts_and_opaque_directories_apply() {
        let l0 = layer(&[
            ("usr/bin/gh", F, 0o755, ""),
            ("usr/bin/curl", F, 0o755, ""),
            ("usr/bin/jq", F, 0o755, ""),
            ("usr/local/bin/old", F, 0o755, ""),
            ("usr/sbin/x", F, 0o755, ""),
        ]);
        let l1 = layer(&[
            ("usr/bin/.wh.gh", F, 0o644, ""),
            // `chmod -x` in a later layer writes the file again without the bit.
            ("usr/bin/jq", F, 0o644, ""),
            ("usr/local/bin/.wh..wh..opq", F, 0o644, ""),
            ("usr/local/bin/new", F, 0o755, ""),
            ("usr/.wh.sbin", F, 0o644, ""),
        ]);
        assert_eq!(exes(&[l0.clone(), l1.clone()], None), ["curl", "new"]);
        // Bottom first: the other way round, the markers are below what they would delete.
        assert_eq!(exes(&[l1, l0], None), ["curl", "gh", "jq", "new", "old", "x"]);
    }

    #[test]
    fn a_symlinked_path_directory_lists_the_directory_it_leads_to() {
        // Merged /usr: /bin and /sbin are links, and only they are on the PATH.
        let l = layer(&[("bin", L, 0o777, "usr/bin"), ("usr/bin/sh", F, 0o755, ""), ("usr/bin/ls", F, 0o755, "")]);
        assert_eq!(exes(std::slice::from_ref(&l), Some("/bin")), ["ls", "sh"]);
        // A directory under a symlinked one, the link in an upper layer, the files below.
        let l0 = layer(&[("opt/tools-1.2/bin/tool", F, 0o755, "")]);
        let l1 = layer(&[("opt/tools", L, 0o777, "/opt/tools-1.2")]);
        assert_eq!(exes(&[l0, l1], Some("/opt/tools/bin")), ["tool"]);
        // A PATH directory whose link climbs above the root is not followed.
        let l = layer(&[("usr/bin/ls", F, 0o755, ""), ("out", L, 0o777, "../../usr/bin")]);
        assert!(exes(&[l], Some("/out")).is_empty());
    }

    #[test]
    fn links_in_path_directories_count_when_they_lead_to_an_executable() {
        let l0 = layer(&[
            ("usr/bin/python3", F, 0o755, ""),
            ("usr/local/lib/node_modules/npm/bin/npm-cli.js", F, 0o755, ""),
            ("usr/share/doc/notes", F, 0o644, ""),
            ("usr/bin/gzip", F, 0o755, ""),
        ]);
        let l1 = layer(&[
            ("usr/local/bin/python", L, 0o777, "/usr/bin/python3"),
            // Outside any PATH directory, and in a layer below the link: still known.
            ("usr/local/bin/npm", L, 0o777, "../lib/node_modules/npm/bin/npm-cli.js"),
            ("usr/local/bin/notes", L, 0o777, "/usr/share/doc/notes"),
            ("usr/local/bin/dangling", L, 0o777, "/nowhere"),
            ("usr/local/bin/escape", L, 0o777, "../../../../usr/bin/python3"),
            ("usr/local/bin/loop", L, 0o777, "loop"),
            ("usr/local/bin/dir", L, 0o777, "/usr/share"),
            ("usr/local/bin/gunzip", H, 0o644, "usr/bin/gzip"),
            ("usr/local/bin/hard-doc", H, 0o755, "usr/share/doc/notes"),
            ("usr/local/bin/via-bin", L, 0o777, "/bin/python3"),
            ("bin", L, 0o777, "usr/bin"),
        ]);
        let got = exes(&[l0, l1], Some("/usr/local/bin"));
        assert_eq!(got, ["gunzip", "npm", "python", "via-bin"], "named as the entry, not its target");
    }

    #[test]
    fn path_from_the_config_is_honoured() {
        let l = layer(&[("opt/tools/bin/claw", F, 0o755, ""), ("usr/bin/gh", F, 0o755, "")]);
        assert_eq!(exes(std::slice::from_ref(&l), Some("/opt/tools/bin")), ["claw"]);
        assert_eq!(exes(std::slice::from_ref(&l), None), ["gh"], "the Docker default");
        assert_eq!(exes(std::slice::from_ref(&l), Some("relative/bin::/opt/tools/bin")), ["claw"]);
        assert!(exes(&[l], Some("")).is_empty(), "an empty PATH has no directory");
        assert_eq!(env_path(["A=1", "PATH=/a", "B=2", "PATH=/opt/tools/bin:/bin"]), Some("/opt/tools/bin:/bin".into()));
        assert_eq!(env_path(["PATHX=/a", "XPATH=/b"]), None);
        assert_eq!(path_dirs(Some("/a/../b:/b/:x:/../../c:/d")), ["/b", "/d"]);
        let many = (0..100).map(|i| format!("/d{i}")).collect::<Vec<_>>().join(":");
        assert_eq!(path_dirs(Some(&many)).len(), MAX_PATH_DIRS);
    }

    #[test]
    fn the_list_and_the_work_are_bounded() {
        let names: Vec<String> = (0..50).map(|i| format!("usr/bin/t{i:02}")).collect();
        let entries: Vec<(&str, tar::EntryType, u32, &str)> = names.iter().map(|n| (n.as_str(), F, 0o755, "")).collect();
        let l = layer(&entries);
        let all = exes(std::slice::from_ref(&l), None);
        assert_eq!(all.len(), 50);
        // The first names in sorted order, whatever order the layer has them in.
        let limits = Limits { executables: 10, ..Limits::DEFAULT };
        assert_eq!(exes_within(&limits, std::slice::from_ref(&l), None), all[..10]);
        // What the pass keeps: the entries in stream order until one does not fit.
        let limits = Limits { exec_bytes: 5 * (2 * "/usr/bin/t00".len() + 64), ..Limits::DEFAULT };
        assert_eq!(exes_within(&limits, std::slice::from_ref(&l), None), all[..5]);
        // The work of looking: it stops, with the names found so far.
        let limits = Limits { exec_work: 200, ..Limits::DEFAULT };
        let some = exes_within(&limits, std::slice::from_ref(&l), None);
        assert!(!some.is_empty() && some.len() < 50, "{some:?}");
        assert_eq!(some, all[..some.len()]);
    }

    #[test]
    fn odd_names_and_overlong_links_are_skipped() {
        let mut b = tar::Builder::new(Vec::new());
        let mut file = |path: &[u8], kind: tar::EntryType, target: &str| {
            use std::os::unix::ffi::OsStrExt;
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_mode(0o755);
            h.set_size(0);
            let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
            if kind == L { b.append_link(&mut h, path, target).unwrap() } else { b.append_data(&mut h, path, &[][..]).unwrap() }
        };
        file(b"usr/bin/ok", F, "");
        file(b"usr/bin/not-utf8-\xff", F, "");
        file(b"usr/bin/tab\there", F, "");
        file(format!("usr/bin/{}", "n".repeat(NAME_MAX + 1)).as_bytes(), F, "");
        // A target longer than PATH_MAX is not looked up (no entry that long is kept).
        file(b"usr/bin/long", L, &format!("/{}/ok", "d/".repeat(PATH_MAX)));
        let l = b.into_inner().unwrap();
        assert_eq!(exes(&[l], Some("/usr/bin")), ["ok"]);
    }

    #[test]
    fn executables_cost_no_extra_pass() {
        // A link chain to a file not asked for takes a second pass, as it always did; the
        // executables come from the first, and an executable link target outside the
        // PATH directories takes none.
        let ls = [
            layer(&[("usr/lib/tool", F, 0o755, ""), ("d.json", F, 0o644, "")]),
            layer(&[("usr/bin/tool", L, 0o777, "../lib/tool"), ("link.json", L, 0o777, "d.json")]),
        ];
        for (paths, passes) in [(vec![], 1), (vec!["/link.json".to_string()], 2)] {
            let opened = Cell::new(0);
            let open = |i: usize| -> Result<Box<dyn Read>, LayerError> {
                opened.set(opened.get() + 1);
                Ok(Box::new(&ls[i][..]))
            };
            let got = read_layers(&Limits::DEFAULT, ls.len(), open, &paths, Some(&path_dirs(None))).unwrap();
            assert_eq!(got.executables.unwrap().into_iter().collect::<Vec<_>>(), ["tool"]);
            assert_eq!(opened.get(), passes * ls.len());
        }
        // Without PATH directories nothing is told.
        let open = |i: usize| Ok(Box::new(&ls[i][..]) as Box<dyn Read>);
        assert_eq!(read_layers(&Limits::DEFAULT, 2, open, &[], None).unwrap().executables, None);
    }
}
