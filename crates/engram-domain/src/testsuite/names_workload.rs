//! The "did you mean" benchmark's workload (`cargo xtask bench suggestions`): a workspace of
//! `nodes` nodes named as people, services and projects are (two or three words made of
//! common syllables, so that names share many trigrams, as real names do), then `open_nodes`
//! timed for a name that exists and for names a user almost typed.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::workload::Rng;
use crate::*;

const SYLLABLES: [&str; 32] = [
    "ra", "man", "pri", "ya", "al", "ex", "an", "der", "son", "mar", "ko", "li", "na", "tor",
    "ben", "chen", "ga", "bil", "ling", "serv", "ice", "pay", "ment", "data", "base", "flo", "win",
    "ter", "ka", "zu", "mi", "ro",
];

fn word(rng: &mut Rng) -> String {
    let syllables = 2 + rng.below(2);
    let mut word: String = (0..syllables).map(|_| SYLLABLES[rng.below(32)]).collect();
    word[..1].make_ascii_uppercase();
    word
}

/// The `i`th name: two or three words, the last ending in `i` in base 36 so every name is
/// unique (`Priyaman Rason-3f`), or a hyphenated service name (`billing-payment-3f`).
fn name(rng: &mut Rng, i: usize) -> String {
    let tag = radix36(i);
    match rng.below(3) {
        0 => format!("{} {} {tag}", word(rng), word(rng)),
        1 => format!("{} {}{tag}", word(rng), word(rng)),
        _ => format!("{}-{}-{tag}", word(rng), word(rng)).to_lowercase(),
    }
}

fn radix36(mut i: usize) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit((i % 36) as u32, 36).unwrap());
        i /= 36;
        if i == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}

/// Median of `samples` runs of `open_nodes` for `name`, and the answer's suggestions.
async fn time_open(
    memory: &Memory,
    workspace: WorkspaceId,
    name: &str,
    samples: usize,
) -> Result<(Duration, String)> {
    let names = [name.to_owned()];
    let mut times = Vec::with_capacity(samples);
    let mut answer = String::new();
    for _ in 0..samples {
        let started = Instant::now();
        let opened = memory.call(workspace, OpenNodes::new(&names)).await?;
        times.push(started.elapsed());
        answer = if opened.not_found.is_empty() {
            "found".into()
        } else {
            format!(
                "{:?}",
                opened.did_you_mean.get(name).cloned().unwrap_or_default()
            )
        };
    }
    times.sort();
    Ok((times[samples / 2], answer))
}

/// Loads `nodes` named nodes into a new workspace `bench` of `store` and prints, for a name
/// that exists and for four a user almost typed (shortened, a slip, another case and
/// punctuation, unrelated), the median time of `open_nodes` over 51 runs and what it
/// suggested; the difference to the found name's time is what suggesting costs.
///
/// Errors: the store's.
pub async fn suggestions_benchmark(store: Arc<dyn MemoryStore>, nodes: usize) -> Result<()> {
    let memory = Memory::new(store);
    let workspace = memory.create_workspace("bench").await?.id;
    let started = Instant::now();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let names: Vec<String> = (0..nodes).map(|i| name(&mut rng, i)).collect();
    for chunk in names.chunks(1_000) {
        let entities = (chunk.iter())
            .map(|name| NewNode {
                name: name.clone(),
                entity_type: "thing".into(),
                ..NewNode::default()
            })
            .collect();
        memory
            .call(workspace, CreateEntities::new(entities))
            .await?;
    }
    println!(
        "loaded {nodes} named nodes in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let target = &names[nodes / 2];
    let words: Vec<&str> = target.split([' ', '-']).collect();
    let mut slip: Vec<char> = target.chars().collect();
    slip.swap(1, 2);
    let cases = [
        ("exists", target.clone()),
        ("shortened", words[..words.len() - 1].join(" ")),
        ("a slip", slip.into_iter().collect()),
        (
            "case and punctuation",
            target.to_uppercase().replace([' ', '-'], "_"),
        ),
        ("unrelated", "Quixotic Yellowjacket".to_owned()),
    ];
    let (found, _) = time_open(&memory, workspace, target, 51).await?;
    for (case, query) in cases {
        let (median, answer) = time_open(&memory, workspace, &query, 51).await?;
        let extra = median.as_secs_f64() - found.as_secs_f64();
        println!(
            "open_nodes {case:<22} {query:<32} median {:>6.2} ms ({:+.2} ms) -> {answer}",
            median.as_secs_f64() * 1e3,
            extra * 1e3
        );
    }
    Ok(())
}
