//! What each tool costs in store calls, checked by machine: each store notes every transaction
//! where it opens it ([`crate::transactions`]), named by the trait method it serves. Every store
//! call is one transaction in both stores, so a tool's list is its transactions. A write tool
//! is one call; the reads that need more (the perspectives before a workspace's first search,
//! the coverage behind `get_stats`, the report's lists) are pinned here, so a change that adds
//! a round trip is seen.

use std::sync::Arc;

use super::*;
use crate::transfer::GraphDetail;
use crate::*;

/// Every tool through [`Memory`], with the store calls (transactions) it makes: one for each
/// write; reads as pinned.
pub async fn every_tool_makes_the_store_calls_it_is_known_to(store: Arc<dyn MemoryStore>) {
    transactions::recording(every_tool_makes_its_calls(store)).await;
}

async fn every_tool_makes_its_calls(store: Arc<dyn MemoryStore>) {
    let memory = Memory::new(store).with_embedder(Arc::new(TermEmbedder));
    let ws = memory.create_workspace("calls").await.unwrap().id;
    let nodes = vec![
        entity("Alice", "person", &["Alice works on engram"]),
        entity("engram", "project", &["engram is a memory server"]),
    ];
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut note = |tool, calls| seen.push((tool, calls));
    transactions::take();
    memory.call(ws, CreateEntities::new(nodes)).await.unwrap();
    note("create_entities", transactions::take());
    (memory.call(
        ws,
        AddObservations::new(&[additions("Alice", &["Alice lives in Lisbon"])]),
    ))
    .await
    .unwrap();
    note("add_observations", transactions::take());
    (memory.call(
        ws,
        ReplaceObservation::new("Alice", Ordinal(2), "Alice lives in Porto"),
    ))
    .await
    .unwrap();
    note("replace_observation", transactions::take());
    (memory.call(
        ws,
        CreateRelations::new(&[relation("Alice", "works_on", "engram")]),
    ))
    .await
    .unwrap();
    note("create_relations", transactions::take());
    memory
        .call(ws, SetSummary::new("Alice", "An engineer."))
        .await
        .unwrap();
    note("set_summary", transactions::take());
    memory
        .call(ws, SetTags::new("Alice", &strings(&["team"])))
        .await
        .unwrap();
    note("set_tags", transactions::take());
    (memory.call(
        ws,
        RenameRelationType::new(&relation("Alice", "works_on", "engram"), "builds"),
    ))
    .await
    .unwrap();
    note("rename_relation_type", transactions::take());
    memory
        .call(ws, OpenNodes::new(&strings(&["Alice"])))
        .await
        .unwrap();
    note("open_nodes", transactions::take());
    memory
        .call(ws, GetNodesByType::new("person"))
        .await
        .unwrap();
    note("get_nodes_by_type", transactions::take());
    memory
        .call(ws, GetRecentlyModified::new(7, 10))
        .await
        .unwrap();
    note("get_recently_modified", transactions::take());
    memory
        .call(ws, GetRelationsBetween::new("Alice", "engram"))
        .await
        .unwrap();
    note("get_relations_between", transactions::take());
    memory
        .call(ws, GetNeighborhood::new("Alice", 2))
        .await
        .unwrap();
    note("get_neighborhood", transactions::take());
    memory
        .call(ws, GetPath::new("Alice", "engram"))
        .await
        .unwrap();
    note("get_path", transactions::take());
    memory
        .call(ws, FindAllPaths::new("Alice", "engram"))
        .await
        .unwrap();
    note("find_all_paths", transactions::take());
    memory
        .call(ws, GetGraphVocabulary::default())
        .await
        .unwrap();
    note("get_graph_vocabulary", transactions::take());
    memory.call(ws, DescribeNode::new("Alice")).await.unwrap();
    note("describe_node", transactions::take());
    memory
        .call(ws, GetSubgraph::new(&["Alice", "engram"], 1))
        .await
        .unwrap();
    note("get_subgraph", transactions::take());
    let from_alice = GetRelations {
        from_entity: Some("Alice".into()),
        ..GetRelations::default()
    };
    memory.call(ws, from_alice).await.unwrap();
    note("get_relations", transactions::take());
    let reflection = AddReflection::new(ReflectionTarget::node("Alice"), "Alice was a good hire");
    memory.call(ws, reflection).await.unwrap();
    note("add_reflection", transactions::take());
    (memory.call(ws, SearchReflections::new("good hire")))
        .await
        .unwrap();
    note("search_reflections", transactions::take());
    memory.call(ws, GetOrphanedNodes {}).await.unwrap();
    note("get_orphaned_nodes", transactions::take());
    memory.call(ws, FindUnlinkedReferences {}).await.unwrap();
    note("find_unlinked_references", transactions::take());
    memory.call(ws, GetPendingConsolidation {}).await.unwrap();
    note("get_pending_consolidation", transactions::take());
    memory.call(ws, GetStats {}).await.unwrap();
    note("get_stats", transactions::take());
    let hybrid = SearchMode::Hybrid;
    (memory.call(ws, SearchNodes::new("Lisbon").mode(hybrid)))
        .await
        .unwrap();
    note("search_nodes", transactions::take());
    (memory.call(ws, SearchNodes::new("Lisbon").mode(SearchMode::Text)))
        .await
        .unwrap();
    note("search_nodes text", transactions::take());
    (memory.call(ws, SearchObservations::new("Lisbon").mode(hybrid)))
        .await
        .unwrap();
    note("search_observations", transactions::take());
    (memory.call(ws, QueryObservations::new("Alice", "Lisbon").mode(hybrid)))
        .await
        .unwrap();
    note("query_observations", transactions::take());
    memory
        .call(
            ws,
            FindSimilarNodes {
                limit: 10,
                min_score: 0.75,
            },
        )
        .await
        .unwrap();
    note("find_similar_nodes", transactions::take());
    (memory.call(ws, GetConsolidationReport::default()))
        .await
        .unwrap();
    note("get_consolidation_report", transactions::take());
    (memory.call(ws, ReadGraph::new(GraphDetail::Full)))
        .await
        .unwrap();
    note("read_graph", transactions::take());
    memory.brief(ws, 5).await.unwrap();
    note("brief", transactions::take());
    (memory.call(
        ws,
        DeleteRelations::new(&[relation("Alice", "builds", "engram")]),
    ))
    .await
    .unwrap();
    note("delete_relations", transactions::take());
    (memory.call(
        ws,
        CreateRelations::new(&[relation("Alice", "knows", "engram")]),
    ))
    .await
    .unwrap();
    transactions::take();
    (memory.call(
        ws,
        EndRelations::new(&[relation("Alice", "knows", "engram")]),
    ))
    .await
    .unwrap();
    note("end_relations", transactions::take());
    memory
        .call(
            ws,
            EndObservations::new(&[ObservationEndings {
                entity_name: "Alice".into(),
                ordinals: vec![Ordinal(2)],
            }]),
        )
        .await
        .unwrap();
    note("end_observations", transactions::take());
    memory.call(ws, GetHistory::new("Alice")).await.unwrap();
    note("get_history", transactions::take());
    memory
        .call(ws, SetAliases::new("Alice", &strings(&["Ali"])))
        .await
        .unwrap();
    note("set_aliases", transactions::take());
    memory
        .call(ws, OpenNodes::new(&strings(&["Ali"])))
        .await
        .unwrap();
    note("open_nodes by an alias", transactions::take());
    (memory.call(ws, SearchNodes::new("where is Ali").mode(SearchMode::Text)))
        .await
        .unwrap();
    note("search_nodes by an alias", transactions::take());
    memory.call(ws, ProposeSplit::new("Alice")).await.unwrap();
    note("propose_split", transactions::take());
    // What the split and the merge work on, not pinned.
    let chess = additions("Alice", &["Alice plays chess"]);
    memory
        .call(ws, AddObservations::new(&[chess]))
        .await
        .unwrap();
    let alicia = entity("Alicia", "person", &["Alicia sings"]);
    memory
        .call(ws, CreateEntities::new(vec![alicia]))
        .await
        .unwrap();
    transactions::take();
    let games = SplitPart {
        name: "Alice's games".into(),
        entity_type: None,
        ordinals: vec![Ordinal(3)],
        summary: None,
    };
    memory
        .call(ws, SplitEntity::new("Alice", vec![games]))
        .await
        .unwrap();
    note("split_entity", transactions::take());
    memory
        .call(ws, MergeEntities::new(&strings(&["Alicia"]), "Alice"))
        .await
        .unwrap();
    note("merge_entities", transactions::take());
    memory
        .call(ws, DeleteObservations::new(&[deletions("Alice", &[1])]))
        .await
        .unwrap();
    note("delete_observations", transactions::take());
    memory
        .call(ws, DeleteEntities::new(&strings(&["engram"])))
        .await
        .unwrap();
    note("delete_entities", transactions::take());

    let expected: Vec<(&str, Vec<&str>)> = EXPECTED_CALLS
        .iter()
        .map(|(tool, calls)| (*tool, calls.to_vec()))
        .collect();
    assert_eq!(seen, expected);
    // Every tool engram publishes is pinned here.
    let mut tools = ToolNames::default();
    each_tool(&mut tools);
    for tool in tools.0 {
        assert!(
            seen.iter().any(|(pinned, _)| *pinned == tool),
            "{tool} makes store calls nobody pinned: call it above and add its line"
        );
    }
}

/// The names [`each_tool`] lists.
#[derive(Default)]
struct ToolNames(Vec<&'static str>);

impl ToolVisitor for ToolNames {
    fn visit<T: Tool>(&mut self) {
        self.0.push(T::NAME);
    }
}

/// The store calls of each tool in [`every_tool_makes_the_store_calls_it_is_known_to`].
const EXPECTED_CALLS: &[(&str, &[&str])] = &[
    ("create_entities", &["create_entities"]),
    // The facts the node held, for `similar_to`.
    ("add_observations", &["add_observations", "fact_vectors"]),
    ("replace_observation", &["replace_observation"]),
    ("create_relations", &["create_relations"]),
    ("set_summary", &["set_summary"]),
    ("set_tags", &["set_tags"]),
    ("rename_relation_type", &["rename_relation_type"]),
    ("open_nodes", &["open_nodes"]),
    ("get_nodes_by_type", &["get_nodes_by_type"]),
    ("get_recently_modified", &["get_recently_modified"]),
    ("get_relations_between", &["get_relations_between"]),
    ("get_neighborhood", &["get_neighborhood"]),
    ("get_path", &["get_path"]),
    ("find_all_paths", &["find_all_paths"]),
    ("get_graph_vocabulary", &["graph_vocabulary"]),
    ("describe_node", &["describe_node"]),
    ("get_subgraph", &["get_subgraph"]),
    ("get_relations", &["get_relations"]),
    ("add_reflection", &["add_reflection"]),
    // Reflections have no perspectives: the query is embedded as it is.
    ("search_reflections", &["reflection_candidates"]),
    ("get_orphaned_nodes", &["get_orphaned_nodes"]),
    ("find_unlinked_references", &["find_unlinked_references"]),
    ("get_pending_consolidation", &["get_pending_consolidation"]),
    // The counts, then the embedding coverage (reused while an indexer works).
    ("get_stats", &["get_stats", "embedding_coverage"]),
    // The first search of a workspace reads the perspectives to render its query for; every
    // search is then one store call, whose snapshot holds the perspectives again (a change
    // made elsewhere is seen: `a_perspective_changed_elsewhere_is_seen_by_the_next_search`)
    // and the nodes its query names by their aliases (a second call only when there are some).
    ("search_nodes", &["perspectives", "search"]),
    ("search_nodes text", &["search"]),
    ("search_observations", &["search"]),
    // The node must exist (a missing one is an error, not an empty answer).
    ("query_observations", &["open_nodes", "search"]),
    (
        "find_similar_nodes",
        &["perspectives", "node_vectors", "related_pairs"],
    ),
    (
        "get_consolidation_report",
        &[
            "get_pending_consolidation",
            "get_orphaned_nodes",
            "event_counts",
            "stale_nodes",
            "perspectives",
            "node_vectors",
            "related_pairs",
            "embedding_coverage",
            // Every node and fact, page by page (one page here).
            "graph_page",
            // The facts' vectors of each recently changed node of two or more facts (one
            // here), for pairs by meaning.
            "fact_vectors",
            "open_nodes",
        ],
    ),
    ("read_graph", &["graph_page"]),
    (
        "brief",
        &[
            "get_stats",
            "related_pairs",
            "open_nodes",
            "get_recently_modified",
        ],
    ),
    ("delete_relations", &["delete_relations"]),
    ("end_relations", &["end_relations"]),
    ("end_observations", &["end_observations"]),
    ("get_history", &["get_history"]),
    ("set_aliases", &["set_aliases"]),
    // Not found as a name: the alias, then the node.
    (
        "open_nodes by an alias",
        &["open_nodes", "resolve_aliases", "open_nodes"],
    ),
    // The query names a node by an alias: searched once more with the node's name.
    ("search_nodes by an alias", &["search", "search"]),
    ("propose_split", &["perspectives", "fact_vectors"]),
    ("split_entity", &["split_entity"]),
    ("merge_entities", &["merge_entities"]),
    ("delete_observations", &["delete_observations"]),
    ("delete_entities", &["delete_entities"]),
];
