//! The specification's result shapes, always: every tool of the catalog
//! (`shared/reference/tool-catalog.md`) is called through a real MCP client in the states that
//! empty its lists and optionals (a lone node, no summary, no tags, text mode, nothing found),
//! and each result holds exactly the keys the catalog names (`null` or `[]` when empty) plus
//! engram's documented extras, which are left out when empty. `ok` also checks the text twin
//! and the published output schema. Over Streamable HTTP and legacy SSE, on both stores.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::recall::wait_for_indexing;
use crate::scenario::{ok, tool_error};
use crate::server::{Backend, Client, TestServer};
use crate::sse_client;

/// The keys of the objects found at one place in a result: `path` is `""` for the result
/// itself, `"entities[]"` for the rows of its `entities` list, and so on.
struct Keys {
    path: &'static str,
    /// Named by the catalog or the specification: present in every result.
    required: &'static [&'static str],
    /// engram's extensions: present only when they carry something.
    extras: &'static [&'static str],
}

const fn keys(
    path: &'static str,
    required: &'static [&'static str],
    extras: &'static [&'static str],
) -> Keys {
    Keys {
        path,
        required,
        extras,
    }
}

const RELATION: &[&str] = &["from", "to", "relation_type"];
const RELATION_SPEC: &[&str] = &["from_entity", "to_entity", "relation_type"];
const OBSERVATION: &[&str] = &["ordinal", "content"];
const SEARCH_EXTRAS: &[&str] = &["mode", "notice"];

/// Every object in `value`, by its path with list positions written `[]`.
fn objects<'a>(value: &'a Value, path: String, found: &mut Vec<(String, &'a Value)>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                objects(child, child_path, found);
            }
            found.push((path, value));
        }
        Value::Array(items) => {
            for item in items {
                objects(item, format!("{path}[]"), found);
            }
        }
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Array(items) => items.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// Asserts that every object of `result` has exactly its place's keys, and returns how many
/// objects each place held (so a caller can ask that a row shape was seen).
fn assert_keys(tool: &str, result: &Value, shape: &[Keys]) -> BTreeMap<&'static str, usize> {
    let mut found = Vec::new();
    objects(result, String::new(), &mut found);
    let mut seen = BTreeMap::new();
    for (path, object) in found {
        let Some(place) = shape.iter().find(|k| k.path == path) else {
            panic!("{tool}: an object at `{path}` that the catalog does not describe: {object}");
        };
        *seen.entry(place.path).or_insert(0) += 1;
        let object = object.as_object().unwrap();
        for key in place.required {
            assert!(
                object.contains_key(*key),
                "{tool}: `{path}` lacks the catalog's key `{key}`: {}",
                Value::Object(object.clone())
            );
        }
        for (key, value) in object {
            if place.required.contains(&key.as_str()) {
                continue;
            }
            assert!(
                place.extras.contains(&key.as_str()),
                "{tool}: `{path}` has `{key}`, neither the catalog's nor a documented extra"
            );
            assert!(
                !is_empty(value),
                "{tool}: `{path}` carries the empty extra `{key}: {value}` (left out when empty)"
            );
        }
    }
    seen
}

/// The tools called and checked, to prove every catalog tool was.
#[derive(Default)]
struct Checked(BTreeSet<&'static str>);

impl Checked {
    /// Calls `tool`, checks its result against `shape`, and returns it.
    async fn call(
        &mut self,
        client: &Client,
        tool: &'static str,
        arguments: Value,
        shape: &[Keys],
    ) -> Value {
        let result = ok(client, tool, arguments).await;
        assert_keys(tool, &result, shape);
        self.0.insert(tool);
        result
    }

    /// [`Checked::call`], asking that the places `rows` held at least one object each.
    async fn call_with_rows(
        &mut self,
        client: &Client,
        tool: &'static str,
        arguments: Value,
        shape: &[Keys],
        rows: &[&str],
    ) -> Value {
        let result = ok(client, tool, arguments).await;
        let seen = assert_keys(tool, &result, shape);
        for row in rows {
            assert!(
                seen.contains_key(row),
                "{tool}: no `{row}` to check in {result}"
            );
        }
        self.0.insert(tool);
        result
    }
}

const NODE_BRIEF: &[&str] = &["name", "entity_type", "summary", "updated_at"];

/// Every catalog tool in its emptiest states, then with rows in every list.
async fn every_result_has_the_catalogs_keys(client: Client) {
    let mut checked = Checked::default();
    let stats = [keys(
        "",
        &[
            "node_count",
            "observation_count",
            "relation_count",
            "embedding_coverage",
            "workspace",
        ],
        &["rejected_texts", "embedding_model"],
    )];
    checked.call(&client, "get_stats", json!({}), &stats).await;
    let report = [
        keys(
            "",
            &[
                "stale_summaries",
                "relation_candidates",
                "orphaned_nodes",
                "cluster_summary",
                "event_summary",
            ],
            &["notices", "merge_candidates"],
        ),
        keys(
            "stale_summaries[]",
            &[
                "name",
                "entity_type",
                "last_modified",
                "observation_count",
                "draft_summary",
            ],
            &["summary_updated_at", "draft_source"],
        ),
        keys(
            "relation_candidates[]",
            &["node_a", "node_b", "similarity_score", "rationale"],
            &["node_a_type", "node_b_type", "rationale_source"],
        ),
        // `summary` is `get_orphaned_nodes`' key; the report's rows are the same rows.
        keys("orphaned_nodes[]", NODE_BRIEF, &[]),
        keys(
            "cluster_summary[]",
            &["cluster_id", "node_names", "centroid_label"],
            &["size", "label_source"],
        ),
        keys(
            "event_summary",
            &["since", "creates", "updates", "deletes"],
            &[],
        ),
    ];
    let empty = checked
        .call(&client, "get_consolidation_report", json!({}), &report)
        .await;
    assert_eq!(empty["stale_summaries"], json!([]));
    let search = [
        keys("", &["results"], SEARCH_EXTRAS),
        keys(
            "results[]",
            &[
                "name",
                "entity_type",
                "summary",
                "matched_observation",
                "matched_perspective",
                "score",
            ],
            &["ordinal", "valid_from", "signals"],
        ),
    ];
    let nothing = checked
        .call(
            &client,
            "search_nodes",
            json!({"query": "billing", "mode": "text"}),
            &search,
        )
        .await;
    assert_eq!(nothing["results"], json!([]));

    // A lone node (no observations, summary or tags), a node with facts, and one that
    // mentions it by name.
    let created = [
        keys(
            "entities[]",
            &["name", "entity_type", "created_at"],
            &["already_existed", "skipped_duplicates"],
        ),
        keys("", &["entities"], &[]),
        keys("entities[].skipped_duplicates[]", OBSERVATION, &[]),
    ];
    checked
        .call_with_rows(
            &client,
            "create_entities",
            json!({"entities": [
                {"name": "Lone", "entity_type": "thing"},
                {"name": "billing-service", "entity_type": "service", "observations": [
                    "The billing service retries failed card charges three times with \
                     exponential backoff"]},
                {"name": "Dana", "entity_type": "person", "observations": [
                    "Dana maintains billing-service and reviews its retries"]},
            ]}),
            &created,
            &["entities[]"],
        )
        .await;
    let again = checked
        .call(
            &client,
            "create_entities",
            json!({"entities": [{"name": "Lone", "entity_type": "robot"}]}),
            &created,
        )
        .await;
    assert_eq!(again["entities"][0]["already_existed"], true);

    let opened_shape = [
        keys(
            "",
            &["entities", "relations", "not_found"],
            &["did_you_mean"],
        ),
        keys("did_you_mean", &[], &["lone"]),
        keys(
            "entities[]",
            &[
                "name",
                "entity_type",
                "summary",
                "tags",
                "observations",
                "created_at",
                "updated_at",
            ],
            &[],
        ),
        keys("entities[].observations[]", OBSERVATION, &["valid_from"]),
        keys("relations[]", RELATION, &[]),
    ];
    let lone = checked
        .call(
            &client,
            "open_nodes",
            json!({"names": ["Lone"]}),
            &opened_shape,
        )
        .await;
    assert_eq!(
        lone,
        json!({"entities": [{"name": "Lone", "entity_type": "thing", "summary": null,
                             "tags": [], "observations": [],
                             "created_at": lone["entities"][0]["created_at"],
                             "updated_at": lone["entities"][0]["updated_at"]}],
               "relations": [], "not_found": []})
    );
    let missing = checked
        .call(
            &client,
            "open_nodes",
            json!({"names": ["Nobody"]}),
            &opened_shape,
        )
        .await;
    assert_eq!(
        missing,
        json!({"entities": [], "relations": [], "not_found": ["Nobody"]})
    );
    let almost = checked
        .call(
            &client,
            "open_nodes",
            json!({"names": ["lone"]}),
            &opened_shape,
        )
        .await;
    assert_eq!(almost["did_you_mean"], json!({"lone": ["Lone"]}));

    let typed = [
        keys("", &["nodes"], &[]),
        keys(
            "nodes[]",
            &["name", "entity_type", "summary", "tags", "updated_at"],
            &[],
        ),
    ];
    checked
        .call_with_rows(
            &client,
            "get_nodes_by_type",
            json!({"entity_type": "thing"}),
            &typed,
            &["nodes[]"],
        )
        .await;
    let briefs = [keys("", &["nodes"], &[]), keys("nodes[]", NODE_BRIEF, &[])];
    checked
        .call_with_rows(
            &client,
            "get_recently_modified",
            json!({}),
            &briefs,
            &["nodes[]"],
        )
        .await;
    checked
        .call_with_rows(
            &client,
            "get_orphaned_nodes",
            json!({}),
            &briefs,
            &["nodes[]"],
        )
        .await;
    let neighbourhood = [
        keys("", &["nodes", "relations"], &[]),
        keys("nodes[]", &["name", "entity_type", "summary", "tags"], &[]),
        keys("relations[]", RELATION, &[]),
    ];
    let alone = checked
        .call_with_rows(
            &client,
            "get_neighborhood",
            json!({"name": "Lone"}),
            &neighbourhood,
            &["nodes[]"],
        )
        .await;
    assert_eq!(alone["relations"], json!([]));
    let path = [
        keys("", &["found", "path", "relations"], &[]),
        keys("relations[]", RELATION, &[]),
    ];
    let no_path = checked
        .call(
            &client,
            "get_path",
            json!({"from_entity": "Lone", "to_entity": "Dana"}),
            &path,
        )
        .await;
    assert_eq!(
        no_path,
        json!({"found": false, "path": [], "relations": []})
    );
    let between = [
        keys("", &["relations"], &[]),
        keys("relations[]", RELATION, &[]),
    ];
    checked
        .call(
            &client,
            "get_relations_between",
            json!({"entity_a": "Lone", "entity_b": "Dana"}),
            &between,
        )
        .await;

    let added_shape = [
        keys("", &["results"], &[]),
        keys(
            "results[]",
            &["entity_name", "added", "not_found"],
            &["skipped_duplicates", "did_you_mean"],
        ),
        keys("results[].added[]", OBSERVATION, &[]),
        keys("results[].skipped_duplicates[]", OBSERVATION, &[]),
    ];
    let added = checked
        .call_with_rows(
            &client,
            "add_observations",
            json!({"observations": [
                {"entity_name": "billing-service",
                 "contents": ["Declined payments are retried after one hour"]},
                {"entity_name": "Nobody", "contents": ["a fact for no one"]},
            ]}),
            &added_shape,
            &["results[].added[]"],
        )
        .await;
    assert_eq!(added["results"][0]["not_found"], false);
    assert_eq!(
        added["results"][1],
        json!({"entity_name": "Nobody", "added": [], "not_found": true})
    );
    let almost = json!({"observations": [{"entity_name": "dana", "contents": ["x"]}]});
    let almost = checked
        .call(&client, "add_observations", almost, &added_shape)
        .await;
    assert_eq!(almost["results"][0]["did_you_mean"], json!(["Dana"]));
    let summary = json!({"name": "dana", "summary": "x"});
    assert_eq!(
        tool_error(&client, "set_summary", summary).await,
        "node not found: dana (did you mean \"Dana\"?)"
    );

    let scored = [
        keys("", &["observations"], SEARCH_EXTRAS),
        keys(
            "observations[]",
            &["ordinal", "content", "score"],
            &["valid_from", "signals"],
        ),
    ];
    checked
        .call_with_rows(
            &client,
            "query_observations",
            json!({"entity_name": "billing-service", "query": "retries", "mode": "text"}),
            &scored,
            &["observations[]"],
        )
        .await;
    let found = checked
        .call_with_rows(
            &client,
            "search_nodes",
            json!({"query": "billing retries", "mode": "text"}),
            &search,
            &["results[]"],
        )
        .await;
    let first = &found["results"][0];
    assert!(first["summary"].is_null(), "{found}");
    assert!(first["matched_perspective"].is_null(), "text mode: {found}");

    let pending = [
        keys("", &["nodes"], &[]),
        keys(
            "nodes[]",
            &[
                "name",
                "entity_type",
                "observation_count",
                "last_observation_at",
                "summary_updated_at",
            ],
            &[],
        ),
    ];
    let unsummarised = checked
        .call_with_rows(
            &client,
            "get_pending_consolidation",
            json!({}),
            &pending,
            &["nodes[]"],
        )
        .await;
    assert!(unsummarised["nodes"][0]["summary_updated_at"].is_null());
    let references = [
        keys("", &["references"], &[]),
        keys(
            "references[]",
            &["node", "referenced_name", "reference_count"],
            &[],
        ),
    ];
    checked
        .call_with_rows(
            &client,
            "find_unlinked_references",
            json!({}),
            &references,
            &["references[]"],
        )
        .await;

    // With every fact embedded: pairs, clusters and embedding-mode rows.
    wait_for_indexing(&client).await;
    let pairs = [
        keys("", &["pairs"], &[]),
        keys(
            "pairs[]",
            &[
                "node_a",
                "node_b",
                "similarity",
                "node_a_type",
                "node_b_type",
            ],
            &[],
        ),
    ];
    checked
        .call_with_rows(
            &client,
            "find_similar_nodes",
            json!({"min_score": 0.0}),
            &pairs,
            &["pairs[]"],
        )
        .await;
    checked
        .call_with_rows(
            &client,
            "get_consolidation_report",
            json!({"min_score": 0.0, "cluster_min_score": 0.0}),
            &report,
            &[
                "stale_summaries[]",
                "relation_candidates[]",
                "orphaned_nodes[]",
                "cluster_summary[]",
            ],
        )
        .await;
    checked
        .call_with_rows(
            &client,
            "search_nodes",
            json!({"query": "how do we handle declined payments", "min_score": 0.0}),
            &search,
            &["results[]"],
        )
        .await;

    let relations = [
        keys("", &["created", "already_existed", "not_found"], &[]),
        keys("created[]", RELATION_SPEC, &[]),
        keys("already_existed[]", RELATION_SPEC, &[]),
    ];
    let linked = checked
        .call_with_rows(
            &client,
            "create_relations",
            json!({"relations": [
                {"from_entity": "Dana", "to_entity": "billing-service",
                 "relation_type": "maintains"}]}),
            &relations,
            &["created[]"],
        )
        .await;
    assert_eq!(
        (&linked["already_existed"], &linked["not_found"]),
        (&json!([]), &json!([]))
    );
    let path_found = checked
        .call_with_rows(
            &client,
            "get_path",
            json!({"from_entity": "Dana", "to_entity": "billing-service"}),
            &path,
            &["relations[]"],
        )
        .await;
    assert_eq!(path_found["found"], true);
    checked
        .call_with_rows(
            &client,
            "open_nodes",
            json!({"names": ["Dana"]}),
            &opened_shape,
            &["entities[].observations[]", "relations[]"],
        )
        .await;
    let renamed = [keys(
        "",
        &["from_entity", "to_entity", "old_type", "new_type"],
        &[],
    )];
    checked
        .call(
            &client,
            "rename_relation_type",
            json!({"from_entity": "Dana", "to_entity": "billing-service",
                   "old_type": "maintains", "new_type": "owns"}),
            &renamed,
        )
        .await;
    checked
        .call(
            &client,
            "set_summary",
            json!({"name": "Lone", "summary": "a node on its own"}),
            &[keys("", &["name", "summary", "updated_at"], &[])],
        )
        .await;
    checked
        .call(
            &client,
            "set_tags",
            json!({"name": "Lone", "tags": []}),
            &[keys("", &["name", "tags"], &[])],
        )
        .await;
    checked
        .call(
            &client,
            "replace_observation",
            json!({"entity_name": "Dana", "ordinal": 1,
                   "new_content": "Dana owns billing-service"}),
            &[keys(
                "",
                &["entity_name", "ordinal", "old_content", "new_content"],
                &[],
            )],
        )
        .await;
    let deleted_observations = checked
        .call(
            &client,
            "delete_observations",
            json!({"deletions": [{"entity_name": "billing-service", "ordinals": [2]}]}),
            &[
                keys("", &["results"], &[]),
                keys(
                    "results[]",
                    &["entity_name", "deleted_ordinals", "not_found_ordinals"],
                    &[],
                ),
            ],
        )
        .await;
    assert_eq!(
        deleted_observations["results"][0]["not_found_ordinals"],
        json!([])
    );
    checked
        .call(
            &client,
            "delete_relations",
            json!({"relations": [{"from_entity": "Dana", "to_entity": "billing-service",
                                  "relation_type": "owns"}]}),
            &[keys("", &["deleted", "not_found"], &[])],
        )
        .await;
    let deleted = checked
        .call(
            &client,
            "delete_entities",
            json!({"entity_names": ["Lone"]}),
            &[keys("", &["deleted", "not_found"], &[])],
        )
        .await;
    assert_eq!(deleted, json!({"deleted": ["Lone"], "not_found": []}));

    let catalog: BTreeSet<&str> = crate::golden::CATALOG_TOOLS.into_iter().collect();
    assert_eq!(checked.0, catalog, "every tool of the catalog is checked");
    client.cancel().await.unwrap();
}

pub async fn every_result_has_the_catalogs_keys_over_streamable_http(backend: Backend) {
    let server = TestServer::start(backend, &["shapes"]).await;
    every_result_has_the_catalogs_keys(server.streamable_client("shapes").await).await;
}

pub async fn every_result_has_the_catalogs_keys_over_legacy_sse(backend: Backend) {
    let server = TestServer::start(backend, &["shapes"]).await;
    every_result_has_the_catalogs_keys(sse_client::connect(&server.base, "shapes").await).await;
}
