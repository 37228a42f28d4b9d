//! The tool contract, snapshotted: names, descriptions, input and output schemas and
//! annotations of `tools/list`. A change to any of them fails here until it is accepted with
//! `UPDATE_EXPECT=1 cargo xtask test`, so every contract change is deliberate.

use crate::server::{Backend, TestServer};

/// The catalog's 24 tools (`shared/reference/tool-catalog.md`).
pub const CATALOG_TOOLS: [&str; 24] = [
    "add_observations",
    "create_entities",
    "create_relations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "find_similar_nodes",
    "find_unlinked_references",
    "get_consolidation_report",
    "get_neighborhood",
    "get_nodes_by_type",
    "get_orphaned_nodes",
    "get_path",
    "get_pending_consolidation",
    "get_recently_modified",
    "get_relations_between",
    "get_stats",
    "open_nodes",
    "query_observations",
    "rename_relation_type",
    "replace_observation",
    "search_nodes",
    "set_summary",
    "set_tags",
];

pub async fn tools_list_matches_the_golden_contract(backend: Backend) {
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    let mut tools = client.list_all_tools().await.unwrap();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // The catalog's tools and engram's extensions.
    let mut expected: Vec<&str> = CATALOG_TOOLS.into();
    expected.extend([
        "add_reflection",
        "end_observations",
        "end_relations",
        "describe_node",
        "find_all_paths",
        "get_graph_vocabulary",
        "get_history",
        "get_relations",
        "get_subgraph",
        "merge_entities",
        "propose_split",
        "read_graph",
        "search_observations",
        "search_reflections",
        "set_aliases",
        "split_entity",
    ]);
    expected.sort();
    assert_eq!(names, expected);
    for tool in &tools {
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 20),
            "{} needs a description",
            tool.name
        );
        let input = serde_json::to_value(&tool.input_schema).unwrap();
        assert_eq!(input["type"], "object", "{}", tool.name);
        let output = serde_json::to_value(
            tool.output_schema
                .as_ref()
                .unwrap_or_else(|| panic!("{} has no output schema", tool.name)),
        )
        .unwrap();
        assert_eq!(
            output["type"], "object",
            "{}: older clients need object results",
            tool.name
        );
    }
    // Every schema is valid JSON Schema 2020-12 that a strict validator accepts: no unknown
    // format, no type arrays, `null` only as an alternative of `anyOf` (outputs).
    for tool in &tools {
        let input = serde_json::to_value(&tool.input_schema).unwrap();
        let output = serde_json::to_value(tool.output_schema.as_ref().unwrap()).unwrap();
        for (which, schema) in [("input", &input), ("output", &output)] {
            if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
                panic!("{} {which} schema: {error}", tool.name);
            }
            let strict = jsonschema::draft202012::options()
                .should_validate_formats(true)
                .should_ignore_unknown_formats(false)
                .build(schema);
            assert!(strict.is_ok(), "{} {which} schema: {strict:?}", tool.name);
            let unportable = engram_mcp::portability::unportable_parts(schema);
            assert!(
                unportable.is_empty(),
                "{} {which}: {unportable:?}",
                tool.name
            );
            assert!(schema.get("$schema").is_none(), "{} {which}", tool.name);
        }
        assert!(
            input.get("$defs").is_none(),
            "{}: inlined for models",
            tool.name
        );
    }
    let snapshot = serde_json::to_string_pretty(&tools).unwrap();
    expect_test::expect_file!["tools.golden.json"].assert_eq(&snapshot);
    client.cancel().await.unwrap();
}
