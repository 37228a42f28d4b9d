//! Scores that mean the same in every search: the probability that a result is relevant,
//! estimated from the (query, observation) pair alone, so that a client can compare scores
//! across queries and memories of any size, and a search can say that nothing matched.
//!
//! A score is a logistic function of signals that depend on nothing but the query and the
//! observation: the cosine similarity of their vectors, their late interaction (every query
//! token's best agreement with the observation's tokens, each token weighing the same), the
//! share of the query's terms the text holds, the dates the query names found in it, its
//! terms standing together in it, whether the query names its node, the share of the
//! names the query mentions that it does not hold, and how much of the query the model knows
//! only in fragments (letters typed at random). No signal is scaled
//! by the best candidate, counted among the candidates or taken from the memory's statistics:
//! a pair scores the same in a memory of two nodes and of 100,000, on every call, and in
//! hybrid and embedding mode alike; results are returned in score order.
//!
//! The weights are fitted offline (`xtask/ablation/pair_scores.py`, BENCHMARKS.md "Scores
//! from the pair alone"): the signals' weights so that a query's right answers score above
//! its other candidates (pairwise, on LoCoMo's dev conversations, facts and raw dialogue turns,
//! and on engram's small project memories), then one scale and offset so that the score is
//! the probability of relevance among as many right answers as unrelated texts (off-topic
//! questions, nonsense, a query's wrong candidates). So 0.5 reads "as likely right as not";
//! a right answer to a reworded question typically scores above 0.9 (a median 0.99 on the
//! small project memories), and in a small memory 1 of 29 unrelated questions reaches 0.8.
//! The cosine's scale depends on the model (e5's cosines lie in 0.75–0.92), so the embedder
//! supplies its calibration ([`crate::Embedder::calibration`]); text mode's needs no
//! model and so reads words only.

use crate::search::results::SearchMode;

/// The signals of one (query, observation) pair a calibrated score is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Features {
    /// Its best cosine similarity to the query over the perspectives (raw, −1–1), 0 without
    /// a vector.
    pub similarity: f64,
    /// Its late interaction with the query: the mean over the query's tokens of each one's
    /// best agreement with its tokens (−1–1, [`crate::search::late_interaction::max_sim`]),
    /// best over the perspectives; 0 without token signs.
    pub late: f64,
    /// The share (0–1) of the query's terms ([`crate::search::words::query_terms`]) its text holds.
    pub coverage: f64,
    /// How well it is dated as the query asks (0–0.2): 0.1 when it holds or was written in a
    /// month or year the query names, plus 0.1 × its closeness to a day the query names.
    pub dated: f64,
    /// The pairs of consecutive query terms standing together in its text (0–3,
    /// [`crate::search::words::proximity`]).
    pub pairs: f64,
    /// 1 when the query names its node (every word of its type or of its name is a query
    /// word), else 0.
    pub named: f64,
    /// The share (0–1) of the names the query mentions
    /// ([`crate::search::words::proper_nouns`]) that neither its text nor its node's type and
    /// name hold: "what did Caroline paint?" asked of a memory of Melanie's facts.
    pub alien: f64,
    /// How much of the query the model's vocabulary knows only as letters and letter pairs
    /// ([`fragmented`]), the same for all of a query's candidates: 1 for "qwxz vlorp", 0 for
    /// a question of words.
    pub fragmented: f64,
}

/// The bytes per token under which a query reads as fragments: the words of a language
/// average 4–7 bytes a token in both models' vocabularies (LoCoMo's questions at least 3.0),
/// letters typed at random 1–2.4 ("qwxz vlorp" 1.3, "asdf jkl" 1.75).
pub const WHOLE_TOKEN_BYTES: f64 = 2.5;

/// How much of a query the model's vocabulary knows only in fragments (0–1): its content
/// words' bytes (`words`, stop words left out) per content token of its embedding
/// (`tokens`, [`crate::search::late_interaction::is_content_piece`]), b, read as
/// clamp([`WHOLE_TOKEN_BYTES`] − b, 0, 1). A word the vocabulary holds is one token; a word
/// it does not is split into pieces, short ones when the word is no word at all, and their
/// late interaction agrees with the same letters anywhere ("qwxz vlorp" with "QXmpp"). 0
/// without tokens. Bytes, not characters, so that a script of wider characters (Chinese,
/// Japanese: 3 bytes each, a token or two a character) is not read as fragments.
pub fn fragmented<'a>(words: impl IntoIterator<Item = &'a str>, tokens: usize) -> f64 {
    if tokens == 0 {
        return 0.0;
    }
    let bytes: usize = (words.into_iter())
        .filter(|word| !crate::search::words::is_stop_word(word))
        .map(str::len)
        .sum();
    (WHOLE_TOKEN_BYTES - bytes as f64 / tokens as f64).clamp(0.0, 1.0)
}

/// A logistic model of relevance: `1 / (1 + e^−(intercept + Σ weight × feature))`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Calibration {
    /// The intercept.
    pub intercept: f64,
    /// The weight of [`Features::similarity`].
    pub similarity: f64,
    /// The weight of [`Features::late`].
    pub late: f64,
    /// The weight of [`Features::coverage`].
    pub coverage: f64,
    /// The weight of [`Features::dated`].
    pub dated: f64,
    /// The weight of [`Features::pairs`].
    pub pairs: f64,
    /// The weight of [`Features::named`].
    pub named: f64,
    /// The weight of [`Features::alien`].
    pub alien: f64,
    /// The weight of [`Features::fragmented`].
    pub fragmented: f64,
}

/// An embedding model's calibration for the modes that use its vectors (hybrid and embedding
/// score a pair alike).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelCalibration {
    /// The score of a pair.
    pub scores: Calibration,
    /// The default `min_score` of searches with this model: results below it are left out.
    pub min_score: f64,
    /// When the best match by meaning is kept below `min_score`.
    pub rescue: Rescue,
}

/// A clear best match by meaning that shares no words with the query (another language, a
/// paraphrase) is kept even below `min_score`, alone: the words and names it lacks lower its
/// score. It keeps its score: the rescue decides only whether it is shown. "Clear" is
/// absolute and relative at once: its cosine is at least [`Rescue::similarity`] and stands
/// [`Rescue::margin`] above the median cosine of the query's nearest candidates (nonsense is
/// close to everything alike; a small memory makes every margin larger, hence the floor). When
/// it was fitted, on LoCoMo's dev split it changed neither the share of off-topic questions
/// answered (6.4 → 6.6 %) nor nonsense (0); on the multilingual set it found 24 of 30 answers
/// where the gate alone found 21 (`calibrate.py`, `rescue`).
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

/// Text mode's calibration, whatever the model: the pair's words alone (no vectors), fitted
/// as the models' are (`pair_scores.py`).
pub const TEXT: Calibration = Calibration {
    intercept: -7.29,
    similarity: 0.0,
    late: 0.0,
    coverage: 15.45,
    dated: 59.74,
    pairs: 1.39,
    named: 6.69,
    alien: -1.50,
    fragmented: 0.0,
};

/// Text mode's default `min_score`: on LoCoMo's dev split it leaves 6 % of off-topic
/// questions an answer and nonsense none, at no cost to R@5 (`pair_scores.py`).
pub const TEXT_MIN_SCORE: f64 = 0.3;

impl Calibration {
    /// The probability (0–1) that a candidate with `features` is relevant.
    pub fn score(&self, features: &Features) -> f64 {
        let z = self.intercept
            + self.similarity * features.similarity
            + self.late * features.late
            + self.coverage * features.coverage
            + self.dated * features.dated
            + self.pairs * features.pairs
            + self.named * features.named
            + self.alien * features.alien
            + self.fragmented * features.fragmented;
        1.0 / (1.0 + (-z).exp())
    }
}

/// The calibration of `mode` with an embedder calibrated as `model` (`None`: uncalibrated),
/// its default `min_score` and, in the modes that use vectors, the model's [`Rescue`].
pub fn of_mode(
    mode: SearchMode,
    model: Option<&ModelCalibration>,
) -> Option<(Calibration, f64, Option<Rescue>)> {
    match mode {
        SearchMode::Text => Some((TEXT, TEXT_MIN_SCORE, None)),
        SearchMode::Hybrid | SearchMode::Embedding => {
            model.map(|m| (m.scores, m.min_score, Some(m.rescue)))
        }
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

/// Rounds a score to 3 decimals: a calibrated probability has no more precision, and a
/// threshold needs no more.
pub fn round(score: f64) -> f64 {
    (score * 1_000.0).round() / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_of_random_letters_reads_as_fragments_and_one_of_words_does_not() {
        let of = |query: &str, tokens| {
            let words: Vec<String> = crate::search::words::words(query).collect();
            fragmented(words.iter().map(String::as_str), tokens)
        };
        // MiniLM's content tokens: q ##w ##x ##z v ##lor ##p.
        assert_eq!(of("qwxz vlorp", 7), 1.0);
        // "how do we handle declined payments": three words, three tokens.
        assert_eq!(of("how do we handle declined payments", 3), 0.0);
        // A rare name split in pieces is still long pieces: elastic ##sea ##rch.
        assert_eq!(of("why did we drop Elasticsearch?", 4), 0.0);
        // s ##sh keys: 7 bytes in 3 tokens, a little.
        let ssh = of("where are my ssh keys?", 3);
        assert!((ssh - 1.0 / 6.0).abs() < 1e-9, "{ssh}");
        // Chinese: 3 bytes a character, a token or two a character.
        assert_eq!(of("数据库迁移", 4), 0.0);
        assert_eq!(of("anything", 0), 0.0, "no tokens, no signal");
    }

    #[test]
    fn scores_rise_with_each_signal_and_stay_probabilities() {
        let low = Features::default();
        let high = Features {
            similarity: 0.9,
            late: 0.5,
            coverage: 1.0,
            ..Features::default()
        };
        let model = Calibration {
            intercept: -10.0,
            similarity: 10.0,
            late: 2.0,
            coverage: 2.0,
            ..Calibration::default()
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
    fn rounding_keeps_three_decimals() {
        assert_eq!(round(0.123_656_789), 0.124);
    }
}
