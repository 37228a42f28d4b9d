//! Approximate nearest neighbours through an inverted file (IVF): the vectors are split into
//! lists around centroids placed by spherical k-means, and each vector is compared only with
//! the members of its nearest few lists. At n vectors in √n lists with p probes that is about
//! p·n·√n products instead of n²: at 100,000 vectors 6 probes cost a twentieth of the exact
//! comparison. Recall against the exact answer is measured by the consolidation benchmark
//! (`cargo xtask bench consolidation --nodes 100000`) and asserted in this module's tests.

use ndarray::{Array2, ArrayView1, ArrayView2, Axis};

use super::{Neighbour, against, best_k, best_of_row, unit_rows};

/// Rounds of k-means that place the centroids.
const TRAINING_ROUNDS: usize = 6;
/// Vectors the centroids are placed on, at most: evenly spread over the input.
const TRAINING_SAMPLE: usize = 16_384;

/// For every vector, its up to `k` most similar others with cosine similarity ≥ `min_score`,
/// best first, as [`super::nearest_neighbours`], looked for among the members of the vector's
/// `probes` nearest of `lists` lists. A neighbour is missed only when it lives in none of
/// them; the similarities returned are exact.
pub fn neighbours<V: AsRef<[f32]>>(
    vectors: &[V],
    k: usize,
    min_score: f32,
    lists: usize,
    probes: usize,
) -> Vec<Vec<Neighbour>> {
    let n = vectors.len();
    let mut result = vec![Vec::new(); n];
    let Some(unit) = unit_rows(vectors, k) else {
        return result;
    };
    let lists = lists.clamp(1, n);
    let centroids = centroids(&unit.view(), lists);
    let nearest = nearest_lists(&unit.view(), &centroids.view(), probes.clamp(1, lists));
    let mut members = vec![Vec::new(); lists];
    let mut askers = vec![Vec::new(); lists];
    for (i, near) in nearest.iter().enumerate() {
        members[near[0]].push(i);
        for &list in near {
            askers[list].push(i);
        }
    }
    let mut row_buffer = Vec::new();
    for (members, askers) in members.iter().zip(&askers) {
        if members.is_empty() {
            continue;
        }
        let member_rows = unit.select(Axis(0), members);
        let asker_rows = unit.select(Axis(0), askers);
        against(asker_rows.view(), member_rows.view(), |a, row| {
            let i = askers[a];
            row_buffer.clear();
            row_buffer.append(&mut result[i]);
            result[i] = best_of_row(&mut row_buffer, i, members, row, min_score, k);
        });
    }
    result
}

/// The unit centroids of an inverted file's lists, for a store's own inverted file: placed
/// by [`Centroids::train`], kept as rows ([`Centroids::rows`]) and read back
/// ([`Centroids::from_rows`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Centroids(Array2<f32>);

impl Centroids {
    /// `lists` centroids placed by spherical k-means on `sample` (at most
    /// [`TRAINING_SAMPLE`] of them are used, evenly spread); none when `sample` is empty or of
    /// no dimension, fewer than `lists` when it is smaller.
    pub fn train<V: AsRef<[f32]>>(sample: &[V], lists: usize) -> Self {
        match unit_rows(sample, 1) {
            Some(unit) => Self(centroids(&unit.view(), lists.clamp(1, sample.len()))),
            None => Self(Array2::zeros((0, 0))),
        }
    }

    /// Centroids from their rows, as [`Centroids::rows`] gave them (rows of another length
    /// than the first are zeros, so they are nobody's nearest).
    pub fn from_rows<V: AsRef<[f32]>>(rows: &[V]) -> Self {
        let dims = rows.first().map_or(0, |row| row.as_ref().len());
        let mut matrix = Array2::<f32>::zeros((rows.len(), dims));
        for (mut target, row) in matrix.axis_iter_mut(Axis(0)).zip(rows) {
            if row.as_ref().len() == dims {
                target.assign(&ArrayView1::from(row.as_ref()));
            }
        }
        Self(matrix)
    }

    /// The centroids as rows of `dims` floats, list by list.
    pub fn rows(&self) -> impl Iterator<Item = Vec<f32>> + '_ {
        self.0.outer_iter().map(|row| row.to_vec())
    }

    /// How many lists.
    pub fn len(&self) -> usize {
        self.0.nrows()
    }

    /// Whether there is no list.
    pub fn is_empty(&self) -> bool {
        self.0.nrows() == 0
    }

    /// For each of `vectors`, the indices of its `probes` most similar centroids, best first;
    /// none for every vector when there is no centroid or the dimensions differ.
    pub fn nearest<V: AsRef<[f32]>>(&self, vectors: &[V], probes: usize) -> Vec<Vec<usize>> {
        match unit_rows(vectors, 1) {
            Some(unit) if !self.is_empty() && unit.ncols() == self.0.ncols() => {
                nearest_lists(&unit.view(), &self.0.view(), probes.clamp(1, self.len()))
            }
            _ => vec![Vec::new(); vectors.len()],
        }
    }
}

/// `lists` unit centroids placed by spherical k-means on an even sample of the rows of `unit`
/// (started from evenly spaced rows; a list left empty keeps its centroid).
fn centroids(unit: &ArrayView2<'_, f32>, lists: usize) -> Array2<f32> {
    let n = unit.nrows();
    let size = TRAINING_SAMPLE.max(lists).min(n);
    let sample: Vec<usize> = (0..size).map(|s| s * n / size).collect();
    let sample = unit.select(Axis(0), &sample);
    let start: Vec<usize> = (0..lists).map(|l| l * size / lists).collect();
    let mut centroids = sample.select(Axis(0), &start);
    for _ in 0..TRAINING_ROUNDS {
        let assigned = nearest_lists(&sample.view(), &centroids.view(), 1);
        let mut sums = Array2::<f32>::zeros(centroids.raw_dim());
        for (row, near) in sample.axis_iter(Axis(0)).zip(&assigned) {
            let mut sum = sums.row_mut(near[0]);
            sum += &row;
        }
        for (mut centroid, sum) in centroids
            .axis_iter_mut(Axis(0))
            .zip(sums.axis_iter(Axis(0)))
        {
            let norm = sum.dot(&sum).sqrt();
            if norm > 0.0 {
                centroid.assign(&(&sum / norm));
            }
        }
    }
    centroids
}

/// For each row of `unit`, the indices of its `probes` most similar centroids, best first.
fn nearest_lists(
    unit: &ArrayView2<'_, f32>,
    centroids: &ArrayView2<'_, f32>,
    probes: usize,
) -> Vec<Vec<usize>> {
    let mut nearest = Vec::with_capacity(unit.nrows());
    let mut row_buffer = Vec::with_capacity(centroids.nrows());
    against(*unit, *centroids, |_, row| {
        row_buffer.clear();
        row_buffer.extend(
            (row.iter().enumerate()).map(|(index, &similarity)| Neighbour { index, similarity }),
        );
        nearest.push(
            best_k(&mut row_buffer, probes)
                .iter()
                .map(|n| n.index)
                .collect(),
        );
    });
    nearest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::similarity::nearest_neighbours;

    /// `n` vectors of 32 dimensions around 20 topics: each a topic direction plus noise.
    fn clustered(n: usize) -> Vec<Vec<f32>> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let topics: Vec<Vec<f32>> = (0..20).map(|_| (0..32).map(|_| next()).collect()).collect();
        (0..n)
            .map(|i| topics[i % 20].iter().map(|x| x + 0.6 * next()).collect())
            .collect()
    }

    #[test]
    fn the_inverted_file_finds_nearly_every_exact_neighbour() {
        let vectors = clustered(3_000);
        let exact = nearest_neighbours(&vectors, 10, 0.5);
        let approximate = neighbours(&vectors, 10, 0.5, 55, 6);
        let (mut found, mut wanted) = (0, 0);
        for (exact, approximate) in exact.iter().zip(&approximate) {
            wanted += exact.len();
            found += exact.iter().filter(|n| approximate.contains(n)).count();
            // What is found is exact, and never better than the true neighbours.
            assert!(approximate.iter().all(|n| n.similarity >= 0.5));
            if let (Some(e), Some(a)) = (exact.first(), approximate.first()) {
                assert!(a.similarity <= e.similarity + 1e-6);
            }
        }
        let recall = found as f64 / wanted as f64;
        assert!(wanted > 10_000, "the data has neighbours to find: {wanted}");
        assert!(recall >= 0.95, "recall {recall:.3}");
    }

    #[test]
    fn trained_centroids_place_each_vector_in_its_topic() {
        let vectors = clustered(2_000);
        let centroids = Centroids::train(&vectors, 20);
        let rows: Vec<Vec<f32>> = centroids.rows().collect();
        assert_eq!((rows.len(), rows[0].len()), (20, 32));
        assert_eq!(Centroids::from_rows(&rows), centroids);
        let lists = centroids.nearest(&vectors, 2);
        assert!(
            lists
                .iter()
                .all(|near| near.len() == 2 && near[0] != near[1])
        );
        // Vectors of one topic share their nearest list far more often than not.
        let mut agree = 0;
        for i in 0..1_980 {
            agree += usize::from(lists[i][0] == lists[i + 20][0]);
        }
        assert!(agree > 1_700, "{agree} of 1,980");
        let none = Centroids::train(&Vec::<Vec<f32>>::new(), 20);
        assert!(none.is_empty());
        assert_eq!(none.nearest(&vectors, 2)[0], Vec::<usize>::new());
    }

    #[test]
    fn one_list_is_the_exact_answer() {
        let vectors = clustered(600);
        assert_eq!(
            neighbours(&vectors, 5, 0.0, 1, 1),
            nearest_neighbours(&vectors, 5, 0.0)
        );
    }
}
