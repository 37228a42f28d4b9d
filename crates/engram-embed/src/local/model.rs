//! The loaded model: tokenizer, BERT, mean pooling, normalisation. Blocking code only.

use std::fs;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{LayerNorm, Module, VarBuilder};
use candle_transformers::models::bert::{BertEncoder, Config};
use engram_domain::search::late_interaction::{is_content_piece, pack_signs};
use engram_domain::{Embedding, Error, Result};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::catalog::LocalModel;
use super::words::WordTable;

/// Texts per forward pass.
const BATCH_SIZE: usize = 32;

/// Every token's vector of every text of a batch: `[text][token][dimension]`, padding
/// included.
type TokenVectors = Vec<Vec<Vec<f32>>>;

/// The word-embedding table's name in `model.safetensors`.
const WORDS: &str = "embeddings.word_embeddings.weight";

pub(super) struct Model {
    spec: LocalModel,
    embeddings: Embeddings,
    encoder: BertEncoder,
    tokenizer: Tokenizer,
}

/// BERT's embedding layer: word + position + token type (always 0), then layer norm.
struct Embeddings {
    words: WordTable,
    positions: Tensor,
    token_type: Tensor,
    norm: LayerNorm,
}

/// Whether a query or a stored text is embedded (they take different prefixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Query,
    Document,
}

impl Model {
    /// Loads `spec` from a directory holding `config.json`, `tokenizer.json` and
    /// `model.safetensors`.
    pub(super) fn load(spec: LocalModel, dir: &Path) -> Result<Self> {
        let fail = |what: &str, err: &dyn std::fmt::Display| {
            Error::Unavailable(format!(
                "cannot load the local embedding model {spec}'s {what} from {}: {err}; if that \
                 is the cache, delete it to fetch the files again, or set ENGRAM_MODEL_DIR to a \
                 directory holding model.safetensors, tokenizer.json and config.json of {}",
                dir.display(),
                spec.display_name()
            ))
        };
        let config =
            fs::read_to_string(dir.join("config.json")).map_err(|err| fail("config.json", &err))?;
        let config: Config =
            serde_json::from_str(&config).map_err(|err| fail("config.json", &err))?;

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|err| fail("tokenizer.json", &err))?;
        // Pad to the longest text of a batch (some files pad every text to 128) and truncate
        // at the model's limit.
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: spec.max_tokens(),
                ..TruncationParams::default()
            }))
            .map_err(|err| fail("tokenizer.json", &err))?;

        let weights = fs::read(dir.join("model.safetensors"))
            .map_err(|err| fail("model.safetensors", &err))?;
        let load = || -> candle_core::Result<(Embeddings, BertEncoder)> {
            let quantized = match spec.quantized_words() {
                true => Some(WordTable::quantized_from_safetensors(&weights, WORDS)?),
                false => None,
            };
            let vars = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
            let words = match quantized {
                Some(table) => table,
                None => WordTable::Dense(vars.get((config.vocab_size, config.hidden_size), WORDS)?),
            };
            let (hidden, embeddings) = (config.hidden_size, vars.pp("embeddings"));
            let embeddings = Embeddings {
                words,
                positions: embeddings.get(
                    (config.max_position_embeddings, hidden),
                    "position_embeddings.weight",
                )?,
                token_type: embeddings
                    .get(
                        (config.type_vocab_size, hidden),
                        "token_type_embeddings.weight",
                    )?
                    .get(0)?,
                norm: candle_nn::layer_norm(
                    hidden,
                    config.layer_norm_eps,
                    embeddings.pp("LayerNorm"),
                )?,
            };
            let encoder = BertEncoder::load(vars.pp("encoder"), &config)?;
            Ok((embeddings, encoder))
        };
        let (embeddings, encoder) = load().map_err(|err| fail("model.safetensors", &err))?;
        Ok(Self {
            spec,
            embeddings,
            encoder,
            tokenizer,
        })
    }

    /// Embeds `texts` in `role`: one unit vector per text, in order, with the packed signs of
    /// its content tokens' vectors ([`engram_domain::search::late_interaction`]).
    pub(super) fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Embedding>> {
        let prefix = match role {
            Role::Query => self.spec.query_prefix(),
            Role::Document => self.spec.document_prefix(),
        };
        // Longest first, so that each batch pads little.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| std::cmp::Reverse(texts[index].len()));
        let mut embeddings = vec![Embedding::from(Vec::new()); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch = (chunk.iter())
                .map(|&index| format!("{prefix}{}", texts[index]))
                .collect();
            for (&index, embedding) in chunk.iter().zip(self.embed_batch(batch, prefix.len())?) {
                embeddings[index] = embedding;
            }
        }
        Ok(embeddings)
    }

    /// Embeds one batch of texts that start with a prefix of `prefix_len` bytes, whose tokens
    /// are left out of the token signs.
    fn embed_batch(&self, texts: Vec<String>, prefix_len: usize) -> Result<Vec<Embedding>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|err| Error::Internal(format!("tokenizing for the local model: {err}")))?;
        let rows = encodings.len();
        let columns = encodings.first().map_or(0, |encoding| encoding.len());
        let column = |part: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|encoding| part(encoding).iter().copied())
                .collect()
        };
        let ids = column(tokenizers::Encoding::get_ids);
        let mask = column(tokenizers::Encoding::get_attention_mask);
        let (vectors, hidden) = self
            .forward(&ids, mask, (rows, columns))
            .map_err(|err| Error::Internal(format!("running the local model: {err}")))?;
        let embeddings = (vectors.into_iter().zip(hidden).zip(&encodings))
            .map(|((vector, tokens), encoding)| {
                let content = (encoding.get_tokens().iter())
                    .zip(encoding.get_attention_mask())
                    .zip(encoding.get_offsets())
                    .zip(&tokens)
                    .filter(|(((piece, mask), (_, end)), _)| {
                        **mask == 1 && *end > prefix_len && is_content_piece(piece)
                    })
                    .map(|(_, token)| token.as_slice());
                let signs = pack_signs(vector.len(), content);
                Embedding {
                    vector,
                    token_signs: (!signs.is_empty()).then_some(signs),
                }
            })
            .collect();
        Ok(embeddings)
    }

    /// BERT, then mean pooling over the attention mask, then L2 normalisation; returns the
    /// pooled vectors and every token's vector.
    fn forward(
        &self,
        ids: &[u32],
        mask: Vec<u32>,
        (rows, columns): (usize, usize),
    ) -> candle_core::Result<(Vec<Vec<f32>>, TokenVectors)> {
        let device = &Device::Cpu;
        let embedded = self.embeddings.forward(ids, (rows, columns))?;
        let mask = Tensor::from_vec(mask, (rows, columns), device)?.to_dtype(DType::F32)?;
        // BERT's additive mask: 0 where a token is, the lowest float where padding is.
        let additive = ((mask.ones_like()? - &mask)? * f64::from(f32::MIN))?
            .unsqueeze(1)?
            .unsqueeze(1)?;
        let hidden = self.encoder.forward(&embedded, &additive)?;
        let mask = mask.unsqueeze(2)?;
        let sums = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.maximum(1e-9)?;
        let means = sums.broadcast_div(&counts)?;
        let norms = means.sqr()?.sum_keepdim(1)?.sqrt()?.maximum(1e-12)?;
        Ok((means.broadcast_div(&norms)?.to_vec2()?, hidden.to_vec3()?))
    }
}

impl Embeddings {
    /// `[rows, columns, hidden]` embeddings of token ids laid out row after row.
    fn forward(&self, ids: &[u32], (rows, columns): (usize, usize)) -> candle_core::Result<Tensor> {
        let words = self.words.rows(ids)?.reshape((rows, columns, ()))?;
        let positions = self.positions.narrow(0, 0, columns)?;
        let summed = words
            .broadcast_add(&positions)?
            .broadcast_add(&self.token_type)?;
        self.norm.forward(&summed)
    }
}
