//! Memory over time on SQLite: ended facts leave every default read and search but stay in
//! history, texts read as they were at a time, ended relations keep their period, a call that
//! ends something before it began changes nothing, and expired facts are purged.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use engram_domain::testsuite::{TermEmbedder, additions, entity, memory_with_workspace, tick};
use engram_domain::transfer::GraphDetail;
use engram_domain::{
    AddObservations, CreateEntities, CreateRelations, EndObservations, EndRelations, Error,
    GetNeighborhood, GetRelationsBetween, Indexer, Memory, NewFact, ObservationAdditions,
    ObservationEndings, OpenNodes, Ordinal, ReadGraph, ReadTime, RelationSpec, ReplaceObservation,
    SearchMode, SearchObservations, Timestamp, WorkspaceId,
};
use engram_domain::{FindUnlinkedReferences, GetStats};
use engram_domain::{GetHistory, HistoryOperation};

fn ending(name: &str, ordinals: &[i64]) -> ObservationEndings {
    ObservationEndings {
        entity_name: name.into(),
        ordinals: ordinals.iter().copied().map(Ordinal).collect(),
    }
}

/// `(ordinal, content)` of the node's facts as `time` sees them.
async fn facts(memory: &Memory, ws: WorkspaceId, name: &str, time: ReadTime) -> Vec<(i64, String)> {
    let opened = memory
        .call(ws, OpenNodes::new(&[name.into()]).at(time))
        .await
        .unwrap();
    (opened.entities[0].observations.iter())
        .map(|o| (o.ordinal.0, o.content.clone()))
        .collect()
}

fn owned(facts: &[(i64, &str)]) -> Vec<(i64, String)> {
    facts.iter().map(|(o, c)| (*o, (*c).to_owned())).collect()
}

/// `(name, ordinal)` of what a search for `query` in `mode` finds.
async fn found(
    memory: &Memory,
    ws: WorkspaceId,
    query: &str,
    mode: SearchMode,
) -> Vec<(String, i64)> {
    let found = memory
        .call(
            ws,
            SearchObservations::new(query)
                .mode(mode)
                .min_score(Some(0.0)),
        )
        .await
        .unwrap();
    assert_eq!(found.mode, mode, "{found:?}");
    (found.observations.into_iter())
        .map(|o| (o.name, o.ordinal.0))
        .collect()
}

#[tokio::test]
async fn ended_facts_leave_every_default_read_and_stay_in_history() {
    let store = Arc::new(crate::open_fresh().await);
    let embedder = Arc::new(TermEmbedder);
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    let memory = memory.with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    let alice = entity(
        "Alice",
        "person",
        &["lives in Lisbon", "works on engram", "likes Bob"],
    );
    let bob = entity("Bob", "person", &["lives in Porto"]);
    (memory.call(ws, CreateEntities::new(vec![alice, bob])))
        .await
        .unwrap();
    indexer.run_until_idle().await.unwrap();
    let lisbon = found(&memory, ws, "Lisbon", SearchMode::Text).await;
    assert_eq!(lisbon, [("Alice".to_owned(), 1)]);
    let references = memory
        .call(ws, FindUnlinkedReferences {})
        .await
        .unwrap()
        .references;
    assert_eq!(references.len(), 1, "{references:?}");

    let ended = memory
        .call(
            ws,
            EndObservations::new(&[ending("Alice", &[3, 9, 1]), ending("Nobody", &[1])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(ended.len(), 2);
    assert_eq!(ended[0].ended_ordinals, [Ordinal(1), Ordinal(3)]);
    assert_eq!(ended[0].not_found_ordinals, [Ordinal(9)]);
    assert_eq!(
        (ended[1].entity_name.as_str(), ended[1].ended_ordinals.len()),
        ("Nobody", 0)
    );
    assert_eq!(ended[1].not_found_ordinals, [Ordinal(1)]);
    indexer.run_until_idle().await.unwrap();

    // Gone from every default read and search.
    let now = facts(&memory, ws, "Alice", ReadTime::Now).await;
    assert_eq!(now, owned(&[(2, "works on engram")]));
    for mode in [SearchMode::Text, SearchMode::Embedding, SearchMode::Hybrid] {
        let lisbon = found(&memory, ws, "lives in Lisbon", mode).await;
        assert!(
            !lisbon.contains(&("Alice".to_owned(), 1)),
            "{mode:?}: {lisbon:?}"
        );
    }
    assert!(
        memory
            .call(ws, FindUnlinkedReferences {})
            .await
            .unwrap()
            .references
            .is_empty()
    );
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!((stats.observation_count, stats.ended_observations), (4, 2));
    let page = memory
        .call(ws, ReadGraph::new(GraphDetail::Full))
        .await
        .unwrap();
    let alice = page.entities.iter().find(|n| n.name == "Alice").unwrap();
    assert_eq!(alice.observation_count, Some(1));
    assert_eq!(alice.observations.as_ref().unwrap().len(), 1);

    // Kept, with their periods.
    let opened = memory
        .call(ws, OpenNodes::new(&["Alice".into()]).at(ReadTime::Ever))
        .await
        .unwrap();
    let every = &opened.entities[0].observations;
    assert_eq!(every.len(), 3);
    assert!(every.iter().all(|o| o.valid_from.is_some()));
    let ends: Vec<bool> = every.iter().map(|o| o.valid_to.is_some()).collect();
    assert_eq!(ends, [true, false, true]);

    // Not current: neither ended again nor replaced; its text may be added as a new fact.
    let again = memory
        .call(ws, EndObservations::new(&[ending("Alice", &[1])]))
        .await
        .unwrap()
        .results;
    assert_eq!(again[0].not_found_ordinals, [Ordinal(1)]);
    let replaced = memory
        .call(
            ws,
            ReplaceObservation::new("Alice", Ordinal(1), "lives in Faro"),
        )
        .await;
    assert!(
        matches!(replaced, Err(Error::NotFound { .. })),
        "{replaced:?}"
    );
    let added = memory
        .call(
            ws,
            AddObservations::new(&[additions("Alice", &["lives in Lisbon"])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added.len(), 1, "{added:?}");
    assert_eq!(added[0].added[0].ordinal, Ordinal(4));
}

#[tokio::test]
async fn a_fact_reads_as_it_was_at_a_time() {
    let store = Arc::new(crate::open_fresh().await);
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let before = Utc::now();
    tick().await;
    (memory.call(ws, CreateEntities::new(vec![entity("A", "t", &["draft"])])))
        .await
        .unwrap();
    let mut times = Vec::new();
    for text in ["second", "third"] {
        tick().await;
        times.push(Utc::now());
        tick().await;
        (memory.call(ws, ReplaceObservation::new("A", Ordinal(1), text)))
            .await
            .unwrap();
    }
    tick().await;
    times.push(Utc::now());
    tick().await;
    (memory.call(ws, EndObservations::new(&[ending("A", &[1])])))
        .await
        .unwrap();

    assert!(
        facts(&memory, ws, "A", ReadTime::At(before))
            .await
            .is_empty()
    );
    for (at, text) in times.iter().zip(["draft", "second", "third"]) {
        let then = facts(&memory, ws, "A", ReadTime::At(*at)).await;
        assert_eq!(then, owned(&[(1, text)]), "as of {at}");
    }
    assert!(facts(&memory, ws, "A", ReadTime::Now).await.is_empty());
    let every = facts(&memory, ws, "A", ReadTime::Ever).await;
    assert_eq!(every, owned(&[(1, "third")]));

    // A fact that held before it was written reads so.
    let earlier = before - chrono::Duration::hours(1);
    let dated = NewFact {
        content: "was there all along".into(),
        valid_from: Some(earlier),
        expires_at: None,
    };
    (memory.call(ws, AddObservations::new(&[addition("A", dated)])))
        .await
        .unwrap();
    let then = facts(&memory, ws, "A", ReadTime::At(before)).await;
    assert_eq!(then, owned(&[(2, "was there all along")]));
}

fn addition(name: &str, fact: NewFact) -> ObservationAdditions {
    ObservationAdditions {
        entity_name: name.into(),
        contents: vec![fact],
    }
}

#[tokio::test]
async fn ending_before_a_fact_began_changes_nothing() {
    let store = Arc::new(crate::open_fresh().await);
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let hour_ago = Utc::now() - chrono::Duration::hours(1);
    let old = NewFact {
        content: "old".into(),
        valid_from: Some(hour_ago),
        expires_at: None,
    };
    (memory.call(ws, CreateEntities::new(vec![entity("A", "t", &[])])))
        .await
        .unwrap();
    let additions = [addition("A", old), additions("A", &["new"])];
    (memory.call(ws, AddObservations::new(&additions)))
        .await
        .unwrap();
    let half_hour_ago = hour_ago + chrono::Duration::minutes(30);
    let error = memory
        .call(
            ws,
            EndObservations::new(&[ending("A", &[1, 2])]).ended_at(half_hour_ago),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
    assert!(error.to_string().contains("the fact A#2"), "{error}");
    let now = facts(&memory, ws, "A", ReadTime::Now).await;
    assert_eq!(
        now,
        owned(&[(1, "old"), (2, "new")]),
        "fact 1 is not ended either"
    );
}

fn period(relation: &engram_domain::Relation) -> (Option<Timestamp>, Option<Timestamp>) {
    (relation.valid_from, relation.valid_to)
}

#[tokio::test]
async fn ended_relations_are_kept_with_their_period() {
    let store = Arc::new(crate::open_fresh().await);
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let entities = ["A", "B", "C"].map(|n| entity(n, "t", &[])).to_vec();
    (memory.call(ws, CreateEntities::new(entities)))
        .await
        .unwrap();
    let since = Utc::now() - chrono::Duration::hours(2);
    let knows = RelationSpec {
        valid_from: Some(since),
        ..RelationSpec::new("A", "B", "knows")
    };
    let likes = RelationSpec::new("B", "C", "likes");
    (memory.call(ws, CreateRelations::new(&[knows.clone(), likes.clone()])))
        .await
        .unwrap();
    tick().await;
    let meanwhile = Utc::now();
    tick().await;
    let missing = RelationSpec::new("A", "C", "knows");
    let ended = memory
        .call(
            ws,
            EndRelations::new(&[knows.clone(), missing.clone(), likes.clone()]),
        )
        .await
        .unwrap();
    assert_eq!(
        ended.ended,
        [RelationSpec::new("A", "B", "knows"), likes.clone()]
    );
    assert_eq!(ended.not_found, [missing]);
    let again = memory
        .call(ws, EndRelations::new(std::slice::from_ref(&likes)))
        .await
        .unwrap();
    assert_eq!((again.ended.len(), again.not_found.len()), (0, 1));

    let between = async |time| {
        let request = GetRelationsBetween::new("A", "B").at(time);
        memory.call(ws, request).await.unwrap().relations
    };
    assert!(between(ReadTime::Now).await.is_empty());
    let every = between(ReadTime::Ever).await;
    assert_eq!(every.len(), 1);
    assert_eq!(
        every[0].valid_from.map(|t| t.timestamp_micros()),
        Some(since.timestamp_micros())
    );
    assert!(every[0].valid_to.is_some_and(|to| to > meanwhile));
    assert_eq!(between(ReadTime::At(meanwhile)).await, every);
    let before = since - chrono::Duration::minutes(1);
    assert!(between(ReadTime::At(before)).await.is_empty());

    let around = async |time| {
        let request = GetNeighborhood::new("A", 2).at(time);
        let found = memory.call(ws, request).await.unwrap();
        let names: Vec<String> = found.nodes.into_iter().map(|n| n.name).collect();
        (names, found.relations)
    };
    let (names, relations) = around(ReadTime::Now).await;
    assert_eq!((names, relations.len()), (vec!["A".to_owned()], 0));
    let (names, relations) = around(ReadTime::At(meanwhile)).await;
    assert_eq!(names, ["A", "B", "C"]);
    assert_eq!(relations.len(), 2);
    assert!(
        relations.iter().all(|r| r.valid_to.is_some()),
        "{relations:?}"
    );
    let (names, _) = around(ReadTime::At(before)).await;
    assert_eq!(names, ["A"], "likes began after `before`, knows too");

    // Created again: a new period beside the old one.
    (memory.call(
        ws,
        CreateRelations::new(&[RelationSpec::new("A", "B", "knows")]),
    ))
    .await
    .unwrap();
    let now = between(ReadTime::Now).await;
    assert_eq!(now.len(), 1);
    assert_eq!(period(&now[0]), (None, None));
    let every = between(ReadTime::Ever).await;
    assert_eq!(every.len(), 2);
    assert!(
        every[0].valid_to.is_some() && every[1].valid_to.is_none(),
        "{every:?}"
    );
    let opened = memory
        .call(ws, OpenNodes::new(&["A".into()]).at(ReadTime::Ever))
        .await
        .unwrap();
    assert_eq!(opened.relations, every);

    // Ended before it began: refused, and nothing changes.
    let error = memory
        .call(
            ws,
            EndRelations::new(&[RelationSpec::new("A", "B", "knows")]).ended_at(before),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
    assert!(
        error.to_string().contains("the relation A -[knows]-> B"),
        "{error}"
    );
    assert_eq!(between(ReadTime::Now).await.len(), 1);
}

#[tokio::test]
async fn expired_facts_leave_reads_and_are_purged() {
    let store = Arc::new(crate::open_fresh().await);
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let expires_at = Utc::now() + chrono::Duration::milliseconds(300);
    let fleeting = NewFact {
        content: "on holiday this week".into(),
        valid_from: None,
        expires_at: Some(expires_at),
    };
    (memory.call(
        ws,
        CreateEntities::new(vec![entity("A", "t", &["lasting"])]),
    ))
    .await
    .unwrap();
    (memory.call(ws, AddObservations::new(&[addition("A", fleeting)])))
        .await
        .unwrap();
    let opened = memory
        .call(ws, OpenNodes::new(&["A".into()]))
        .await
        .unwrap();
    let expiring = &opened.entities[0].observations[1];
    assert!(
        expiring.valid_from.is_some(),
        "every read says since when: {expiring:?}"
    );
    let to = expiring.valid_to.map(|t| t.timestamp_micros());
    assert_eq!(to, Some(expires_at.timestamp_micros()));
    assert_eq!(
        memory.purge_expired(100).await.unwrap(),
        0,
        "not expired yet"
    );
    assert_eq!(
        memory
            .call(ws, GetStats {})
            .await
            .unwrap()
            .expiring_observations,
        1
    );

    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        facts(&memory, ws, "A", ReadTime::Now).await,
        owned(&[(1, "lasting")])
    );
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!((stats.observation_count, stats.ended_observations), (2, 1));
    assert_eq!(
        facts(&memory, ws, "A", ReadTime::Ever).await.len(),
        2,
        "kept until purged"
    );
    assert_eq!(memory.purge_expired(100).await.unwrap(), 1);
    assert_eq!(memory.purge_expired(100).await.unwrap(), 0);
    assert_eq!(facts(&memory, ws, "A", ReadTime::Ever).await.len(), 1);
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!((stats.observation_count, stats.ended_observations), (1, 0));
}

/// A search deeper than the current facts the nearest vectors hold finds current ones all
/// the same: the ended ones crowding them out are searched past.
#[tokio::test]
async fn searches_reach_past_many_ended_facts() {
    let store = Arc::new(crate::open_fresh().await);
    let embedder = Arc::new(TermEmbedder);
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    let memory = memory.with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    let texts: Vec<String> = (0..60)
        .map(|i| format!("alpha beta gamma item{i}"))
        .collect();
    let contents: Vec<&str> = texts.iter().map(String::as_str).collect();
    (memory.call(ws, CreateEntities::new(vec![entity("N", "t", &contents)])))
        .await
        .unwrap();
    let ended: Vec<i64> = (1..=55).collect();
    (memory.call(ws, EndObservations::new(&[ending("N", &ended)])))
        .await
        .unwrap();
    indexer.run_until_idle().await.unwrap();
    for mode in [SearchMode::Text, SearchMode::Embedding, SearchMode::Hybrid] {
        let mut hits: Vec<i64> = (found(&memory, ws, "alpha beta gamma", mode).await)
            .into_iter()
            .map(|(_, ordinal)| ordinal)
            .collect();
        hits.sort_unstable();
        assert_eq!(hits, [56, 57, 58, 59, 60], "{mode:?}");
    }
}

#[tokio::test]
async fn a_history_tells_what_happened_newest_first() {
    let store = Arc::new(crate::open_fresh().await);
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let entities = vec![entity("A", "t", &["one"]), entity("B", "t", &[])];
    (memory.call(ws, CreateEntities::new(entities)))
        .await
        .unwrap();
    let steps = [
        "replace",
        "relate",
        "end fact",
        "end relation",
        "relate again",
        "delete relation",
    ];
    for step in steps {
        tick().await;
        let knows = [RelationSpec::new("A", "B", "knows")];
        match step {
            "replace" => drop(
                (memory.call(ws, ReplaceObservation::new("A", Ordinal(1), "uno")))
                    .await
                    .unwrap(),
            ),
            "relate" | "relate again" => drop(
                (memory.call(ws, CreateRelations::new(&knows)))
                    .await
                    .unwrap(),
            ),
            "end fact" => drop(
                (memory.call(ws, EndObservations::new(&[ending("A", &[1])])))
                    .await
                    .unwrap(),
            ),
            "end relation" => drop((memory.call(ws, EndRelations::new(&knows))).await.unwrap()),
            _ => drop(
                (memory.call(ws, engram_domain::DeleteRelations::new(&knows)))
                    .await
                    .unwrap(),
            ),
        }
    }
    let history = memory.call(ws, GetHistory::new("A")).await.unwrap();
    let operations: Vec<HistoryOperation> = history.events.iter().map(|e| e.operation).collect();
    use HistoryOperation::*;
    // The relation created again left with its deletion: its deletion is all that tells of
    // it. The end's move out of `relations` is the end, not a deletion.
    assert_eq!(
        operations,
        [
            RelationDeleted,
            RelationEnded,
            ObservationEnded,
            RelationCreated,
            ObservationReplaced,
            ObservationAdded,
            Created,
        ],
        "{history:?}"
    );
    let replaced = &history.events[4];
    assert_eq!(
        (replaced.content.as_deref(), replaced.old_content.as_deref()),
        (Some("uno"), Some("one"))
    );
    assert_eq!(
        history.events[5].content.as_deref(),
        Some("one"),
        "the first text"
    );
    assert_eq!(history.next_before, None);

    // Paged: two at a time, the next page before the last one's time.
    let first = memory
        .call(ws, GetHistory::new("A").limit(2))
        .await
        .unwrap();
    assert_eq!(first.events.len(), 2);
    let before = first.next_before.expect("a full page");
    let next = memory
        .call(ws, GetHistory::new("A").limit(2).before(before))
        .await
        .unwrap();
    let operations: Vec<HistoryOperation> = next.events.iter().map(|e| e.operation).collect();
    assert_eq!(operations, [ObservationEnded, RelationCreated]);
}
