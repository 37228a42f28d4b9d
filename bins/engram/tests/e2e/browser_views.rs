//! The viewer's address, its consolidation lists and its dates, in the browser of
//! `browser.rs`: an unknown workspace in the address is named as unknown; a search (with its
//! min score) and an open node are in the address, a link opens them and back and forward
//! walk through them; the report's merge, outdated, repeated and split lists; a node's aliases,
//! its reflections and ended facts (marked, with their dates); times as a person reads them.

use serde_json::json;

use crate::browser::Browser;
use crate::scenario::ok;
use crate::server::TestServer;

/// A platform node on three topics, a staging node with a fact said twice, one that changed,
/// one that ended and an alias, and a vendor under two names.
pub(crate) async fn fill_curation(server: &TestServer) {
    let client = server.streamable_client("curation").await;
    let topics = [
        "storage keeps every table in PostgreSQL",
        "search ranks results by calibrated scores",
        "releases ship every second Tuesday",
        "storage indexes vectors with HNSW",
        "search blends full text and embeddings",
        "releases follow semantic versioning",
        "storage streams changes to a replica",
        "search explains each score",
        "releases list their changes in a changelog",
        "storage backs up nightly with pg_dump",
        "search answers keyword queries exactly",
        "releases are signed with a release key",
        "storage vacuums its tables weekly",
        "search keeps the newest fact first",
        "releases wait a day on staging",
        "storage migrations run with refinery",
        "search caches query embeddings",
        "releases are announced in the team channel",
        "storage pools connections with deadpool",
        "search reads several perspectives",
        "releases build on a clean machine",
        "storage compresses old partitions",
        "search drops results below the min score",
        "releases keep the last three versions",
    ];
    ok(&client, "create_entities", json!({"entities": [
        {"name": "platform", "entity_type": "project", "observations": topics},
        {"name": "staging", "entity_type": "environment", "observations": [
            "The staging freeze ends on 12 May",
            "Dana prefers dark mode in the staging console",
            "The deploy target is staging",
            "Dana prefers the dark mode in the staging console",
            "The staging freeze ends on 19 May",
            "staging runs on two small machines"]},
        {"name": "AWS", "entity_type": "vendor", "observations": ["hosts staging"]},
        {"name": "Amazon Web Services", "entity_type": "vendor", "observations": ["bills monthly"]},
    ]}))
    .await;
    ok(
        &client,
        "set_aliases",
        json!({"name": "staging", "aliases": ["stage"]}),
    )
    .await;
    let ended = json!({"endings": [{"entity_name": "staging", "ordinals": [6]}]});
    ok(&client, "end_observations", ended).await;
    let reflection = json!({"target": {"node": "staging"}, "author": "dana", "mood": "relief",
        "content": "Freezing staging before releases saved us twice"});
    ok(&client, "add_reflection", reflection).await;
    client.cancel().await.unwrap();
}

/// Whether the text holds a raw RFC 3339 time (`2026-11-30T06:41:02.85Z`).
fn is_raw_time(text: &str) -> bool {
    text.as_bytes().windows(11).any(|w| {
        w[..4].iter().all(u8::is_ascii_digit) && w[4] == b'-' && w[7] == b'-' && w[10] == b'T'
    })
}

pub(crate) async fn address_report_and_dates(browser: &Browser, server: &TestServer) {
    // An unknown workspace is named as such, and no other one is opened in its place.
    browser
        .open(&format!("{}/ui?workspace=nosuch", server.base))
        .await;
    browser
        .wait_for_text("#status", |t| t.contains("no workspace named “nosuch”"))
        .await;
    assert!(browser.shown("picker-view").await);
    assert!(!browser.shown("overview-view").await);

    // The report's four lists of what to act on, and its times in words.
    browser
        .open(&format!(
            "{}/ui?workspace=curation&view=report",
            server.base
        ))
        .await;
    browser.find_all("#merges li.pick").await;
    assert_eq!(
        browser.texts("#merges li.pick .name").await,
        ["AWS ↔ Amazon Web Services"]
    );
    let superseded = browser.text_of("#superseded li.pick").await;
    assert!(
        superseded.contains("#1 The staging freeze ends on 12 May")
            && superseded.contains("#5 The staging freeze ends on 19 May"),
        "{superseded}"
    );
    let duplicates = browser.text_of("#duplicates li.pick").await;
    assert!(
        duplicates.contains("#2 Dana prefers dark mode"),
        "{duplicates}"
    );
    let splits = browser
        .wait_for_text("#splits li", |t| t.contains("platform"))
        .await;
    assert!(splits.contains("(8)"), "{splits}");
    let since = browser
        .wait_for_text("#events dd[data-key='since']", |t| !t.is_empty())
        .await;
    assert!(!is_raw_time(&since), "{since}");

    // A pair opens its node: the alias and the ended fact in its place, with its dates.
    browser.click("#superseded li.pick").await;
    browser
        .wait_for_text("#node-name", |t| t == "staging")
        .await;
    assert_eq!(browser.text_of("#node-aliases").await, "also called: stage");
    // Its reflection, with who wrote it and the mood.
    assert!(browser.shown("reflections-part").await);
    let reflection = browser.text_of("#reflections li").await;
    assert!(
        reflection.starts_with("Freezing staging before releases saved us twice")
            && reflection.contains("by dana, relief"),
        "{reflection}"
    );
    let ended = browser
        .script(
            "return [...document.querySelectorAll('#observations li.ended')]
               .map((li) => ({ ordinal: li.value, text: li.textContent }));",
        )
        .await;
    let ended = ended.as_array().unwrap();
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0]["ordinal"], 6);
    let text = ended[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("staging runs on two small machines ended ") && text.contains("2026"),
        "{text}"
    );
    assert!(!is_raw_time(text), "{text}");
    assert_eq!(
        browser.script("return location.search;").await,
        "?workspace=curation&node=staging"
    );
    let history = browser.texts("#history li").await;
    assert!(history.iter().all(|h| !is_raw_time(h)), "{history:?}");
    // Back: the report again.
    browser.script("history.back(); return null;").await;
    browser
        .wait_until("!document.getElementById('report-view').hidden")
        .await;
    browser
        .wait_for_text("#status", |t| t == "consolidation report")
        .await;

    // A search that keeps nothing at the default says where to lower the bar; the control
    // does, and goes into the address with the query.
    browser.type_into("#query", "volcano").await;
    browser.click("#search-form button").await;
    browser
        .wait_for_text("#status", |t| {
            t.contains("no result at the default min score")
        })
        .await;
    assert_eq!(browser.texts("#results li").await, ["none"]);
    browser.type_into("#min-score", "0").await;
    browser.click("#search-form button").await;
    browser
        .wait_until("document.querySelector('#results li.result')")
        .await;
    assert_eq!(
        browser.script("return location.search;").await,
        "?workspace=curation&q=volcano&min_score=0"
    );
    let first = browser.names("#results li.result").await.remove(0);
    browser
        .click(&format!("#results li.result[data-name='{first}']"))
        .await;
    browser.wait_for_text("#node-name", |t| t == first).await;
    // Back: the results without the node; forward: the node again.
    browser.script("history.back(); return null;").await;
    browser
        .wait_until("document.getElementById('explore-view').classList.contains('no-node')")
        .await;
    assert_eq!(
        browser.script("return location.search;").await,
        "?workspace=curation&q=volcano&min_score=0"
    );
    browser.script("history.forward(); return null;").await;
    browser
        .wait_until("!document.getElementById('explore-view').classList.contains('no-node')")
        .await;
    browser.wait_for_text("#node-name", |t| t == first).await;

    // A link opens the search and the node it names, the node's row marked open.
    browser
        .open(&format!(
            "{}/ui?workspace=demo&q=Lisbon&node=Alice",
            server.base
        ))
        .await;
    browser.wait_for_text("#node-name", |t| t == "Alice").await;
    browser
        .wait_until("document.querySelector('#results li.open')")
        .await;
    assert_eq!(browser.names("#results li.open").await, ["Alice"]);
    let query = "return document.getElementById('query').value;";
    assert_eq!(browser.script(query).await, json!("Lisbon"));
}
