//! Facts in groups by topic, for `propose_split` and the report's split candidates: spherical
//! k-means over the facts' vectors (their own, or tf-idf over their words, kept sparse), the
//! number of groups chosen by mean silhouette. The work is bounded: every pair of facts is
//! compared once (n² for the n facts the caller passes, which it caps), each k-means stops when
//! no fact changes group, and a [`Budget`] ends the search for more groups past its deadline or
//! once the caller is gone.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::search::words;

/// Below this mean silhouette the facts are one group: they do not fall apart.
const MIN_SILHOUETTE: f32 = 0.05;

/// Rounds of k-means at most.
const ROUNDS: usize = 25;

/// How long one analysis may take: well within the 30 s a call may take
/// ([`crate::limits::CALL_TIMEOUT`]), so that what it found is still answered.
pub(crate) const ANALYSIS_BUDGET: Duration = Duration::from_secs(15);

/// Analyses that run at once, server-wide: half the machine's cores (at least one), so that
/// cheap calls and `/healthz` always find a core free; the others wait their turn.
fn analyses() -> &'static tokio::sync::Semaphore {
    static ANALYSES: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    ANALYSES.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        tokio::sync::Semaphore::new((cores / 2).max(1))
    })
}

/// Runs `work` (CPU-bound: grouping, pairwise comparison) on a blocking thread, never on the
/// async runtime, when one of the [`analyses`] turns is free, within `deadline` (one
/// analysis's [`ANALYSIS_BUDGET`], or a report's shared among its passes). The budget counts
/// from the call, its wait for a turn included: analyses queued behind others end with what
/// they managed (nothing, when no turn came) instead of waiting on. Dropping the returned
/// future (a client gone, a server stopping) cancels the budget, which `work` checks as it goes.
pub(crate) async fn off_runtime<T: Send + 'static>(
    deadline: Instant,
    work: impl FnOnce(&Budget) -> T + Send + 'static,
) -> Result<T> {
    let (budget, _cancel) = Budget::until(deadline);
    let wait = deadline.saturating_duration_since(Instant::now());
    let turn = tokio::time::timeout(wait, analyses().acquire()).await;
    let _turn = match turn {
        Ok(turn) => Some(
            turn.map_err(|err| Error::Internal(format!("waiting for an analysis turn: {err}")))?,
        ),
        Err(_) => None,
    };
    tokio::task::spawn_blocking(move || work(&budget))
        .await
        .map_err(|err| Error::Internal(format!("analysis: {err}")))
}

/// How long one grouping may take and whether its caller still waits for it.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    deadline: Instant,
    cancelled: Arc<AtomicBool>,
}

/// Cancels its [`Budget`] when dropped: held by the caller that waits for the grouping, so
/// that a caller who leaves (a client gone, a server stopping) stops the work.
#[derive(Debug)]
pub(crate) struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Budget {
    /// A budget that ends at `deadline`, and the guard that cancels it.
    pub(crate) fn until(deadline: Instant) -> (Self, CancelOnDrop) {
        let cancelled = Arc::new(AtomicBool::new(false));
        let budget = Self {
            deadline,
            cancelled: cancelled.clone(),
        };
        (budget, CancelOnDrop(cancelled))
    }

    /// A budget no caller cancels, for work that is small by construction (tests).
    #[cfg(test)]
    pub(crate) fn unbounded() -> Self {
        Self {
            deadline: Instant::now() + Duration::from_secs(3600),
            cancelled: Arc::default(),
        }
    }

    /// Whether the time is up or the caller has gone.
    pub(crate) fn spent(&self) -> bool {
        self.cancelled.load(Ordering::Acquire) || Instant::now() >= self.deadline
    }
}

/// A grouping: each fact's group (0-based, in the facts' order), the mean silhouette (−1 to 1;
/// 0 for one group), and whether the budget ran out before every k was tried.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grouping {
    pub(crate) assigned: Vec<usize>,
    pub(crate) silhouette: f32,
    pub(crate) cut_short: bool,
}

/// The facts' `stems` ([`content_stems`]; their `vectors` instead when every fact has one) in at most `max_groups`
/// groups: k-means for each k from 2, the k whose groups stand apart best kept; one group when
/// none stands apart or there are fewer than four facts.
pub(crate) fn group(
    stems: &[Vec<String>],
    vectors: &[Option<&[f32]>],
    max_groups: usize,
    budget: &Budget,
) -> Grouping {
    let n = stems.len();
    let rows = unit_rows(stems, vectors);
    let dims = (rows.iter().flatten())
        .map(|&(d, _)| d as usize + 1)
        .max()
        .unwrap_or(0);
    let mut cut_short = false;
    let mut best: Option<(f32, Vec<usize>)> = None;
    if let Some(similar) = similarities(&rows, budget) {
        for k in 2..=max_groups.min(n / 2) {
            if budget.spent() {
                cut_short = true;
                break;
            }
            // Started from several facts (the one least like the whole, then others spread
            // over the node): k-means started at one outlier can settle on groups that do not
            // stand apart, which another start avoids.
            for start in starts(n) {
                let assigned = k_means(&rows, dims, &similar, k, start);
                let score = silhouette(&similar, &assigned, k);
                if score >= MIN_SILHOUETTE && best.as_ref().is_none_or(|(s, _)| score > *s) {
                    best = Some((score, assigned));
                }
            }
        }
    } else {
        cut_short = true;
    }
    let (silhouette, assigned) = best.unwrap_or_else(|| (0.0, vec![0; n]));
    Grouping {
        assigned,
        silhouette,
        cut_short,
    }
}

/// A unit vector kept sparse: (dimension, value) in increasing dimension.
type Row = Vec<(u32, f32)>;

/// The facts' unit vectors: their own when every fact has one, centred (what every fact of
/// the node shares, as its type and name in the text embedded, taken out, so that what sets
/// the facts apart decides), else tf-idf over their stems.
fn unit_rows(stems: &[Vec<String>], vectors: &[Option<&[f32]>]) -> Vec<Row> {
    if !vectors.is_empty() && vectors.iter().all(Option::is_some) {
        let units: Vec<Vec<f32>> = (vectors.iter().flatten())
            .map(|v| crate::search::similarity::unit(v))
            .collect();
        let dims = units.first().map_or(0, Vec::len);
        let n = units.len().max(1) as f32;
        let mean: Vec<f32> = (0..dims)
            .map(|d| units.iter().map(|u| u[d]).sum::<f32>() / n)
            .collect();
        return (units.iter())
            .map(|u| {
                let centred = u.iter().zip(&mean).map(|(x, m)| x - m);
                normalised(centred.enumerate().map(|(d, x)| (d as u32, x)).collect())
            })
            .collect();
    }
    let mut columns: HashMap<&str, u32> = HashMap::new();
    let mut containing: Vec<f32> = Vec::new();
    for fact in stems {
        for stem in fact.iter().collect::<BTreeSet<_>>() {
            let next = columns.len() as u32;
            let column = *columns.entry(stem).or_insert(next);
            if column as usize == containing.len() {
                containing.push(0.0);
            }
            containing[column as usize] += 1.0;
        }
    }
    let n = stems.len() as f32;
    (stems.iter())
        .map(|fact| {
            let mut weights: HashMap<u32, f32> = HashMap::new();
            for stem in fact {
                let column = columns[stem.as_str()];
                *weights.entry(column).or_default() += (n / containing[column as usize]).ln() + 1.0;
            }
            let mut row: Row = weights.into_iter().collect();
            row.sort_unstable_by_key(|&(d, _)| d);
            normalised(row)
        })
        .collect()
}

/// A fact's stems, stop words left out.
pub(crate) fn content_stems(text: &str) -> Vec<String> {
    let kept: Vec<String> = words::words(text)
        .filter(|w| !words::is_stop_word(w))
        .collect();
    words::stems(&kept.join(" "))
}

fn normalised(mut row: Row) -> Row {
    let norm = row.iter().map(|(_, x)| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        row.iter_mut().for_each(|(_, x)| *x /= norm);
    }
    row
}

fn dot(a: &Row, b: &Row) -> f32 {
    let mut sum = 0.0;
    for_each_shared(a, b, |x, y| sum += x * y);
    sum
}

/// Calls `shared` with the values of each key that both `a` and `b` hold (each sorted by key,
/// each key once): a sparse dot product, the words two bags share.
pub(crate) fn for_each_shared<K: Ord, A: Copy, B: Copy>(
    a: &[(K, A)],
    b: &[(K, B)],
    mut shared: impl FnMut(A, B),
) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared(a[i].1, b[j].1);
                i += 1;
                j += 1;
            }
        }
    }
}

fn dot_dense(centre: &[f32], row: &Row) -> f32 {
    row.iter().map(|&(d, x)| centre[d as usize] * x).sum()
}

/// Cosine similarity of every pair of facts, row by row (n × n); `None` once the budget ran
/// out.
struct Similarities {
    n: usize,
    values: Vec<f32>,
}

impl Similarities {
    fn get(&self, a: usize, b: usize) -> f32 {
        self.values[a * self.n + b]
    }
}

fn similarities(rows: &[Row], budget: &Budget) -> Option<Similarities> {
    let n = rows.len();
    let mut values = vec![0.0; n * n];
    for a in 0..n {
        if budget.spent() {
            return None;
        }
        values[a * n + a] = dot(&rows[a], &rows[a]);
        for b in a + 1..n {
            let s = dot(&rows[a], &rows[b]);
            values[a * n + b] = s;
            values[b * n + a] = s;
        }
    }
    Some(Similarities { n, values })
}

/// Where k-means starts: at the fact least like the whole (`None`), and at facts spread evenly
/// over the node, [`STARTS`] in all.
fn starts(n: usize) -> impl Iterator<Item = Option<usize>> {
    let spread = (1..STARTS)
        .map(move |i| Some(i * n / STARTS))
        .filter(move |_| n > STARTS);
    std::iter::once(None).chain(spread)
}

/// Starts of k-means tried for each number of groups.
const STARTS: usize = 8;

/// Spherical k-means: centres started far apart (the fact least like the whole, then each
/// next the one least like the centres so far), each fact's group by its nearest centre,
/// until no fact changes group.
fn k_means(
    rows: &[Row],
    dims: usize,
    similar: &Similarities,
    k: usize,
    start: Option<usize>,
) -> Vec<usize> {
    let n = rows.len();
    let mut mean = vec![0.0_f32; dims];
    for row in rows {
        for &(d, x) in row {
            mean[d as usize] += x;
        }
    }
    let whole: Vec<f32> = (rows.iter()).map(|row| dot_dense(&mean, row)).collect();
    let mut seeds: Vec<usize> = Vec::with_capacity(k);
    // Each fact's similarity to its nearest seed so far.
    let mut nearest = vec![f32::MIN; n];
    while seeds.len() < k {
        let score = |i: usize| match seeds.is_empty() {
            true => whole[i],
            false => nearest[i],
        };
        let far = match (seeds.is_empty(), start) {
            (true, Some(start)) => start,
            _ => (0..n)
                .min_by(|&a, &b| score(a).total_cmp(&score(b)))
                .unwrap_or(0),
        };
        seeds.push(far);
        for (i, best) in nearest.iter_mut().enumerate() {
            *best = best.max(similar.get(i, far));
        }
    }
    let mut centres: Vec<Vec<f32>> = (seeds.iter())
        .map(|&s| {
            let mut centre = vec![0.0; dims];
            rows[s].iter().for_each(|&(d, x)| centre[d as usize] = x);
            centre
        })
        .collect();
    let mut assigned = vec![usize::MAX; n];
    for _ in 0..ROUNDS {
        let mut changed = false;
        for (row, group) in rows.iter().zip(assigned.iter_mut()) {
            let nearest = (0..k)
                .max_by(|&a, &b| {
                    dot_dense(&centres[a], row).total_cmp(&dot_dense(&centres[b], row))
                })
                .unwrap_or(0);
            changed |= nearest != *group;
            *group = nearest;
        }
        if !changed {
            break;
        }
        for (g, centre) in centres.iter_mut().enumerate() {
            let mut sum = vec![0.0_f32; dims];
            let mut members = 0;
            for (row, _) in rows.iter().zip(&assigned).filter(|(_, a)| **a == g) {
                row.iter().for_each(|&(d, x)| sum[d as usize] += x);
                members += 1;
            }
            if members > 0 {
                let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 0.0 {
                    sum.iter_mut().for_each(|x| *x /= norm);
                }
                *centre = sum;
            }
        }
    }
    assigned
}

/// The mean silhouette of a grouping (cosine distance): how much nearer each fact is to its
/// own group than to the next; 0 for a fact alone in its group.
fn silhouette(similar: &Similarities, assigned: &[usize], k: usize) -> f32 {
    let n = assigned.len();
    let mut total = 0.0;
    for i in 0..n {
        let mut sums = vec![(0.0_f32, 0_usize); k];
        for j in (0..n).filter(|&j| j != i) {
            let entry = &mut sums[assigned[j]];
            entry.0 += 1.0 - similar.get(i, j);
            entry.1 += 1;
        }
        let own = sums[assigned[i]];
        if own.1 == 0 {
            continue;
        }
        let a = own.0 / own.1 as f32;
        let b = (sums.iter().enumerate())
            .filter(|(g, (_, count))| *g != assigned[i] && *count > 0)
            .map(|(_, (sum, count))| sum / *count as f32)
            .fold(f32::MAX, f32::min);
        if b < f32::MAX {
            total += (b - a) / a.max(b).max(f32::EPSILON);
        }
    }
    total / n.max(1) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_stops_before_any_grouping_and_says_so() {
        let texts: Vec<String> = (0..40)
            .map(|i| format!("{} topic {i}", ["storage", "search"][i % 2]))
            .collect();
        let texts: Vec<Vec<String>> = texts.iter().map(|t| content_stems(t)).collect();
        let (budget, cancel) = Budget::until(Instant::now() + Duration::from_secs(60));
        drop(cancel);
        let grouping = group(&texts, &[], 4, &budget);
        assert!(grouping.cut_short);
        assert_eq!(grouping.assigned, vec![0; 40]);
        let grouping = group(&texts, &[], 4, &Budget::unbounded());
        assert!(!grouping.cut_short);
        assert_ne!(grouping.assigned, vec![0; 40]);
    }

    #[test]
    fn three_topics_under_a_component_every_fact_shares_fall_into_three_groups() {
        // Three topics, six facts each, under a large component all of them share (as the
        // node's type and name in every text embedded): the topics decide the groups.
        let vectors: Vec<Vec<f32>> = (0..18)
            .map(|i| {
                let mut v = vec![0.0; 5];
                v[0] = 4.0;
                v[1 + i % 3] = 0.6;
                v[4] = (i as f32 * 0.37).sin() * 0.25;
                v
            })
            .collect();
        let texts = vec![Vec::new(); 18];
        let refs: Vec<Option<&[f32]>> = vectors.iter().map(|v| Some(v.as_slice())).collect();
        let grouping = group(&texts, &refs, 4, &Budget::unbounded());
        for topic in 0..3 {
            let groups: BTreeSet<usize> = (topic..18)
                .step_by(3)
                .map(|i| grouping.assigned[i])
                .collect();
            assert_eq!(groups.len(), 1, "topic {topic}: {:?}", grouping.assigned);
        }
        let distinct: BTreeSet<&usize> = grouping.assigned.iter().collect();
        assert_eq!(distinct.len(), 3, "{:?}", grouping.assigned);
    }

    #[test]
    fn sparse_rows_compare_as_dense_vectors_do() {
        let a = normalised(vec![(0, 1.0), (3, 2.0), (7, 2.0)]);
        let b = normalised(vec![(3, 1.0), (5, 1.0)]);
        let dense = |row: &Row| {
            let mut v = vec![0.0; 8];
            row.iter().for_each(|&(d, x)| v[d as usize] = x);
            v
        };
        let cosine = crate::search::similarity::cosine(&dense(&a), &dense(&b));
        assert!((dot(&a, &b) - cosine).abs() < 1e-6);
        assert!((dot_dense(&dense(&a), &b) - cosine).abs() < 1e-6);
    }
}
