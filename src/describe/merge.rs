//! An image that bakes both a descriptor and a `tools/list` snapshot: the descriptor
//! gives everything but tools (description, feeds, endpoints, auth, skill, memory), and
//! the tools are the descriptor's followed by the snapshot's. A tool name in both is an
//! error, as is mixing the descriptor's HTTP tools with the snapshot's MCP tools (a
//! service has one MCP endpoint for all its tools) or a version 1 descriptor (no tools).

use crate::describe::Descriptor;
use crate::describe::json_span::{Seg, locate};
use crate::diag::Diagnostic;
use crate::image::diags;
use crate::sourcemap::{FileId, Loc, SourceMap};

pub(crate) fn with_snapshot(
    mut desc: Descriptor,
    snap: Descriptor,
    file: FileId,
    snap_file: FileId,
    sources: &SourceMap,
) -> Result<Descriptor, Diagnostic> {
    let (dname, sname) = (sources.name(file), sources.name(snap_file));
    if desc.version == 1 {
        return Err(Diagnostic::error(
            diags::SNAPSHOT_CONFLICT,
            format!("`{dname}` is a version 1 descriptor, which cannot carry the tools of `{sname}`"),
        )
        .in_file(file)
        .help("make the descriptor \"version\": 2"));
    }
    if desc.mcp.is_none() && !desc.tools.is_empty() {
        return Err(Diagnostic::error(
            diags::SNAPSHOT_CONFLICT,
            format!("`{dname}` declares HTTP tools and `{sname}` MCP tools; a service's tools all use one transport"),
        )
        .in_file(file)
        .help("describe the HTTP tools as MCP tools, or move them to another service"));
    }
    let declared: std::collections::HashMap<&str, usize> = desc.tools.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    for (i, t) in snap.tools.iter().enumerate() {
        if let Some(&j) = declared.get(t.name.as_str()) {
            let text = &sources.get(snap_file).text;
            let (s, e) = locate(text, &[Seg::Key("tools".into()), Seg::Index(i), Seg::Key("name".into())]);
            let loc = Loc { file: snap_file, span: sources.get(snap_file).span(s, e) };
            let (ds, de) = locate(&sources.get(file).text, &[Seg::Key("tools".into()), Seg::Index(j), Seg::Key("name".into())]);
            return Err(Diagnostic::error(
                diags::TOOL_COLLISION,
                format!("tool \"{}\" is declared by both `{dname}` and `{sname}`", t.name),
            )
            .at(loc)
            .also(Loc { file, span: sources.get(file).span(ds, de) }, "also declared by the descriptor")
            .help("a descriptor and a baked snapshot in one image must describe different tools: remove it from one of them"));
        }
    }
    desc.mcp = desc.mcp.or(snap.mcp);
    // The service has one MCP endpoint: the descriptor's when it declares one.
    let endpoint = desc.mcp.as_ref().map_or_else(|| "/mcp".to_string(), |m| m.path.clone());
    desc.tools.extend(snap.tools.into_iter().map(|mut t| {
        if let crate::describe::Transport::Mcp { path, .. } = &mut t.transport {
            path.clone_from(&endpoint);
        }
        t
    }));
    Ok(desc)
}

#[cfg(test)]
mod tests {
    use crate::sourcemap::SourceMap;

    #[test]
    fn a_tool_in_both_points_at_the_snapshot_and_the_descriptor() {
        let tool = |name: &str| format!(r#"{{"name": "{name}", "description": "d", "inputSchema": {{"type": "object"}}}}"#);
        let desc_text =
            format!(r#"{{"version": 2, "mcp": {{"transport": "http", "path": "/mcp"}}, "tools": [{}, {}]}}"#, tool("a"), tool("b"));
        let snap_text = format!(r#"{{"version": 2, "mcp": {{"transport": "http", "path": "/mcp"}}, "tools": [{}]}}"#, tool("b"));
        let mut sources = SourceMap::default();
        let file = sources.add("img:/descriptor.json", desc_text);
        let snap_file = sources.add("img:/tools.json", snap_text);
        let (desc, ds) = crate::describe::decode(file, sources.get(file));
        let (snap, ss) = crate::describe::decode(snap_file, sources.get(snap_file));
        assert!(ds.is_empty() && ss.is_empty(), "{ds:?} {ss:?}");
        let d = super::with_snapshot(desc.unwrap(), snap.unwrap(), file, snap_file, &sources).unwrap_err();
        assert_eq!(d.code, super::diags::TOOL_COLLISION);
        assert_eq!(d.loc.unwrap().file, snap_file);
        let [(at, label)] = &d.related[..] else { panic!("{:?}", d.related) };
        assert_eq!((at.file, label.as_str()), (file, "also declared by the descriptor"));
        assert_eq!(&sources.get(file).text[at.span.start..at.span.end], "\"b\"");
    }
}
