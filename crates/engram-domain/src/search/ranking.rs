//! How a search's candidates ([`super::candidates`]) are ranked: [`rank`].
//!
//! Hybrid scores are *score-level* fusion: each signal scaled among the candidates (the text
//! score divided by the best one, the similarity placed between the median and the best, so
//! that a model with compressed cosines still spreads), then `EMBEDDING_WEIGHT × similarity +
//! (1 − EMBEDDING_WEIGHT) × text`. On the
//! LoCoMo dev split this beat Reciprocal Rank Fusion at every `k` tried (R@1 0.479 against
//! 0.459 at best, R@5 0.655 against 0.648; BENCHMARKS.md), because ranks throw away how much
//! better the first match is than the tenth; scaling among the candidates keeps that and needs
//! no knowledge of the embedding model's similarity scale. What a score *means* across queries
//! is [`crate::search::calibration`]'s: with a calibrated model ([`calibrate`]) results are
//! returned in the order of their calibrated scores; this
//! ranking's order stands only for a model without a calibration (Ollama's).

use super::candidates::*;
use crate::search::calibration;
use crate::search::dates::NamedDates;
use crate::search::late_interaction::{
    best_agreements, bytes_per_token, token_weights, weighted_mean,
};
use crate::search::results::SearchMode;

/// The weight of embedding similarity in the hybrid score; full text has the rest. Tuned on
/// the LoCoMo dev split, both mappings (0.5–0.7 are within a point of each other).
pub const EMBEDDING_WEIGHT: f64 = 0.6;

/// What hybrid adds for an observation dated as the question asks ([`NamedDates`]): a month
/// or year the question names, written in the observation or the time it was written. On
/// the LoCoMo dev split +0.1 gave R@1 +0.007 and R@5 +0.002 (91 of 762 questions name one);
/// small enough never to outweigh a clearly better match.
pub const DATE_BONUS: f64 = 0.1;

/// What hybrid adds for an observation dated on a day the question names, times its
/// [`NamedDates::closeness`] (1 on the day, less up to a week away). On the LoCoMo dev split,
/// with [`PROXIMITY_BONUS`], +0.1 gave R@5 +0.003 and R@1 +0.002 (BENCHMARKS.md).
pub const DAY_BONUS: f64 = 0.1;

/// What hybrid adds for each pair of consecutive query terms that stand together in an
/// observation ([`crate::search::words::proximity`]), for at most [`PROXIMITY_PAIRS`] pairs. bm25 scores
/// each word alone, so "support group" in a text counts no more than "support" and "group"
/// far apart; on the LoCoMo dev split this gave R@1 +0.015, MRR +0.011, R@5 +0.004.
pub const PROXIMITY_BONUS: f64 = 0.05;

/// The most pairs [`PROXIMITY_BONUS`] counts for one observation.
pub const PROXIMITY_PAIRS: usize = 3;

/// What hybrid adds for an observation of a node the query names: every word of the node's
/// type ("what did Caroline paint?" and type `Caroline`; "which person…" and type `person`)
/// or of its name ("what does engram-pg keep?" and node `engram-pg`) is a word of the query.
/// On the LoCoMo dev split, with hubness, +0.05 gave R@1 +0.005 and R@5 +0.002 (0.03–0.1
/// alike; before hubness it cost R@5 0.001–0.005).
pub const NAMED_BONUS: f64 = 0.05;

/// The weight of late interaction in the hybrid score ([`crate::search::late_interaction`]): each
/// candidate's MaxSim over token signs (query tokens weighted by their idf among the
/// candidates), scaled among the candidates from 0 (the lowest) to 1 (the highest), times
/// this, is added to the weighted signals. On the LoCoMo dev split 0.7 raised R@1 / R@5 /
/// R@10 from 0.501 / 0.675 / 0.730 to 0.522 / 0.692 / 0.731 on the facts mapping and from
/// 0.493 / 0.665 / 0.722 to 0.518 / 0.690 / 0.728 on the speakers mapping (0.5–1.0 within
/// half a point of each other; BENCHMARKS.md). When no candidate has token signs (a model
/// that gives none) it adds nothing; a candidate without them among others that have them
/// (its vector made before token signs were kept and not yet made again, or a text with no
/// content token) gets their mean, neither lifted nor sunk by a signal it cannot have.
pub const TOKEN_WEIGHT: f64 = 0.7;

/// The most hybrid adds to the weighted signals (which reach 1) besides late interaction:
/// every bonus at its most.
pub const MAX_BONUS: f64 =
    DATE_BONUS + DAY_BONUS + PROXIMITY_BONUS * PROXIMITY_PAIRS as f64 + NAMED_BONUS;

/// What hybrid reads from the query's own text besides its words and vectors: the dates it
/// names, its terms for proximity and its words for the nodes it names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryCues {
    /// The months, years and days the query names.
    pub dates: NamedDates,
    /// Its terms ([`crate::search::words::query_terms`]).
    pub terms: Vec<String>,
    /// Its words, lower-cased ([`crate::search::words::words`]).
    pub words: Vec<String>,
    /// The names it mentions ([`crate::search::words::proper_nouns`]).
    pub names: Vec<String>,
}

/// What hybrid adds for one candidate, and which cues it was for (the result's signals);
/// nothing in the other modes.
#[derive(Default)]
struct Bonus {
    /// [`DATE_BONUS`] and [`DAY_BONUS`]'s part.
    dating: f64,
    pairs: usize,
    named: bool,
}

impl Bonus {
    /// What hybrid adds.
    fn value(&self) -> f64 {
        self.dating
            + PROXIMITY_BONUS * self.pairs as f64
            + if self.named { NAMED_BONUS } else { 0.0 }
    }
}

impl QueryCues {
    /// The cues of `query`.
    pub fn of(query: &str) -> Self {
        Self {
            dates: NamedDates::of(query),
            terms: crate::search::words::query_terms(query),
            words: crate::search::words::words(query).collect(),
            names: crate::search::words::proper_nouns(query),
        }
    }

    /// The share (0–1) of the names the query mentions that `row` holds in none of its
    /// text, type and name ([`calibration::Features::alien`]).
    fn alien(&self, row: &ObservationRow) -> f64 {
        if self.names.is_empty() {
            return 0.0;
        }
        let held: Vec<String> = [&row.entity_type, &row.name, &row.content]
            .into_iter()
            .flat_map(|text| crate::search::words::words(text))
            .collect();
        let missing = (self.names.iter())
            .filter(|name| !held.contains(name))
            .count();
        missing as f64 / self.names.len() as f64
    }

    /// Whether every word of `text` (at least one) is a word of the query.
    fn names(&self, text: &str) -> bool {
        let mut words = crate::search::words::words(text).peekable();
        words.peek().is_some() && words.all(|w| self.words.contains(&w))
    }

    /// Whether the query is keywords: it has terms and every word of it is one (no stop word:
    /// "Kafka", "Go 1.22", "learning rate warmup", not "how do we deploy?").
    pub fn keywords(&self) -> bool {
        !self.terms.is_empty()
            && (self.words.iter()).all(|w| !crate::search::words::is_stop_word(w))
    }

    /// Whether every word of `text` (at least one) is one of the names the query mentions
    /// ([`crate::search::words::proper_nouns`]), and so a word of the query.
    fn mentions(&self, text: &str) -> bool {
        let mut words = crate::search::words::words(text).peekable();
        words.peek().is_some() && words.all(|w| self.names.contains(&w))
    }

    /// What hybrid adds for `row`.
    fn bonus(&self, row: &ObservationRow) -> Bonus {
        // The observation's own dates, read once and only when the query names any (a day
        // implies its month and year).
        let (month, day) = match self.dates.is_empty() {
            true => (false, 0.0),
            false => {
                let named = NamedDates::of(&row.content);
                (
                    self.dates.match_observation(&named, row.created_at),
                    self.dates.closeness(&named, row.created_at),
                )
            }
        };
        let pairs = crate::search::words::proximity(&self.terms, &row.content).min(PROXIMITY_PAIRS);
        // A node is named by its name, or by its type when the type is a name the query
        // mentions ("what did Caroline paint?" of a node typed `Caroline`): a common type word
        // ("project", "service", "person") in a question asks for no node of that type.
        let named = self.names(&row.name) || self.mentions(&row.entity_type);
        Bonus {
            dating: if month { DATE_BONUS } else { 0.0 } + DAY_BONUS * day,
            pairs,
            named,
        }
    }
}

/// How much of its similarity to the query a candidate gives up per unit of hubness (its mean
/// similarity to its [`HUBNESS_NEIGHBOURS`] most similar fellow candidates) in hybrid mode. On
/// the LoCoMo dev split 0.4 gave R@5 +0.009, R@10 +0.015 and R@1 −0.004 (0.3–0.5 within half
/// a point of each other; BENCHMARKS.md); the same correction over the whole corpus raised
/// embedding-only R@5 from 0.580 to 0.604.
pub const HUBNESS_WEIGHT: f64 = 0.4;

/// How many of a candidate's most similar fellow candidates measure its hubness.
pub const HUBNESS_NEIGHBOURS: usize = 10;

/// Hubness is measured against at most this many candidates, those most similar to the
/// query: a search of the default depth has about as many candidates, and a deep one (limit
/// 100: 600 candidates) costs 2 ms instead of 9 for the comparisons.
pub const HUBNESS_POOL: usize = 150;

/// A ranked candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// The observation.
    pub row: ObservationRow,
    /// Its score in the mode ranked by (see [`crate::SearchHit::score`]).
    pub score: f64,
    /// The perspective of its best similarity, if it has a vector.
    pub perspective: Option<String>,
    /// `embedding:<perspective>` per perspective among whose nearest it was; `text` when it
    /// matched the query's words.
    pub signals: Vec<String>,
    /// What a calibrated score is computed from ([`crate::search::calibration`]): the similarity and
    /// late interaction; the term coverage and exact evidence stay 0 until [`calibrate`] needs
    /// them.
    pub features: calibration::Features,
    /// The log-odds its node's use adds to its calibrated score (0 unless the search ranks
    /// by use, [`crate::AccessRanking`]).
    pub used: f64,
}

/// Ranks `candidates` gathered for `query` in `mode`, best first (ties by node name, then
/// ordinal). Embedding mode keeps the candidates among some vector's nearest, scored by their
/// best similarity; text mode those that match the words, by text score; hybrid all of them,
/// by the weighted sum of its similarity's place between the candidates' median and best
/// ([`above_median`]; each similarity less [`HUBNESS_WEIGHT`] × the candidate's likeness to
/// the others, [`less_hubness`]) and its text score divided by the best one, plus [`DATE_BONUS`] and [`DAY_BONUS`] (signal `date`)
/// for those dated as `cues`, the question's, ask, [`PROXIMITY_BONUS`] per pair of its
/// terms standing together (signal `proximity`), [`NAMED_BONUS`] for the observations of
/// a node it names (signal `named`) and [`TOKEN_WEIGHT`] × its late interaction with the
/// query, scaled among the candidates ([`late_interaction`]).
pub fn rank(
    query: &CandidateQuery,
    candidates: Vec<Candidate>,
    mode: SearchMode,
    cues: &QueryCues,
) -> Vec<Ranked> {
    let similarities = match mode {
        SearchMode::Hybrid => less_hubness(&candidates, query.vectors.len()),
        _ => (candidates.iter())
            .map(|c| c.signals.similarities.clone())
            .collect(),
    };
    let best_similarity = |similarities: &[Option<f64>]| {
        (similarities.iter().enumerate())
            .filter_map(|(i, s)| s.map(|s| (i, s)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let top = |values: &mut dyn Iterator<Item = f64>| values.fold(0.0_f64, f64::max);
    let bests: Vec<f64> = (similarities.iter())
        .filter_map(|s| best_similarity(s).map(|b| b.1))
        .collect();
    let (top_similarity, median_similarity) = (top(&mut bests.iter().copied()), median(&bests));
    let top_text = top(&mut candidates.iter().filter_map(|c| c.signals.text_score));
    // Both readings of late interaction from one pass over the token agreements: the
    // candidates' weighting ranks hybrid, each pair's own is what it is scored by.
    let (weighted, uniform) = late_interaction(query, &candidates);
    let fragmented = (query.vectors.iter())
        .find_map(|q| {
            let signs = q.token_signs.as_deref()?;
            let tokens = signs.len() / bytes_per_token(q.vector.len()).max(1);
            Some(calibration::fragmented(
                cues.words.iter().map(String::as_str),
                tokens,
            ))
        })
        .unwrap_or(0.0);
    let late = match mode {
        SearchMode::Hybrid => scaled_among(&weighted),
        _ => vec![0.0; candidates.len()],
    };
    let share = |value: f64, best: f64| {
        if best > 0.0 {
            value.max(0.0) / best
        } else {
            0.0
        }
    };

    let mut ranked: Vec<Ranked> = (candidates.into_iter().zip(&similarities))
        .zip(late.into_iter().zip(uniform))
        .filter_map(|((c, similarities), (late, uniform))| {
            let best = best_similarity(similarities);
            // Every mode reads the cues for the score; only hybrid's ranking adds them.
            let bonus = cues.bonus(&c.row);
            let score = match mode {
                SearchMode::Embedding if c.signals.nearest.contains(&true) => best?.1,
                SearchMode::Text => c.signals.text_score?,
                SearchMode::Hybrid => {
                    EMBEDDING_WEIGHT
                        * above_median(
                            best.map_or(f64::MIN, |b| b.1),
                            median_similarity,
                            top_similarity,
                        )
                        + (1.0 - EMBEDDING_WEIGHT)
                            * share(c.signals.text_score.unwrap_or(0.0), top_text)
                        + TOKEN_WEIGHT * late
                        + bonus.value()
                }
                SearchMode::Embedding => return None,
            };
            let mut signals: Vec<String> = (c.signals.nearest.iter().zip(&query.vectors))
                .filter(|(nearest, _)| **nearest)
                .map(|(_, v)| format!("embedding:{}", v.perspective_name))
                .collect();
            if mode != SearchMode::Embedding && c.signals.text_score.is_some() {
                signals.push("text".to_owned());
            }
            for (cue, signal) in [
                (bonus.dating > 0.0, "date"),
                (bonus.pairs > 0, "proximity"),
                (bonus.named, "named"),
            ] {
                if cue && mode == SearchMode::Hybrid {
                    signals.push(signal.to_owned());
                }
            }
            let perspective = best.map(|(i, _)| query.vectors[i].perspective_name.clone());
            let features = calibration::Features {
                similarity: (c.signals.similarities.iter().flatten().copied())
                    .fold(None, |best: Option<f64>, s| {
                        Some(best.map_or(s, |b| b.max(s)))
                    })
                    .unwrap_or(0.0),
                late: uniform.unwrap_or(0.0),
                coverage: 0.0,
                dated: bonus.dating,
                pairs: bonus.pairs as f64,
                named: f64::from(u8::from(bonus.named)),
                alien: cues.alien(&c.row),
                fragmented,
                exact: 0.0,
                lacking: 0.0,
                type_echo: 0.0,
            };
            Some(Ranked {
                row: c.row,
                score,
                perspective,
                signals,
                features,
                used: 0.0,
            })
        })
        .collect();
    ranked.sort_by(|a, b| {
        (b.score.total_cmp(&a.score))
            .then_with(|| a.row.name.cmp(&b.row.name))
            .then(a.row.ordinal.cmp(&b.row.ordinal))
    });
    ranked
}

/// How far `value` stands from the candidates' `median` towards their `top`: 0 at or below the
/// median, 1 at the top. Hybrid's similarity signal: a model whose cosines are compressed
/// (multilingual-e5-small's lie in 0.75–0.92) gives every candidate nearly the top's value
/// when divided by it (`value / top`), which left e5's hybrid below its own embedding mode
/// (R@5 0.646 against 0.644; with this 0.672, and MiniLM's within 0.005: BENCHMARKS.md).
fn above_median(value: f64, median: f64, top: f64) -> f64 {
    if top > median {
        ((value - median) / (top - median)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The median of `values` (0 for none).
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 0 => (sorted[middle - 1] + sorted[middle]) / 2.0,
        _ => sorted[middle],
    }
}

/// Replaces `ranked`'s scores (from [`rank`]) by `calibration`'s (each candidate's coverage,
/// exact evidence, lacking keywords and type echo of the query `cues` counted here, only for
/// searches that calibrate), puts the newer of two close facts of one node first
/// ([`newer_first`]), spreads what lies far below the best ([`calibration::Spread`]), rounds
/// to 3 decimals, orders by that score (best first) and leaves out those below `min_score`,
/// except a clear best match by meaning (`rescue`, [`calibration::Rescue`]).
///
/// A search that ranks by use adds each candidate's [`Ranked::used`] to its log-odds. Results that show the same rounded score
/// (several close to 1 often do) otherwise keep the order of `mode`'s ranking in hybrid and
/// text mode, which read how rare the query's words are among
/// the candidates (on LoCoMo's dev facts, R@5 0.676 against 0.661 by the unrounded score),
/// and the unrounded score's in embedding mode, whose ranking is the cosine alone (raw
/// dialogue turns: 0.667 against 0.604).
///
/// When it keeps nothing, returns the node name and score of the best-scored candidate, so
/// that the search can say how near it came.
pub fn calibrate(
    ranked: &mut Vec<Ranked>,
    cues: &QueryCues,
    calibration: &calibration::Calibration,
    min_score: f64,
    rescue: Option<&calibration::Rescue>,
    mode: SearchMode,
) -> Option<(String, f64)> {
    let terms = &cues.terms;
    let keywords = cues.keywords();
    for r in ranked.iter_mut() {
        let stems = crate::search::words::stems(&r.row.content);
        r.features.coverage = calibration::coverage(terms, &stems);
        r.features.exact = calibration::exact(terms, &stems, &r.row.name);
        r.features.lacking = if keywords {
            1.0 - r.features.exact
        } else {
            0.0
        };
        let entity_type = &r.row.entity_type;
        r.features.type_echo = calibration::type_echo(terms, &stems, entity_type, &cues.names);
        r.score = calibration.score(&r.features);
        if r.used > 0.0 {
            r.score = calibration::sigmoid(calibration::logit(r.score) + r.used);
        }
    }
    newer_first(ranked);
    if let Some(spread) = &calibration.spread {
        let best = (ranked.iter())
            .map(|r| calibration::logit(r.score))
            .fold(f64::MIN, f64::max);
        for r in ranked.iter_mut() {
            r.score = calibration::sigmoid(spread.apply(calibration::logit(r.score), best));
        }
    }
    let shown = calibration::round;
    ranked.sort_by(|a, b| {
        let finer = match mode {
            SearchMode::Embedding => b.score.total_cmp(&a.score),
            SearchMode::Hybrid | SearchMode::Text => std::cmp::Ordering::Equal,
        };
        shown(b.score).total_cmp(&shown(a.score)).then(finer)
    });
    for r in ranked.iter_mut() {
        r.score = shown(r.score);
    }
    let nearest: Vec<(usize, f64)> = (ranked.iter().enumerate())
        .filter(|(_, r)| r.signals.iter().any(|s| s.starts_with("embedding:")))
        .map(|(i, r)| (i, r.features.similarity))
        .collect();
    let rescued = rescue.and_then(|rescue| rescue.pick(&nearest));
    keep_at_least(ranked, min_score, rescued)
}

/// How close two scores of one node's facts must be, in log-odds, for the newer fact to rank
/// first: a near-tie, which the words and vectors of an older and a newer value of one
/// attribute ("runs Kong 2.8", "was upgraded to Kong 3.4") nearly always are. Log-odds rather
/// than probabilities, so that near 1, where 0.999 and 0.9999 differ tenfold in how likely
/// wrong they are, a fact that answers is not taken for a tie with one that only mentions
/// the node.
pub const RECENCY_MARGIN: f64 = 1.0;

/// Log-odds past which two facts read alike for [`newer_first`]: 4.6, a score of 0.99. Two
/// facts that both score 0.99 or more both answer, and the newer decides, however far apart
/// their log-odds are up there (1 against 0.999 is 3 log-odds), unless the older holds more of
/// the query's words.
pub const TIED_ABOVE: f64 = 4.6;

/// The current fact first: of two facts of one node whose scores are within
/// [`RECENCY_MARGIN`] log-odds, the older (by `valid_from`, then ordinal) scores just below
/// the newer (by 0.001), so it comes after it and the scores stay in order. Recency only
/// decides near-ties: it never lifts a fact, and an older fact that answers clearly better
/// keeps its place.
pub fn newer_first(ranked: &mut [Ranked]) {
    const STEP: f64 = 0.001;
    let mut by_node: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (index, r) in ranked.iter().enumerate() {
        by_node.entry(r.row.name.as_str()).or_default().push(index);
    }
    let mut lowered: Vec<(usize, f64)> = Vec::new();
    for mut facts in by_node.into_values().filter(|facts| facts.len() > 1) {
        // Newest first, so that a fact is compared with newer ones already placed.
        facts
            .sort_by_key(|&i| std::cmp::Reverse((ranked[i].row.valid_from, ranked[i].row.ordinal)));
        // Each newer fact's log-odds as scored, its share of the query's terms, and its score
        // once placed.
        let mut placed: Vec<(f64, f64, f64)> = Vec::with_capacity(facts.len());
        for index in facts {
            let score = ranked[index].score;
            let (odds, coverage) = (calibration::logit(score), ranked[index].features.coverage);
            // Up where both answer, a tie, unless the older holds more of the query's words
            // (it says what was asked; the newer may only mention the node).
            let near = |newer: f64, newer_coverage: f64| match newer_coverage >= coverage {
                true => odds.min(TIED_ABOVE) - newer.min(TIED_ABOVE) < RECENCY_MARGIN,
                false => odds - newer < RECENCY_MARGIN,
            };
            let least = (placed.iter())
                .filter(|(newer, newer_coverage, _)| near(*newer, *newer_coverage))
                .map(|(_, _, newer_placed)| newer_placed - STEP)
                .fold(score, f64::min)
                .max(0.0);
            placed.push((odds, coverage, least));
            if least < score {
                lowered.push((index, least));
            }
        }
    }
    for (index, score) in lowered {
        ranked[index].score = score;
    }
}

/// Leaves out of `ranked` (in score order, best first) those scoring below `min_score`,
/// except the one at `rescued`. When that leaves nothing, returns the best one's node name and
/// score, so that the search can say how near it came.
pub fn keep_at_least(
    ranked: &mut Vec<Ranked>,
    min_score: f64,
    rescued: Option<usize>,
) -> Option<(String, f64)> {
    // In score order: when the first falls short and none is rescued, all are left out.
    if rescued.is_none() && ranked.first().is_some_and(|best| best.score < min_score) {
        return (ranked.drain(..).next()).map(|best| (best.row.name, best.score));
    }
    let mut index = 0;
    ranked.retain(|r| {
        let keep = r.score >= min_score || Some(index) == rescued;
        index += 1;
        keep
    });
    None
}

/// Each candidate's late interaction with the query (−1–1; `None` without token signs), read
/// two ways from one set of agreements. Per perspective where the query has token signs, each
/// candidate's [`best_agreements`] are averaged with the query tokens' [`token_weights`] among
/// the candidates (what hybrid ranks by, scaled among them, [`scaled_among`]) and with every
/// token weighing the same ([`crate::search::late_interaction::max_sim`]'s reading, the pair's
/// own, which its calibrated score uses); a candidate keeps its best perspective in each.
fn late_interaction(
    query: &CandidateQuery,
    candidates: &[Candidate],
) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    let best =
        |value: &mut Option<f64>, mean: f64| *value = Some(value.map_or(mean, |v| v.max(mean)));
    let mut weighted: Vec<Option<f64>> = vec![None; candidates.len()];
    let mut uniform = weighted.clone();
    for (index, q) in query.vectors.iter().enumerate() {
        let Some(query_signs) = q.token_signs.as_deref() else {
            continue;
        };
        let agreements: Vec<Option<Vec<f64>>> = (candidates.iter())
            .map(|c| {
                let signs = c.signals.token_signs[index].as_deref()?;
                best_agreements(query_signs, signs, q.vector.len())
            })
            .collect();
        let held: Vec<&[f64]> = agreements.iter().flatten().map(Vec::as_slice).collect();
        let weights = token_weights(&held);
        let values = weighted.iter_mut().zip(uniform.iter_mut());
        for ((weighted, uniform), agreements) in values.zip(&agreements) {
            if let Some(agreements) = agreements {
                best(weighted, weighted_mean(agreements, &weights));
                best(
                    uniform,
                    agreements.iter().sum::<f64>() / agreements.len() as f64,
                );
            }
        }
    }
    (weighted, uniform)
}

/// `values` scaled among themselves: 0 for the lowest, 1 for the highest, and the mean of the
/// others for those without one; all 0 when fewer than two differ.
fn scaled_among(values: &[Option<f64>]) -> Vec<f64> {
    let (low, high) = (values.iter().flatten()).fold((f64::MAX, f64::MIN), |(low, high), v| {
        (low.min(*v), high.max(*v))
    });
    if high <= low {
        return vec![0.0; values.len()];
    }
    let scaled: Vec<Option<f64>> = (values.iter())
        .map(|v| v.map(|v| (v - low) / (high - low)))
        .collect();
    let known: Vec<f64> = scaled.iter().flatten().copied().collect();
    let mean = known.iter().sum::<f64>() / known.len() as f64;
    scaled.into_iter().map(|v| v.unwrap_or(mean)).collect()
}

/// Each candidate's similarities (per query vector) less [`HUBNESS_WEIGHT`] × its hubness in
/// that perspective: the mean cosine similarity of its vector to the [`HUBNESS_NEIGHBOURS`]
/// most similar vectors of the other candidates. An observation close to many others (a
/// generic one: "Gina loves to dance", "the project uses Rust") is close to many queries too
/// and crowds out the specific one a query is after; this is the CSLS correction of
/// Conneau et al. (2018) computed among the candidates, which needs nothing stored.
fn less_hubness(candidates: &[Candidate], perspectives: usize) -> Vec<Vec<Option<f64>>> {
    let hubness: Vec<Vec<f64>> = (0..perspectives).map(|i| hubness(candidates, i)).collect();
    (candidates.iter().enumerate())
        .map(|(c, candidate)| {
            (candidate.signals.similarities.iter().zip(&hubness))
                .map(|(similarity, hubness)| similarity.map(|s| s - HUBNESS_WEIGHT * hubness[c]))
                .collect()
        })
        .collect()
}

/// Each candidate's hubness in the perspective of query vector `index` (0 without a vector
/// there or without another candidate that has one), its neighbours sought among the
/// [`HUBNESS_POOL`] candidates most similar to the query.
fn hubness(candidates: &[Candidate], index: usize) -> Vec<f64> {
    let (with, vectors): (Vec<usize>, Vec<&[f32]>) = (candidates.iter().enumerate())
        .filter_map(|(c, candidate)| Some((c, candidate.signals.vectors[index].as_deref()?)))
        .unzip();
    let mut hubness = vec![0.0; candidates.len()];
    let similarity = |i: usize| candidates[with[i]].signals.similarities[index].unwrap_or(f64::MIN);
    let mut pool: Vec<usize> = (0..with.len()).collect();
    if pool.len() > HUBNESS_POOL {
        pool.select_nth_unstable_by(HUBNESS_POOL - 1, |a, b| {
            similarity(*b).total_cmp(&similarity(*a))
        });
        pool.truncate(HUBNESS_POOL);
    }
    let neighbours =
        crate::search::similarity::nearest_in_pool(&vectors, &pool, HUBNESS_NEIGHBOURS);
    for (c, found) in with.into_iter().zip(neighbours) {
        if !found.is_empty() {
            let sum: f64 = found.iter().map(|n| f64::from(n.similarity)).sum();
            hubness[c] = sum / found.len() as f64;
        }
    }
    hubness
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(perspectives: &[&str]) -> CandidateQuery {
        CandidateQuery {
            workspace: crate::WorkspaceId(1),
            perspectives: false,
            alias_runs: Vec::new(),
            text: Some("q".into()),
            model: "m".into(),
            vectors: (perspectives.iter().enumerate())
                .map(|(i, name)| QueryVector {
                    perspective: crate::PerspectiveId(i as i64),
                    perspective_name: (*name).into(),
                    vector: vec![1.0, 0.0],
                    token_signs: None,
                })
                .collect(),
            depth: 2,
            text_depth: 4,
            within: None,
            entity_types: Vec::new(),
            as_of: None,
        }
    }

    fn row(id: i64) -> ObservationRow {
        ObservationRow {
            observation_id: id,
            name: format!("n{id}"),
            entity_type: "t".into(),
            summary: None,
            ordinal: crate::Ordinal(1),
            content: format!("c{id}"),
            created_at: "2026-03-14T10:00:00Z".parse().unwrap(),
            valid_from: "2026-03-14T10:00:00Z".parse().unwrap(),
        }
    }

    /// `(observation id, vector)` pairs as stored vectors without token signs.
    fn stored<const N: usize>(pairs: [(i64, Vec<f32>); N]) -> Vec<StoredVector> {
        (pairs.into_iter())
            .map(|(observation_id, vector)| StoredVector {
                observation_id,
                vector,
                token_signs: None,
            })
            .collect()
    }

    /// A unit vector whose cosine similarity to the test queries' [1, 0] is `cosine`.
    fn unit(cosine: f32) -> Vec<f32> {
        vec![cosine, (1.0 - cosine * cosine).sqrt()]
    }

    fn rank(q: &CandidateQuery, candidates: Vec<Candidate>, mode: SearchMode) -> Vec<Ranked> {
        super::rank(q, candidates, mode, &QueryCues::default())
    }

    /// 1: near in both perspectives, no text; 2: text only (similarity filled in later);
    /// 3: near in `b` and text.
    fn gathered(q: &CandidateQuery) -> Vec<Candidate> {
        let mut set = CandidateSet::new(q);
        set.add_nearest(0, [(1, 0.8)]);
        set.add_nearest(1, [(1, 0.7), (3, 0.6)]);
        // Past the depth of 2, a match only lends its score to a candidate (4 is none).
        set.add_text_ranking(vec![(2, 4.0), (3, 2.0), (4, 1.5)], 2);
        assert_eq!(set.ids(), [1, 2, 3]);
        assert_eq!(set.without_text_score(), [1]);
        // Similarities from vectors (the query's is [1, 0]): 2 gets 0.2 in `a` and 0.4 in
        // `b`, 3 gets 0.5 in `a`; 9 is no candidate. In `a`, 2 and 3 are each other's only
        // fellow (cosine 0.95): 0.38 less leaves both below their similarity in `b`.
        set.set_vectors(0, stored([(2, unit(0.2)), (3, unit(0.5)), (9, unit(1.0))]));
        set.set_vectors(1, stored([(2, unit(0.4))]));
        set.finish(vec![row(3), row(1), row(2)])
    }

    #[test]
    fn calibrated_results_come_in_score_order_each_scored_by_its_pair_alone() {
        let ranked = |similarities: &[f64]| -> Vec<Ranked> {
            (similarities.iter().enumerate())
                .map(|(i, s)| Ranked {
                    row: row(i as i64),
                    score: 1.0 - i as f64 / 10.0,
                    perspective: None,
                    signals: vec!["embedding:general".into()],
                    features: calibration::Features {
                        similarity: *s,
                        ..Default::default()
                    },
                    used: 0.0,
                })
                .collect()
        };
        let model = calibration::Calibration {
            intercept: -4.0,
            similarity: 8.0,
            ..Default::default()
        };
        // Ranked first by the fusion, but the second pair is the more likely.
        let mut found = ranked(&[0.5, 0.7, 0.1]);
        let some_kept = calibrate(
            &mut found,
            &QueryCues::default(),
            &model,
            0.1,
            None,
            SearchMode::Hybrid,
        );
        assert_eq!(some_kept, None);
        let names: Vec<&str> = found.iter().map(|r| r.row.name.as_str()).collect();
        assert_eq!(
            names,
            ["n1", "n0"],
            "in score order, the unlikely one left out"
        );
        assert!(found[0].score > found[1].score);
        // The same pair among other candidates scores the same.
        // Kept nothing: the best-scored is named with its shown score, σ(−4 + 5.6) = 0.832.
        let mut none_kept = ranked(&[0.1, 0.7]);
        let best = calibrate(
            &mut none_kept,
            &QueryCues::default(),
            &model,
            0.9,
            None,
            SearchMode::Hybrid,
        );
        assert!(none_kept.is_empty());
        assert_eq!(best, Some(("n1".to_owned(), 0.832)));
        let mut alone = ranked(&[0.5]);
        calibrate(
            &mut alone,
            &QueryCues::default(),
            &model,
            0.0,
            None,
            SearchMode::Hybrid,
        );
        assert_eq!(alone[0].score, found[1].score);
        // Both near-certain (σ(9.6) and σ(11.2) round to 1.0): the ranking's order in
        // hybrid, the likelier first in embedding mode (whose ranking is the cosine alone).
        for (mode, order) in [
            (SearchMode::Hybrid, ["n0", "n1"]),
            (SearchMode::Embedding, ["n1", "n0"]),
        ] {
            let mut sure = ranked(&[1.7, 1.9]);
            calibrate(&mut sure, &QueryCues::default(), &model, 0.0, None, mode);
            let names: Vec<&str> = sure.iter().map(|r| r.row.name.as_str()).collect();
            assert_eq!(names, order, "{mode:?}");
            assert_eq!((sure[0].score, sure[1].score), (1.0, 1.0));
        }
    }

    #[test]
    fn a_name_the_query_mentions_and_a_text_lacks_counts_against_it() {
        let cues = QueryCues::of("Did Caroline open a PR in May?");
        assert_eq!(cues.names, ["caroline", "may"], "an acronym is no name");
        let mut text = row(1);
        text.entity_type = "Caroline".into();
        text.content = "opened pull requests all May".into();
        assert_eq!(cues.alien(&text), 0.0, "her node, the month");
        text.entity_type = "Melanie".into();
        assert_eq!(cues.alien(&text), 0.5);
        assert_eq!(QueryCues::of("what did she paint?").alien(&text), 0.0);
    }

    #[test]
    fn hybrid_places_similarities_between_median_and_best_and_divides_text_by_its_best() {
        let q = query(&["a", "b"]);
        let ranked = rank(&q, gathered(&q), SearchMode::Hybrid);
        let got: Vec<(i64, f64, Option<&str>, Vec<&str>)> = (ranked.iter())
            .map(|r| {
                let signals = r.signals.iter().map(String::as_str).collect();
                (
                    r.row.observation_id,
                    r.score,
                    r.perspective.as_deref(),
                    signals,
                )
            })
            .collect();
        // Best similarities 0.8 (1), 0.4 (2) and 0.6 (3): the median 0.6 counts 0, the best 1.
        let w = EMBEDDING_WEIGHT;
        let expect = [
            (3, (1.0 - w) * 0.5, Some("b"), vec!["embedding:b", "text"]),
            (2, 1.0 - w, Some("b"), vec!["text"]),
            (1, w, Some("a"), vec!["embedding:a", "embedding:b"]),
        ];
        let mut expect = expect.to_vec();
        expect.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(got.len(), 3);
        for (got, expect) in got.iter().zip(&expect) {
            assert_eq!(got.0, expect.0);
            // Similarities from vectors are computed in f32.
            assert!((got.1 - expect.1).abs() < 1e-6, "{got:?} vs {expect:?}");
            assert_eq!(got.2, expect.2);
            assert_eq!(got.3, expect.3);
        }
    }

    #[test]
    fn single_modes_keep_what_their_signal_found() {
        let q = query(&["a", "b"]);
        let embedding = rank(&q, gathered(&q), SearchMode::Embedding);
        let ids: Vec<(i64, f64)> = embedding
            .iter()
            .map(|r| (r.row.observation_id, r.score))
            .collect();
        assert_eq!(ids, [(1, 0.8), (3, 0.6)]);
        assert!(
            embedding
                .iter()
                .all(|r| !r.signals.contains(&"text".to_owned()))
        );
        let text = rank(&q, gathered(&q), SearchMode::Text);
        let ids: Vec<(i64, f64)> = text
            .iter()
            .map(|r| (r.row.observation_id, r.score))
            .collect();
        assert_eq!(ids, [(2, 4.0), (3, 2.0)]);
    }

    #[test]
    fn scores_that_are_not_numbers_are_left_out() {
        let q = query(&["a"]);
        let mut set = CandidateSet::new(&q);
        set.add_nearest(0, [(1, f64::NAN), (2, 0.5)]);
        set.add_text_matches([(3, f64::NAN)]);
        assert_eq!(set.ids(), [2]);
        let ranked = rank(
            &q,
            set.finish(vec![row(1), row(2), row(3)]),
            SearchMode::Hybrid,
        );
        assert_eq!(ranked.len(), 1);
        assert!(ranked[0].score.is_finite());
    }

    #[test]
    fn a_missing_signal_counts_nothing() {
        let mut q = query(&[]);
        q.text = Some("q".into());
        let mut set = CandidateSet::new(&q);
        set.add_text_matches([(1, 2.0), (2, 1.0)]);
        let ranked = rank(&q, set.finish(vec![row(1), row(2)]), SearchMode::Hybrid);
        let scores: Vec<f64> = ranked.iter().map(|r| r.score).collect();
        assert_eq!(
            scores,
            [1.0 - EMBEDDING_WEIGHT, (1.0 - EMBEDDING_WEIGHT) / 2.0]
        );
        assert!(ranked.iter().all(|r| r.perspective.is_none()));
    }

    #[test]
    fn hybrid_prefers_observations_dated_as_the_question_asks() {
        let q = query(&[]);
        let mut set = CandidateSet::new(&q);
        set.add_text_matches([(1, 2.0), (2, 1.9)]);
        let mut dated = row(2);
        dated.content = "8 May, 2023: c2".into();
        let candidates = set.finish(vec![row(1), dated]);
        let asked = QueryCues::of("what happened in May 2023");
        let ranked = super::rank(&q, candidates.clone(), SearchMode::Hybrid, &asked);
        let order: Vec<(i64, Vec<&str>)> = (ranked.iter())
            .map(|r| {
                (
                    r.row.observation_id,
                    r.signals.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        // "May 2023" is also a pair of the query's terms side by side in the text.
        assert_eq!(
            order,
            [(2, vec!["text", "date", "proximity"]), (1, vec!["text"])]
        );
        // Single modes rank by their signal alone.
        let text = super::rank(&q, candidates, SearchMode::Text, &asked);
        assert_eq!(text[0].row.observation_id, 1);
        assert_eq!(text[0].signals, ["text"]);
    }

    #[test]
    fn hybrid_prefers_terms_together_and_the_day_asked() {
        let q = query(&[]);
        let mut set = CandidateSet::new(&q);
        set.add_text_matches([(1, 2.0), (2, 2.0), (3, 2.0)]);
        let mut apart = row(1);
        apart.content = "the group met for support".into();
        let mut together = row(2);
        together.content = "went to a support group meeting".into();
        let mut near_day = row(3);
        near_day.content = "2 May, 2022: support was given; a group formed".into();
        let candidates = set.finish(vec![apart, together, near_day]);
        let cues = QueryCues::of("When did she go to the support group on 1 May, 2022?");
        let ranked = super::rank(&q, candidates, SearchMode::Hybrid, &cues);
        let scores: Vec<(i64, f64, Vec<&str>)> = (ranked.iter())
            .map(|r| {
                let signals = r.signals.iter().map(String::as_str).collect();
                (r.row.observation_id, r.score, signals)
            })
            .collect();
        let text = 1.0 - EMBEDDING_WEIGHT;
        assert_eq!(
            scores,
            [
                // A day after the one asked; "May, 2022" is a pair too.
                (
                    3,
                    text + (DATE_BONUS + DAY_BONUS * (1.0 - 1.0 / 7.0) + PROXIMITY_BONUS),
                    vec!["text", "date", "proximity"]
                ),
                (2, text + PROXIMITY_BONUS, vec!["text", "proximity"]),
                (1, text, vec!["text"]),
            ]
        );
        assert!(ranked.iter().all(|r| r.score <= 1.0 + MAX_BONUS));
    }

    #[test]
    fn hybrid_ranks_a_candidate_like_many_others_below_a_distinct_one() {
        let q = query(&["a"]);
        let mut set = CandidateSet::new(&q);
        // Three candidates equally similar to the query (0.6); 1 and 2 point the same way
        // (a generic observation and its near-twin), 3 the other way round the query.
        let similar = unit(0.6);
        let other = vec![similar[0], -similar[1]];
        set.add_nearest(0, [(1, 0.6), (2, 0.6), (3, 0.6)]);
        set.set_vectors(0, stored([(1, similar.clone()), (2, similar), (3, other)]));
        let candidates = set.finish(vec![row(1), row(2), row(3)]);
        let hybrid = rank(&q, candidates.clone(), SearchMode::Hybrid);
        let order: Vec<i64> = hybrid.iter().map(|r| r.row.observation_id).collect();
        assert_eq!(order, [3, 1, 2]);
        // 1 and 2: 0.6 − 0.4 × mean(1.0, cos(1, 3) = −0.28), the median; 3: 0.6 − 0.4 × −0.28,
        // the best.
        assert!((hybrid[0].score - EMBEDDING_WEIGHT).abs() < 1e-6);
        assert!(hybrid[1].score.abs() < 1e-6);
        // Embedding mode reports plain cosine similarity: a tie, broken by name.
        let embedding = rank(&q, candidates, SearchMode::Embedding);
        let scores: Vec<(i64, f64)> = (embedding.iter())
            .map(|r| (r.row.observation_id, r.score))
            .collect();
        assert_eq!(scores, [(1, 0.6), (2, 0.6), (3, 0.6)]);
    }

    #[test]
    fn hybrid_prefers_the_nodes_a_query_names_by_type_or_name() {
        let q = query(&[]);
        let mut set = CandidateSet::new(&q);
        set.add_text_matches([(1, 2.0), (2, 2.0), (3, 2.0)]);
        let (mut melanie, mut caroline, mut crate_node) = (row(1), row(2), row(3));
        melanie.entity_type = "Melanie".into();
        caroline.entity_type = "Caroline".into();
        crate_node.name = "engram-pg".into();
        crate_node.entity_type = "crate".into();
        let candidates = set.finish(vec![melanie, caroline, crate_node]);
        let ranked = |query: &str| {
            let ranked = super::rank(
                &q,
                candidates.clone(),
                SearchMode::Hybrid,
                &QueryCues::of(query),
            );
            (ranked.iter())
                .map(|r| {
                    (
                        r.row.observation_id,
                        r.signals.contains(&"named".to_owned()),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ranked("What did Caroline paint?")[0], (2, true));
        // Every word of the name: "engram-pg" is named, "engram" alone is not.
        assert_eq!(ranked("what does engram-pg keep?")[0], (3, true));
        assert!(
            ranked("what does engram keep?")
                .iter()
                .all(|(_, named)| !named)
        );
        // A type word the question does not write as a name names no node of that type.
        assert!(
            ranked("which crate keeps the pages?")
                .iter()
                .all(|(_, named)| !named)
        );
    }

    /// `ranked` rows of node `name`, each `(ordinal, valid_from day, score)`.
    fn facts(name: &str, rows: &[(u32, &str, f64)]) -> Vec<Ranked> {
        (rows.iter())
            .map(|&(ordinal, day, score)| {
                let mut r = row(i64::from(ordinal));
                r.name = name.into();
                r.ordinal = crate::Ordinal(ordinal.into());
                r.valid_from = format!("{day}T00:00:00Z").parse().unwrap();
                Ranked {
                    row: r,
                    score,
                    perspective: None,
                    signals: Vec::new(),
                    features: calibration::Features::default(),
                    used: 0.0,
                }
            })
            .collect()
    }

    #[test]
    fn of_one_nodes_facts_that_score_alike_the_newer_comes_first() {
        // 1 is older than 2 and scores a little higher: a near-tie, so it goes below 2.
        let mut ranked = facts(
            "gateway",
            &[(1, "2025-01-10", 0.97), (2, "2025-06-02", 0.95)],
        );
        newer_first(&mut ranked);
        assert_eq!(ranked[0].score, 0.95 - 0.001);
        assert_eq!(ranked[1].score, 0.95);
        // Clearly better answers keep their place, and recency lifts nothing.
        let mut clear = facts(
            "gateway",
            &[(1, "2025-01-10", 0.97), (2, "2025-06-02", 0.40)],
        );
        newer_first(&mut clear);
        assert_eq!((clear[0].score, clear[1].score), (0.97, 0.40));
        // Two facts that both score 0.99 or more both answer: the newer first, however far
        // apart their log-odds; below that, log-odds still tell an answer from a mention.
        let mut sure = facts(
            "alice",
            &[(1, "2025-01-10", 0.9999), (2, "2025-06-02", 0.999)],
        );
        newer_first(&mut sure);
        assert_eq!((sure[0].score, sure[1].score), (0.999 - 0.001, 0.999));
        let mut answer = facts(
            "alice",
            &[(1, "2025-01-10", 0.999), (2, "2025-06-02", 0.95)],
        );
        newer_first(&mut answer);
        assert_eq!((answer[0].score, answer[1].score), (0.999, 0.95));
        // Other nodes' facts are not compared; of three near-ties the newest is first and
        // the oldest last.
        let mut three = facts("a", &[(1, "2025-01-01", 0.90), (2, "2025-02-01", 0.91)]);
        three.extend(facts("b", &[(3, "2024-01-01", 0.92)]));
        three.extend(facts("a", &[(4, "2025-03-01", 0.89)]));
        newer_first(&mut three);
        let scores: Vec<f64> = three
            .iter()
            .map(|r| (r.score * 1e3).round() / 1e3)
            .collect();
        assert_eq!(scores, [0.888, 0.889, 0.92, 0.89]);
        // The same day: the later ordinal is the newer.
        let mut same_day = facts("n", &[(1, "2025-01-01", 0.5), (2, "2025-01-01", 0.5)]);
        newer_first(&mut same_day);
        assert!(same_day[0].score < same_day[1].score);
    }

    #[test]
    fn keyword_queries_are_terms_alone() {
        assert!(QueryCues::of("Kafka").keywords());
        assert!(QueryCues::of("learning rate warmup").keywords());
        assert!(QueryCues::of("Go 1.22").keywords());
        assert!(!QueryCues::of("how do we deploy?").keywords());
        assert!(!QueryCues::of("the").keywords(), "no terms");
    }

    #[test]
    fn hybrid_adds_late_interaction_scaled_among_the_candidates() {
        let mut q = query(&["a"]);
        let signs = |bits: &[u8]| Some(bits.to_vec());
        // One 16-dimensional query token; candidates agree with it in 16, 12 and 8 bits.
        q.vectors[0].vector = vec![1.0; 16];
        q.vectors[0].token_signs = signs(&[0xff, 0xff]);
        let mut set = CandidateSet::new(&q);
        set.add_text_matches([(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)]);
        set.set_vectors(
            0,
            [
                (1, signs(&[0x0f, 0x0f])),
                (2, signs(&[0x00, 0x00, 0xff, 0xff])),
                (3, signs(&[0xff, 0x0f])),
                (4, None),
            ]
            .map(|(observation_id, token_signs)| StoredVector {
                observation_id,
                vector: vec![0.0; 16],
                token_signs,
            }),
        );
        let candidates = set.finish(vec![row(1), row(2), row(3), row(4)]);
        let hybrid = rank(&q, candidates.clone(), SearchMode::Hybrid);
        let text = 1.0 - EMBEDDING_WEIGHT;
        let scores: Vec<(i64, f64)> = (hybrid.iter())
            .map(|r| (r.row.observation_id, r.score))
            .collect();
        // 2 holds a token equal to the query's (1.0), 3 one that differs in 4 bits (0.5), 1
        // in 8 (0.0, the lowest); 4 has no token signs and gets the others' mean (0.5), a
        // tie with 3 broken by name.
        assert_eq!(
            scores,
            [
                (2, text + TOKEN_WEIGHT),
                (3, text + TOKEN_WEIGHT * 0.5),
                (4, text + TOKEN_WEIGHT * 0.5),
                (1, text),
            ]
        );
        // Without token signs on the query's side, nothing is added.
        let mut plain = q.clone();
        plain.vectors[0].token_signs = None;
        let ranked = rank(&plain, candidates.clone(), SearchMode::Hybrid);
        assert!(ranked.iter().all(|r| r.score == text), "{ranked:?}");
        // The other modes ignore it.
        let text_mode = rank(&q, candidates, SearchMode::Text);
        assert!(text_mode.iter().all(|r| r.score == 1.0));
    }
}
