//! Property tests of the tools that curate memory over time: end facts and relations, merge
//! nodes and name them, propose a split, read a node's history ([`super::properties`] has the
//! promises every call keeps; here each tool also checks that a successful call did all it
//! says).

use std::sync::Arc;

use chrono::Duration;
use proptest::prelude::*;
use proptest::sample::select;

use super::properties::*;
use super::properties_writes::{batch_len, blame_relations, ordinals};
use crate::{
    EndObservations, EndRelations, GetHistory, MemoryStore, MergeEntities, ObservationEndings,
    Ordinal, ProposeSplit, RelationSpec, SetAliases, SplitEntity, SplitPart, Timestamp,
};

/// Cases per tool.
const CASES: u32 = 60;

/// The tools these properties generate, each at least once a run (checked by
/// [`Harness::finish_covering`]).
pub const CURATION_TOOLS: &[&str] = &[
    "end_observations",
    "end_relations",
    "merge_entities",
    "set_aliases",
    "propose_split",
    "split_entity",
    "get_history",
];

pub async fn properties_of_the_curation_tools_hold_for_generated_arguments(
    store: Arc<dyn MemoryStore>,
) {
    let mut h = Harness::new(store, "properties-curation").await;
    for round in 0..CASES {
        // Merges fold the seed graph away: start again now and then.
        if round % 10 == 0 {
            h.reseed().await;
        }
        end_observations(&mut h).await;
        end_relations(&mut h).await;
        set_aliases(&mut h).await;
        merge_entities(&mut h).await;
        propose_split(&mut h).await;
        split_entity(&mut h).await;
        get_history(&mut h).await;
    }
    h.finish_covering("curation tools", CURATION_TOOLS);
}

/// An `ended_at`: none (now) most of the time, else one the tools refuse: in the future, or
/// outside the years 1–9999. (A valid past instant may fall before a fact began, which the
/// oracle cannot see without the facts' times.)
fn ended_at() -> BoxedStrategy<Option<Timestamp>> {
    let future =
        (1..100_000_i64).prop_map(|hours| Some(chrono::Utc::now() + Duration::hours(hours)));
    let outside = select(vec![Timestamp::MIN_UTC, Timestamp::MAX_UTC]).prop_map(Some);
    prop_oneof![6 => Just(None), 1 => future, 1 => outside].boxed()
}

/// Blames `ended_at` unless it is none or a past instant within the years 1–9999.
fn blame_ended_at(blame: &mut Blame, at: Option<Timestamp>) {
    if let Some(at) = at {
        blame.unless(timestamp_ok(&at) && at <= chrono::Utc::now(), "ended_at");
    }
}

/// The node `name` stands for in `snapshot` ([`Snapshot::resolve`]), else `name` itself.
fn resolved(snapshot: &Snapshot, name: &str) -> String {
    snapshot.resolve(name).unwrap_or_else(|| name.to_owned())
}

/// The current ordinals of `name`'s node in `snapshot`.
fn current_ordinals(snapshot: &Snapshot, name: &str) -> Vec<Ordinal> {
    (snapshot.node(name).into_iter())
        .flat_map(|n| n.observations.iter().filter_map(|o| o.ordinal))
        .collect()
}

async fn end_observations(h: &mut Harness) {
    h.case().await;
    let len = h.draw(batch_len());
    let mut endings = Vec::with_capacity(len);
    for _ in 0..len {
        let entity_name = h.name();
        let ordinals = h.draw(ordinals());
        endings.push(ObservationEndings {
            entity_name,
            ordinals: ordinals.into_iter().map(Ordinal).collect(),
        });
    }
    let at = h.draw(ended_at());
    let mut blame = Blame::default();
    blame.batch(endings.len(), "endings");
    for (i, e) in endings.iter().enumerate() {
        blame.unless(name_ok(&e.entity_name), format!("endings[{i}].entity_name"));
        blame.batch(e.ordinals.len(), format!("endings[{i}].ordinals"));
        for (j, ordinal) in e.ordinals.iter().enumerate() {
            blame.unless(ordinal.0 >= 1, format!("endings[{i}].ordinals[{j}]"));
        }
    }
    let total: usize = endings.iter().map(|e| e.ordinals.len()).sum();
    blame.unless(total <= 1_000, "endings[].ordinals");
    blame_ended_at(&mut blame, at);

    let mut request = EndObservations::new(&endings);
    request.ended_at = at;
    let m = h.memory.clone();
    let call = m.call(h.ws, request);
    let Some(result) = h.run("end_observations", &endings, &blame, call).await else {
        return;
    };
    assert_eq!(result.results.len(), endings.len());
    let after = h.snapshot().await;
    for (row, asked) in result.results.iter().zip(&endings) {
        let reported = [&row.ended_ordinals[..], &row.not_found_ordinals[..]].concat();
        assert!(
            asked.ordinals.iter().all(|o| reported.contains(o)),
            "{}",
            short(row)
        );
        let node = resolved(&h.before, &asked.entity_name);
        let current = current_ordinals(&after, &node);
        assert!(
            row.ended_ordinals.iter().all(|o| !current.contains(o)),
            "ended yet current: {}",
            short(row)
        );
    }
}

async fn end_relations(h: &mut Harness) {
    h.case().await;
    let existing = h.before.relations();
    let len = h.draw(batch_len());
    let mut relations = Vec::with_capacity(len);
    for _ in 0..len {
        let relation = if !existing.is_empty() && h.draw(prop::bool::weighted(0.5)) {
            let (from, relation_type, to) = h.draw(select(existing.clone()));
            RelationSpec::new(from, to, relation_type)
        } else {
            let (from, to) = (h.name(), h.name());
            RelationSpec::new(from, to, h.draw(text()))
        };
        relations.push(relation);
    }
    let at = h.draw(ended_at());
    let mut blame = blame_relations(&relations);
    blame_ended_at(&mut blame, at);

    let mut request = EndRelations::new(&relations);
    request.ended_at = at;
    let m = h.memory.clone();
    let call = m.call(h.ws, request);
    let Some(result) = h.run("end_relations", &relations, &blame, call).await else {
        return;
    };
    // Each relation once, however often the request names it.
    let distinct: std::collections::BTreeSet<(&str, &str, &str)> = (relations.iter())
        .map(|r| (&*r.from_entity, &*r.relation_type, &*r.to_entity))
        .collect();
    assert_eq!(
        result.ended.len() + result.not_found.len(),
        distinct.len(),
        "{}",
        short(&result)
    );
    let after = h.snapshot().await.relations();
    for ended in &result.ended {
        let key = (
            ended.from_entity.clone(),
            ended.relation_type.clone(),
            ended.to_entity.clone(),
        );
        assert!(!after.contains(&key), "ended yet current: {}", short(ended));
    }
}

async fn set_aliases(h: &mut Harness) {
    h.case().await;
    let name = h.name();
    let len = h.draw(prop_oneof![20 => 0..4_usize, 1 => Just(65)]);
    let aliases: Vec<String> = (0..len).map(|_| h.draw(text())).collect();
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "name");
    blame.unless(aliases.len() <= 64, "aliases");
    // An alias may be no node's name (its own included) and no other node's alias, which
    // the store sees once it found the node.
    let node = h.before.resolve(&name);
    for (i, alias) in aliases.iter().enumerate() {
        let taken = node.as_ref().is_some_and(|node| {
            h.before.node(alias).is_some()
                || (h.before.resolve(alias)).is_some_and(|owner| owner != *node)
        });
        blame.unless(
            name_ok(alias) && *alias != name && !taken,
            format!("aliases[{i}]"),
        );
    }
    let m = h.memory.clone();
    let call = m.call(h.ws, SetAliases::new(&name, &aliases));
    let input = (&name, &aliases);
    let Some(update) = h.run("set_aliases", &input, &blame, call).await else {
        return;
    };
    let mut asked = aliases.clone();
    asked.sort();
    asked.dedup();
    let mut answered = update.aliases.clone();
    answered.sort();
    assert_eq!(answered, asked, "{} for {}", short(&update), short(&input));
    let after = h.snapshot().await;
    let node = after
        .node(&update.name)
        .expect("the node whose aliases were set");
    let mut stored = after.aliases_of(&node.name);
    stored.sort();
    assert_eq!(stored, asked);
}

async fn merge_entities(h: &mut Harness) {
    h.case().await;
    let target = h.name();
    let len = h.draw(prop_oneof![20 => 1..3_usize, 1 => Just(0), 1 => Just(33)]);
    let sources: Vec<String> = (0..len).map(|_| h.name()).collect();
    let mut blame = Blame::default();
    blame.unless(name_ok(&target), "target");
    blame.unless((1..=32).contains(&sources.len()), "sources");
    // As the tool reads them: each name by the node it stands for (an alias by its node).
    let node_of_target = resolved(&h.before, &target);
    for (i, source) in sources.iter().enumerate() {
        let node = resolved(&h.before, source);
        let repeated = sources[..i].contains(source)
            || (sources[..i].iter()).any(|earlier| resolved(&h.before, earlier) == node);
        blame.unless(
            name_ok(source) && *source != target && node != node_of_target && !repeated,
            format!("sources[{i}]"),
        );
    }
    let m = h.memory.clone();
    let call = m.call(h.ws, MergeEntities::new(&sources, &target));
    let input = (&sources, &target);
    let Some(merged) = h.run("merge_entities", &input, &blame, call).await else {
        return;
    };
    let after = h.snapshot().await;
    let kept = after.node(&merged.target).expect("the merge's target");
    for source in &sources {
        let node = resolved(&h.before, source);
        assert!(after.node(&node).is_none(), "{node} outlived its merge");
        assert!(
            after.aliases_of(&kept.name).contains(&node),
            "{node} is no alias of the target: {}",
            short(&merged)
        );
    }
}

async fn propose_split(h: &mut Harness) {
    h.case().await;
    let name = h.name();
    let max_parts = h.draw(count());
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "name");
    blame.unless((2..=8).contains(&max_parts), "max_parts");
    let mut request = ProposeSplit::new(&name);
    request.max_parts = max_parts;
    let m = h.memory.clone();
    let call = m.call(h.ws, request);
    let input = (&name, max_parts);
    let Some(proposal) = h.run("propose_split", &input, &blame, call).await else {
        return;
    };
    let mut current = current_ordinals(&h.before, &resolved(&h.before, &name));
    let mut proposed: Vec<Ordinal> = (proposal.groups.iter())
        .flat_map(|g| g.ordinals.iter().copied())
        .collect();
    assert!(
        proposal.groups.len() <= max_parts as usize,
        "{}",
        short(&proposal)
    );
    proposed.sort();
    current.sort();
    assert_eq!(
        proposed,
        current,
        "every current fact in one group: {}",
        short(&proposal)
    );
}

async fn split_entity(h: &mut Harness) {
    h.case().await;
    let name = h.name();
    let node = h.before.resolve(&name);
    let held = node
        .as_ref()
        .map_or_else(Vec::new, |n| current_ordinals(&h.before, n));
    let len = h.draw(prop_oneof![20 => 1..4_usize, 1 => Just(0), 1 => Just(17)]);
    let mut parts = Vec::with_capacity(len);
    for _ in 0..len {
        let part_name = match h.draw(0..4) {
            0 => h.name(),
            1 => h.draw(text()),
            _ => h.draw("[a-z]{3,10}"),
        };
        let count = h.draw(prop_oneof![10 => 1..3_usize, 1 => Just(0)]);
        let ordinals: Vec<Ordinal> = (0..count)
            .map(
                |_| match held.is_empty() || h.draw(prop::bool::weighted(0.2)) {
                    true => Ordinal(h.draw(ordinal())),
                    false => h.draw(select(held.clone())),
                },
            )
            .collect();
        let entity_type = h.draw(prop_oneof![4 => Just(None), 1 => text().prop_map(Some)]);
        let summary = h.draw(prop_oneof![4 => Just(None), 1 => text().prop_map(Some)]);
        parts.push(SplitPart {
            name: part_name,
            entity_type,
            ordinals,
            summary,
        });
    }
    let mut request = SplitEntity::new(&name, parts.clone());
    if h.draw(prop::bool::weighted(0.2)) {
        request.relation_type = h.draw(text());
    }
    let relation_type = request.relation_type.clone();

    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "name");
    blame.unless(name_ok(&relation_type), "relation_type");
    blame.unless((1..=16).contains(&parts.len()), "parts");
    let mut taken: Vec<Ordinal> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let repeated = part.name == name || parts[..i].iter().any(|p| p.name == part.name);
        // A part is a new node: the store refuses a name a node or an alias holds.
        let held_name = node.is_some() && h.before.resolve(&part.name).is_some();
        blame.unless(
            name_ok(&part.name) && !repeated && !held_name,
            format!("parts[{i}].name"),
        );
        if let Some(entity_type) = &part.entity_type {
            blame.unless(name_ok(entity_type), format!("parts[{i}].entity_type"));
        }
        if let Some(summary) = &part.summary {
            blame.unless(content_ok(summary), format!("parts[{i}].summary"));
        }
        blame.unless(!part.ordinals.is_empty(), format!("parts[{i}].ordinals"));
        for (j, ordinal) in part.ordinals.iter().enumerate() {
            let current = node.is_none() || held.contains(ordinal);
            blame.unless(
                ordinal.0 >= 1 && !taken.contains(ordinal) && current,
                format!("parts[{i}].ordinals[{j}]"),
            );
            taken.push(*ordinal);
        }
    }
    let m = h.memory.clone();
    let call = m.call(h.ws, request);
    let input = (&name, &parts, &relation_type);
    let Some(split) = h.run("split_entity", &input, &blame, call).await else {
        return;
    };
    let after = h.snapshot().await;
    let left = current_ordinals(&after, &split.name);
    assert!(taken.iter().all(|o| !left.contains(o)), "{}", short(&split));
    let relations = after.relations();
    for part in &parts {
        let created = after.node(&part.name).expect("a part is created");
        assert_eq!(
            created.observations.len(),
            part.ordinals.len(),
            "{}",
            short(&split)
        );
        let relation = (part.name.clone(), relation_type.clone(), split.name.clone());
        assert!(relations.contains(&relation), "{}", short(&split));
    }
}

async fn get_history(h: &mut Harness) {
    h.case().await;
    let name = h.name();
    let limit = h.draw(count());
    let before = h.draw(prop_oneof![4 => Just(None), 1 => timestamp().prop_map(Some)]);
    let mut blame = Blame::default();
    blame.unless(name_ok(&name), "name");
    blame.unless((1..=1_000).contains(&limit), "limit");
    if let Some(before) = &before {
        blame.unless(timestamp_ok(before), "before");
    }
    let mut request = GetHistory::new(&name).limit(limit);
    request.before = before;
    let m = h.memory.clone();
    let call = m.call(h.ws, request);
    let input = (&name, limit, before);
    let Some(history) = h.run("get_history", &input, &blame, call).await else {
        return;
    };
    assert!(
        history.events.windows(2).all(|w| w[0].at >= w[1].at),
        "newest first: {}",
        short(&history)
    );
    if let Some(before) = before {
        assert!(
            history.events.iter().all(|e| e.at < before),
            "{}",
            short(&history)
        );
    }
}
