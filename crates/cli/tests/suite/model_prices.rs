//! The cost of a run on every priced model, through `deskhand ask` against the stand-in on
//! each model's own API (Anthropic's Messages, OpenAI's Chat Completions or Responses): the
//! `done` event's cost is the table's price of the reported usage, `started` names the
//! price's source, and a reseller's price is labelled on the terminal.

use crate::support::API_KEY;
use crate::support::cli::{deskhand, run};
use deskhand_engine::llm::Usage;
use deskhand_engine::llm::pricing::{PriceSource, PriceTable};
use deskhand_standin::{Reply, StandIn};
use serde_json::Value;

/// `deskhand ask --json` on `model` (Anthropic for Claude, else OpenAI) with bash only.
fn ask(model: &str, usage: deskhand_standin::Usage, extra: &[&str]) -> (i32, Vec<Value>, String) {
    let mut reply = Reply::new().text("ok");
    reply.usage = Some(usage);
    let api = StandIn::spawn([reply.into()]);
    let dir = tempfile::tempdir().unwrap();
    let mut command = deskhand(dir.path());
    if model.starts_with("claude") {
        command.env("ANTHROPIC_API_KEY", API_KEY).args([
            "ask",
            "--provider",
            "anthropic",
            "--base-url",
            &api.url(),
        ]);
    } else {
        command.env("OPENAI_API_KEY", API_KEY).args([
            "ask",
            "--provider",
            "openai",
            "--base-url",
            &format!("{}/v1", api.url()),
        ]);
    }
    command
        .args(["--model", model, "--tools", "bash"])
        .args(extra)
        .arg("say ok");
    let (output, stdout, stderr) = run(&mut command);
    assert!(
        api.requests().iter().all(|r| r.rejected.is_none()),
        "{model}: {:?}",
        api.requests()
    );
    let events = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (output.status.code().unwrap_or(-1), events, stderr)
}

fn event<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
}

#[test]
fn a_run_on_each_priced_model_costs_its_price_and_names_its_source() {
    let table = PriceTable::default();
    assert!(table.0.len() >= 24);
    for (model, price) in &table.0 {
        let claude = model.starts_with("claude");
        // Anthropic reports cache writes; OpenAI counts them as plain input.
        let sent = deskhand_standin::Usage {
            input_tokens: 3_000,
            output_tokens: 500,
            cache_creation_input_tokens: if claude { 2_000 } else { 0 },
            cache_read_input_tokens: 10_000,
        };
        let seen = Usage {
            input_tokens: sent.input_tokens,
            output_tokens: sent.output_tokens,
            cache_creation_input_tokens: sent.cache_creation_input_tokens,
            cache_read_input_tokens: sent.cache_read_input_tokens,
        };
        let (code, events, stderr) = ask(model, sent, &["--json"]);
        assert_eq!(code, 0, "{model}: {stderr}");
        let started = event(&events, "started");
        assert_eq!(
            started["price_source"],
            serde_json::json!(price.source),
            "{model}"
        );
        let cost = event(&events, "done")["cost_usd"].as_f64().unwrap();
        let expected = price.cost(&seen);
        assert!(expected > 0.0, "{model}");
        assert!(
            (cost - expected).abs() < 1e-12,
            "{model}: {cost} vs {expected}"
        );
    }
}

#[test]
fn haiku_5_5_costs_its_higher_rates_above_100k_prompt_tokens() {
    let usage = |input| deskhand_standin::Usage {
        input_tokens: input,
        output_tokens: 1_000,
        ..Default::default()
    };
    let cost = |input| {
        let (code, events, stderr) = ask("claude-haiku-5-5", usage(input), &["--json"]);
        assert_eq!(code, 0, "{stderr}");
        event(&events, "done")["cost_usd"].as_f64().unwrap()
    };
    // $0.10 / $0.50 per million up to 100k prompt tokens, $0.50 / $2.50 above.
    assert!((cost(100_000) - (0.01 + 0.0005)).abs() < 1e-12);
    assert!((cost(100_001) - (0.0500005 + 0.0025)).abs() < 1e-12);
}

#[test]
fn a_reseller_price_is_labelled_at_the_start_and_with_the_cost() {
    let table = PriceTable::default();
    assert_eq!(
        table.price("gpt-5.4").unwrap().source,
        PriceSource::Reseller
    );
    let usage = deskhand_standin::Usage {
        input_tokens: 1_000,
        output_tokens: 100,
        ..Default::default()
    };
    let (code, _, stderr) = ask("gpt-5.4", usage, &["--max-cost", "5"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "the price of gpt-5.4 comes from reseller lists, not its vendor: its costs, and any cost limit, are likely but not certain"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("$0.0040 (reseller price, likely but not certain)"),
        "{stderr}"
    );
    // An official price says nothing of the kind.
    let (code, _, stderr) = ask("claude-sonnet-5-5", usage, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("reseller"), "{stderr}");
}
