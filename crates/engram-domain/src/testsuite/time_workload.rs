//! The memory-over-time workload for `cargo xtask bench over-time`: reads of now and of a past
//! time among `observations` facts, a node's history of 1,000 entries, and merging two nodes
//! of 1,000 facts each, on whatever store runs it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::{
    EndObservations, GetHistory, MergeEntities, ObservationEndings, ReadTime, Result, SearchMode,
    SearchObservations,
};

/// The median of `samples` runs of `call`.
async fn median<F, T>(samples: usize, mut call: impl FnMut() -> F) -> Result<Duration>
where
    F: Future<Output = Result<T>>,
{
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        call().await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[samples / 2])
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}

/// Loads `observations` facts on nodes of 100 facts each (a tenth of them replaced once and a
/// tenth ended, so history and as-of reads have something to read), then prints the medians
/// of: `open_nodes` now and `as_of` an hour ago of a 100-fact node, a text search now and
/// `as_of`, `get_history` of a node of 1,000 entries, and merging two nodes of 1,000 facts.
pub async fn over_time_benchmark(store: Arc<dyn MemoryStore>, observations: usize) -> Result<()> {
    let memory = Memory::new(store);
    let ws = memory.create_workspace("bench").await?.id;
    let started = Instant::now();
    let nodes = observations.div_ceil(100);
    let fact = |n: usize, i: usize| {
        format!(
            "fact {i} of component {n}: the team moved part {} of its indexer",
            (n * 7 + i) % 97
        )
    };
    for chunk in (0..nodes).collect::<Vec<_>>().chunks(10) {
        let entities = (chunk.iter())
            .map(|&n| NewNode {
                name: format!("component-{n}"),
                entity_type: "component".into(),
                observations: (0..100).map(|i| fact(n, i).into()).collect(),
                ..NewNode::default()
            })
            .collect();
        memory.call(ws, CreateEntities::new(entities)).await?;
    }
    println!(
        "loaded {} facts in {:.1}s",
        nodes * 100,
        started.elapsed().as_secs_f64()
    );
    let an_hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    let just_now = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let probe = "component-7";
    for i in (1..=100).step_by(10) {
        let ordinal = crate::Ordinal(i);
        memory
            .call(
                ws,
                ReplaceObservation::new(
                    probe,
                    ordinal,
                    format!("{} (revised)", fact(7, i as usize - 1)),
                ),
            )
            .await?;
    }
    let endings = ObservationEndings {
        entity_name: probe.into(),
        ordinals: (5..=100).step_by(10).map(crate::Ordinal).collect(),
    };
    memory.call(ws, EndObservations::new(&[endings])).await?;

    let names = strings(&[probe]);
    let now = median(101, || memory.call(ws, OpenNodes::new(&names))).await?;
    let then = median(101, || {
        memory.call(ws, OpenNodes::new(&names).at(ReadTime::At(just_now)))
    })
    .await?;
    let before = median(101, || {
        memory.call(ws, OpenNodes::new(&names).at(ReadTime::At(an_hour_ago)))
    })
    .await?;
    println!(
        "open_nodes (100 facts): now {:.2} ms, as_of {:.2} ms ({:.2}x; target <= 2x), as_of before it existed {:.2} ms",
        ms(now),
        ms(then),
        then.as_secs_f64() / now.as_secs_f64(),
        ms(before)
    );
    let query = SearchObservations::new("indexer part 42").mode(SearchMode::Text);
    let searched = median(51, || memory.call(ws, query.clone())).await?;
    let nodes_query = crate::SearchNodes::new("indexer part 42").mode(SearchMode::Text);
    let node_search = median(51, || memory.call(ws, nodes_query.clone())).await?;
    let as_of_query = nodes_query.clone().as_of(just_now);
    let node_search_then = median(51, || memory.call(ws, as_of_query.clone())).await?;
    println!(
        "text search over {} facts: search_observations {:.2} ms, search_nodes now {:.2} ms, as_of {:.2} ms ({:.2}x)",
        nodes * 100,
        ms(searched),
        ms(node_search),
        ms(node_search_then),
        node_search_then.as_secs_f64() / node_search.as_secs_f64()
    );

    // A node of 1,000 history entries: 400 facts, 300 replaced, 299 ended.
    let facts: Vec<String> = (0..400).map(|i| format!("history fact {i}")).collect();
    let texts: Vec<&str> = facts.iter().map(String::as_str).collect();
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("chronicle", "log", &texts)]),
        )
        .await?;
    for i in 1..=300 {
        memory
            .call(
                ws,
                ReplaceObservation::new(
                    "chronicle",
                    crate::Ordinal(i),
                    format!("history fact {i}, revised"),
                ),
            )
            .await?;
    }
    let endings = ObservationEndings {
        entity_name: "chronicle".into(),
        ordinals: (1..=299).map(crate::Ordinal).collect(),
    };
    memory.call(ws, EndObservations::new(&[endings])).await?;
    let page = median(51, || memory.call(ws, GetHistory::new("chronicle"))).await?;
    let whole = median(51, || {
        memory.call(ws, GetHistory::new("chronicle").limit(1_000))
    })
    .await?;
    println!(
        "get_history (1,000 entries): first page of 50 {:.2} ms, all 1,000 {:.2} ms (target <= 20 ms)",
        ms(page),
        ms(whole)
    );

    // Merging two nodes of 1,000 facts each (each with 50 relations), three times.
    let mut merges = Vec::new();
    for round in 0..3 {
        let big = |name: &str| {
            let facts: Vec<String> = (0..1_000).map(|i| format!("{name} fact {i}")).collect();
            let texts: Vec<&str> = facts.iter().map(String::as_str).collect();
            entity(name, "duplicate", &texts)
        };
        let (a, b) = (format!("twin-a-{round}"), format!("twin-b-{round}"));
        memory.call(ws, CreateEntities::new(vec![big(&a)])).await?;
        memory.call(ws, CreateEntities::new(vec![big(&b)])).await?;
        let relations: Vec<_> = (0..50)
            .flat_map(|n| {
                let target = format!("component-{n}");
                [
                    relation(&a, "touches", &target),
                    relation(&b, "touches", &target),
                ]
            })
            .collect();
        memory.call(ws, CreateRelations::new(&relations)).await?;
        let started = Instant::now();
        memory
            .call(ws, MergeEntities::new(&strings(&[&b]), &a))
            .await?;
        merges.push(started.elapsed());
    }
    merges.sort();
    println!(
        "merge_entities (two nodes of 1,000 facts, 50 relations each): median {:.0} ms (target <= 1,000 ms)",
        ms(merges[1])
    );
    Ok(())
}
