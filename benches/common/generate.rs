//! The bench pod generator, shared by `benches/compile.rs` and `benches/check.rs`.

use std::fmt::Write as _;
use std::path::Path;

pub(crate) const TOOL_SERVICES: usize = 100;
pub(crate) const TOOLS_PER_SERVICE: usize = 20;
pub(crate) const COUNT: usize = 10;

/// Writes a pod with `agent_services × COUNT` agent ids into `dir`.
pub(crate) fn generate(dir: &Path, agent_services: usize) {
    generate_with(dir, agent_services, COUNT);
}

/// Writes a pod with `agent_services × count` agent ids into `dir`.
pub(crate) fn generate_with(dir: &Path, agent_services: usize, count: usize) {
    let mut pod = String::from(
        "x-claw:\n  pod: bench\n  cllama-defaults:\n    proxy: [passthrough]\n  tools-defaults:\n    - tools-0\n  feeds-defaults: [feed-0]\nservices:\n",
    );
    for a in 0..agent_services {
        let named = (1 + a % (TOOL_SERVICES - 1)).to_string();
        let allow: Vec<String> = (0..10).map(|t| format!("op_{t}")).collect();
        writeln!(
            pod,
            "  agent-{a}:\n    image: agent\n    environment:\n      TOKEN_{named}: ${{TOKEN_{named}}}\n    x-claw:\n      count: {count}\n      tools:\n        - ...\n        - service: tools-{named}\n          allow: [{}]\n      surfaces: [service://tools-{named}]",
            allow.join(", ")
        )
        .unwrap();
    }
    for s in 0..TOOL_SERVICES {
        writeln!(pod, "  tools-{s}:\n    build: ./svc/tools-{s}\n    expose: [\"{}\"]", 8000 + s).unwrap();
        let tools: Vec<String> = (0..TOOLS_PER_SERVICE)
            .map(|t| {
                format!(
                    r#"{{"name":"op_{t}","description":"Operation {t} of service {s}","inputSchema":{{"type":"object","required":["id"],"properties":{{"id":{{"type":"string","minLength":1}},"limit":{{"type":"integer","minimum":1,"maximum":100}}}}}},"http":{{"method":"POST","path":"/ops/{t}/{{claw_id}}","body_key":"args"}},"annotations":{{"readOnly":{}}}}}"#,
                    t % 2 == 0
                )
            })
            .collect();
        let auth = if s == 0 { String::new() } else { format!(r#","auth":{{"type":"bearer","env":"TOKEN_{s}"}}"#) };
        let desc = format!(
            r#"{{"version":2,"description":"Tool service {s}","feeds":[{{"name":"feed-{s}","path":"/feed/{{claw_id}}","ttl":60}}]{auth},"tools":[{}]}}"#,
            tools.join(",")
        );
        let d = dir.join(format!("svc/tools-{s}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(".claw-describe.json"), desc).unwrap();
    }
    std::fs::write(dir.join("claw-pod.yml"), pod).unwrap();
}

/// `pod` (a generated pod's text) with the grant of agent service `agent-<agent>`
/// narrowed by one tool: the one-agent edit both benches make.
pub(crate) fn narrowed(pod: &str, agent: usize) -> String {
    const GRANT: &str = "allow: [op_0, op_1, op_2";
    let at = pod.find(&format!("  agent-{agent}:\n")).expect("the agent service");
    let grant = at + pod[at..].find(GRANT).expect("its grant");
    format!("{}allow: [op_0, op_1{}", &pod[..grant], &pod[grant + GRANT.len()..])
}
