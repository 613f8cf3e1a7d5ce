//! `clawc config [POD]`: the settings a command would use for a pod, each with where it
//! came from (a flag, a `CLAWC_*` variable, a line of `clawc.toml`, or the default).

use super::Format;
use super::inputs::{PodArgs, StrictArg};
use crate::config::{Effective, From, KEYS};
use clap::Args;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    about = "The effective settings for a pod and where each came from: a flag, a CLAWC_* variable, clawc.toml or the default (docs/config.md)",
    after_help = "Takes the flags compile takes, so a command line can be tried: `clawc config deploy/claw-pod.yml --images none`. Nothing is compiled and the pod need not exist. See docs/config.md.

Exit codes: 0 shown · 2 an invalid clawc.toml, CLAWC_* variable or command line (diagnostics printed) · 3 clawc.toml could not be read (I/O)."
)]
pub struct ConfigArgs {
    /// The pod file (clawc.toml is looked for from its directory)
    #[arg(default_value = "claw-pod.yml")]
    pod: PathBuf,
    #[command(flatten)]
    input: PodArgs,
    /// Output directory [default: <pod dir>/.claw-compiled]
    #[arg(short, long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    strict: StrictArg,
    /// Output format: a table, or one JSON document (schemas/config.schema.json)
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// List every key clawc.toml may hold, with its default and meaning, and exit
    #[arg(long, exclusive = true)]
    keys: bool,
}

/// One line of the listing.
struct Row {
    key: &'static str,
    value: Value,
    shown: String,
    from: From,
}

pub(super) fn run(args: ConfigArgs) -> i32 {
    if args.keys {
        print!("{}", crate::config::keys_text());
        return 0;
    }
    let settings = match args.input.settings(&crate::compile::pod_dir(&args.pod), args.out.as_ref(), Some(&args.strict)) {
        Ok(s) => s,
        Err(r) => return r.print(args.format),
    };
    let rows = rows(&args.pod, &settings);
    let file = settings.file.as_ref().map(|f| f.name.clone());
    if args.format == Format::Json {
        let from = |f: &From| from_json(f, file.as_deref());
        let doc = json!({
            "pod": args.pod.display().to_string(),
            "file": file,
            "settings": rows.iter().map(|r| json!({ "key": r.key, "value": r.value, "from": from(&r.from) })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("settings serialize"));
        return 0;
    }
    match (&file, &settings.searched) {
        (Some(name), _) => println!("settings for {} (clawc.toml: {name})", args.pod.display()),
        (None, Some((from, to))) => {
            println!("settings for {} (no clawc.toml in {} or a parent up to {})", args.pod.display(), from.display(), to.display());
        }
        (None, None) => println!("settings for {} (no clawc.toml read)", args.pod.display()),
    }
    let table: Vec<Vec<String>> =
        rows.iter().map(|r| vec![r.key.to_string(), r.shown.clone(), from_text(&r.from, file.as_deref())]).collect();
    // Values come from a file in the repository: no escape sequence reaches the terminal.
    print!("{}", crate::diag::printable(&super::table(&table, "  ")));
    0
}

fn rows(pod: &Path, s: &Effective) -> Vec<Row> {
    let pod_parent = pod.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let path = |p: &Path| p.display().to_string();
    let mut rows = Vec::new();
    for key in KEYS {
        let mut row = |value: Value, shown: String, from: &From| rows.push(Row { key: key.name, value, shown, from: from.clone() });
        match key.name {
            "images" => {
                let list: Vec<String> = s.images.value.iter().map(ToString::to_string).collect();
                row(json!(list), list.join(","), &s.images.from);
            }
            "out" => {
                let p = s.out.value.clone().unwrap_or_else(|| pod_parent.join(".claw-compiled"));
                row(json!(path(&p)), path(&p), &s.out.from);
            }
            "env-file" => {
                let p = s.env_file.value.clone().unwrap_or_else(|| pod_parent.join(".env"));
                row(json!(path(&p)), path(&p), &s.env_file.from);
            }
            "root" => {
                let p = s
                    .root
                    .value
                    .clone()
                    .unwrap_or_else(|| crate::source::fs::InputRoot::discover(&crate::compile::pod_dir(pod)).path().to_path_buf());
                row(json!(path(&p)), path(&p), &s.root.from);
            }
            "descriptor" | "runner" => {
                let entries: Vec<(String, String, &From)> = if key.name == "descriptor" {
                    s.descriptors.iter().map(|(svc, v)| (svc.clone(), path(&v.value), &v.from)).collect()
                } else {
                    s.runners.iter().map(|(svc, v)| (svc.clone(), v.value.clone(), &v.from)).collect()
                };
                if entries.is_empty() {
                    row(Value::Null, "(none)".to_string(), &From::Default);
                }
                for (svc, value, from) in entries {
                    row(json!(format!("{svc}={value}")), format!("{svc}={value}"), from);
                }
            }
            "no-cache" => row(json!(s.no_cache.value), s.no_cache.value.to_string(), &s.no_cache.from),
            "image-jobs" => row(json!(s.image_jobs.value), s.image_jobs.value.to_string(), &s.image_jobs.from),
            "strict" => row(json!(s.strict.value), s.strict.value.to_string(), &s.strict.from),
            _ => {}
        }
    }
    rows
}

fn from_text(from: &From, file: Option<&str>) -> String {
    match from {
        From::Flag => "flag".to_string(),
        From::Env(var) => format!("env {var}"),
        From::File(span) => format!("{}:{}", file.unwrap_or("clawc.toml"), span.line),
        From::Lock => "clawc.lock".to_string(),
        From::Default => "default".to_string(),
    }
}

fn from_json(from: &From, file: Option<&str>) -> Value {
    match from {
        From::Flag => json!({ "source": "flag" }),
        From::Env(var) => json!({ "source": "env", "variable": var }),
        From::File(span) => json!({ "source": "file", "file": file, "line": span.line, "column": span.col }),
        From::Lock => json!({ "source": "lock" }),
        From::Default => json!({ "source": "default" }),
    }
}
