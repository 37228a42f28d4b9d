// The reads A/B's workload, included by `engram-sqlite`'s and `engram-pg`'s `reads_ab`
// examples: only calls every commit since `79b8367` has, so the same file builds on the
// commits compared.
use std::time::{Duration, Instant};

use engram_domain::*;

async fn median<F, T>(samples: usize, mut call: impl FnMut() -> F) -> Duration
where
    F: Future<Output = Result<T>>,
{
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        call().await.unwrap();
        times.push(started.elapsed());
    }
    times.sort();
    times[samples / 2]
}

/// The workload on `memory`: 100,000 facts on 1,000 nodes, then each call's median.
async fn reads_ab(memory: Memory) {
    let ws = memory.create_workspace("ab").await.unwrap().id;
    let fact = |n: usize, i: usize| {
        format!(
            "fact {i} of component {n}: the team moved part {} of its indexer",
            (n * 7 + i) % 97
        )
    };
    for chunk in (0..1_000).collect::<Vec<usize>>().chunks(10) {
        let entities = (chunk.iter())
            .map(|&n| NewNode {
                name: format!("component-{n}"),
                entity_type: "component".into(),
                observations: (0..100).map(|i| fact(n, i).into()).collect(),
                ..NewNode::default()
            })
            .collect();
        memory
            .call(ws, CreateEntities::new(entities))
            .await
            .unwrap();
    }
    let names = vec!["component-7".to_owned()];
    let open = median(401, || memory.call(ws, OpenNodes::new(&names))).await;
    let query = SearchObservations::new("indexer part 42").mode(SearchMode::Text);
    let search = median(101, || memory.call(ws, query.clone())).await;
    let nodes = SearchNodes::new("component moved indexer").mode(SearchMode::Text);
    let node_search = median(101, || memory.call(ws, nodes.clone())).await;
    let hood = median(401, || {
        memory.call(ws, GetNeighborhood::new("component-7", 1))
    })
    .await;
    let mut n = 0;
    let add = median(401, || {
        n += 1;
        let text = format!("the release train {n} left on time");
        memory.call(
            ws,
            AddObservations::new(&[ObservationAdditions {
                entity_name: "component-9".into(),
                contents: vec![text.into()],
            }]),
        )
    })
    .await;
    let report = median(5, || {
        memory.call(ws, GetConsolidationReport::default())
    })
    .await;
    println!(
        "open_nodes {:.3} ms, search_observations {:.3} ms, search_nodes {:.3} ms, get_neighborhood {:.3} ms, add_observations {:.3} ms, get_consolidation_report {:.1} ms",
        open.as_secs_f64() * 1e3,
        search.as_secs_f64() * 1e3,
        node_search.as_secs_f64() * 1e3,
        hood.as_secs_f64() * 1e3,
        add.as_secs_f64() * 1e3,
        report.as_secs_f64() * 1e3
    );
}
