//! What the store records about writes: `updated_at`, `summary_updated_at` (and so pending
//! consolidation), the counts of `get_stats` and the event log.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::WorkspaceId;
use crate::{EndRelations, GetHistory, HistoryOperation, SearchNodes, Stats, Timestamp};
use crate::{Error, Memory, MemoryStore, NewNode, PendingConsolidation};
use crate::{GetPendingConsolidation, GetStats};

/// The `updated_at` of a set of nodes, checked after each write.
struct Clocks {
    last: BTreeMap<String, Timestamp>,
}

impl Clocks {
    async fn read(memory: &Memory, workspace: WorkspaceId, names: &[&str]) -> Self {
        let opened = memory
            .call(workspace, OpenNodes::new(&strings(names)))
            .await
            .unwrap();
        assert!(opened.not_found.is_empty(), "{opened:?}");
        let last = opened
            .entities
            .into_iter()
            .map(|node| (node.name, node.updated_at))
            .collect();
        Self { last }
    }

    /// Asserts that exactly the nodes in `moved` have a later `updated_at` than at the last
    /// check, then waits for the clock to move.
    async fn check(&mut self, memory: &Memory, workspace: WorkspaceId, step: &str, moved: &[&str]) {
        let names: Vec<&str> = self.last.keys().map(String::as_str).collect();
        let now = Self::read(memory, workspace, &names).await.last;
        for (name, before) in &self.last {
            let after = now[name];
            if moved.contains(&name.as_str()) {
                assert!(after > *before, "{step}: {name}.updated_at did not move");
            } else {
                assert_eq!(after, *before, "{step}: {name}.updated_at moved");
            }
        }
        self.last = now;
        tick().await;
    }
}

pub async fn updated_at_moves_on_every_write_to_a_node_or_its_children(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B", "C"]).await;
    let mut clocks = Clocks::read(&memory, ws, &["A", "B", "C"]).await;
    tick().await;
    let m = &memory;

    m.call(ws, AddObservations::new(&[additions("A", &["one", "two"])]))
        .await
        .unwrap();
    clocks.check(m, ws, "add_observations", &["A"]).await;
    m.call(ws, ReplaceObservation::new("A", crate::Ordinal(1), "uno"))
        .await
        .unwrap();
    clocks.check(m, ws, "replace_observation", &["A"]).await;
    m.call(ws, DeleteObservations::new(&[deletions("A", &[2])]))
        .await
        .unwrap();
    clocks.check(m, ws, "delete_observations", &["A"]).await;
    m.call(ws, CreateRelations::new(&[relation("A", "knows", "B")]))
        .await
        .unwrap();
    clocks.check(m, ws, "create_relations", &["A", "B"]).await;
    m.call(
        ws,
        RenameRelationType::new(&relation("A", "knows", "B"), "trusts"),
    )
    .await
    .unwrap();
    clocks
        .check(m, ws, "rename_relation_type", &["A", "B"])
        .await;
    m.call(ws, DeleteRelations::new(&[relation("A", "trusts", "B")]))
        .await
        .unwrap();
    clocks.check(m, ws, "delete_relations", &["A", "B"]).await;
    m.call(ws, SetTags::new("B", &strings(&["t"])))
        .await
        .unwrap();
    clocks.check(m, ws, "set_tags", &["B"]).await;
    m.call(ws, SetSummary::new("C", "see")).await.unwrap();
    clocks.check(m, ws, "set_summary", &["C"]).await;

    // Reads and rejected writes move nothing.
    m.call(ws, GetNeighborhood::new("A", 2)).await.unwrap();
    m.call(ws, GetPendingConsolidation {}).await.unwrap();
    assert!(
        m.call(ws, ReplaceObservation::new("A", crate::Ordinal(2), "gone"))
            .await
            .is_err()
    );
    assert!(
        m.call(ws, CreateEntities::new(vec![entity("A", "", &[])]))
            .await
            .is_err()
    );
    clocks.check(m, ws, "reads and rejected writes", &[]).await;
}

pub async fn summary_updated_at_moves_only_when_the_summary_is_set(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("N", "thing", &["n1"]),
                entity("M", "place", &["m1"]),
                entity("Empty", "thing", &[]),
                NewNode {
                    summary: Some("summarised at creation".into()),
                    ..entity("Done", "thing", &["d1"])
                },
            ]),
        )
        .await
        .unwrap();
    let created = open_node(&memory, ws, "N").await.created_at;
    let pending = |name: &str, entity_type: &str, count, last, summary| PendingConsolidation {
        name: name.into(),
        entity_type: entity_type.into(),
        observation_count: count,
        last_observation_at: last,
        summary_updated_at: summary,
    };
    // Never summarised, oldest observation first, then by name; not Empty (no observations),
    // not Done (summarised with its observations).
    assert_eq!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes,
        [
            pending("M", "place", 1, created, None),
            pending("N", "thing", 1, created, None)
        ]
    );
    tick().await;

    let summarised = memory
        .call(ws, SetSummary::new("N", "about n"))
        .await
        .unwrap()
        .updated_at;
    let only_m = [pending("M", "place", 1, created, None)];
    assert_eq!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes,
        only_m
    );
    tick().await;
    memory
        .call(ws, SetTags::new("N", &strings(&["t"])))
        .await
        .unwrap();
    assert_eq!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes,
        only_m
    );
    tick().await;

    // A new observation makes N pending again; its summary time is still set_summary's.
    memory
        .call(ws, AddObservations::new(&[additions("N", &["n2"])]))
        .await
        .unwrap();
    let added = open_node(&memory, ws, "N").await.updated_at;
    assert!(added > summarised);
    assert_eq!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes,
        [
            pending("M", "place", 1, created, None),
            pending("N", "thing", 2, added, Some(summarised))
        ]
    );
    tick().await;
    // Replacing an observation counts as writing it.
    memory
        .call(
            ws,
            ReplaceObservation::new("N", crate::Ordinal(1), "n1, revised"),
        )
        .await
        .unwrap();
    let replaced = open_node(&memory, ws, "N").await.updated_at;
    assert!(replaced > added);
    assert_eq!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes[1],
        pending("N", "thing", 2, replaced, Some(summarised))
    );
    tick().await;

    let again = memory
        .call(ws, SetSummary::new("N", "about n, again"))
        .await
        .unwrap()
        .updated_at;
    assert!(again > replaced);
    assert_eq!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes,
        only_m
    );
    memory
        .call(ws, DeleteObservations::new(&[deletions("M", &[1])]))
        .await
        .unwrap();
    assert!(
        memory
            .call(ws, GetPendingConsolidation {})
            .await
            .unwrap()
            .nodes
            .is_empty()
    );
}

pub async fn get_stats_counts_nodes_observations_and_relations(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let stats = |node_count, observation_count, relation_count| Stats {
        node_count,
        observation_count,
        relation_count,
        ended_observations: 0,
        expiring_observations: 0,
        embedding_coverage: 0.0,
        rejected_texts: 0,
        embedding_model: None,
        workspace: "w".into(),
    };
    assert_eq!(memory.call(ws, GetStats {}).await.unwrap(), stats(0, 0, 0));
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("A", "thing", &["a1", "a2", "a3"]),
                entity("B", "thing", &["b1"]),
            ]),
        )
        .await
        .unwrap();
    create_nodes(&memory, ws, &["C"]).await;
    create_relations(
        &memory,
        ws,
        &[("A", "r", "B"), ("B", "r", "A"), ("C", "r", "C")],
    )
    .await;
    assert_eq!(memory.call(ws, GetStats {}).await.unwrap(), stats(3, 4, 3));

    memory
        .call(ws, DeleteObservations::new(&[deletions("A", &[2])]))
        .await
        .unwrap();
    memory
        .call(ws, DeleteRelations::new(&[relation("B", "r", "A")]))
        .await
        .unwrap();
    assert_eq!(memory.call(ws, GetStats {}).await.unwrap(), stats(3, 3, 2));
    memory
        .call(ws, DeleteEntities::new(&strings(&["A"])))
        .await
        .unwrap();
    assert_eq!(memory.call(ws, GetStats {}).await.unwrap(), stats(2, 1, 1));
    assert!(matches!(
        memory.store().get_stats(WorkspaceId(ws.0 + 1000)).await,
        Err(Error::NotFound {
            kind: "workspace",
            ..
        })
    ));
}

pub async fn event_counts_record_creates_updates_and_deletes(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let m = &memory;
    assert_eq!(events(m, ws).await, (0, 0, 0));
    // Creates: 2 nodes, 2 observations.
    m.call(
        ws,
        CreateEntities::new(vec![
            entity("A", "thing", &["a1", "a2"]),
            entity("B", "thing", &[]),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(events(m, ws).await, (4, 0, 0));
    m.call(ws, AddObservations::new(&[additions("A", &["a3"])]))
        .await
        .unwrap();
    m.call(
        ws,
        ReplaceObservation::new("A", crate::Ordinal(1), "a1, revised"),
    )
    .await
    .unwrap();
    m.call(ws, DeleteObservations::new(&[deletions("A", &[2, 9])]))
        .await
        .unwrap();
    assert_eq!(events(m, ws).await, (5, 1, 1));

    m.call(
        ws,
        CreateRelations::new(&[relation("A", "r", "B"), relation("B", "r", "A")]),
    )
    .await
    .unwrap();
    m.call(ws, CreateRelations::new(&[relation("A", "r", "B")]))
        .await
        .unwrap();
    m.call(ws, RenameRelationType::new(&relation("A", "r", "B"), "s"))
        .await
        .unwrap();
    m.call(ws, DeleteRelations::new(&[relation("B", "r", "A")]))
        .await
        .unwrap();
    assert_eq!(events(m, ws).await, (7, 2, 2));
    tick().await;

    // A node update is recorded only when its name, type, summary or tags change.
    let mid = m
        .call(ws, SetSummary::new("A", "x"))
        .await
        .unwrap()
        .updated_at;
    m.call(ws, SetSummary::new("A", "x")).await.unwrap();
    m.call(ws, SetTags::new("A", &strings(&["t"])))
        .await
        .unwrap();
    m.call(ws, SetTags::new("A", &strings(&["t"])))
        .await
        .unwrap();
    m.call(
        ws,
        CreateEntities::new(vec![entity("A", "other", &["ignored"])]),
    )
    .await
    .unwrap();
    assert_eq!(events(m, ws).await, (7, 4, 2));
    assert_eq!(events_since(m, ws, mid).await, (0, 2, 0));

    // B's own events go with it (its creation, and the creation and deletion of B -r-> A,
    // filed under the relation's source); its deletion and the cascaded deletion of
    // A -s-> B (filed under A) are recorded.
    m.call(ws, DeleteEntities::new(&strings(&["B"])))
        .await
        .unwrap();
    assert_eq!(events(m, ws).await, (5, 4, 3));
    assert_eq!(events_since(m, ws, mid).await, (0, 2, 2));
}

/// Every write records who made it (the author a transport names for the call), and
/// `get_history` shows it beside each entry; a write no one is named for shows none, an end
/// recorded with an earlier time shows who recorded it, and no search result carries an author.
pub async fn writes_record_their_author_in_history(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let created = create_nodes(&memory, ws, &["Deploy", "Review"]);
    crate::authorship::scope("alice's agent", created).await;
    tick().await;
    let added = memory.call(
        ws,
        AddObservations::new(&[additions("Deploy", &["runs at noon"])]),
    );
    crate::authorship::scope("bob", added).await.unwrap();
    tick().await;
    memory
        .call(
            ws,
            AddObservations::new(&[additions("Deploy", &["needs a review"])]),
        )
        .await
        .unwrap();
    create_relations(&memory, ws, &[("Deploy", "needs", "Review")]).await;
    tick().await;
    let earlier = chrono::Utc::now();
    tick().await;
    let ended = memory.call(
        ws,
        EndRelations::new(&[relation("Deploy", "needs", "Review")]).ended_at(earlier),
    );
    crate::authorship::scope("carol", ended).await.unwrap();

    let history = memory.call(ws, GetHistory::new("Deploy")).await.unwrap();
    let authors: Vec<(String, Option<&str>)> = (history.events.iter())
        .map(|entry| (format!("{:?}", entry.operation), entry.author.as_deref()))
        .collect();
    let by = |content: &str| {
        (history.events.iter())
            .find(|entry| entry.content.as_deref() == Some(content))
            .unwrap_or_else(|| panic!("no entry for {content:?}: {authors:?}"))
            .author
            .as_deref()
    };
    assert_eq!(by("runs at noon"), Some("bob"), "{authors:?}");
    assert_eq!(by("needs a review"), None, "{authors:?}");
    let of = |operation: HistoryOperation| {
        (history.events.iter())
            .find(|entry| entry.operation == operation)
            .unwrap_or_else(|| panic!("no {operation:?}: {authors:?}"))
            .author
            .as_deref()
    };
    assert_eq!(of(HistoryOperation::RelationCreated), None, "{authors:?}");
    assert_eq!(
        of(HistoryOperation::RelationEnded),
        Some("carol"),
        "{authors:?}"
    );
    let created = history.events.last().expect("the creation");
    assert_eq!(
        created.author.as_deref(),
        Some("alice's agent"),
        "{authors:?}"
    );

    // Merged into another node, a fact keeps who wrote it.
    (memory.call(
        ws,
        crate::MergeEntities::new(&strings(&["Deploy"]), "Review"),
    ))
    .await
    .unwrap();
    let merged = memory.call(ws, GetHistory::new("Review")).await.unwrap();
    let moved = (merged.events.iter())
        .find(|entry| entry.content.as_deref() == Some("runs at noon"))
        .unwrap_or_else(|| panic!("no entry for the moved fact: {merged:?}"));
    assert_eq!(moved.author.as_deref(), Some("bob"), "{merged:?}");

    let found = crate::authorship::scope("dave", memory.call(ws, SearchNodes::new("review")))
        .await
        .unwrap();
    let text = format!("{found:?}");
    for author in ["alice", "bob", "carol", "dave"] {
        assert!(!text.contains(author), "{author} in {text}");
    }
}
