//! Nearest neighbours over a set of vectors in memory, for the node-level questions
//! (clusters, similar pairs) that compare every node with every other.
//!
//! Up to [`EXACT_UP_TO`] vectors the answer is exact: the similarity matrix is computed in
//! blocks of rows with ndarray's matrix product (`matrixmultiply`, SIMD), so 10,000 vectors of
//! 384 dimensions take about a second on one core and never more than one block of the matrix
//! is in memory. Past that, the cost of n² grows out of reach (about two minutes at 100,000),
//! and an inverted file ([`inverted_file`]) finds nearly all the same neighbours in a small
//! part of the time.

pub mod inverted_file;

use ndarray::{Array2, ArrayView1, ArrayView2, Axis};

/// Rows of the similarity matrix computed at once: 512 × n floats (20 MB at n = 10,000).
const BLOCK_ROWS: usize = 512;

/// A neighbour of a vector: its index in the input and the cosine similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour {
    /// Index into the input slice.
    pub index: usize,
    /// Cosine similarity, −1 to 1.
    pub similarity: f32,
}

/// Vector counts up to which [`nearest_neighbours`] is exact.
pub const EXACT_UP_TO: usize = 20_000;
/// Lists of the inverted file each vector looks for its neighbours in, past [`EXACT_UP_TO`].
pub const PROBES: usize = 6;

/// For every vector, its up to `k` most similar other vectors with cosine similarity ≥
/// `min_score`, best first (ties by index). Vectors are L2-normalised here, so they need not
/// be unit length; a zero vector has no neighbours. Vectors must share one dimension; a
/// vector of another length than the first is treated as having no neighbours.
///
/// Exact up to [`EXACT_UP_TO`] vectors; past that approximate, from an inverted file of √n
/// lists searched [`PROBES`] lists deep (the similarities are exact, a neighbour may be
/// missed).
pub fn nearest_neighbours<V: AsRef<[f32]>>(
    vectors: &[V],
    k: usize,
    min_score: f32,
) -> Vec<Vec<Neighbour>> {
    if vectors.len() > EXACT_UP_TO {
        let lists = (vectors.len() as f64).sqrt().round() as usize;
        return inverted_file::neighbours(vectors, k, min_score, lists, PROBES);
    }
    exact_neighbours(vectors, k, min_score)
}

/// [`nearest_neighbours`], exact at any size (n² products).
pub fn exact_neighbours<V: AsRef<[f32]>>(
    vectors: &[V],
    k: usize,
    min_score: f32,
) -> Vec<Vec<Neighbour>> {
    let everyone: Vec<usize> = (0..vectors.len()).collect();
    neighbours_among(vectors, &everyone, k, min_score)
}

/// The distinct pairs `(i, j)`, `i < j`, of `neighbours` (as [`nearest_neighbours`] returns
/// them) with similarity ≥ `min_score`, most similar first (ties by indices).
pub fn pairs(neighbours: &[Vec<Neighbour>], min_score: f32) -> Vec<(usize, usize, f32)> {
    let mut pairs: Vec<(usize, usize, f32)> = neighbours
        .iter()
        .enumerate()
        .flat_map(|(i, near)| {
            near.iter()
                .filter(move |n| n.similarity >= min_score)
                .map(move |n| (i.min(n.index), i.max(n.index), n.similarity))
        })
        .collect();
    pairs.sort_by_key(|p| (p.0, p.1));
    pairs.dedup_by_key(|p| (p.0, p.1));
    pairs.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    pairs
}

/// The mean of the given unit vectors of `vectors`, itself normalised: a cluster's centroid.
pub fn centroid(vectors: &[&[f32]]) -> Vec<f32> {
    let Some(dims) = vectors.first().map(|v| v.len()) else {
        return Vec::new();
    };
    let mut sum = vec![0.0_f32; dims];
    for vector in vectors.iter().filter(|v| v.len() == dims) {
        let norm = norm(vector);
        if norm > 0.0 {
            sum.iter_mut()
                .zip(*vector)
                .for_each(|(s, x)| *s += x / norm);
        }
    }
    let total = norm(&sum);
    if total > 0.0 {
        sum.iter_mut().for_each(|x| *x /= total);
    }
    sum
}

/// Cosine similarity of two vectors of one length (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 || a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (na * nb)
}

/// `vector` scaled to unit length (a zero vector stays zeros).
pub fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = norm(vector);
    match norm > 0.0 {
        true => vector.iter().map(|x| x / norm).collect(),
        false => vector.to_vec(),
    }
}

fn norm(vector: &[f32]) -> f32 {
    vector.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// For every vector, its up to `k` most similar vectors among those at the indices `pool`
/// (itself excluded), best first (ties by index); cosine similarity, as
/// [`nearest_neighbours`] (which is this with every vector in the pool). Costs n × |pool|
/// products rather than n², for a large set compared with its most relevant part.
pub fn nearest_in_pool<V: AsRef<[f32]>>(
    vectors: &[V],
    pool: &[usize],
    k: usize,
) -> Vec<Vec<Neighbour>> {
    neighbours_among(vectors, pool, k, f32::MIN)
}

/// Both of the above: for every vector its up to `k` most similar among `pool` with
/// similarity ≥ `min_score`.
fn neighbours_among<V: AsRef<[f32]>>(
    vectors: &[V],
    pool: &[usize],
    k: usize,
    min_score: f32,
) -> Vec<Vec<Neighbour>> {
    let mut result = vec![Vec::new(); vectors.len()];
    let Some(unit) = unit_rows(vectors, k).filter(|_| !pool.is_empty()) else {
        return result;
    };
    let members = unit.select(Axis(0), pool);
    let mut row_buffer = Vec::with_capacity(pool.len());
    against(unit.view(), members.view(), |i, row| {
        row_buffer.clear();
        result[i] = best_of_row(&mut row_buffer, i, pool, row, min_score, k);
    });
    result
}

/// The vectors as unit rows ([`normalised`]), or `None` when there is nothing to compare:
/// no vectors, vectors of no dimension, or `k` of 0.
fn unit_rows<V: AsRef<[f32]>>(vectors: &[V], k: usize) -> Option<Array2<f32>> {
    let dims = vectors.first().map(|v| v.as_ref().len())?;
    (k > 0 && dims > 0).then(|| normalised(vectors, dims))
}

/// Calls `each(row index, similarities)` for every row of `queries` with its cosine
/// similarities to every row of `members` (unit rows both), the products computed
/// [`BLOCK_ROWS`] rows at a time so at most one block of the matrix is in memory.
fn against(
    queries: ArrayView2<'_, f32>,
    members: ArrayView2<'_, f32>,
    mut each: impl FnMut(usize, ArrayView1<'_, f32>),
) {
    for start in (0..queries.nrows()).step_by(BLOCK_ROWS) {
        let end = (start + BLOCK_ROWS).min(queries.nrows());
        let block = queries
            .slice_axis(Axis(0), (start..end).into())
            .dot(&members.t());
        for (offset, row) in block.axis_iter(Axis(0)).enumerate() {
            each(start + offset, row);
        }
    }
}

/// The best `k` of what `buffer` holds and of `members` (indices) whose similarities to vector
/// `i` are `similarities`, leaving `i` itself out and what is below `min_score`: [`best_k`].
fn best_of_row(
    buffer: &mut Vec<Neighbour>,
    i: usize,
    members: &[usize],
    similarities: ArrayView1<'_, f32>,
    min_score: f32,
    k: usize,
) -> Vec<Neighbour> {
    buffer.extend(
        (members.iter().zip(similarities))
            .filter(|&(&j, &similarity)| j != i && similarity >= min_score)
            .map(|(&index, &similarity)| Neighbour { index, similarity }),
    );
    best_k(buffer, k)
}

/// The best `k` of `row` (by similarity, ties by index), best first, in a vector of their own
/// size: the row itself is a scratch buffer as long as the input (a vector kept with that
/// capacity per row held 800 MB for 10,000 nodes).
fn best_k(row: &mut [Neighbour], k: usize) -> Vec<Neighbour> {
    let order = |a: &Neighbour, b: &Neighbour| {
        (b.similarity.total_cmp(&a.similarity)).then(a.index.cmp(&b.index))
    };
    // The best k first (a selection, linear), then only those sorted.
    let kept = if row.len() > k {
        row.select_nth_unstable_by(k - 1, order);
        &mut row[..k]
    } else {
        row
    };
    kept.sort_by(order);
    kept.to_vec()
}

/// The vectors as rows of a matrix, each scaled to unit length (zero rows and rows of another
/// dimension stay zero, so they match nothing).
fn normalised<V: AsRef<[f32]>>(vectors: &[V], dims: usize) -> Array2<f32> {
    let mut matrix = Array2::<f32>::zeros((vectors.len(), dims));
    for (mut row, vector) in matrix.axis_iter_mut(Axis(0)).zip(vectors) {
        let vector = vector.as_ref();
        let norm = norm(vector);
        if vector.len() == dims && norm > 0.0 {
            row.iter_mut()
                .zip(vector)
                .for_each(|(cell, x)| *cell = x / norm);
        }
    }
    matrix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_are_the_most_similar_others_above_the_threshold() {
        let vectors = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.9, 0.1, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, 0.0],
            vec![2.0, 0.0, 0.1],
        ];
        let found = nearest_neighbours(&vectors, 1, 0.5);
        let indices: Vec<Vec<usize>> = found
            .iter()
            .map(|n| n.iter().map(|x| x.index).collect())
            .collect();
        assert_eq!(indices, vec![vec![4], vec![0], vec![], vec![], vec![0]]);
        assert!((found[0][0].similarity - cosine(&vectors[0], &vectors[4])).abs() < 1e-6);
        let all = nearest_neighbours(&vectors, 10, -1.0);
        assert_eq!(all[2].len(), 4, "every other vector, the zero one at 0");
    }

    #[test]
    fn similar_pairs_are_distinct_and_best_first() {
        let vectors = vec![
            vec![1.0, 0.0],
            vec![0.9, 0.1],
            vec![0.0, 1.0],
            vec![0.95, 0.05],
        ];
        let pairs = pairs(&nearest_neighbours(&vectors, 2, 0.5), 0.5);
        let indices: Vec<(usize, usize)> = pairs.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(indices, vec![(0, 3), (1, 3), (0, 1)]);
        assert!(pairs.windows(2).all(|w| w[0].2 >= w[1].2));
    }

    #[test]
    fn blocks_cover_every_row() {
        let vectors: Vec<Vec<f32>> = (0..BLOCK_ROWS + 3)
            .map(|i| vec![1.0, i as f32 * 1e-3])
            .collect();
        let found = nearest_neighbours(&vectors, 2, 0.0);
        assert!(found.iter().all(|n| n.len() == 2));
        assert_eq!(found[BLOCK_ROWS + 2][0].index, BLOCK_ROWS + 1);
    }

    #[test]
    fn centroid_is_the_normalised_mean_direction() {
        let c = centroid(&[&[2.0, 0.0], &[0.0, 1.0]]);
        assert!((c[0] - c[1]).abs() < 1e-6 && (norm(&c) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn neighbours_in_a_pool_are_the_pool_members_most_similar() {
        let vectors = vec![
            vec![1.0, 0.0],
            vec![0.9, 0.1],
            vec![0.0, 1.0],
            vec![0.95, 0.05],
        ];
        // With everything in the pool, the same as nearest_neighbours.
        let everything = nearest_in_pool(&vectors, &[0, 1, 2, 3], 2);
        assert_eq!(everything, nearest_neighbours(&vectors, 2, -1.0));
        // With a pool of 1 and 2: 0's nearest is 1, 1's is 2 (itself left out).
        let pooled = nearest_in_pool(&vectors, &[1, 2], 1);
        let indices: Vec<Vec<usize>> = pooled
            .iter()
            .map(|n| n.iter().map(|x| x.index).collect())
            .collect();
        assert_eq!(indices, vec![vec![1], vec![2], vec![1], vec![1]]);
    }
}
