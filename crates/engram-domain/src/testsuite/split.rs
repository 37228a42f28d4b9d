//! Overgrown nodes: `propose_split` finds the topics of a node's facts, `split_entity` makes
//! them nodes of their own.

use std::sync::Arc;

use super::*;
use crate::{
    Error, GetHistory, HistoryOperation, ProposeSplit, SplitEntity, SplitPart, SplitResult,
};

/// Twelve facts of three topics (storage, search, releases), in turn.
pub(super) const FACTS: [&str; 12] = [
    "storage keeps the graph in PostgreSQL tables",
    "search ranks results with hybrid scores",
    "releases ship every Tuesday from main",
    "storage uses SQLite tables for a single file",
    "search embeds queries into vectors",
    "releases are tagged and signed on Tuesday",
    "storage migrations upgrade PostgreSQL tables",
    "search fuses vectors and text scores",
    "release notes list every change shipped from main",
    "storage backups copy the SQLite tables",
    "search results carry calibrated scores",
    "releases go out on Tuesday after CI on main",
];

fn part(name: &str, ordinals: &[i64]) -> SplitPart {
    SplitPart {
        name: name.into(),
        entity_type: None,
        ordinals: ordinals.iter().copied().map(crate::Ordinal).collect(),
        summary: None,
    }
}

#[track_caller]
fn assert_invalid<T: std::fmt::Debug>(result: crate::Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: actual, .. }) => assert_eq!(actual, field),
        other => panic!("expected invalid argument `{field}`, got {other:?}"),
    }
}

pub async fn an_overgrown_node_is_proposed_in_topics_and_split(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("engram", "project", &FACTS),
                entity("Alice", "person", &[]),
            ]),
        )
        .await
        .unwrap();
    let proposal = memory.call(ws, ProposeSplit::new("engram")).await.unwrap();
    let mut groups: Vec<Vec<i64>> = (proposal.groups.iter())
        .map(|g| g.ordinals.iter().map(|o| o.0).collect())
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [vec![1, 4, 7, 10], vec![2, 5, 8, 11], vec![3, 6, 9, 12]],
        "{proposal:?}"
    );
    let storage = (proposal.groups.iter())
        .find(|g| g.ordinals[0].0 == 1)
        .unwrap();
    assert!(storage.label.contains("storage"), "{proposal:?}");

    let before = open_node(&memory, ws, "engram").await;
    let parts = vec![
        part("engram storage", &[1, 4, 7, 10]),
        SplitPart {
            entity_type: Some("component".into()),
            summary: Some("Hybrid search.".into()),
            ..part("engram search", &[11, 2, 5, 8])
        },
    ];
    // Refused, changing nothing: a fact that is not the node's, a part without facts, a name
    // taken, a fact in two parts.
    for (parts, field) in [
        (vec![part("x", &[1, 40])], "parts[0].ordinals[1]"),
        (vec![part("x", &[])], "parts[0].ordinals"),
        (vec![part("Alice", &[1])], "parts[0].name"),
        (
            vec![part("x", &[1]), part("y", &[1])],
            "parts[1].ordinals[0]",
        ),
    ] {
        assert_invalid(
            memory.call(ws, SplitEntity::new("engram", parts)).await,
            field,
        );
    }
    assert_eq!(open_node(&memory, ws, "engram").await, before);

    let SplitResult {
        name,
        parts: created,
        relations,
    } = memory
        .call(ws, SplitEntity::new("engram", parts))
        .await
        .unwrap();
    assert_eq!(name, "engram");
    assert_eq!(created[0].entity_type, "project");
    assert_eq!(created[1].entity_type, "component");
    let moves: Vec<(i64, i64)> = (created[1].observations.iter())
        .map(|m| (m.old_ordinal.0, m.new_ordinal.0))
        .collect();
    assert_eq!(moves, [(2, 1), (5, 2), (8, 3), (11, 4)]);
    assert_eq!(
        relations,
        [
            edge("engram storage", "part_of", "engram"),
            edge("engram search", "part_of", "engram"),
        ]
    );
    let search = open_node(&memory, ws, "engram search").await;
    assert_eq!(
        undated(&search.observations),
        observations(&[
            (1, "search ranks results with hybrid scores"),
            (2, "search embeds queries into vectors"),
            (3, "search fuses vectors and text scores"),
            (4, "search results carry calibrated scores"),
        ])
    );
    assert_eq!(search.summary.as_deref(), Some("Hybrid search."));
    let left: Vec<i64> = (open_node(&memory, ws, "engram").await.observations.iter())
        .map(|o| o.ordinal.0)
        .collect();
    assert_eq!(left, [3, 6, 9, 12]);
    let history = memory.call(ws, GetHistory::new("engram")).await.unwrap();
    let splits: Vec<&str> = (history.events.iter())
        .filter(|e| e.operation == HistoryOperation::Split)
        .filter_map(|e| e.content.as_deref())
        .collect();
    assert_eq!(splits.len(), 2, "{history:?}");
    assert!(splits.contains(&"engram search"));
}
