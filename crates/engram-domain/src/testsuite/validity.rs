//! Memory over time: facts and relations that end, replaced texts kept as versions, reads
//! `include_ended` and `as_of`, expiry.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::GetStats;
use crate::{
    EndObservations, EndRelations, EndedObservations, Error, NewFact, ObservationEndings,
    QueryObservations, ReadTime, SearchMode, SearchNodes, SearchObservations,
};

fn at(time: &str) -> Timestamp {
    time.parse().expect("an RFC 3339 time")
}

fn endings(entity_name: &str, ordinals: &[i64]) -> ObservationEndings {
    ObservationEndings {
        entity_name: entity_name.into(),
        ordinals: ordinals.iter().copied().map(crate::Ordinal).collect(),
    }
}

fn ended(entity_name: &str, ended: &[i64], not_found: &[i64]) -> EndedObservations {
    EndedObservations {
        entity_name: entity_name.into(),
        ended_ordinals: ended.iter().copied().map(crate::Ordinal).collect(),
        not_found_ordinals: not_found.iter().copied().map(crate::Ordinal).collect(),
    }
}

async fn open_at(memory: &Memory, ws: WorkspaceId, name: &str, time: ReadTime) -> NodeDetail {
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&[name])).at(time))
        .await
        .unwrap();
    opened.entities.into_iter().next().expect("the node")
}

fn texts(node: &NodeDetail) -> Vec<&str> {
    node.observations
        .iter()
        .map(|o| o.content.as_str())
        .collect()
}

#[track_caller]
fn assert_invalid<T: std::fmt::Debug>(result: crate::Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: actual, .. }) => assert_eq!(actual, field),
        other => panic!("expected invalid argument `{field}`, got {other:?}"),
    }
}

pub async fn ended_facts_leave_default_reads_and_stay_for_history(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let january = at("2026-01-01T00:00:00Z");
    let node = NewNode {
        observations: vec![
            "deploys go through the staging cluster".into(),
            NewFact {
                content: "the staging freeze holds".into(),
                valid_from: Some(january),
                expires_at: None,
            },
            "releases ship on Tuesdays".into(),
        ],
        ..entity("Release process", "process", &[])
    };
    memory
        .call(ws, CreateEntities::new(vec![node]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let result = memory
        .call(
            ws,
            EndObservations::new(&[endings("Release process", &[2, 9]), endings("Nobody", &[1])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(
        result,
        [
            ended("Release process", &[2], &[9]),
            ended("Nobody", &[], &[1])
        ]
    );

    // Gone from every default read and search, kept for the others.
    let now = open_node(&memory, ws, "Release process").await;
    assert_eq!(
        undated(&now.observations),
        observations(&[
            (1, "deploys go through the staging cluster"),
            (3, "releases ship on Tuesdays")
        ])
    );
    let found = memory
        .call(
            ws,
            SearchObservations::new("staging freeze").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert!(
        found
            .observations
            .iter()
            .all(|o| o.content != "the staging freeze holds"),
        "{found:?}"
    );
    let ever = open_at(&memory, ws, "Release process", ReadTime::Ever).await;
    assert_eq!(texts(&ever).len(), 3, "{ever:?}");
    let freeze = &ever.observations[1];
    assert_eq!(freeze.content, "the staging freeze holds");
    assert_eq!(freeze.valid_from, Some(january));
    let ended_at = freeze.valid_to.expect("an ended fact has its end");
    assert!(ever.observations[0].valid_from.is_some() && ever.observations[0].valid_to.is_none());
    let march = open_at(
        &memory,
        ws,
        "Release process",
        ReadTime::At(at("2026-03-01T00:00:00Z")),
    )
    .await;
    assert_eq!(texts(&march), ["the staging freeze holds"], "{march:?}");
    let in_march = at("2026-03-01T00:00:00Z");
    let query = QueryObservations::new("Release process", "staging freeze")
        .mode(SearchMode::Text)
        .min_score(Some(0.0));
    let now_found = memory.call(ws, query.clone()).await.unwrap();
    assert!(
        now_found.observations.iter().all(|o| o.ordinal.0 != 2),
        "{now_found:?}"
    );
    let then_found = memory
        .call(ws, query.clone().as_of(in_march))
        .await
        .unwrap();
    let ordinals: Vec<i64> = then_found
        .observations
        .iter()
        .map(|o| o.ordinal.0)
        .collect();
    assert_eq!(ordinals, [2], "{then_found:?}");
    let nodes = memory
        .call(
            ws,
            SearchNodes::new("staging freeze")
                .mode(SearchMode::Text)
                .min_score(Some(0.0))
                .as_of(in_march),
        )
        .await
        .unwrap();
    assert_eq!(
        nodes.results[0].matched_observation,
        "the staging freeze holds"
    );
    // search_observations reads the past as well (issue 58), and the present without it.
    let across = SearchObservations::new("staging freeze")
        .mode(SearchMode::Text)
        .min_score(Some(0.0));
    let then = memory
        .call(ws, across.clone().as_of(in_march))
        .await
        .unwrap();
    assert_eq!(
        then.observations[0].content, "the staging freeze holds",
        "{then:?}"
    );
    let now = memory.call(ws, across).await.unwrap();
    assert!(
        now.observations
            .iter()
            .all(|o| o.content != "the staging freeze holds"),
        "{now:?}"
    );
    let just_before = ended_at - chrono::Duration::milliseconds(1);
    let before = open_at(&memory, ws, "Release process", ReadTime::At(just_before)).await;
    assert_eq!(before.observations.len(), 3, "{before:?}");

    // An ended fact is not current: ending it again finds nothing; its text is new again.
    let again = memory
        .call(
            ws,
            EndObservations::new(&[endings("Release process", &[2])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(again, [ended("Release process", &[], &[2])]);
    let added = memory
        .call(
            ws,
            AddObservations::new(&[additions("Release process", &["the staging freeze holds"])]),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(
        added[0].added,
        observations(&[(4, "the staging freeze holds")])
    );

    // Deleting is for good, ended facts included.
    memory
        .call(
            ws,
            DeleteObservations::new(&[deletions("Release process", &[2])]),
        )
        .await
        .unwrap();
    let ever = open_at(&memory, ws, "Release process", ReadTime::Ever).await;
    assert_eq!(
        ever.observations
            .iter()
            .map(|o| o.ordinal.0)
            .collect::<Vec<_>>(),
        [1, 3, 4]
    );
}

pub async fn an_end_before_the_beginning_is_refused_and_changes_nothing(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let march = at("2026-03-01T00:00:00Z");
    let node = NewNode {
        observations: vec![NewFact {
            content: "Alice leads the storage team".into(),
            valid_from: Some(march),
            expires_at: None,
        }],
        ..entity("Alice", "person", &["Alice likes tea"])
    };
    memory
        .call(
            ws,
            CreateEntities::new(vec![node, entity("Acme", "org", &[])]),
        )
        .await
        .unwrap();
    let mut works_at = relation("Alice", "works_at", "Acme");
    works_at.valid_from = Some(march);
    memory
        .call(ws, CreateRelations::new(&[works_at.clone()]))
        .await
        .unwrap();
    let before = open_at(&memory, ws, "Alice", ReadTime::Ever).await;
    let february = at("2026-02-01T00:00:00Z");

    let refused = memory
        .call(
            ws,
            EndObservations::new(&[endings("Alice", &[1, 2])]).ended_at(february),
        )
        .await;
    assert_invalid(refused, "ended_at");
    let refused = memory
        .call(
            ws,
            EndRelations::new(&[works_at.clone()]).ended_at(february),
        )
        .await;
    assert_invalid(refused, "ended_at");
    let future = chrono::Utc::now() + chrono::Duration::days(3);
    let refused = memory
        .call(ws, EndRelations::new(&[works_at.clone()]).ended_at(future))
        .await;
    assert_invalid(refused, "ended_at");
    assert_eq!(open_at(&memory, ws, "Alice", ReadTime::Ever).await, before);

    let both = OpenNodes {
        include_ended: true,
        as_of: Some(march),
        ..OpenNodes::new(&strings(&["Alice"]))
    };
    assert_invalid(memory.call(ws, both).await, "include_ended");
    let later = NewFact {
        content: "Alice moves to Lisbon".into(),
        valid_from: Some(future),
        expires_at: None,
    };
    let addition = ObservationAdditions {
        entity_name: "Alice".into(),
        contents: vec![later],
    };
    assert_invalid(
        memory.call(ws, AddObservations::new(&[addition])).await,
        "observations[0].contents[0].valid_from",
    );
    let past = NewFact {
        content: "the freeze ends".into(),
        valid_from: None,
        expires_at: Some(february),
    };
    let addition = ObservationAdditions {
        entity_name: "Alice".into(),
        contents: vec![past],
    };
    assert_invalid(
        memory.call(ws, AddObservations::new(&[addition])).await,
        "observations[0].contents[0].expires_at",
    );
    assert_eq!(open_at(&memory, ws, "Alice", ReadTime::Ever).await, before);
}

pub async fn replaced_texts_are_read_as_of_their_time(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("Service", "service", &["runs on port 8080"])]),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let first = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    memory
        .call(
            ws,
            ReplaceObservation::new("Service", crate::Ordinal(1), "runs on port 9090"),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    memory
        .call(
            ws,
            ReplaceObservation::new("Service", crate::Ordinal(1), "runs on port 7070"),
        )
        .await
        .unwrap();

    let now = open_node(&memory, ws, "Service").await;
    assert_eq!(
        undated(&now.observations),
        observations(&[(1, "runs on port 7070")])
    );
    let then = open_at(&memory, ws, "Service", ReadTime::At(first)).await;
    assert_eq!(texts(&then), ["runs on port 8080"]);
    let later = open_at(&memory, ws, "Service", ReadTime::At(second)).await;
    assert_eq!(texts(&later), ["runs on port 9090"]);
    let before_it_existed = open_at(
        &memory,
        ws,
        "Service",
        ReadTime::At(at("2020-01-01T00:00:00Z")),
    )
    .await;
    assert!(before_it_existed.observations.is_empty());
}

pub async fn ended_relations_leave_reads_and_start_again(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["Alice", "Acme", "Globex"]).await;
    let (january, march, may) = (
        at("2026-01-01T00:00:00Z"),
        at("2026-03-01T00:00:00Z"),
        at("2026-05-01T00:00:00Z"),
    );
    let mut acme = relation("Alice", "works_at", "Acme");
    acme.valid_from = Some(january);
    memory
        .call(ws, CreateRelations::new(&[acme.clone()]))
        .await
        .unwrap();
    let result = memory
        .call(
            ws,
            EndRelations::new(&[acme.clone(), relation("Alice", "knows", "Acme")]).ended_at(may),
        )
        .await
        .unwrap();
    assert_eq!(result.ended, [relation("Alice", "works_at", "Acme")]);
    assert_eq!(result.not_found, [relation("Alice", "knows", "Acme")]);
    memory
        .call(
            ws,
            CreateRelations::new(&[relation("Alice", "works_at", "Globex")]),
        )
        .await
        .unwrap();

    let now = open_node_relations(&memory, ws, ReadTime::Now).await;
    assert_eq!(now, [edge("Alice", "works_at", "Globex")]);
    let between = memory
        .call(ws, GetRelationsBetween::new("Alice", "Acme"))
        .await
        .unwrap()
        .relations;
    assert!(between.is_empty(), "{between:?}");
    let in_march = open_node_relations(&memory, ws, ReadTime::At(march)).await;
    assert_eq!(
        in_march,
        [Relation {
            valid_from: Some(january),
            valid_to: Some(may),
            ..edge("Alice", "works_at", "Acme")
        }]
    );
    let between = memory
        .call(
            ws,
            GetRelationsBetween::new("Acme", "Alice").at(ReadTime::At(march)),
        )
        .await
        .unwrap()
        .relations;
    assert_eq!(between, in_march);
    let neighbours = memory
        .call(ws, GetNeighborhood::new("Alice", 1).at(ReadTime::At(march)))
        .await
        .unwrap();
    let names: Vec<&str> = neighbours.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["Alice", "Acme"]);
    let neighbours = memory
        .call(ws, GetNeighborhood::new("Alice", 1))
        .await
        .unwrap();
    let names: Vec<&str> = neighbours.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["Alice", "Globex"]);

    // The same relation again: a new period beside the ended one.
    let created = memory
        .call(
            ws,
            CreateRelations::new(&[relation("Alice", "works_at", "Acme")]),
        )
        .await
        .unwrap();
    assert_eq!(created.created, [relation("Alice", "works_at", "Acme")]);
    let ever = open_node_relations(&memory, ws, ReadTime::Ever).await;
    let periods: Vec<(&str, bool)> = (ever.iter())
        .map(|r| (r.to.as_str(), r.valid_to.is_some()))
        .collect();
    assert_eq!(
        periods,
        [("Acme", true), ("Acme", false), ("Globex", false)],
        "{ever:?}"
    );
    assert!(ever.iter().all(|r| r.valid_from.is_some()));

    // read_graph: the current relations, or every one with its period.
    let page = memory
        .call(
            ws,
            crate::ReadGraph::new(crate::transfer::GraphDetail::Full),
        )
        .await
        .unwrap();
    assert_eq!(page.relations.len(), 2, "{page:?}");
    let with_ended = crate::ReadGraph {
        include_ended: true,
        ..crate::ReadGraph::new(crate::transfer::GraphDetail::Full)
    };
    let page = memory.call(ws, with_ended).await.unwrap();
    assert_eq!(page.relations, ever);
}

async fn open_node_relations(memory: &Memory, ws: WorkspaceId, time: ReadTime) -> Vec<Relation> {
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["Alice"])).at(time))
        .await
        .unwrap();
    opened.relations
}

pub async fn expired_facts_leave_reads_at_once_and_are_purged(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    // Stores keep microseconds.
    let micros = |t: Timestamp| Timestamp::from_timestamp_micros(t.timestamp_micros()).unwrap();
    let soon = micros(chrono::Utc::now() + chrono::Duration::milliseconds(600));
    let next_week = micros(chrono::Utc::now() + chrono::Duration::days(7));
    let expiring = |content: &str, expires_at| NewFact {
        content: content.into(),
        valid_from: None,
        expires_at: Some(expires_at),
    };
    let node = NewNode {
        observations: vec![
            "the build uses cargo".into(),
            expiring("the staging freeze lasts until Friday", soon),
            expiring("the demo is next week", next_week),
        ],
        ..entity("Project", "project", &[])
    };
    memory
        .call(ws, CreateEntities::new(vec![node]))
        .await
        .unwrap();
    let now = open_node(&memory, ws, "Project").await;
    assert_eq!(texts(&now).len(), 3);
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!(
        (stats.ended_observations, stats.expiring_observations),
        (0, 2)
    );
    assert_eq!(now.observations[0].valid_to, None);
    assert_eq!(now.observations[1].valid_to, Some(soon));

    tokio::time::sleep(Duration::from_millis(900)).await;
    let now = open_node(&memory, ws, "Project").await;
    assert_eq!(
        texts(&now),
        ["the build uses cargo", "the demo is next week"]
    );
    let found = memory
        .call(
            ws,
            SearchObservations::new("staging freeze").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert!(found.observations.is_empty(), "{found:?}");
    // Until the purge deletes it, it shows among the ended ones.
    assert_eq!(
        texts(&open_at(&memory, ws, "Project", ReadTime::Ever).await).len(),
        3
    );
    let stats = memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!(
        (stats.ended_observations, stats.expiring_observations),
        (1, 1)
    );
    assert_eq!(memory.purge_expired(1_000).await.unwrap(), 1);
    assert_eq!(memory.purge_expired(1_000).await.unwrap(), 0);
    assert_eq!(
        texts(&open_at(&memory, ws, "Project", ReadTime::Ever).await),
        ["the build uses cargo", "the demo is next week"]
    );
}

pub async fn history_tells_what_happened_newest_first(store: Arc<dyn MemoryStore>) {
    use crate::{GetHistory, HistoryOperation as Op, SetSummary, SetTags};
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let step = || tokio::time::sleep(Duration::from_millis(5));
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("Alice", "person", &["likes tea", "lives in Lisbon"]),
                entity("Acme", "org", &[]),
            ]),
        )
        .await
        .unwrap();
    step().await;
    memory
        .call(
            ws,
            ReplaceObservation::new("Alice", crate::Ordinal(2), "lives in Porto"),
        )
        .await
        .unwrap();
    step().await;
    memory
        .call(
            ws,
            CreateRelations::new(&[relation("Alice", "works_at", "Acme")]),
        )
        .await
        .unwrap();
    step().await;
    memory
        .call(
            ws,
            EndRelations::new(&[relation("Alice", "works_at", "Acme")]),
        )
        .await
        .unwrap();
    step().await;
    memory
        .call(ws, EndObservations::new(&[endings("Alice", &[1])]))
        .await
        .unwrap();
    step().await;
    memory
        .call(ws, SetSummary::new("Alice", "An engineer."))
        .await
        .unwrap();
    step().await;
    memory
        .call(ws, SetTags::new("Alice", &strings(&["team"])))
        .await
        .unwrap();
    step().await;
    memory
        .call(
            ws,
            AddObservations::new(&[additions("Alice", &["has a secret"])]),
        )
        .await
        .unwrap();
    step().await;
    memory
        .call(ws, DeleteObservations::new(&[deletions("Alice", &[3])]))
        .await
        .unwrap();

    let history = memory.call(ws, GetHistory::new("Alice")).await.unwrap();
    let operations: Vec<Op> = history.events.iter().map(|e| e.operation).collect();
    assert_eq!(
        operations,
        [
            Op::ObservationDeleted,
            Op::TagsSet,
            Op::SummarySet,
            Op::ObservationEnded,
            Op::RelationEnded,
            Op::RelationCreated,
            Op::ObservationReplaced,
            Op::ObservationAdded,
            Op::ObservationAdded,
            Op::Created,
        ],
        "{history:?}"
    );
    assert_eq!(history.next_before, None);
    // A deleted fact leaves no text behind, not even in its history.
    let texts: Vec<&str> = (history.events.iter())
        .flat_map(|e| e.content.iter().chain(&e.old_content))
        .map(String::as_str)
        .collect();
    assert!(!texts.contains(&"has a secret"), "{texts:?}");
    let replaced = &history.events[6];
    assert_eq!(replaced.ordinal, Some(crate::Ordinal(2)));
    assert_eq!(replaced.content.as_deref(), Some("lives in Porto"));
    assert_eq!(replaced.old_content.as_deref(), Some("lives in Lisbon"));
    let added: Vec<(i64, &str)> = (history.events[7..9].iter())
        .map(|e| (e.ordinal.unwrap().0, e.content.as_deref().unwrap()))
        .collect();
    assert_eq!(added, [(2, "lives in Lisbon"), (1, "likes tea")]);
    let ended = history.events[4].relation.as_ref().unwrap();
    assert_eq!(
        (ended.to.as_str(), ended.relation_type.as_str()),
        ("Acme", "works_at")
    );
    // Acme's history has the relation too.
    let acme = memory.call(ws, GetHistory::new("Acme")).await.unwrap();
    let operations: Vec<Op> = acme.events.iter().map(|e| e.operation).collect();
    assert_eq!(
        operations,
        [Op::RelationEnded, Op::RelationCreated, Op::Created]
    );

    // Pages: every entry once, an instant never split.
    let mut paged = Vec::new();
    let mut request = GetHistory::new("Alice").limit(3);
    loop {
        let page = memory.call(ws, request.clone()).await.unwrap();
        paged.extend(page.events);
        match page.next_before {
            Some(before) => request = request.before(before),
            None => break,
        }
    }
    assert_eq!(paged, history.events);
    match memory.call(ws, GetHistory::new("alice")).await {
        Err(Error::NotFound { did_you_mean, .. }) => assert_eq!(did_you_mean, ["Alice"]),
        other => panic!("expected not found, got {other:?}"),
    }
    assert_invalid(
        memory.call(ws, GetHistory::new("Alice").limit(0)).await,
        "limit",
    );
}
