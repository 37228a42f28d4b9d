//! Property tests of the tools that write the graph ([`super::properties`] has the promises
//! every call keeps; here each tool also checks that a successful call did all it says).

use std::sync::Arc;

use proptest::collection::vec;
use proptest::prelude::*;

use super::properties::*;
use super::{facts, undated};
use crate::{
    AddObservations, CreateEntities, CreateRelations, DeleteEntities, DeleteObservations,
    DeleteRelations, OpenNodes, RenameRelationType, ReplaceObservation, SetSummary, SetTags,
};
use crate::{MemoryStore, NewNode, ObservationAdditions, ObservationDeletions, RelationSpec};

/// Cases per tool; writes that create things get more.
const CASES: u32 = 90;

/// The tools these properties generate (checked by [`Harness::finish_covering`]).
pub const WRITE_TOOLS: &[&str] = &[
    "create_entities",
    "add_observations",
    "delete_observations",
    "replace_observation",
    "set_summary",
    "set_tags",
    "create_relations",
    "delete_relations",
    "rename_relation_type",
    "delete_entities",
    "add_reflection",
    "search_reflections",
];

pub async fn properties_of_the_write_tools_hold_for_generated_arguments(
    store: Arc<dyn MemoryStore>,
) {
    let mut h = Harness::new(store, "properties-writes").await;
    for _ in 0..2 * CASES {
        create_entities(&mut h).await;
    }
    h.reseed().await;
    for _ in 0..2 * CASES {
        add_observations(&mut h).await;
    }
    for _ in 0..CASES {
        delete_observations(&mut h).await;
        replace_observation(&mut h).await;
    }
    h.reseed().await;
    for _ in 0..CASES {
        set_summary_and_tags(&mut h).await;
    }
    for _ in 0..2 * CASES {
        create_relations(&mut h).await;
    }
    for _ in 0..CASES {
        delete_relations(&mut h).await;
        rename_relation_type(&mut h).await;
    }
    for _ in 0..CASES {
        reflections(&mut h).await;
    }
    for _ in 0..CASES {
        delete_entities(&mut h).await;
    }
    h.finish_covering("write tools", WRITE_TOOLS);
}

/// How many items a batch holds: usually 1–4, sometimes none, rarely 1,001.
pub(super) fn batch_len() -> impl Strategy<Value = usize> {
    prop_oneof![40 => 1..5_usize, 2 => Just(0), 1 => Just(1_001)]
}

/// A node's ordinals in one entry of a batch: usually 0–3 of any kind, rarely 1 to 1,001.
pub(super) fn ordinals() -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        20 => vec(ordinal(), 0..4),
        1 => Just((1..=1_001).collect::<Vec<i64>>()),
    ]
}

/// Repeats an earlier item's name in a batch now and then (a duplicate within one call).
fn maybe_repeat(h: &mut Harness, names: &mut [String]) {
    if names.len() > 1 && h.draw(prop::bool::weighted(0.15)) {
        let (from, to) = h.draw((0..names.len(), 0..names.len()));
        names[to] = names[from].clone();
    }
}

async fn create_entities(h: &mut Harness) {
    h.case().await;
    let len = h.draw(batch_len());
    let mut names: Vec<String> = (0..len).map(|_| h.name()).collect();
    maybe_repeat(h, &mut names);
    let mut entities = Vec::with_capacity(len);
    for name in names {
        let entity_type = h.entity_type();
        let few = || vec(text(), 0..3);
        let tags = prop_oneof![10 => few(), 1 => vec(tricky(), 65..=65)];
        let (observations, summary, tags) = h.draw((few(), proptest::option::of(text()), tags));
        entities.push(NewNode {
            name,
            entity_type,
            observations: facts(&observations),
            summary,
            tags,
        });
    }
    let mut blame = Blame::default();
    blame.batch(entities.len(), "entities");
    for (i, e) in entities.iter().enumerate() {
        blame.unless(name_ok(&e.name), format!("entities[{i}].name"));
        blame.unless(
            name_ok(&e.entity_type),
            format!("entities[{i}].entity_type"),
        );
        if let Some(summary) = &e.summary {
            blame.unless(content_ok(summary), format!("entities[{i}].summary"));
        }
        blame.unless(e.tags.len() <= 64, format!("entities[{i}].tags"));
        for (k, tag) in e.tags.iter().enumerate() {
            blame.unless(tag_ok(tag), format!("entities[{i}].tags[{k}]"));
        }
        for (j, content) in e.observations.iter().enumerate() {
            blame.unless(
                content_ok(&content.content),
                format!("entities[{i}].observations[{j}]"),
            );
        }
    }
    let total: usize = entities.iter().map(|e| e.observations.len()).sum();
    blame.unless(total <= 1_000, "entities[].observations");
    blame.duplicates(entities.iter().map(|e| &e.name), "entities", ".name");

    let m = h.memory.clone();
    let call = m.call(h.ws, CreateEntities::new(entities.clone()));
    let Some(rows) = h.run("create_entities", &entities, &blame, call).await else {
        return;
    };
    let rows = rows.entities;
    assert_eq!(rows.len(), entities.len(), "{}", short(&entities));
    let names: Vec<String> = entities.iter().map(|e| e.name.clone()).collect();
    let opened = m.call(h.ws, OpenNodes::new(&names)).await.unwrap();
    for (row, e) in rows.iter().zip(&entities) {
        let existed = h.before.node(&e.name);
        assert_eq!(row.name, e.name);
        assert_eq!(row.already_existed, existed.is_some(), "{}", short(e));
        let node = (opened.entities.iter()).find(|n| n.name == e.name);
        let node = node.unwrap_or_else(|| panic!("created yet absent: {}", short(e)));
        let contents: Vec<&str> = node
            .observations
            .iter()
            .map(|o| o.content.as_str())
            .collect();
        let ordinals: Vec<i64> = node.observations.iter().map(|o| o.ordinal.0).collect();
        if let Some(old) = existed {
            // An existing node is left alone.
            let old: Vec<&str> = old
                .observations
                .iter()
                .map(|o| o.content.as_str())
                .collect();
            assert_eq!(contents, old, "{}", short(e));
        } else {
            assert_eq!(
                (&node.entity_type, &node.summary),
                (&e.entity_type, &e.summary)
            );
            // Each text once, at its first place; the repeats are reported where it is.
            let mut once: Vec<&str> = Vec::new();
            for text in &e.observations {
                if !once.contains(&text.content.as_str()) {
                    once.push(&text.content);
                }
            }
            assert_eq!(contents, once, "{}", short(e));
            assert_eq!(ordinals, (1..=contents.len() as i64).collect::<Vec<_>>());
            assert_eq!(
                row.skipped_duplicates.len(),
                e.observations.len() - once.len()
            );
            for skipped in &row.skipped_duplicates {
                assert!(node.observations.contains(skipped), "{skipped:?}");
            }
            let mut tags: Vec<&String> = Vec::new();
            for tag in &e.tags {
                if !tags.contains(&tag) {
                    tags.push(tag);
                }
            }
            assert_eq!(node.tags.iter().collect::<Vec<_>>(), tags, "{}", short(e));
        }
    }
}

async fn add_observations(h: &mut Harness) {
    h.case().await;
    let len = h.draw(batch_len());
    let mut additions = Vec::with_capacity(len);
    for _ in 0..len {
        let entity_name = h.name();
        let contents = h.draw(prop_oneof![
            30 => vec(text(), 1..4),
            2 => Just(Vec::new()),
            1 => Just(vec!["fact".to_owned(); 1_001]),
        ]);
        additions.push(ObservationAdditions {
            entity_name,
            contents: facts(&contents),
        });
    }
    let mut blame = Blame::default();
    blame.batch(additions.len(), "observations");
    for (i, a) in additions.iter().enumerate() {
        blame.unless(
            name_ok(&a.entity_name),
            format!("observations[{i}].entity_name"),
        );
        blame.batch(a.contents.len(), format!("observations[{i}].contents"));
        for (j, content) in a.contents.iter().enumerate() {
            blame.unless(
                content_ok(&content.content),
                format!("observations[{i}].contents[{j}]"),
            );
        }
    }
    let total: usize = additions.iter().map(|a| a.contents.len()).sum();
    blame.unless(total <= 1_000, "observations[].contents");

    let m = h.memory.clone();
    let call = m.call(h.ws, AddObservations::new(&additions));
    let Some(rows) = h.run("add_observations", &additions, &blame, call).await else {
        return;
    };
    let rows = rows.results;
    assert_eq!(rows.len(), additions.len());
    let names: Vec<String> = additions.iter().map(|a| a.entity_name.clone()).collect();
    let opened = m.call(h.ws, OpenNodes::new(&names)).await.unwrap();
    // Per node, the highest ordinal so far: each addition's ordinals come after it.
    let mut highest = std::collections::HashMap::new();
    for (row, a) in rows.iter().zip(&additions) {
        let Some(before) = h.before.node(&a.entity_name) else {
            assert!(row.not_found && row.added.is_empty(), "{}", short(&row));
            continue;
        };
        assert!(!row.not_found);
        // Every given text was stored now, or skipped as one the node held before or the call
        // gave before; none is stored twice.
        let mut reported: Vec<&String> = (row.added.iter().chain(&row.skipped_duplicates))
            .map(|o| &o.content)
            .collect();
        let mut given: Vec<&String> = a.contents.iter().map(|f| &f.content).collect();
        reported.sort();
        given.sort();
        assert_eq!(reported, given, "{}", short(&row));
        for added in &row.added {
            let held = (before.observations.iter()).any(|o| o.content == added.content);
            assert!(!held, "stored again: {added:?}");
        }
        let floor = highest.entry(&a.entity_name).or_insert_with(|| {
            let existing = before
                .observations
                .iter()
                .filter_map(|o| o.ordinal.map(|n| n.0));
            existing
                .chain(before.next_ordinal.map(|n| n - 1))
                .max()
                .unwrap_or(0)
        });
        for added in &row.added {
            assert!(added.ordinal.0 > *floor, "ordinal reused: {}", short(&rows));
            *floor = added.ordinal.0;
        }
        let node = opened
            .entities
            .iter()
            .find(|n| n.name == a.entity_name)
            .unwrap();
        let stored = undated(&node.observations);
        for added in row.added.iter().chain(&row.skipped_duplicates) {
            assert!(stored.contains(added), "{added:?} absent");
        }
        let texts = node.observations.iter().map(|o| &o.content);
        assert!(
            repeats(texts) <= repeats(before.observations.iter().map(|o| &o.content)),
            "a text stored twice: {}",
            short(&node)
        );
    }
}

/// How many of `texts` repeat an earlier one.
fn repeats<'a>(texts: impl Iterator<Item = &'a String>) -> usize {
    let mut seen = std::collections::HashSet::new();
    texts.filter(|text| !seen.insert(*text)).count()
}

async fn delete_observations(h: &mut Harness) {
    h.case().await;
    let len = h.draw(batch_len());
    let mut deletions = Vec::with_capacity(len);
    for _ in 0..len {
        let entity_name = h.name();
        let ordinals = h.draw(ordinals());
        let contents = h.draw(prop_oneof![4 => Just(Vec::new()), 1 => vec(text(), 1..3)]);
        deletions.push(ObservationDeletions {
            entity_name,
            ordinals: ordinals.into_iter().map(crate::Ordinal).collect(),
            contents,
        });
    }
    let mut blame = Blame::default();
    blame.batch(deletions.len(), "deletions");
    for (i, d) in deletions.iter().enumerate() {
        blame.unless(
            name_ok(&d.entity_name),
            format!("deletions[{i}].entity_name"),
        );
        if d.contents.is_empty() {
            blame.batch(d.ordinals.len(), format!("deletions[{i}].ordinals"));
        }
        for (j, ordinal) in d.ordinals.iter().enumerate() {
            blame.unless(ordinal.0 >= 1, format!("deletions[{i}].ordinals[{j}]"));
        }
        for (j, content) in d.contents.iter().enumerate() {
            blame.unless(
                content_ok(content),
                format!("deletions[{i}].observations[{j}]"),
            );
        }
    }
    let total: usize = deletions
        .iter()
        .map(|d| d.ordinals.len() + d.contents.len())
        .sum();
    blame.unless(total <= 1_000, "deletions[].ordinals");

    let m = h.memory.clone();
    let call = m.call(h.ws, DeleteObservations::new(&deletions));
    let Some(rows) = h.run("delete_observations", &deletions, &blame, call).await else {
        return;
    };
    let rows = rows.results;
    assert_eq!(rows.len(), deletions.len());
    let after = h.snapshot().await;
    for (row, d) in rows.iter().zip(&deletions) {
        let reported: Vec<crate::Ordinal> =
            [&row.deleted_ordinals[..], &row.not_found_ordinals[..]].concat();
        assert!(
            d.ordinals.iter().all(|o| reported.contains(o)),
            "{}",
            short(&row)
        );
        let Some(node) = after.node(&d.entity_name) else {
            assert!(row.deleted_ordinals.is_empty());
            continue;
        };
        let before = h.before.node(&d.entity_name).unwrap();
        for o in &node.observations {
            assert!(!d.ordinals.contains(&o.ordinal.unwrap()), "{o:?} left");
            assert!(!d.contents.contains(&o.content), "{o:?} left");
        }
        for deleted in &row.deleted_ordinals {
            assert!(
                before
                    .observations
                    .iter()
                    .any(|o| o.ordinal == Some(*deleted))
            );
        }
    }
}

async fn replace_observation(h: &mut Harness) {
    h.case().await;
    let name = h.name();
    let (ordinal, content) = h.draw((ordinal(), text()));
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "entity_name");
    blame.unless(ordinal >= 1, "ordinal");
    blame.unless(content_ok(&content), "new_content");
    let input = (&name, ordinal, &content);
    let exists = (h.before.node(&name)).is_some_and(|n| {
        n.observations
            .iter()
            .any(|o| o.ordinal == Some(crate::Ordinal(ordinal)))
    });
    let m = h.memory.clone();
    let call = m.call(
        h.ws,
        ReplaceObservation::new(&name, crate::Ordinal(ordinal), &content),
    );
    let replaced = h.run("replace_observation", &input, &blame, call).await;
    assert_eq!(
        replaced.is_some(),
        blame.0.is_empty() && exists,
        "{}",
        short(&input)
    );
    if replaced.is_some() {
        let node = super::open_node(&m, h.ws, &name).await;
        let now = node
            .observations
            .iter()
            .find(|o| o.ordinal.0 == ordinal)
            .unwrap();
        assert_eq!(now.content, content);
    }
}

async fn set_summary_and_tags(h: &mut Harness) {
    h.case().await;
    let name = h.name();
    let summary = h.draw(text());
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "name");
    blame.unless(content_ok(&summary), "summary");
    let m = h.memory.clone();
    let call = m.call(h.ws, SetSummary::new(&name, &summary));
    let input = (&name, &summary);
    if h.run("set_summary", &input, &blame, call).await.is_some() {
        let node = super::open_node(&m, h.ws, &name).await;
        assert_eq!(node.summary.as_ref(), Some(&summary));
    }

    h.case().await;
    let name = h.name();
    let tags = h.draw(prop_oneof![20 => vec(text(), 0..4), 1 => vec(tricky(), 64..=65)]);
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "name");
    blame.unless(tags.len() <= 64, "tags");
    for (k, tag) in tags.iter().enumerate() {
        blame.unless(tag_ok(tag), format!("tags[{k}]"));
    }
    let call = m.call(h.ws, SetTags::new(&name, &tags));
    let input = (&name, &tags);
    if h.run("set_tags", &input, &blame, call).await.is_some() {
        let node = super::open_node(&m, h.ws, &name).await;
        assert!(
            node.tags.iter().all(|t| tags.contains(t)),
            "{}",
            short(&input)
        );
        assert!(
            tags.iter().all(|t| node.tags.contains(t)),
            "{}",
            short(&input)
        );
    }
}

/// 1–4 relations (sometimes none, rarely 1,001) between names that often exist, of types
/// that are often `next`, sometimes the same relation twice.
fn relation_batch(h: &mut Harness) -> Vec<RelationSpec> {
    let len = h.draw(batch_len());
    let mut relations: Vec<RelationSpec> = (0..len)
        .map(|_| {
            let relation_type = h.draw(prop_oneof![Just("next".to_owned()), text()]);
            RelationSpec::new(h.name(), h.name(), relation_type)
        })
        .collect();
    if relations.len() > 1 && h.draw(prop::bool::weighted(0.15)) {
        relations[1] = relations[0].clone();
    }
    relations
}

/// The oracle on a batch of relations: 1–1,000, each with valid endpoint names and type.
pub(super) fn blame_relations(relations: &[RelationSpec]) -> Blame {
    let mut blame = Blame::default();
    blame.batch(relations.len(), "relations");
    for (i, r) in relations.iter().enumerate() {
        blame.unless(
            name_ok(&r.from_entity),
            format!("relations[{i}].from_entity"),
        );
        blame.unless(name_ok(&r.to_entity), format!("relations[{i}].to_entity"));
        blame.unless(
            name_ok(&r.relation_type),
            format!("relations[{i}].relation_type"),
        );
    }
    blame
}

fn triple(r: &RelationSpec) -> (String, String, String) {
    (
        r.from_entity.clone(),
        r.relation_type.clone(),
        r.to_entity.clone(),
    )
}

async fn create_relations(h: &mut Harness) {
    h.case().await;
    let relations = relation_batch(h);
    let blame = blame_relations(&relations);
    let m = h.memory.clone();
    let call = m.call(h.ws, CreateRelations::new(&relations));
    let Some(result) = h.run("create_relations", &relations, &blame, call).await else {
        return;
    };
    let after = h.snapshot().await.relations();
    for r in &relations {
        let ends = [&r.from_entity, &r.to_entity].map(|n| h.before.node(n).is_some());
        if ends == [true, true] {
            assert!(after.contains(&triple(r)), "not created: {}", short(r));
        } else {
            assert!(!after.contains(&triple(r)));
            assert!(!result.not_found.is_empty(), "{}", short(&result));
        }
    }
    let reported = result.created.len() + result.already_existed.len();
    assert!(reported <= relations.len(), "{}", short(&result));
}

async fn delete_relations(h: &mut Harness) {
    h.case().await;
    let mut relations = relation_batch(h);
    // Half the time, the first is one that exists.
    let existing = h.before.relations();
    if !relations.is_empty() && !existing.is_empty() && h.draw(any::<bool>()) {
        let (from, kind, to) = h.draw(proptest::sample::select(existing));
        relations[0] = super::relation(&from, &kind, &to);
    }
    let blame = blame_relations(&relations);
    let m = h.memory.clone();
    let call = m.call(h.ws, DeleteRelations::new(&relations));
    let Some(result) = h.run("delete_relations", &relations, &blame, call).await else {
        return;
    };
    let after = h.snapshot().await.relations();
    assert!(relations.iter().all(|r| !after.contains(&triple(r))));
    assert_eq!(
        result.deleted as usize,
        h.before.relations().len() - after.len(),
        "{}",
        short(&relations)
    );
}

async fn rename_relation_type(h: &mut Harness) {
    h.case().await;
    let existing = h.before.relations();
    let mut relation = relation_batch(h)
        .pop()
        .unwrap_or_else(|| super::relation("a", "b", "c"));
    if !existing.is_empty() && h.draw(any::<bool>()) {
        let (from, kind, to) = h.draw(proptest::sample::select(existing));
        relation = super::relation(&from, &kind, &to);
    }
    let new_type = h.draw(prop_oneof![Just("next".to_owned()), text()]);
    let mut blame = Blame::default();
    blame.unless(name_ok(&relation.from_entity), "from_entity");
    blame.unless(name_ok(&relation.to_entity), "to_entity");
    blame.unless(name_ok(&relation.relation_type), "old_type");
    blame.unless(name_ok(&new_type), "new_type");
    let input = (&relation, &new_type);
    let m = h.memory.clone();
    let call = m.call(h.ws, RenameRelationType::new(&relation, &new_type));
    if let Some(renamed) = h.run("rename_relation_type", &input, &blame, call).await {
        assert_eq!(renamed.new_type, new_type);
        assert_eq!(renamed.old_type, relation.relation_type);
        let after = h.snapshot().await.relations();
        let renamed =
            RelationSpec::new(&renamed.from_entity, &renamed.to_entity, &renamed.new_type);
        assert!(after.contains(&triple(&renamed)), "{}", short(&input));
    }
}

async fn delete_entities(h: &mut Harness) {
    h.case().await;
    let len = h.draw(batch_len());
    let mut names: Vec<String> = (0..len).map(|_| h.name()).collect();
    maybe_repeat(h, &mut names);
    let mut blame = Blame::default();
    blame.batch(names.len(), "entity_names");
    for (i, name) in names.iter().enumerate() {
        blame.unless(name_ok(name), format!("entity_names[{i}]"));
    }
    let m = h.memory.clone();
    let call = m.call(h.ws, DeleteEntities::new(&names));
    let Some(result) = h.run("delete_entities", &names, &blame, call).await else {
        return;
    };
    let after = h.snapshot().await;
    for name in &names {
        assert!(after.node(name).is_none(), "{} left", short(name));
        let existed = h.before.node(name).is_some();
        assert!(
            result.deleted.contains(name) == existed,
            "{}",
            short(&result)
        );
    }
    assert!(result.not_found.iter().all(|n| h.before.node(n).is_none()));
    for (from, _, to) in after.relations() {
        assert!(
            !names.contains(&from) && !names.contains(&to),
            "relation left"
        );
    }
    if after.nodes().count() < 3 {
        h.reseed().await;
    }
}

/// `add_reflection` about a node that often exists, a relation or the workspace (sometimes
/// none, sometimes two at once), with generated texts; then `search_reflections` for a
/// generated query over it.
async fn reflections(h: &mut Harness) {
    h.case().await;
    let (a, b) = (h.name(), h.name());
    let kind = h.draw(0..5_u8);
    let relation_type = h.entity_type();
    let target = match kind {
        0 => crate::ReflectionTarget::default(),
        1 => crate::ReflectionTarget::workspace(),
        2 => crate::ReflectionTarget::relation(&a, &relation_type, &b),
        3 => crate::ReflectionTarget {
            workspace: true,
            ..crate::ReflectionTarget::node(&a)
        },
        _ => crate::ReflectionTarget::node(&a),
    };
    let content = h.draw(text());
    let mood = h.draw(prop_oneof![3 => Just(None), 1 => text().prop_map(Some)]);
    let mut blame = Blame::default();
    blame.unless(matches!(kind, 1 | 2 | 4), "target");
    match kind {
        2 => {
            blame.unless(name_ok(&a), "target.relation.from");
            blame.unless(name_ok(&b), "target.relation.to");
            blame.unless(name_ok(&relation_type), "target.relation.relation_type");
        }
        4 => blame.unless(name_ok(&a), "target.node"),
        _ => {}
    }
    blame.unless(content_ok(&content), "content");
    if let Some(mood) = &mood {
        blame.unless(name_ok(mood), "mood");
    }
    let request = crate::AddReflection {
        target: target.clone(),
        content: content.clone(),
        author: None,
        mood,
    };
    let m = h.memory.clone();
    let input = (&target, &content);
    if let Some(kept) = h
        .run("add_reflection", &input, &blame, m.call(h.ws, request))
        .await
    {
        assert_eq!(kept.content, content, "{}", short(&input));
    }

    h.case().await;
    let query = h.draw(text());
    let limit = h.draw(count());
    let mut blame = Blame::default();
    blame.unless(query_ok(&query), "query");
    blame.unless((1..=100).contains(&limit), "limit");
    let mut request = crate::SearchReflections::new(&query);
    request.limit = limit;
    let call = m.call(h.ws, request);
    if let Some(found) = h
        .run("search_reflections", &(&query, limit), &blame, call)
        .await
    {
        assert!(found.results.len() <= limit as usize, "{}", short(&query));
    }
}
