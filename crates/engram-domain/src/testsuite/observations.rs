use std::sync::Arc;

use super::*;
use crate::GetStats;
use crate::{
    AddedObservations, DeletedObservations, Error, MemoryStore, Observation, ReplacedObservation,
    SimilarKind,
};

fn deleted(entity_name: &str, deleted: &[i64], not_found: &[i64]) -> DeletedObservations {
    DeletedObservations {
        entity_name: entity_name.into(),
        deleted_ordinals: deleted.iter().copied().map(crate::Ordinal).collect(),
        not_found_ordinals: not_found.iter().copied().map(crate::Ordinal).collect(),
    }
}

pub async fn ordinals_are_stable_and_never_reused(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("N", "thing", &["a", "b", "c"])]),
        )
        .await
        .unwrap();
    let result = memory
        .call(ws, DeleteObservations::new(&[deletions("N", &[3, 2])]))
        .await
        .unwrap()
        .results;
    assert_eq!(result, [deleted("N", &[2, 3], &[])]);
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "a")])
    );

    // The next ordinal is past every ordinal ever handed out, not past the highest left.
    let added = memory
        .call(ws, AddObservations::new(&[additions("N", &["d"])]))
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added, observations(&[(4, "d")]));
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "a"), (4, "d")])
    );

    memory
        .call(ws, DeleteObservations::new(&[deletions("N", &[4, 1])]))
        .await
        .unwrap();
    assert!(open_node(&memory, ws, "N").await.observations.is_empty());
    let added = memory
        .call(ws, AddObservations::new(&[additions("N", &["e", "f"])]))
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added, observations(&[(5, "e"), (6, "f")]));
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(5, "e"), (6, "f")])
    );
}

/// Writers that touch the same two nodes in opposite orders, many at once: every call
/// succeeds (locks are taken in one order, so none deadlocks) and every fact is stored once.
pub async fn crossing_writers_never_deadlock(store: Arc<dyn MemoryStore>) {
    const WRITERS: usize = 16;
    const CALLS: usize = 10;
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B", "C"]).await;
    let writers = (0..WRITERS).map(|w| {
        let memory = memory.clone();
        async move {
            for call in 0..CALLS {
                let order: [&str; 3] = if w % 2 == 0 {
                    ["A", "B", "C"]
                } else {
                    ["C", "B", "A"]
                };
                let additions: Vec<ObservationAdditions> = (order.iter())
                    .map(|name| additions(name, &[&format!("{name} from {w}/{call}")]))
                    .collect();
                memory
                    .call(ws, AddObservations::new(&additions))
                    .await
                    .unwrap();
                // Overlapping batches of new nodes, in opposite orders too.
                let names = [format!("n{call}a"), format!("n{call}b")];
                let mut batch: Vec<NewNode> = names.iter().map(|n| entity(n, "t", &[])).collect();
                if w % 2 == 1 {
                    batch.reverse();
                }
                memory.call(ws, CreateEntities::new(batch)).await.unwrap();
            }
        }
    });
    futures::future::join_all(writers).await;
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["A", "B", "C"])))
        .await
        .unwrap();
    for node in &opened.entities {
        assert_eq!(node.observations.len(), WRITERS * CALLS, "{}", node.name);
        let ordinals: Vec<i64> = node.observations.iter().map(|o| o.ordinal.0).collect();
        assert_eq!(ordinals, (1..=(WRITERS * CALLS) as i64).collect::<Vec<_>>());
    }
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!(stats.node_count as usize, 3 + 2 * CALLS);
}

pub async fn concurrent_additions_get_unique_gap_free_ordinals(store: Arc<dyn MemoryStore>) {
    const WRITERS: usize = 16;
    const PER_WRITER: usize = 5;
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["N"]).await;

    let contents: Vec<Vec<String>> = (0..WRITERS)
        // Each writer's facts are in descending lexical order: only the request's order can
        // give them their ordinals.
        .map(|w| {
            (0..PER_WRITER)
                .map(|i| format!("writer {w} fact {}", PER_WRITER - i))
                .collect()
        })
        .collect();
    let calls = contents.iter().map(|contents| {
        let memory = memory.clone();
        let addition = ObservationAdditions {
            entity_name: "N".into(),
            contents: facts(contents),
        };
        async move {
            memory
                .call(ws, AddObservations::new(&[addition]))
                .await
                .unwrap()
                .results
        }
    });
    let results = futures::future::join_all(calls).await;

    let mut all: Vec<Observation> = Vec::new();
    for (result, contents) in results.into_iter().zip(&contents) {
        assert_eq!(result.len(), 1);
        let [row] = &result[..] else { unreachable!() };
        assert_eq!((row.entity_name.as_str(), row.not_found), ("N", false));
        let texts: Vec<&String> = row.added.iter().map(|o| &o.content).collect();
        assert_eq!(texts, contents.iter().collect::<Vec<_>>());
        // Each call's ordinals are consecutive, ascending in the call's own order.
        let first = row.added[0].ordinal.0;
        let ordinals: Vec<i64> = row.added.iter().map(|o| o.ordinal.0).collect();
        assert_eq!(
            ordinals,
            (first..first + PER_WRITER as i64).collect::<Vec<_>>()
        );
        all.extend(row.added.iter().cloned());
    }
    all.sort_by_key(|o| o.ordinal);
    let ordinals: Vec<i64> = all.iter().map(|o| o.ordinal.0).collect();
    assert_eq!(
        ordinals,
        (1..=(WRITERS * PER_WRITER) as i64).collect::<Vec<_>>()
    );
    // What was reported is what is stored.
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        all
    );
    assert_eq!(
        events(&memory, ws).await,
        (1 + (WRITERS * PER_WRITER) as i64, 0, 0)
    );
}

pub async fn add_observations_reports_unknown_nodes_and_repeated_nodes(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(ws, CreateEntities::new(vec![entity("N", "thing", &["n1"])]))
        .await
        .unwrap();
    create_nodes(&memory, ws, &["M"]).await;

    let result = memory
        .call(
            ws,
            AddObservations::new(&[
                additions("N", &["y", "x"]),
                additions("Ghost", &["boo"]),
                additions("M", &["m1"]),
                additions("N", &["z"]),
            ]),
        )
        .await
        .unwrap()
        .results;
    let row = |name: &str, added: &[(i64, &str)], not_found| AddedObservations {
        entity_name: name.into(),
        added: observations(added),
        not_found,
        skipped_duplicates: Vec::new(),
        did_you_mean: Vec::new(),
        similar_to: Vec::new(),
    };
    assert_eq!(
        result,
        [
            row("N", &[(2, "y"), (3, "x")], false),
            row("Ghost", &[], true),
            row("M", &[(1, "m1")], false),
            row("N", &[(4, "z")], false),
        ]
    );
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "n1"), (2, "y"), (3, "x"), (4, "z")])
    );

    // Only unknown nodes: nothing is created or added.
    let before = (counts(&memory, ws).await, events(&memory, ws).await);
    let result = memory
        .call(
            ws,
            AddObservations::new(&[additions("Ghost", &["boo", "hoo"])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(result, [row("Ghost", &[], true)]);
    assert_eq!(
        (counts(&memory, ws).await, events(&memory, ws).await),
        before
    );
    assert_eq!(before.0, (2, 5, 0));
}

/// The reference memory server's habit: a text a node already holds is not stored again,
/// and the call says where it is.
pub async fn a_text_the_node_holds_is_not_stored_again(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let created = memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("N", "thing", &["a", "b", "a", "c", "b"]),
                entity("M", "thing", &["m"]),
            ]),
        )
        .await
        .unwrap()
        .entities;
    assert_eq!(
        created[0].skipped_duplicates,
        observations(&[(1, "a"), (2, "b")])
    );
    assert!(created[1].skipped_duplicates.is_empty());
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "a"), (2, "b"), (3, "c")])
    );
    // An existing node is left alone by create_entities: nothing to skip.
    let again = (memory.call(
        ws,
        CreateEntities::new(vec![entity("N", "thing", &["a", "a"])]),
    ))
    .await
    .unwrap();
    assert!(again.entities[0].already_existed && again.entities[0].skipped_duplicates.is_empty());

    let before = events(&memory, ws).await;
    let result = memory
        .call(
            ws,
            AddObservations::new(&[
                additions("N", &["c", "d", "d", "a"]),
                additions("M", &["m", "n"]),
                additions("N", &["d", "e"]),
            ]),
        )
        .await
        .unwrap()
        .results;
    let row = |name: &str, added: &[(i64, &str)], skipped: &[(i64, &str)]| AddedObservations {
        entity_name: name.into(),
        added: observations(added),
        not_found: false,
        skipped_duplicates: observations(skipped),
        did_you_mean: Vec::new(),
        similar_to: Vec::new(),
    };
    assert_eq!(
        result,
        [
            row("N", &[(4, "d")], &[(3, "c"), (4, "d"), (1, "a")]),
            row("M", &[(2, "n")], &[(1, "m")]),
            row("N", &[(5, "e")], &[(4, "d")]),
        ]
    );
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")])
    );
    // Three observations were created, nothing else.
    let after = events(&memory, ws).await;
    assert_eq!(
        (after.0 - before.0, after.1, after.2),
        (3, before.1, before.2)
    );

    // Only texts the node holds: nothing changes.
    let before = (counts(&memory, ws).await, events(&memory, ws).await);
    let result = (memory.call(ws, AddObservations::new(&[additions("M", &["n", "m"])])))
        .await
        .unwrap();
    assert_eq!(result.results, [row("M", &[], &[(2, "n"), (1, "m")])]);
    assert_eq!(
        (counts(&memory, ws).await, events(&memory, ws).await),
        before
    );
}

pub async fn replace_observation_keeps_the_ordinal(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("N", "thing", &["a", "b", "c"])]),
        )
        .await
        .unwrap();
    memory
        .call(ws, DeleteObservations::new(&[deletions("N", &[3])]))
        .await
        .unwrap();

    let replaced = memory
        .call(ws, ReplaceObservation::new("N", crate::Ordinal(2), "B"))
        .await
        .unwrap();
    assert_eq!(
        replaced,
        ReplacedObservation {
            entity_name: "N".into(),
            ordinal: crate::Ordinal(2),
            old_content: "b".into(),
            new_content: "B".into(),
        }
    );
    let again = memory
        .call(ws, ReplaceObservation::new("N", crate::Ordinal(2), "bee"))
        .await
        .unwrap();
    assert_eq!(
        (again.old_content.as_str(), again.new_content.as_str()),
        ("B", "bee")
    );
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "a"), (2, "bee")])
    );

    // A deleted ordinal and one never handed out are both unknown.
    for ordinal in [3, 4] {
        assert_eq!(
            memory
                .call(
                    ws,
                    ReplaceObservation::new("N", crate::Ordinal(ordinal), "x")
                )
                .await
                .unwrap_err(),
            Error::NotFound {
                kind: "observation",
                name: format!("N#{ordinal}"),
                did_you_mean: Vec::new(),
            }
        );
    }
    assert_eq!(
        memory
            .call(ws, ReplaceObservation::new("Ghost", crate::Ordinal(1), "x"))
            .await
            .unwrap_err(),
        Error::node_not_found("Ghost")
    );
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(1, "a"), (2, "bee")])
    );
}

pub async fn delete_observations_reports_deleted_and_missing_ordinals(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("N", "thing", &["a", "b", "c", "d"]),
                entity("M", "thing", &["m"]),
            ]),
        )
        .await
        .unwrap();

    let result = memory
        .call(
            ws,
            DeleteObservations::new(&[
                deletions("N", &[4, 9, 1, 7, 4]),
                deletions("Ghost", &[2, 1]),
                deletions("M", &[2]),
            ]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(
        result,
        [
            deleted("N", &[1, 4], &[7, 9]),
            deleted("Ghost", &[], &[1, 2]),
            deleted("M", &[], &[2]),
        ]
    );
    assert_eq!(
        undated(&open_node(&memory, ws, "N").await.observations),
        observations(&[(2, "b"), (3, "c")])
    );
    assert_eq!(
        undated(&open_node(&memory, ws, "M").await.observations),
        observations(&[(1, "m")])
    );

    // Deleting again finds nothing.
    let again = memory
        .call(ws, DeleteObservations::new(&[deletions("N", &[1])]))
        .await
        .unwrap()
        .results;
    assert_eq!(again, [deleted("N", &[], &[1])]);
    assert_eq!(counts(&memory, ws).await, (2, 3, 0));
}

pub async fn added_facts_name_a_held_fact_they_repeat_or_update(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity(
                "staging",
                "environment",
                &[
                    "The staging freeze ends on 12 May",
                    "Alice prefers dark mode in the staging console",
                    "Bob reports outages to Alice",
                ],
            )]),
        )
        .await
        .unwrap();
    let added = memory
        .call(
            ws,
            AddObservations::new(&[additions(
                "staging",
                &[
                    "The staging freeze ends on 19 May",
                    "alice prefers the dark mode in the staging console!",
                    "Alice reports outages to Bob",
                    "The staging database runs PostgreSQL 16",
                ],
            )]),
        )
        .await
        .unwrap()
        .results;
    let similar: Vec<(i64, i64, &str, SimilarKind)> = (added[0].similar_to.iter())
        .map(|s| (s.ordinal.0, s.similar_ordinal.0, s.content.as_str(), s.kind))
        .collect();
    assert_eq!(
        similar,
        [
            (
                4,
                1,
                "The staging freeze ends on 12 May",
                SimilarKind::MayUpdate
            ),
            (
                5,
                2,
                "Alice prefers dark mode in the staging console",
                SimilarKind::Repeats
            ),
        ]
    );
    // Facts added together are not compared with one another, and a node with nothing like
    // them says nothing.
    let added = memory
        .call(
            ws,
            AddObservations::new(&[additions(
                "staging",
                &["Carol owns the runbook", "Carol owns the runbooks now"],
            )]),
        )
        .await
        .unwrap()
        .results;
    assert!(added[0].similar_to.is_empty(), "{added:?}");
    // In other words: an update when it says it changed and shares two topic words beyond the
    // node's name with a held fact (the newest such: Alice's report of outages, 6); one shared
    // word ("runs") is not enough.
    let reworded = [
        "Outages now go to Dana instead of Alice",
        "Dana now runs the staging standup",
    ];
    let added = (memory.call(ws, AddObservations::new(&[additions("staging", &reworded)])))
        .await
        .unwrap()
        .results;
    let similar: Vec<(i64, i64, SimilarKind)> = (added[0].similar_to.iter())
        .map(|s| (s.ordinal.0, s.similar_ordinal.0, s.kind))
        .collect();
    assert_eq!(similar, [(10, 6, SimilarKind::MayUpdate)], "{added:?}");
    // The store reads a node's newest facts when asked for them alone, in ordinal order.
    let newest = store
        .fact_vectors(crate::store::FactVectors {
            workspace: ws,
            name: "staging",
            model: None,
            perspective: None,
            newest: Some(2),
        })
        .await
        .unwrap();
    let ordinals: Vec<i64> = newest.facts.iter().map(|f| f.ordinal.0).collect();
    assert_eq!(ordinals, [10, 11]);
}
