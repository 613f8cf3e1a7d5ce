//! The outputs of `clawc compat`: text (grouped by severity, styled — the caller strips
//! styles off a non-terminal), JSON (`schemas/compat.schema.json`), a Markdown pull
//! request comment, GitHub workflow commands, JUnit XML and SARIF 2.1.0. Every text that
//! comes from a descriptor or pod is escaped for the format it goes into.

use super::Finding;
use super::rules::{self, Severity};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Everything an output needs.
pub(crate) struct Report<'a> {
    pub service: &'a str,
    pub old: &'a str,
    pub new: &'a str,
    pub pods: &'a [String],
    pub fail_on: Severity,
    /// Sorted ([`super::sort`]).
    pub findings: &'a [Finding],
    /// Accept entries that matched nothing: (file, line, what).
    pub stale: &'a [(String, u32, String)],
    /// Warnings (diagnostics as JSON).
    pub warnings: &'a [Value],
    pub failed: bool,
}

impl Report<'_> {
    fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s && f.accepted.is_none()).count()
    }

    fn accepted(&self) -> usize {
        self.findings.iter().filter(|f| f.accepted.is_some()).count()
    }

    fn summary_line(&self) -> String {
        let verdict = if self.failed { "FAIL" } else { "PASS" };
        let stale = if self.stale.is_empty() { String::new() } else { format!(", {} stale accept entr(y/ies)", self.stale.len()) };
        format!(
            "{verdict}: {} ERR, {} WARN, {} INFO, {} accepted{stale} (--fail-on {})",
            self.count(Severity::Err),
            self.count(Severity::Warn),
            self.count(Severity::Info),
            self.accepted(),
            self.fail_on.as_str().to_ascii_lowercase()
        )
    }
}

fn p(s: &str) -> String {
    crate::diag::printable(s)
}

/// Text for a terminal: a header, findings grouped by severity, then the accepted ones.
pub(crate) fn text(r: &Report) -> String {
    use anstyle::{AnsiColor, Style};
    let bold = Style::new().bold();
    let style = |s: Severity| match s {
        Severity::Err => AnsiColor::Red.on_default().bold(),
        Severity::Warn => AnsiColor::Yellow.on_default().bold(),
        Severity::Info => AnsiColor::Cyan.on_default(),
    };
    let mut o = String::new();
    let _ = writeln!(o, "{bold}clawc compat{bold:#} {} → {} (service {})", p(r.old), p(r.new), p(r.service));
    for s in [Severity::Err, Severity::Warn, Severity::Info] {
        let group: Vec<&Finding> = r.findings.iter().filter(|f| f.severity == s && f.accepted.is_none()).collect();
        if group.is_empty() {
            continue;
        }
        let st = style(s);
        let _ = writeln!(o, "\n{st}{} ({}){st:#}", s.as_str(), group.len());
        for f in group {
            finding_text(&mut o, f);
        }
    }
    let accepted: Vec<&Finding> = r.findings.iter().filter(|f| f.accepted.is_some()).collect();
    if !accepted.is_empty() {
        let _ = writeln!(o, "\n{bold}accepted ({}){bold:#}", accepted.len());
        for f in accepted {
            finding_text(&mut o, f);
            let _ = writeln!(o, "      accepted: {}", p(f.accepted.as_deref().unwrap_or_default()));
        }
    }
    for (file, line, what) in r.stale {
        let _ = writeln!(
            o,
            "\n{}WARN{:#} stale accept entry at {}:{line}: {} matches no finding",
            style(Severity::Warn),
            style(Severity::Warn),
            p(file),
            p(what)
        );
    }
    let _ = writeln!(o, "\n{bold}{}{bold:#}", r.summary_line());
    o
}

fn finding_text(o: &mut String, f: &Finding) {
    let tool = f.tool.as_deref().map_or_else(|| "(service)".to_string(), p);
    let path = if f.path.is_empty() { String::new() } else { format!("  {}", p(&f.path)) };
    let _ = writeln!(o, "  {} {tool}{path}", f.rule.id());
    let _ = writeln!(o, "      {}", p(&f.message));
    if !f.agents.is_empty() {
        let _ = writeln!(o, "      agents: {}", p(&f.agents.join(", ")));
    }
    let _ = writeln!(o, "      at {}:{}  fingerprint {}", p(&f.file), f.line, f.fingerprint);
}

/// The JSON document (`schemas/compat.schema.json`).
pub(crate) fn json(r: &Report) -> Value {
    json!({
        "version": 1,
        "service": r.service,
        "old": r.old,
        "new": r.new,
        "pods": r.pods,
        "fail_on": r.fail_on.as_str(),
        "findings": r.findings,
        "stale_accepts": r.stale.iter().map(|(file, line, what)| json!({"file": file, "line": line, "entry": what})).collect::<Vec<_>>(),
        "summary": {
            "ERR": r.count(Severity::Err),
            "WARN": r.count(Severity::Warn),
            "INFO": r.count(Severity::Info),
            "accepted": r.accepted(),
            "stale_accepts": r.stale.len(),
            "failed": r.failed,
            "exit": i32::from(r.failed),
        },
        "diagnostics": r.warnings,
    })
}

/// Text for a Markdown table cell: one line, `|` and HTML-significant characters escaped.
fn md(s: &str) -> String {
    let s = p(s).replace('\n', " ");
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push('\''),
            _ => out.push(c),
        }
    }
    out
}

/// A pull request comment: the summary, then one table row per finding.
pub(crate) fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let icon = if r.failed { "❌" } else { "✅" };
    let _ = writeln!(o, "### {icon} clawc compat: `{}`\n", md(r.service));
    let _ = writeln!(o, "**{}** — `{}` → `{}`\n", md(&r.summary_line()), md(r.old), md(r.new));
    if r.findings.is_empty() {
        o.push_str("No differences.\n");
    } else {
        o.push_str("| Severity | Rule | Tool | Path | Finding | Agents |\n|---|---|---|---|---|---|\n");
        for f in r.findings {
            let sev = if f.accepted.is_some() { format!("~~{}~~ accepted", f.severity) } else { f.severity.to_string() };
            let agents = if f.agents.len() > 10 {
                format!("{} and {} more", f.agents[..10].join(", "), f.agents.len() - 10)
            } else {
                f.agents.join(", ")
            };
            let _ = writeln!(
                o,
                "| {sev} | `{}` | {} | {} | {} | {} |",
                f.rule.id(),
                f.tool.as_deref().map_or_else(|| "—".to_string(), |t| format!("`{}`", md(t))),
                if f.path.is_empty() { "—".to_string() } else { format!("`{}`", md(&f.path)) },
                md(&f.message),
                md(&agents)
            );
        }
    }
    for (file, line, what) in r.stale {
        let _ = writeln!(o, "\n⚠️ stale accept entry at `{}:{line}`: {} matches no finding", md(file), md(what));
    }
    o
}

/// GitHub workflow command escaping: the message, and properties (which also escape
/// `:` and `,`).
fn gh_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn gh_prop(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `::error file=…,line=…,title=RULE::message`, one per finding not accepted.
pub(crate) fn github(r: &Report) -> String {
    let mut o = String::new();
    for f in r.findings.iter().filter(|f| f.accepted.is_none()) {
        let level = match f.severity {
            Severity::Err => "error",
            Severity::Warn => "warning",
            Severity::Info => "notice",
        };
        let tool = f.tool.as_deref().map(|t| format!("`{}`: ", p(t))).unwrap_or_default();
        let agents = if f.agents.is_empty() { String::new() } else { format!(" (agents: {})", p(&f.agents.join(", "))) };
        let _ = writeln!(
            o,
            "::{level} file={},line={},title={}::{}",
            gh_prop(&p(&f.file)),
            f.line,
            gh_prop(f.rule.id()),
            gh_data(&format!("{tool}{}{agents}", p(&f.message)))
        );
    }
    for (file, line, what) in r.stale {
        let _ = writeln!(
            o,
            "::warning file={},line={line},title=stale accept entry::{}",
            gh_prop(&p(file)),
            gh_data(&format!("{} matches no finding", p(what)))
        );
    }
    o
}

/// XML text: markup characters escaped, and characters XML 1.0 cannot hold dropped.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: one test case per rule of the catalogue; a failure per finding at or above
/// `--fail-on` that no entry accepts; other findings as the case's output.
pub(crate) fn junit(r: &Report) -> String {
    let failing = |f: &Finding| f.accepted.is_none() && f.severity >= r.fail_on;
    let failures =
        r.findings.iter().filter(|f| failing(f)).count() + if r.stale.is_empty() || Severity::Warn < r.fail_on { 0 } else { r.stale.len() };
    let cases = rules::ALL.len() + usize::from(!r.stale.is_empty());
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(o, "<testsuites name=\"clawc compat\" tests=\"{cases}\" failures=\"{failures}\">");
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" tests=\"{cases}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        xml(&format!("compat {}", r.service))
    );
    for rule in rules::ALL {
        let mine: Vec<&Finding> = r.findings.iter().filter(|f| f.rule == *rule).collect();
        let _ =
            write!(o, "    <testcase classname=\"{}\" name=\"{}\"", xml(&format!("compat.{}", rule.rule().category.as_str())), rule.id());
        if mine.is_empty() {
            o.push_str("/>\n");
            continue;
        }
        o.push_str(">\n");
        for f in mine.iter().filter(|f| failing(f)) {
            let tool = f.tool.as_deref().unwrap_or("(service)");
            let _ = writeln!(
                o,
                "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                f.severity,
                xml(&format!("{tool}: {}", f.message)),
                xml(&format!("{}:{} {} {}\nagents: {}\nfingerprint: {}", f.file, f.line, tool, f.path, f.agents.join(", "), f.fingerprint))
            );
        }
        let rest: Vec<String> = mine
            .iter()
            .filter(|f| !failing(f))
            .map(|f| {
                let acc = f.accepted.as_deref().map(|a| format!(" [accepted: {a}]")).unwrap_or_default();
                format!("{} {}: {}{acc}", f.severity, f.tool.as_deref().unwrap_or("(service)"), f.message)
            })
            .collect();
        if !rest.is_empty() {
            let _ = writeln!(o, "      <system-out>{}</system-out>", xml(&rest.join("\n")));
        }
        o.push_str("    </testcase>\n");
    }
    if !r.stale.is_empty() {
        o.push_str("    <testcase classname=\"compat.ACCEPT\" name=\"stale accept entries\">\n");
        let text: Vec<String> = r.stale.iter().map(|(file, line, what)| format!("{file}:{line}: {what} matches no finding")).collect();
        if Severity::Warn >= r.fail_on {
            let _ = writeln!(o, "      <failure type=\"WARN\" message=\"stale accept entries\">{}</failure>", xml(&text.join("\n")));
        } else {
            let _ = writeln!(o, "      <system-out>{}</system-out>", xml(&text.join("\n")));
        }
        o.push_str("    </testcase>\n");
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

/// SARIF 2.1.0: the catalogue as the driver's rules, one result per finding (accepted
/// ones carry a suppression), with NEW's file and line and a stable partial fingerprint.
pub(crate) fn sarif(r: &Report) -> Value {
    let level = |s: Severity| match s {
        Severity::Err => "error",
        Severity::Warn => "warning",
        Severity::Info => "note",
    };
    let rules_json: Vec<Value> = rules::ALL
        .iter()
        .map(|rule| {
            let x = rule.rule();
            json!({
                "id": x.id,
                "name": x.id,
                "shortDescription": {"text": x.meaning},
                "fullDescription": {"text": x.meaning},
                "helpUri": format!("https://clawdapus.dev/clawc/compat-rules#{}", x.id.to_ascii_lowercase()),
                "defaultConfiguration": {"level": level(x.severity)},
                "properties": {"category": x.category.as_str(), "direction": x.direction.as_str(), "severity": x.severity.as_str()},
            })
        })
        .collect();
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let index = rules::ALL.iter().position(|x| *x == f.rule).unwrap_or(0);
            let tool = f.tool.as_deref().map(|t| format!("`{t}`: ")).unwrap_or_default();
            let mut res = json!({
                "ruleId": f.rule.id(),
                "ruleIndex": index,
                "level": level(f.severity),
                "message": {"text": format!("{tool}{}", f.message)},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(&f.file)},
                        "region": {"startLine": f.line.max(1)},
                    },
                    "logicalLocations": [{"name": f.tool.clone().unwrap_or_else(|| r.service.to_string()), "fullyQualifiedName": format!("{}{}", f.tool.as_deref().unwrap_or(r.service), f.path), "kind": "member"}],
                }],
                "partialFingerprints": {"clawcCompat/v1": f.fingerprint},
                "properties": {"agents": f.agents, "path": f.path, "category": f.category, "direction": f.direction},
            });
            if let Some(reason) = &f.accepted {
                res["suppressions"] = json!([{"kind": "external", "justification": reason}]);
            }
            res
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "clawc compat",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://clawdapus.dev/clawc",
                "rules": rules_json,
            }},
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    })
}

/// A file name as a relative URI reference (percent-encoding what a URI cannot hold).
fn uri(file: &str) -> String {
    let mut out = String::new();
    for b in file.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:@!$&'()*+,;=".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `--list-rules`: text, JSON or Markdown.
pub(crate) fn list_rules_text() -> String {
    let w = rules::ALL.iter().map(|r| r.id().len()).max().unwrap_or(0);
    let mut o = String::new();
    for r in rules::ALL {
        let x = r.rule();
        let _ =
            writeln!(o, "{:<w$}  {:<9}  {:<4}  {:<5}  {}", x.id, x.category.as_str(), x.severity.as_str(), x.direction.as_str(), x.meaning);
    }
    o
}

pub(crate) fn list_rules_json() -> Value {
    let rules: Vec<Value> = rules::ALL
        .iter()
        .map(|r| {
            let x = r.rule();
            json!({"id": x.id, "category": x.category.as_str(), "severity": x.severity.as_str(), "direction": x.direction.as_str(), "meaning": x.meaning})
        })
        .collect();
    json!({"version": 1, "rules": rules})
}
