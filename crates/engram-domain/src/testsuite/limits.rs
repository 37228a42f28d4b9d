//! Every limit of [`crate::limits`] is enforced before anything is written.

use std::fmt::Debug;
use std::sync::Arc;

use super::*;
use crate::{
    Error, Memory, MemoryStore, NewNode, ObservationDeletions, OpenedNodes, Result, SearchNodes,
};

/// Nodes N (one observation) and M, and N -r-> M: what a rejected call must leave alone.
async fn small_graph(store: Arc<dyn MemoryStore>) -> (Memory, WorkspaceId) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("N", "thing", &["n1"]),
                entity("M", "thing", &[]),
            ]),
        )
        .await
        .unwrap();
    create_relations(&memory, ws, &[("N", "r", "M")]).await;
    (memory, ws)
}

type Footprint = ((i64, i64, i64), (i64, i64, i64), OpenedNodes);

/// Counts, events, and N and M in full (times included).
async fn footprint(memory: &Memory, ws: WorkspaceId) -> Footprint {
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["N", "M"])))
        .await
        .unwrap();
    (counts(memory, ws).await, events(memory, ws).await, opened)
}

#[track_caller]
fn assert_invalid<T: Debug>(result: Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: actual, .. }) => assert_eq!(actual, field),
        other => panic!("expected invalid argument `{field}`, got {other:?}"),
    }
}

pub async fn names_and_types_are_bounded_and_printable(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = small_graph(store).await;
    let before = footprint(&memory, ws).await;
    let m = &memory;
    let too_long = "x".repeat(257);
    // Control characters, and invisible or bidirectional formatting that makes two different
    // names look the same ("Alice" and "Al\u{200b}ice", "\u{202e}ecilA").
    for bad in [
        "",
        too_long.as_str(),
        "a\nb",
        "tab\there",
        "del\u{7f}",
        "nul\0",
        "Al\u{200b}ice",
        "\u{202e}ecilA",
        "\u{feff}bom",
        "soft\u{ad}hyphen",
        "isolate\u{2066}x",
    ] {
        let ok = entity("Ok", "thing", &[]);
        assert_invalid(
            m.call(
                ws,
                CreateEntities::new(vec![ok.clone(), entity(bad, "thing", &[])]),
            )
            .await,
            "entities[1].name",
        );
        assert_invalid(
            m.call(ws, CreateEntities::new(vec![entity("Ok", bad, &[])]))
                .await,
            "entities[0].entity_type",
        );
        let good = relation("N", "r2", "M");
        let bad_type = relation("N", bad, "M");
        assert_invalid(
            m.call(ws, CreateRelations::new(&[good.clone(), bad_type]))
                .await,
            "relations[1].relation_type",
        );
        assert_invalid(
            m.call(ws, CreateRelations::new(&[relation(bad, "r", "M")]))
                .await,
            "relations[0].from_entity",
        );
        assert_invalid(
            m.call(ws, DeleteRelations::new(&[relation("N", "r", bad)]))
                .await,
            "relations[0].to_entity",
        );
        let existing = relation("N", "r", "M");
        assert_invalid(
            m.call(ws, RenameRelationType::new(&existing, bad)).await,
            "new_type",
        );
        assert_invalid(
            m.call(ws, RenameRelationType::new(&relation("N", bad, "M"), "s"))
                .await,
            "old_type",
        );
        assert_invalid(
            m.call(ws, RenameRelationType::new(&relation(bad, "r", "M"), "s"))
                .await,
            "from_entity",
        );
        assert_invalid(
            m.call(ws, RenameRelationType::new(&relation("N", "r", bad), "s"))
                .await,
            "to_entity",
        );
        assert_invalid(
            m.call(ws, DeleteEntities::new(&strings(&["N", bad]))).await,
            "entity_names[1]",
        );
        assert_invalid(
            m.call(ws, OpenNodes::new(&strings(&[bad]))).await,
            "names[0]",
        );
        assert_invalid(m.call(ws, GetNodesByType::new(bad)).await, "entity_type");
        assert_invalid(m.call(ws, SetSummary::new(bad, "s")).await, "name");
        assert_invalid(m.call(ws, SetTags::new(bad, &[])).await, "name");
        assert_invalid(
            m.call(ws, AddObservations::new(&[additions(bad, &["x"])]))
                .await,
            "observations[0].entity_name",
        );
        assert_invalid(
            m.call(ws, ReplaceObservation::new(bad, crate::Ordinal(1), "x"))
                .await,
            "entity_name",
        );
        assert_invalid(
            m.call(ws, DeleteObservations::new(&[deletions(bad, &[1])]))
                .await,
            "deletions[0].entity_name",
        );
        assert_invalid(
            m.call(ws, GetRelationsBetween::new("N", bad)).await,
            "entity_b",
        );
        assert_invalid(
            m.call(ws, GetRelationsBetween::new(bad, "N")).await,
            "entity_a",
        );
        assert_invalid(m.call(ws, GetNeighborhood::new(bad, 1)).await, "name");
        assert_invalid(m.call(ws, GetPath::new(bad, "N")).await, "from_entity");
        assert_invalid(m.call(ws, GetPath::new("N", bad)).await, "to_entity");
    }
    assert_eq!(footprint(m, ws).await, before);

    // 256 bytes is the limit, counted in bytes: 128 two-byte characters fit.
    let longest = ["x".repeat(256), "é".repeat(128)];
    let entities = longest.iter().map(|n| entity(n, n, &[])).collect();
    let created = m
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap()
        .entities;
    assert!(created.iter().all(|row| !row.already_existed));
    let opened = m.call(ws, OpenNodes::new(&longest)).await.unwrap();
    assert_eq!(opened.entities.len(), 2);
    assert_eq!(counts(m, ws).await, (4, 1, 1));
}

pub async fn contents_and_summaries_are_bounded(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = small_graph(store).await;
    let before = footprint(&memory, ws).await;
    let m = &memory;
    let too_long = "x".repeat(65_537);
    // PostgreSQL cannot store NUL in text; SQLite could, but both refuse it alike.
    for bad in ["", too_long.as_str(), "before\0after"] {
        let new = entity("New", "thing", &["ok", bad]);
        assert_invalid(
            m.call(ws, CreateEntities::new(vec![new])).await,
            "entities[0].observations[1]",
        );
        let new = NewNode {
            summary: Some(bad.into()),
            ..entity("New", "thing", &[])
        };
        assert_invalid(
            m.call(
                ws,
                CreateEntities::new(vec![entity("Ok", "thing", &[]), new]),
            )
            .await,
            "entities[1].summary",
        );
        let additions_ = [additions("N", &["ok"]), additions("M", &["a", "b", bad])];
        assert_invalid(
            m.call(ws, AddObservations::new(&additions_)).await,
            "observations[1].contents[2]",
        );
        assert_invalid(
            m.call(ws, ReplaceObservation::new("N", crate::Ordinal(1), bad))
                .await,
            "new_content",
        );
        assert_invalid(m.call(ws, SetSummary::new("N", bad)).await, "summary");
    }
    assert_eq!(footprint(m, ws).await, before);
    assert_invalid(
        m.call(
            ws,
            SearchNodes::new("nul\0query").mode(crate::SearchMode::Text),
        )
        .await,
        "query",
    );
    // Invisible characters are fine inside facts (emoji sequences use U+200D).
    m.call(
        ws,
        AddObservations::new(&[additions("N", &["family 👨\u{200d}👩\u{200d}👧"])]),
    )
    .await
    .unwrap();

    let longest = "y".repeat(65_536);
    let added = m
        .call(ws, AddObservations::new(&[additions("M", &[&longest])]))
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added, observations(&[(1, &longest)]));
    m.call(ws, SetSummary::new("M", &longest)).await.unwrap();
    assert_eq!(
        open_node(m, ws, "M").await.summary.as_deref(),
        Some(longest.as_str())
    );
}

pub async fn batches_hold_one_to_a_thousand_items(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = small_graph(store).await;
    let before = footprint(&memory, ws).await;
    let m = &memory;
    // N among them, so a call that got through would show.
    let names = |n: usize| -> Vec<String> {
        (0..n)
            .map(|i| {
                if i == 0 {
                    "N".to_owned()
                } else {
                    format!("n{i}")
                }
            })
            .collect()
    };
    let contents = |n: usize| -> Vec<String> { (0..n).map(|i| format!("fact {i}")).collect() };
    let entities = |n: usize| -> Vec<NewNode> {
        names(n)
            .iter()
            .map(|name| entity(&format!("new {name}"), "thing", &[]))
            .collect()
    };
    let relations = |n: usize| -> Vec<RelationSpec> {
        (0..n)
            .map(|i| relation("N", &format!("r{i}"), "M"))
            .collect()
    };
    let add = |name: &str, n: usize| ObservationAdditions {
        entity_name: name.into(),
        contents: facts(&contents(n)),
    };
    let ordinals = |n: i64| -> Vec<i64> { (1..=n).collect() };

    for count in [0, 1_001] {
        assert_invalid(
            m.call(ws, CreateEntities::new(entities(count))).await,
            "entities",
        );
        assert_invalid(
            m.call(ws, CreateRelations::new(&relations(count))).await,
            "relations",
        );
        assert_invalid(
            m.call(ws, DeleteRelations::new(&relations(count))).await,
            "relations",
        );
        assert_invalid(
            m.call(ws, DeleteEntities::new(&names(count))).await,
            "entity_names",
        );
        assert_invalid(m.call(ws, OpenNodes::new(&names(count))).await, "names");
        let adds: Vec<ObservationAdditions> = (0..count).map(|_| add("N", 1)).collect();
        assert_invalid(
            m.call(ws, AddObservations::new(&adds)).await,
            "observations",
        );
        assert_invalid(
            m.call(ws, AddObservations::new(&[add("M", count)])).await,
            "observations[0].contents",
        );
        let dels: Vec<ObservationDeletions> = (0..count).map(|_| deletions("N", &[1])).collect();
        assert_invalid(
            m.call(ws, DeleteObservations::new(&dels)).await,
            "deletions",
        );
        let dels = [
            deletions("N", &[1]),
            deletions("M", &ordinals(count as i64)),
        ];
        assert_invalid(
            m.call(ws, DeleteObservations::new(&dels)).await,
            "deletions[1].ordinals",
        );
    }
    // 1,001 observation contents or ordinals in one call, spread over entries.
    let spread = [add("N", 400), add("M", 400), add("N", 201)];
    assert_invalid(
        m.call(ws, AddObservations::new(&spread)).await,
        "observations[].contents",
    );
    let spread = vec![
        NewNode {
            observations: facts(&contents(500)),
            ..entity("New1", "thing", &[])
        },
        NewNode {
            observations: facts(&contents(501)),
            ..entity("New2", "thing", &[])
        },
    ];
    assert_invalid(
        m.call(ws, CreateEntities::new(spread)).await,
        "entities[].observations",
    );
    let spread = [
        deletions("N", &ordinals(500)),
        deletions("M", &ordinals(501)),
    ];
    assert_invalid(
        m.call(ws, DeleteObservations::new(&spread)).await,
        "deletions[].ordinals",
    );
    assert_eq!(footprint(m, ws).await, before);

    // A thousand of everything is fine.
    let thousand: Vec<NewNode> = (0..1_000)
        .map(|i| entity(&format!("e{i}"), "thing", &["one fact"]))
        .collect();
    assert_eq!(
        m.call(ws, CreateEntities::new(thousand))
            .await
            .unwrap()
            .entities
            .len(),
        1_000
    );
    let added = m
        .call(ws, AddObservations::new(&[add("M", 1_000)]))
        .await
        .unwrap()
        .results;
    assert_eq!(added[0].added.last().unwrap().ordinal.0, 1_000);
    m.call(ws, CreateRelations::new(&relations(1_000)))
        .await
        .unwrap();
    assert_eq!(counts(m, ws).await, (1_002, 2_001, 1_001));
}

pub async fn tags_are_bounded(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = small_graph(store).await;
    let before = footprint(&memory, ws).await;
    let m = &memory;
    let many: Vec<String> = (0..65).map(|i| format!("t{i}")).collect();
    assert_invalid(m.call(ws, SetTags::new("N", &many)).await, "tags");
    let tagged = |tags: &[String]| NewNode {
        tags: tags.to_vec(),
        ..entity("New", "thing", &[])
    };
    assert_invalid(
        m.call(ws, CreateEntities::new(vec![tagged(&many)])).await,
        "entities[0].tags",
    );
    let long = "t".repeat(129);
    for (bad, index) in [(long.as_str(), 2), ("", 1), ("a\u{0}b", 0)] {
        let mut tags = strings(&["a", "b", "c"]);
        tags[index] = bad.into();
        assert_invalid(
            m.call(ws, SetTags::new("N", &tags)).await,
            &format!("tags[{index}]"),
        );
        let entities = vec![entity("Ok", "thing", &[]), tagged(&tags)];
        assert_invalid(
            m.call(ws, CreateEntities::new(entities)).await,
            &format!("entities[1].tags[{index}]"),
        );
    }
    assert_eq!(footprint(m, ws).await, before);

    let most: Vec<String> = (0..64).map(|i| format!("{i:0>128}")).collect();
    assert_eq!(
        m.call(ws, SetTags::new("N", &most)).await.unwrap().tags,
        most
    );
    assert_eq!(open_node(m, ws, "N").await.tags, most);
}

pub async fn integer_arguments_are_bounded(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = small_graph(store).await;
    let before = footprint(&memory, ws).await;
    let m = &memory;
    assert_invalid(m.call(ws, GetNeighborhood::new("N", 7)).await, "depth");
    for limit in [0, 1_001] {
        assert_invalid(
            m.call(ws, GetRecentlyModified::new(7, limit)).await,
            "limit",
        );
    }
    for days in [0, 36_501] {
        assert_invalid(m.call(ws, GetRecentlyModified::new(days, 20)).await, "days");
    }
    for ordinal in [0, -1] {
        assert_invalid(
            m.call(
                ws,
                ReplaceObservation::new("N", crate::Ordinal(ordinal), "x"),
            )
            .await,
            "ordinal",
        );
        let dels = [deletions("M", &[1]), deletions("N", &[1, ordinal])];
        assert_invalid(
            m.call(ws, DeleteObservations::new(&dels)).await,
            "deletions[1].ordinals[1]",
        );
    }
    assert_eq!(footprint(m, ws).await, before);

    // The bounds themselves are accepted.
    assert_eq!(
        m.call(ws, GetNeighborhood::new("N", 6))
            .await
            .unwrap()
            .nodes
            .len(),
        2
    );
    assert_eq!(
        m.call(ws, GetRecentlyModified::new(36_500, 1_000))
            .await
            .unwrap()
            .nodes
            .len(),
        2
    );
    assert_eq!(
        m.call(ws, GetRecentlyModified::new(1, 1))
            .await
            .unwrap()
            .nodes
            .len(),
        1
    );
}

/// A node of 130 facts of 64 KiB (8.1 MiB of text): every answer that carries fact texts
/// stays within the 8 MiB of text one answer holds ([`crate::limits::ANSWER_TEXT_BYTES`]) and
/// says what it left out (issue 60: `get_history`, `search_observations` and
/// `query_observations` answered 131 MB for a node of 1,000 such facts).
pub async fn answers_that_carry_fact_texts_stay_within_eight_mebibytes(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(ws, CreateEntities::new(vec![entity("big", "thing", &[])]))
        .await
        .unwrap();
    let text = |i: usize| format!("fact {i} {}", "y".repeat(64 * 1024 - 16));
    for batch in 0..2 {
        let contents: Vec<String> = (batch * 65..(batch + 1) * 65).map(text).collect();
        let addition = additions(
            "big",
            &contents.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        memory
            .call(ws, AddObservations::new(&[addition]))
            .await
            .unwrap();
    }
    let cap = crate::limits::ANSWER_TEXT_BYTES;
    let within = |texts: &mut dyn Iterator<Item = usize>| texts.sum::<usize>() <= cap;

    // A ranked answer keeps its best rows within the bytes, says it left the rest out.
    let cut = |texts: Vec<usize>, notice: Option<String>| {
        assert!(texts.len() >= 100, "{}", texts.len());
        assert!(within(&mut texts.into_iter()));
        let notice = notice.unwrap_or_default();
        assert!(notice.contains("left out past the 8 MiB"), "{notice}");
    };
    let query = crate::QueryObservations::new("big", "fact")
        .mode(crate::SearchMode::Text)
        .min_score(Some(0.0));
    let found = memory.call(ws, query).await.unwrap();
    cut(
        found.observations.iter().map(|o| o.content.len()).collect(),
        found.notice,
    );
    let search = crate::SearchObservations::new("fact")
        .limit(1_000)
        .mode(crate::SearchMode::Text)
        .min_score(Some(0.0));
    let found = memory.call(ws, search).await.unwrap();
    cut(
        found.observations.iter().map(|o| o.content.len()).collect(),
        found.notice,
    );

    let history = crate::GetHistory::new("big").limit(500);
    let history = memory.call(ws, history).await.unwrap();
    assert_eq!(history.events.len(), 131, "every entry stays");
    assert!(within(&mut history.events.iter().map(|e| {
        e.content.as_ref().map_or(0, String::len) + e.old_content.as_ref().map_or(0, String::len)
    })));
    let notice = history.notice.unwrap_or_default();
    assert!(notice.contains("the texts of"), "{notice}");
}
