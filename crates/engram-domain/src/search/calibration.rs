//! Scores that mean the same in every search: the probability that a result is relevant,
//! estimated from absolute signals, so that a client can compare scores across queries and a
//! search can say that nothing in memory matched.
//!
//! Ranking ([`crate::search::rank`]) divides each signal by its best value among the
//! candidates, which orders one query's candidates but makes the best of any query look good:
//! nonsense scored 0.96. A calibrated score is a logistic function of signals that do not
//! depend on the other candidates: the cosine similarity to the query, the late interaction's
//! mean agreement and the share of the query's terms the text holds. Its weights are fitted on
//! LoCoMo's dev conversations, each conversation its own memory, with another conversation's
//! questions and nonsense strings as negatives, and checked on the conversation left out
//! (`xtask/ablation/calibrate.py`, BENCHMARKS.md "Calibrated scores"). The candidate's
//! standing within its query is left out: it gives every query's best candidate the same
//! lift and so blurs "nothing relevant". The cosine's weight depends on the model (e5's cosines lie in 0.75–0.92), so the
//! embedder supplies its calibration ([`crate::Embedder::calibration`]); text mode's needs no
//! model. The scores are probabilities per observation: an on-topic question's best result
//! scored a median 0.14 on the dev split, and the default thresholds are small (0.005).

use crate::search::results::SearchMode;

/// The signals of one ranked candidate a calibrated score is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Features {
    /// Its best cosine similarity to the query (raw, −1–1), 0 without a vector.
    pub similarity: f64,
    /// Its late interaction with the query: the weighted mean of the query tokens' best
    /// agreements (−1–1, [`crate::search::late_interaction`]); 0 without token signs.
    pub late: f64,
    /// The share (0–1) of the query's terms ([`crate::search::words::query_terms`]) its text holds.
    pub coverage: f64,
}

/// A logistic model of relevance: `1 / (1 + e^−(intercept + Σ weight × feature))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The intercept.
    pub intercept: f64,
    /// The weight of [`Features::similarity`].
    pub similarity: f64,
    /// The weight of [`Features::late`].
    pub late: f64,
    /// The weight of [`Features::coverage`].
    pub coverage: f64,
}

/// An embedding model's calibrations for the modes that use its vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelCalibration {
    /// Hybrid mode's.
    pub hybrid: Calibration,
    /// Embedding mode's.
    pub embedding: Calibration,
    /// The default `min_score` of searches with this model: results below it are left out.
    pub min_score: f64,
    /// When the best match by meaning is kept below `min_score`.
    pub rescue: Rescue,
}

/// A clear best match by meaning that shares no words with the query (another language, a
/// paraphrase) is kept even below `min_score`, alone: term coverage, which carries half the
/// calibrated score, is 0 for it. "Clear" is absolute and relative at once: its cosine is at
/// least [`Rescue::similarity`] and stands [`Rescue::margin`] above the median cosine of the
/// query's nearest candidates (nonsense is close to everything alike; a small memory makes
/// every margin larger, hence the floor). On LoCoMo's dev split it changed neither the share
/// of off-topic questions answered (6.4 → 6.6 %) nor nonsense (0); on the multilingual set it
/// finds 24 of 30 answers where the gate alone found 21 (`calibrate.py`, `rescue`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rescue {
    /// The least cosine similarity.
    pub similarity: f64,
    /// The least distance above the median of the nearest candidates' cosines.
    pub margin: f64,
}

impl Rescue {
    /// Of `nearest` (index, cosine) pairs, the index of the best if it is a clear match.
    pub fn pick(&self, nearest: &[(usize, f64)]) -> Option<usize> {
        let (best, cosine) = nearest.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
        let mut cosines: Vec<f64> = nearest.iter().map(|(_, c)| *c).collect();
        cosines.sort_by(f64::total_cmp);
        let middle = cosines.len() / 2;
        let median = match cosines.len() % 2 {
            0 => (cosines[middle - 1] + cosines[middle]) / 2.0,
            _ => cosines[middle],
        };
        (cosine >= self.similarity && cosine - median >= self.margin).then_some(best)
    }
}

/// Text mode's calibration, whatever the model: the share of the query's terms a text holds
/// (fitted as the models', `calibrate.py`; its standing among the matches helped ordering
/// but blurred the line between relevant and not).
pub const TEXT: Calibration = Calibration {
    intercept: -7.74,
    similarity: 0.0,
    late: 0.0,
    coverage: 8.09,
};

/// Text mode's default `min_score`: a text must hold a fifth of the query's terms. Full text
/// cannot tell an off-topic question that shares words with memory from an on-topic one (at a
/// third of the terms, 27 % of LoCoMo's off-topic questions still returned something, against
/// 7.7 % in hybrid mode, and the codebase set lost R@5 0.906 → 0.750), so this only drops a
/// text that shares one word of a long question.
pub const TEXT_MIN_SCORE: f64 = 0.002;

impl Calibration {
    /// The probability (0–1) that a candidate with `features` is relevant.
    pub fn score(&self, features: &Features) -> f64 {
        let z = self.intercept
            + self.similarity * features.similarity
            + self.late * features.late
            + self.coverage * features.coverage;
        1.0 / (1.0 + (-z).exp())
    }
}

/// The calibration of `mode` with an embedder calibrated as `model` (`None`: uncalibrated),
/// Its default `min_score` and, in the modes that use vectors, the model's [`Rescue`].
pub fn of_mode(
    mode: SearchMode,
    model: Option<&ModelCalibration>,
) -> Option<(Calibration, f64, Option<Rescue>)> {
    match mode {
        SearchMode::Text => Some((TEXT, TEXT_MIN_SCORE, None)),
        SearchMode::Hybrid => model.map(|m| (m.hybrid, m.min_score, Some(m.rescue))),
        SearchMode::Embedding => model.map(|m| (m.embedding, m.min_score, Some(m.rescue))),
    }
}

/// The share (0–1) of `terms` (a query's, [`crate::search::words::query_terms`]) that `text` holds,
/// stemmed alike; 0 for a query without terms.
pub fn coverage(terms: &[String], text: &str) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let stems = crate::search::words::stems(text);
    let held = terms.iter().filter(|term| stems.contains(term)).count();
    held as f64 / terms.len() as f64
}

/// Rounds a score to 4 decimals: a calibrated probability has no more precision, and the
/// default thresholds (0.005) need no fewer.
pub fn round(score: f64) -> f64 {
    (score * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_rise_with_each_signal_and_stay_probabilities() {
        let low = Features::default();
        let high = Features {
            similarity: 0.9,
            late: 0.5,
            coverage: 1.0,
        };
        let model = Calibration {
            intercept: -10.0,
            similarity: 10.0,
            late: 2.0,
            coverage: 2.0,
        };
        let (a, b) = (model.score(&low), model.score(&high));
        assert!(a < b && a > 0.0 && b < 1.0, "{a} {b}");
    }

    #[test]
    fn coverage_counts_the_query_terms_a_text_holds() {
        let terms = crate::search::words::query_terms("When did Melanie paint the sunrise?");
        assert_eq!(terms, ["melani", "paint", "sunris"]);
        let covered = coverage(&terms, "Melanie painted a lake sunrise");
        assert!((covered - 1.0).abs() < 1e-12, "{covered}");
        let partly = coverage(&terms, "Melanie went camping");
        assert!((partly - 1.0 / 3.0).abs() < 1e-12, "{partly}");
        assert_eq!(coverage(&[], "anything"), 0.0);
    }

    #[test]
    fn only_a_clear_best_match_is_rescued() {
        let rescue = Rescue {
            similarity: 0.82,
            margin: 0.06,
        };
        let clear = [(0, 0.75), (1, 0.88), (2, 0.76), (3, 0.77)];
        assert_eq!(rescue.pick(&clear), Some(1));
        // Close to everything alike (nonsense), or not close enough.
        assert_eq!(rescue.pick(&[(0, 0.83), (1, 0.80), (2, 0.81)]), None);
        assert_eq!(rescue.pick(&[(0, 0.80), (1, 0.70), (2, 0.71)]), None);
        assert_eq!(rescue.pick(&[]), None);
    }

    #[test]
    fn rounding_keeps_four_decimals() {
        assert_eq!(round(0.123_456_789), 0.1235);
    }
}
