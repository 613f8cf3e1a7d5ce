//! `explain`, `who-can`, `report --matrix` and the per-agent summary in the services' reports,
//! on the bundled trading-desk example.

use super::harness::clawc;
use serde_json::Value;
use std::path::Path;

fn run(args: &[&str]) -> (i32, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
    let o = clawc().current_dir(dir).args(args).output().unwrap();
    (o.status.code().unwrap(), String::from_utf8(o.stdout).unwrap() + &String::from_utf8(o.stderr).unwrap())
}

fn json(args: &[&str]) -> Value {
    let (code, out) = run(args);
    assert_eq!(code, 0, "{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn explain_a_granted_tool_shows_the_whole_chain() {
    let e = json(&["explain", "claw-pod.yml", "trader", "research-mcp.search", "--format", "json"]);
    assert_eq!(e["granted"], true);
    let steps: Vec<&str> = e["chain"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["pod default", "spread", "grant", "descriptor", "tool"]);
    assert_eq!(e["chain"][1]["at"], "claw-pod.yml:42:11", "the `...` line");
    assert_eq!(e["chain"][3]["at"], "descriptors/research-mcp.json");
    assert_eq!(e["alias"], "research-mcp_search_8d35a1e3");
    let inherited = json(&["explain", "claw-pod.yml", "analyst-2", "trading-api.get_quote", "--format", "json"]);
    assert_eq!(inherited["chain"][1]["step"], "inherited");
    assert_eq!(inherited["service"], "analyst");
}

#[test]
fn explain_a_denied_tool_gives_the_smallest_grant() {
    let e = json(&["explain", "claw-pod.yml", "trader", "trading-api.cancel_order", "--format", "json"]);
    assert_eq!(e["granted"], false);
    assert!(e["why_not"].as_str().unwrap().contains("name only: get_quote, get_market_context, propose_trade, execute_trade"));
    assert_eq!(e["suggestion"], "in \"trader\", at claw-pod.yml:43: `allow: [propose_trade, execute_trade, cancel_order]`");
    let e = json(&["explain", "claw-pod.yml", "analyst-0", "trading-api.cancel_order", "--format", "json"]);
    assert!(e["suggestion"].as_str().unwrap().contains("    - ...\n"), "inheriting agents keep their defaults: {}", e["suggestion"]);
    let (code, text) = run(&["explain", "claw-pod.yml", "reporter", "research-mcp.search"]);
    assert_eq!(code, 0);
    assert!(text.contains("reporter cannot call research-mcp.search: \"reporter\" declares `tools: []`"), "{text}");
}

#[test]
fn explain_lists_every_granted_tool_without_a_tool() {
    let e = json(&["explain", "claw-pod.yml", "risk-officer", "--format", "json"]);
    let tools: Vec<&str> = e["tools"].as_array().unwrap().iter().map(|t| t["tool"].as_str().unwrap()).collect();
    assert_eq!(tools.len(), 5);
    assert!(e["tools"].as_array().unwrap().iter().all(|t| t["allow"] == "all"));
    let (_, text) = run(&["explain", "claw-pod.yml", "reporter"]);
    assert!(text.contains("reporter can call no tools (deny by default)"), "{text}");
}

#[test]
fn unknown_agents_and_tools_are_diagnostics() {
    let (code, text) = run(&["explain", "claw-pod.yml", "tradr", "--format", "json"]);
    assert_eq!(code, 2);
    assert!(text.contains("clawc::access::unknown_agent") && text.contains("did you mean `trader`?"), "{text}");
    let (code, text) = run(&["who-can", "claw-pod.yml", "trading-api.excute_trade", "--format", "json"]);
    assert_eq!(code, 2);
    assert!(text.contains("did you mean `trading-api.execute_trade`?"), "{text}");
}

#[test]
fn who_can_a_tool_and_a_service() {
    let w = json(&["who-can", "claw-pod.yml", "trading-api.execute_trade", "--format", "json"]);
    let holders: Vec<(&str, &str)> =
        w["holders"].as_array().unwrap().iter().map(|h| (h["agent"].as_str().unwrap(), h["allow"].as_str().unwrap())).collect();
    assert_eq!(holders, [("risk-officer", "all"), ("trader", "named")]);
    let w = json(&["who-can", "claw-pod.yml", "research-mcp", "--format", "json"]);
    assert_eq!(w["holders"].as_array().unwrap().len(), 9, "3 analysts and the trader, 2 tools each, and the quant's one");
    let (code, text) = run(&["who-can", "claw-pod.yml", "trading-api.cancel_order"]);
    assert_eq!(code, 0);
    assert_eq!(
        text.trim(),
        "risk-officer  trading-api.cancel_order  claw-pod.yml:61:11  the agent's own `tools:` (all); shown as `trading-api_cancel_order_864d6f31` by cllama"
    );
    // A native agent's grant is shown under its runner's name.
    let w = json(&["who-can", "claw-pod.yml", "research-mcp.search", "--format", "json"]);
    let quant = w["holders"].as_array().unwrap().iter().find(|h| h["agent"] == "quant").unwrap();
    assert_eq!((quant["shown_as"].as_str(), quant["via_runner"].as_str()), (Some("mcp__research-mcp__search"), Some("codex")));
    let e = json(&["explain", "claw-pod.yml", "quant", "research-mcp.search", "--format", "json"]);
    assert_eq!(
        (e["alias"].as_str(), e["runner"].as_str(), e["granted"].as_bool()),
        (Some("mcp__research-mcp__search"), Some("codex"), Some(true))
    );
    let last = e["chain"].as_array().unwrap().last().unwrap();
    assert_eq!(last["step"], "runner");
    assert!(last["text"].as_str().unwrap().contains("codex loads it natively from http://research-mcp:8080/mcp"), "{last}");
}

#[test]
fn the_access_matrix_as_text_markdown_and_json() {
    let m = json(&["report", "claw-pod.yml", "--matrix", "--format", "json"]);
    assert_eq!(m["agents"], serde_json::json!(["analyst-0", "analyst-1", "analyst-2", "quant", "reporter", "risk-officer", "trader"]));
    assert_eq!(m["runners"], serde_json::json!(["cllama", "cllama", "cllama", "codex", "cllama", "cllama", "cllama"]));
    let cancel = m["rows"].as_array().unwrap().iter().find(|r| r["tool"] == "trading-api.cancel_order").unwrap();
    assert_eq!(cancel["granted"], serde_json::json!([false, false, false, false, false, true, false]));
    let (_, md) = run(&["report", "claw-pod.yml", "--matrix", "--markdown"]);
    assert!(
        md.starts_with("| tool | effect | analyst-0 (cllama) | analyst-1 (cllama) | analyst-2 (cllama) | quant (codex) | reporter (cllama) | risk-officer (cllama) | trader (cllama) |\n|---|---|"),
        "{md}"
    );
    assert!(md.contains("| `trading-api.execute_trade` | rw |  |  |  |  |  | ✅ | ✅ |"), "{md}");
    let (_, text) = run(&["report", "claw-pod.yml", "--matrix"]);
    assert!(text.contains("trading-api.get_quote           ro   x x x . . x x"), "{text}");
    assert!(text.contains("4=quant (codex)"), "{text}");
}

#[test]
fn the_report_summarises_grants_per_service() {
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk/expected");
    let index: Value = serde_json::from_slice(&std::fs::read(expected.join("report.json")).unwrap()).unwrap();
    let entry = index["agents"].as_array().unwrap().iter().find(|a| a["id"] == "trader").unwrap();
    assert_eq!(entry["report"], "report/trader.json");
    let trader: Value = serde_json::from_slice(&std::fs::read(expected.join("report/trader.json")).unwrap()).unwrap();
    assert_eq!((&trader["service"], &trader["agents"][0]["id"]), (&Value::from("trader"), &Value::from("trader")));
    let api = trader["summary"].as_array().unwrap().iter().find(|s| s["service"] == "trading-api").unwrap();
    assert_eq!(
        (api["granted"].as_u64(), api["not_granted"].as_u64(), api["read_only"].as_u64(), api["side_effecting"].as_u64()),
        (Some(4), Some(1), Some(2), Some(2))
    );
    assert!(api.get("all_expanded_to").is_none());
    let mcp = trader["summary"].as_array().unwrap().iter().find(|s| s["service"] == "research-mcp").unwrap();
    assert_eq!(mcp["all_expanded_to"], serde_json::json!(["search", "fetch_filing"]));
}
