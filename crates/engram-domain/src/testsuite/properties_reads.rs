//! Property tests of the tools that read the graph, search it and report on it
//! ([`super::properties`] has the promises every call keeps; here each tool also checks its
//! answer against the snapshot).

use std::sync::Arc;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

use super::properties::*;
use crate::ReadGraph;
use crate::transfer::{GraphDetail, GraphPageQuery};
use crate::{
    AddObservations, GetNeighborhood, GetNodesByType, GetPath, GetRecentlyModified,
    GetRelationsBetween, OpenNodes,
};
use crate::{
    FindSimilarNodes, GetConsolidationReport, MemoryStore, QueryObservations, SearchMode,
    SearchNodes, SearchObservations,
};
use crate::{FindUnlinkedReferences, GetOrphanedNodes, GetPendingConsolidation, GetStats};

/// Cases per tool.
const CASES: u32 = 100;

/// The tools these properties generate (checked by [`Harness::finish_covering`]).
pub const READ_TOOLS: &[&str] = &[
    "open_nodes",
    "get_nodes_by_type",
    "get_recently_modified",
    "get_relations_between",
    "get_neighborhood",
    "get_path",
    "find_all_paths",
    "get_graph_vocabulary",
    "describe_node",
    "get_subgraph",
    "get_relations",
    "search_nodes",
    "search_observations",
    "query_observations",
    "read_graph",
    "find_similar_nodes",
    "find_unlinked_references",
    "get_consolidation_report",
    "get_orphaned_nodes",
    "get_pending_consolidation",
    "get_stats",
];

pub async fn properties_of_the_read_tools_hold_for_generated_arguments(
    store: Arc<dyn MemoryStore>,
) {
    let mut h = Harness::new(store, "properties-reads").await;
    // Facts full of query syntax for the searches to meet.
    h.case().await;
    let names: Vec<String> = h.before.nodes().map(|n| n.name.clone()).collect();
    for name in names {
        let facts = h.draw(vec(tricky(), 3));
        let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
        let additions = [super::additions(&name, &facts)];
        h.memory
            .call(h.ws, AddObservations::new(&additions))
            .await
            .unwrap();
    }
    for _ in 0..CASES {
        h.case().await;
        open_nodes(&mut h).await;
        by_type_and_recent(&mut h).await;
        between_neighborhood_and_path(&mut h).await;
        search_nodes(&mut h).await;
        search_observations(&mut h).await;
        query_observations(&mut h).await;
        read_graph(&mut h).await;
        graph_page(&mut h).await;
        reports(&mut h).await;
    }
    h.finish_covering("read tools", READ_TOOLS);
}

fn mode() -> impl Strategy<Value = SearchMode> {
    select(&[SearchMode::Hybrid, SearchMode::Embedding, SearchMode::Text][..])
}

/// A query: tricky text, a node's name, or anything.
fn query(h: &mut Harness) -> String {
    if h.draw(prop::bool::weighted(0.3)) {
        h.name()
    } else {
        h.draw(text())
    }
}

async fn open_nodes(h: &mut Harness) {
    let len = h.draw(prop_oneof![20 => 1..5_usize, 1 => Just(0), 1 => Just(1_001)]);
    let names: Vec<String> = (0..len).map(|_| h.name()).collect();
    let mut blame = Blame::default();
    blame.batch(names.len(), "names");
    for (i, name) in names.iter().enumerate() {
        blame.unless(name_ok(name), format!("names[{i}]"));
    }
    let m = h.memory.clone();
    let call = m.call(h.ws, OpenNodes::new(&names));
    if let Some(opened) = h.run("open_nodes", &names, &blame, call).await {
        for name in &names {
            let found = opened.entities.iter().any(|n| &n.name == name);
            assert_eq!(found, h.before.node(name).is_some(), "{}", short(name));
            assert_eq!(opened.not_found.contains(name), !found);
        }
    }
}

async fn by_type_and_recent(h: &mut Harness) {
    let entity_type = h.entity_type();
    let mut blame = Blame::default();
    blame.unless(name_ok(&entity_type), "entity_type");
    let m = h.memory.clone();
    let call = m.call(h.ws, GetNodesByType::new(&entity_type));
    if let Some(nodes) = h.run("get_nodes_by_type", &entity_type, &blame, call).await {
        let expected = h.before.nodes().filter(|n| n.entity_type == entity_type);
        assert_eq!(
            nodes.nodes.len(),
            expected.count(),
            "{}",
            short(&entity_type)
        );
        assert!(nodes.nodes.iter().all(|n| n.entity_type == entity_type));
    }

    let (days, limit) = h.draw((count(), count()));
    let mut blame = Blame::default();
    blame.unless((1..=36_500).contains(&days), "days");
    blame.unless((1..=1_000).contains(&limit), "limit");
    let call = m.call(h.ws, GetRecentlyModified::new(days, limit));
    if let Some(nodes) = h
        .run("get_recently_modified", &(days, limit), &blame, call)
        .await
    {
        // Every node was written moments ago.
        let all = h.before.nodes().count();
        assert_eq!(nodes.nodes.len(), all.min(limit as usize), "{days} {limit}");
    }
}

async fn between_neighborhood_and_path(h: &mut Harness) {
    let m = h.memory.clone();
    let (a, b) = (h.name(), h.name());
    let mut blame = Blame::default();
    blame.unless(name_ok(&a), "entity_a");
    blame.unless(name_ok(&b), "entity_b");
    let call = m.call(h.ws, GetRelationsBetween::new(&a, &b));
    if let Some(found) = h
        .run("get_relations_between", &(&a, &b), &blame, call)
        .await
    {
        let expected = (h.before.relations().into_iter())
            .filter(|(f, _, t)| (f == &a && t == &b) || (f == &b && t == &a));
        assert_eq!(
            found.relations.len(),
            expected.count(),
            "{}",
            short(&(&a, &b))
        );
    }

    let depth = h.draw(count());
    let mut blame = Blame::default();
    blame.unless(name_ok(&a), "name");
    blame.unless(depth <= 6, "depth");
    let call = m.call(h.ws, GetNeighborhood::new(&a, depth));
    if let Some(hood) = h.run("get_neighborhood", &(&a, depth), &blame, call).await {
        let known = |name: &String| h.before.node(name).is_some();
        assert!(hood.nodes.iter().all(|n| known(&n.name)));
        let centre = hood.nodes.iter().any(|n| n.name == a);
        assert_eq!(centre, known(&a), "{}", short(&a));
    }

    let mut blame = Blame::default();
    blame.unless(name_ok(&a), "from_entity");
    blame.unless(name_ok(&b), "to_entity");
    let call = m.call(h.ws, GetPath::new(&a, &b));
    if let Some(path) = h.run("get_path", &(&a, &b), &blame, call).await
        && path.found
    {
        assert_eq!(path.path.first(), Some(&a));
        assert_eq!(path.path.last(), Some(&b));
        assert!(path.path.len() <= 13, "{}", short(&path));
    }

    let (hops, limit) = h.draw((count(), count()));
    let mut blame = Blame::default();
    blame.unless(name_ok(&a), "from_entity");
    blame.unless(name_ok(&b), "to_entity");
    blame.unless((1..=6).contains(&hops), "max_depth");
    blame.unless((1..=100).contains(&limit), "limit");
    let request = crate::FindAllPaths::new(&a, &b)
        .max_depth(hops)
        .limit(limit);
    let call = m.call(h.ws, request);
    if let Some(found) = h
        .run("find_all_paths", &(&a, &b, hops, limit), &blame, call)
        .await
    {
        assert!(found.paths.len() <= limit as usize);
        for path in &found.paths {
            assert_eq!(path.path.first(), Some(&a));
            assert_eq!(path.path.last(), Some(&b));
            assert_eq!(path.relations.len() + 1, path.path.len());
            assert!(path.relations.len() <= hops as usize, "{}", short(path));
            let distinct: std::collections::HashSet<&String> = path.path.iter().collect();
            assert_eq!(distinct.len(), path.path.len(), "{}", short(path));
        }
    }
    graph_vocabulary(h, &a, &b).await;
}

/// The graph vocabulary's tools (group `graph`) with `a` and `b` as their node names.
async fn graph_vocabulary(h: &mut Harness, a: &String, b: &String) {
    let m = h.memory.clone();
    let limit = h.draw(count());
    let mut blame = Blame::default();
    blame.unless((1..=1_000).contains(&limit), "limit");
    let call = m.call(h.ws, crate::GetGraphVocabulary { limit });
    if let Some(vocabulary) = h.run("get_graph_vocabulary", &limit, &blame, call).await {
        assert!(vocabulary.entity_types.len() <= limit as usize);
        let counted: i64 = vocabulary.entity_types.iter().map(|t| t.count).sum();
        assert!(counted as usize <= h.before.nodes().count());
    }

    let limit = h.draw(count());
    let mut blame = Blame::default();
    blame.unless(name_ok(a), "name");
    blame.unless((1..=1_000).contains(&limit), "limit");
    let request = crate::DescribeNode {
        name: a.clone(),
        limit,
    };
    if let Some(node) = h
        .run("describe_node", &(a, limit), &blame, m.call(h.ws, request))
        .await
    {
        assert!(node.neighbours.len() <= limit as usize);
        let degree = node.degree;
        assert_eq!(degree.total, degree.outgoing + degree.incoming);
        assert!(node.neighbours.len() as i64 <= degree.total);
    }

    let depth = h.draw(count());
    let mut blame = Blame::default();
    blame.unless(name_ok(a), "names[0]");
    blame.unless(name_ok(b), "names[1]");
    blame.unless(depth <= 3, "depth");
    let request = crate::GetSubgraph::new(&[a.as_str(), b.as_str()], depth);
    let call = m.call(h.ws, request);
    if let Some(hood) = h.run("get_subgraph", &(a, b, depth), &blame, call).await {
        let known = |name: &String| h.before.node(name).is_some();
        assert!(hood.nodes.iter().all(|n| known(&n.name)));
        let names: Vec<&String> = hood.nodes.iter().map(|n| &n.name).collect();
        assert!(names.contains(&a) && names.contains(&b), "{}", short(&hood));
    }

    let (limit, kind) = (h.draw(count()), h.name());
    let mut blame = Blame::default();
    blame.unless(name_ok(a), "from_entity");
    blame.unless(name_ok(&kind), "relation_type");
    blame.unless((1..=1_000).contains(&limit), "limit");
    let request = crate::GetRelations {
        from_entity: Some(a.clone()),
        relation_type: Some(kind.clone()),
        limit,
        ..crate::GetRelations::default()
    };
    let call = m.call(h.ws, request);
    if let Some(found) = h
        .run("get_relations", &(a, &kind, limit), &blame, call)
        .await
    {
        assert!(found.relations.len() <= limit as usize);
        assert!(
            found
                .relations
                .iter()
                .all(|r| &r.from == a && r.relation_type == kind)
        );
    }
}

async fn search_nodes(h: &mut Harness) {
    let q = query(h);
    let (limit, mode) = h.draw((count(), mode()));
    let mut blame = Blame::default();
    blame.unless(query_ok(&q), "query");
    blame.unless((1..=1_000).contains(&limit), "limit");
    let input = (&q, limit, mode);
    let m = h.memory.clone();
    let request = SearchNodes::new(&q).limit(limit).mode(mode);
    let call = m.call(h.ws, request);
    if let Some(found) = h.run("search_nodes", &input, &blame, call).await {
        assert!(found.results.len() <= limit as usize);
        assert!(
            found
                .results
                .iter()
                .all(|r| h.before.node(&r.name).is_some())
        );
        // No embedder: every mode answers from full text, and says so unless asked to; a
        // search whose every candidate scored below min_score says that instead.
        assert_eq!(found.mode, SearchMode::Text);
        let notice = found.notice.as_deref().unwrap_or_default();
        let nothing = notice.starts_with("nothing in memory matched");
        assert_eq!(
            found.notice.is_some(),
            mode != SearchMode::Text || (found.results.is_empty() && nothing),
            "{found:?}"
        );
    }
}

async fn search_observations(h: &mut Harness) {
    let q = query(h);
    let (limit, mode) = h.draw((count(), mode()));
    let types_len = h.draw(prop_oneof![10 => 0..3_usize, 1 => Just(101)]);
    let types: Vec<String> = (0..types_len).map(|_| h.entity_type()).collect();
    let mut blame = Blame::default();
    blame.unless(query_ok(&q), "query");
    blame.unless((1..=1_000).contains(&limit), "limit");
    blame.unless(types.len() <= 100, "entity_types");
    for (i, t) in types.iter().enumerate() {
        blame.unless(name_ok(t), format!("entity_types[{i}]"));
    }
    let input = (&q, limit, mode, &types);
    let m = h.memory.clone();
    let request = SearchObservations::new(&q)
        .limit(limit)
        .mode(mode)
        .entity_types(types.to_vec());
    let call = m.call(h.ws, request);
    if let Some(found) = h.run("search_observations", &input, &blame, call).await {
        assert!(found.observations.len() <= limit as usize);
        for hit in &found.observations {
            assert!(types.is_empty() || types.contains(&hit.entity_type));
            let node = h.before.node(&hit.name).unwrap();
            let held = (node.observations.iter())
                .any(|o| o.ordinal == Some(hit.ordinal) && o.content == hit.content);
            assert!(held, "{}", short(hit));
        }
    }
}

async fn query_observations(h: &mut Harness) {
    let (name, q) = (h.name(), query(h));
    let mode = h.draw(mode());
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "entity_name");
    blame.unless(query_ok(&q), "query");
    let input = (&name, &q, mode);
    let m = h.memory.clone();
    let request = QueryObservations::new(&name, &q).mode(mode);
    let call = m.call(h.ws, request);
    let found = h.run("query_observations", &input, &blame, call).await;
    let node = h.before.node(&name);
    assert_eq!(
        found.is_some(),
        blame.0.is_empty() && node.is_some(),
        "{}",
        short(&input)
    );
    for hit in found.iter().flat_map(|f| &f.observations) {
        let held = (node.unwrap().observations.iter())
            .any(|o| o.ordinal == Some(hit.ordinal) && o.content == hit.content);
        assert!(held, "{}", short(hit));
    }
}

async fn read_graph(h: &mut Harness) {
    let cursor = h.draw(proptest::option::of(text()));
    let limit = h.draw(count());
    let entity_type = h.entity_type();
    let entity_type = h.draw(proptest::option::of(Just(entity_type)));
    let detail = h.draw(select(
        &[GraphDetail::Names, GraphDetail::Summary, GraphDetail::Full][..],
    ));
    let mut blame = Blame::default();
    blame.unless((1..=1_000).contains(&limit), "limit");
    blame.unless(cursor.as_deref().is_none_or(name_ok), "cursor");
    blame.unless(entity_type.as_deref().is_none_or(name_ok), "entity_type");
    let input = (&cursor, limit, &entity_type, detail);
    let m = h.memory.clone();
    let request = (ReadGraph::new(detail).cursor(cursor.clone()))
        .limit(limit)
        .entity_type(entity_type.clone());
    let call = m.call(h.ws, request);
    let Some(page) = h.run("read_graph", &input, &blame, call).await else {
        return;
    };
    let matching: Vec<&String> = (h.before.nodes())
        .filter(|n| entity_type.as_ref().is_none_or(|t| &n.entity_type == t))
        .map(|n| &n.name)
        .collect();
    assert_eq!(page.total_entities as usize, matching.len());
    let after_cursor: Vec<&&String> = (matching.iter())
        .filter(|n| cursor.as_ref().is_none_or(|c| n.as_bytes() > c.as_bytes()))
        .collect();
    let names: Vec<&String> = page.entities.iter().map(|e| &e.name).collect();
    let expected: Vec<&String> = after_cursor
        .into_iter()
        .take(limit as usize)
        .copied()
        .collect();
    assert_eq!(names, expected, "{}", short(&input));
    if let Some(next) = &page.next_cursor {
        assert_eq!(Some(next), names.last().copied());
    }
}

async fn graph_page(h: &mut Harness) {
    let after = h.draw(proptest::option::of(text()));
    let entity_type = h.entity_type();
    let entity_type = h.draw(proptest::option::of(Just(entity_type)));
    let (limit, observations, totals) = h.draw((count(), any::<bool>(), any::<bool>()));
    let query = GraphPageQuery {
        after,
        limit,
        entity_type,
        observations,
        over_time: false,
        totals,
    };
    let mut blame = Blame::default();
    blame.unless((1..=1_000).contains(&limit), "limit");
    blame.unless(query.after.as_deref().is_none_or(name_ok), "after");
    blame.unless(
        query.entity_type.as_deref().is_none_or(name_ok),
        "entity_type",
    );
    let m = h.memory.clone();
    let call = m.graph_page(h.ws, &query);
    if let Some(page) = h.run("graph_page", &query, &blame, call).await {
        assert!(page.nodes.len() <= limit as usize);
        for (node, count) in &page.nodes {
            let known = h.before.node(&node.name).unwrap();
            assert_eq!(*count as usize, known.observations.len());
            if observations {
                assert_eq!(node, known, "{}", short(&query));
            }
        }
        assert_eq!(page.total_nodes.is_some(), totals);
    }
}

async fn reports(h: &mut Harness) {
    let m = h.memory.clone();
    let none = Blame::default();
    if let Some(stats) = h
        .run("get_stats", &(), &none, m.call(h.ws, GetStats {}))
        .await
    {
        assert_eq!(stats.node_count as usize, h.before.nodes().count());
        assert_eq!(stats.relation_count as usize, h.before.relations().len());
    }
    let orphans = m.call(h.ws, GetOrphanedNodes {});
    h.run("get_orphaned_nodes", &(), &none, orphans)
        .await
        .unwrap();
    let unlinked = m.call(h.ws, FindUnlinkedReferences {});
    h.run("find_unlinked_references", &(), &none, unlinked)
        .await
        .unwrap();
    let pending = m.call(h.ws, GetPendingConsolidation {});
    h.run("get_pending_consolidation", &(), &none, pending)
        .await
        .unwrap();

    let since = h.draw(proptest::option::of(timestamp()));
    let (limit, min_score, cluster_min_score) = h.draw((count(), score(), score()));
    let stale_days =
        h.draw(prop_oneof![5 => 1..=36_500_u32, 1 => Just(0_u32), 1 => Just(40_000_u32)]);
    let options = GetConsolidationReport {
        since,
        limit,
        min_score,
        cluster_min_score,
        stale_days,
    };
    let in_range = |score: f64| (-1.0..=1.0).contains(&score);
    let mut blame = Blame::default();
    blame.unless((1..=1_000).contains(&limit), "limit");
    blame.unless(in_range(min_score), "min_score");
    blame.unless(in_range(cluster_min_score), "cluster_min_score");
    blame.unless(since.as_ref().is_none_or(timestamp_ok), "since");
    blame.unless((1..=36_500).contains(&stale_days), "stale_days");
    let call = m.call(h.ws, options);
    if let Some(report) = h
        .run("get_consolidation_report", &options, &blame, call)
        .await
    {
        assert!(report.orphaned_nodes.len() <= limit as usize);
        assert!(!report.notices.is_empty(), "no embedder, yet no notice");
    }

    let mut blame = Blame::default();
    blame.unless((1..=1_000).contains(&limit), "limit");
    blame.unless(in_range(min_score), "min_score");
    let call = m.call(h.ws, FindSimilarNodes { limit, min_score });
    // Valid arguments meet "no embedding model is configured" ([`Harness::run`]).
    let similar = h
        .run("find_similar_nodes", &(limit, min_score), &blame, call)
        .await;
    assert!(similar.is_none());
}
