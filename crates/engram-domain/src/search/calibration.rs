//! Scores that mean the same in every search: the probability that a result is relevant, so
//! that a client can compare scores across queries and memories of any size, and a search can
//! say that nothing matched. The same memory and the same query give the same scores.
//!
//! A pair's score is read two ways, and it is as likely relevant as either finds it
//! ([`Calibration::score`]): its **meaning**, a logistic function of signals that depend on
//! nothing but the query and the observation — the cosine similarity of their vectors, their
//! late interaction (every query token's best agreement with the observation's tokens, each
//! token weighing the same), the share of the query's terms the text holds, the dates the
//! query names found in it, its terms standing together in it, whether the query names its
//! node, the share of the names the query mentions that it does not hold, how much of the
//! query the model knows only in fragments (letters typed at random), a keyword query's terms
//! it lacks ([`Features::lacking`]) and a type word only its document template holds
//! ([`Features::type_echo`]) — and its **exact evidence** ([`Exact`]): the share of the
//! query's terms that it or its node's name holds, so that a word that is in memory is found
//! (issue 57). Then, beside the pair, one thing is read from the search: results far below its
//! best lose more ([`Spread`]), so a high score means the answer rather than its neighbours.
//! No signal is taken from the memory's statistics: a pair scores alike in a memory of two
//! nodes and of 100,000.
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
    /// Exact evidence: the share (0–1) of the query's terms that its text or its node's name
    /// holds, verbatim after stemming and in any case ([`exact`]); 0 for a query without terms.
    pub exact: f64,
    /// For a query of keywords (every word a term: "Kafka", "learning rate warmup", "BUG-9999"),
    /// the share (0–1) of its terms that its text and its node's name lack (1 − [`exact`]);
    /// 0 for a question, whose words a paraphrase rightly lacks. A keyword query's vector
    /// is close to texts about the same kind of thing ("TensorFlow" to an Airflow DAG,
    /// "Cassandra" to a Kubernetes cluster), so what its meaning says weighs little against
    /// a keyword the text does not hold.
    pub lacking: f64,
    /// The share (0–1) of the query's terms that only its node's type holds (not its text, and
    /// not written in the query as a name: [`type_echo`]). Every default perspective embeds a
    /// fact as "{type} {name}: {fact}", so a type word of the question ("who leads the
    /// project?") agrees with every fact of every node of that type, in the vector and in late
    /// interaction, whatever the fact says; this takes that agreement back.
    pub type_echo: f64,
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
    /// The weight of [`Features::lacking`].
    pub lacking: f64,
    /// The weight of [`Features::type_echo`]: about minus the weight of late interaction, the
    /// lift one query token in full agreement gives.
    pub type_echo: f64,
    /// How scores below a search's best spread out ([`Spread`]); `None` leaves each pair's
    /// score as it is.
    pub spread: Option<Spread>,
    /// The probability of relevance that exact evidence gives on its own ([`Exact`]); `None`
    /// reads the pair's meaning alone.
    pub exact: Option<Exact>,
}

/// What a query's terms found verbatim say on their own: `1 / (1 + e^−(intercept + weight ×
/// exact))` over [`Features::exact`]. A fact or node name that holds every term of "Kafka",
/// "eu-west-1" or "Go 1.22" answers that query whatever its vector says (a one-word query's
/// vector is close to little), so the score of a pair is the chance that either reading
/// finds it relevant: `1 − (1 − meaning) × (1 − exact)` ([`Calibration::score`]). A query
/// whose words occur nowhere keeps its meaning's score alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exact {
    /// The intercept (the score of a pair holding none of the terms).
    pub intercept: f64,
    /// The weight of [`Features::exact`].
    pub weight: f64,
}

/// Scores below the best of a search spread out: a result whose log-odds fall more than
/// [`Spread::free`] below the best result's loses [`Spread::weight`] of each unit beyond. A
/// memory's right answer to a question typically scores far above the rest, and the rest,
/// which the pair's signals alone would score near 1 too (texts on the same subject), are
/// mostly not what was asked; so a high score means right more often, and a right answer is
/// not tied with a wrong one at the top. It reads each search's own best, which depends on the
/// query and the facts alone, not on how many facts a memory holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The log-odds below the best that cost nothing.
    pub free: f64,
    /// The log-odds lost per unit below the best beyond `free`.
    pub weight: f64,
}

impl Spread {
    /// The log-odds a score of `logit` keeps in a search whose best is `best`.
    pub fn apply(&self, logit: f64, best: f64) -> f64 {
        logit - self.weight * (best - logit - self.free).max(0.0)
    }
}

/// The log-odds of a probability, bounded to ±[`LOGIT_BOUND`] (a probability of 0 or 1 has
/// none).
pub fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    (p / (1.0 - p)).ln().clamp(-LOGIT_BOUND, LOGIT_BOUND)
}

/// The log-odds [`logit`] reads at most: a probability of 0.99995 or more reads as sure.
pub const LOGIT_BOUND: f64 = 10.0;

/// The probability of log-odds `z`.
pub fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

impl Exact {
    /// The probability (0–1) that a pair whose text holds `exact` of the query's terms is
    /// relevant, by that alone.
    pub fn score(&self, exact: f64) -> f64 {
        if exact <= 0.0 {
            return 0.0;
        }
        sigmoid(self.intercept + self.weight * exact)
    }
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
        let cosines: Vec<f64> = nearest.iter().map(|(_, c)| *c).collect();
        let median = crate::search::ranking::median(&cosines);
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
    lacking: 0.0,
    type_echo: 0.0,
    spread: None,
    exact: None,
};

/// Text mode's default `min_score`: on LoCoMo's dev split it leaves 6 % of off-topic
/// questions an answer and nonsense none, at no cost to R@5 (`pair_scores.py`).
pub const TEXT_MIN_SCORE: f64 = 0.3;

impl Calibration {
    /// The probability (0–1) that a candidate with `features` is relevant: by its meaning
    /// and, where the calibration has [`Exact`], by its exact evidence too (either may find
    /// it relevant).
    pub fn score(&self, features: &Features) -> f64 {
        let meaning = self.meaning(features);
        match &self.exact {
            Some(exact) => 1.0 - (1.0 - meaning) * (1.0 - exact.score(features.exact)),
            None => meaning,
        }
    }

    /// The probability (0–1) that a candidate with `features` is relevant by the logistic
    /// model of its signals, exact evidence left aside.
    pub fn meaning(&self, features: &Features) -> f64 {
        let z = self.intercept
            + self.similarity * features.similarity
            + self.late * features.late
            + self.coverage * features.coverage
            + self.dated * features.dated
            + self.pairs * features.pairs
            + self.named * features.named
            + self.alien * features.alien
            + self.fragmented * features.fragmented
            + self.lacking * features.lacking
            + self.type_echo * features.type_echo;
        sigmoid(z)
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

/// The share (0–1) of `terms` (a query's, [`crate::search::words::query_terms`]) that a text
/// of `stems` ([`crate::search::words::stems`]) holds; 0 for a query without terms.
pub fn coverage(terms: &[String], stems: &[String]) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let held = terms.iter().filter(|term| stems.contains(term)).count();
    held as f64 / terms.len() as f64
}

/// The share (0–1) of `terms` (a query's, [`crate::search::words::query_terms`]) that a text
/// of `stems` ([`crate::search::words::stems`]) or `name` (its node's) holds, stemmed alike
/// ([`Features::exact`]); 0 for a query without terms. A node's type is not read: a type word
/// such as "project" or "person" in a question says nothing about which node of that type it
/// asks for.
pub fn exact(terms: &[String], stems: &[String], name: &str) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let named = crate::search::words::stems(name);
    let held = (terms.iter())
        .filter(|term| stems.contains(term) || named.contains(term))
        .count();
    held as f64 / terms.len() as f64
}

/// The share (0–1) of `terms` (a query's) that only `entity_type` holds: not a text of
/// `stems`, and not one of `names`, the names the query mentions ([`Features::type_echo`]); 0
/// for a query without terms.
pub fn type_echo(terms: &[String], stems: &[String], entity_type: &str, names: &[String]) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let typed: Vec<String> = (crate::search::words::words(entity_type))
        .filter(|word| !names.contains(word))
        .map(|word| stemmer.stem(&word).into_owned())
        .collect();
    if typed.is_empty() {
        return 0.0;
    }
    let echoed = (terms.iter())
        .filter(|term| typed.contains(term) && !stems.contains(term))
        .count();
    echoed as f64 / terms.len() as f64
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
        let of = |text: &str| crate::search::words::stems(text);
        let covered = coverage(&terms, &of("Melanie painted a lake sunrise"));
        assert!((covered - 1.0).abs() < 1e-12, "{covered}");
        let partly = coverage(&terms, &of("Melanie went camping"));
        assert!((partly - 1.0 / 3.0).abs() < 1e-12, "{partly}");
        assert_eq!(coverage(&[], &of("anything")), 0.0);
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
    fn exact_evidence_reads_the_text_and_the_name_but_not_the_type() {
        let of = |text: &str| crate::search::words::stems(text);
        let terms = crate::search::words::query_terms("Kafka topics");
        assert_eq!(
            exact(&terms, &of("publishes orders to a Kafka topic"), "orders"),
            1.0
        );
        assert_eq!(exact(&terms, &of("publishes orders"), "ADR-7 Kafka"), 0.5);
        assert_eq!(exact(&terms, &of("publishes orders"), "orders"), 0.0);
        assert_eq!(exact(&[], &of("anything"), "any"), 0.0);
        let version = crate::search::words::query_terms("Go 1.22");
        assert_eq!(exact(&version, &of("written in Go 1.22"), "svc"), 1.0);
        assert!(exact(&version, &of("has 22 open tickets"), "svc") < 0.5);
    }

    #[test]
    fn a_type_word_only_the_type_holds_is_an_echo_unless_written_as_a_name() {
        let of = |text: &str| crate::search::words::stems(text);
        let terms = crate::search::words::query_terms("who leads the project technically?");
        let plants = of("the office plants are watered on Fridays");
        assert_eq!(type_echo(&terms, &plants, "project", &[]), 1.0 / 3.0);
        let held = of("the project is led by Dana");
        assert_eq!(
            type_echo(&terms, &held, "project", &[]),
            0.0,
            "the fact says it"
        );
        assert_eq!(type_echo(&terms, &plants, "service", &[]), 0.0);
        let question = "what did Caroline paint?";
        let (caroline, names) = (
            crate::search::words::query_terms(question),
            crate::search::words::proper_nouns(question),
        );
        assert_eq!(
            type_echo(&caroline, &of("painted a lake"), "Caroline", &names),
            0.0
        );
    }

    #[test]
    fn exact_evidence_and_meaning_combine_as_either_finding_it() {
        let model = Calibration {
            intercept: -2.0,
            similarity: 4.0,
            lacking: -6.0,
            exact: Some(Exact {
                intercept: -8.0,
                weight: 11.0,
            }),
            ..Calibration::default()
        };
        let held = Features {
            exact: 1.0,
            ..Features::default()
        };
        let meaning = model.meaning(&held);
        let both = model.score(&held);
        assert!(both > 0.95 && both > meaning, "{both} {meaning}");
        // Nothing held: the meaning alone, and a keyword it lacks lowers that.
        let none = Features {
            similarity: 0.5,
            ..Features::default()
        };
        assert_eq!(model.score(&none), model.meaning(&none));
        let lacking = Features {
            lacking: 1.0,
            ..none
        };
        assert!(model.score(&lacking) < model.score(&none) / 10.0);
    }

    #[test]
    fn scores_far_below_the_best_spread_out() {
        let spread = Spread {
            free: 2.0,
            weight: 1.0,
        };
        assert_eq!(spread.apply(5.0, 6.0), 5.0, "within the free distance");
        assert_eq!(spread.apply(1.0, 6.0), -2.0, "3 beyond it");
        assert!((logit(sigmoid(2.0)) - 2.0).abs() < 1e-9);
        assert_eq!(logit(1.0), LOGIT_BOUND);
    }

    #[test]
    fn rounding_keeps_three_decimals() {
        assert_eq!(round(0.123_656_789), 0.124);
    }
}
