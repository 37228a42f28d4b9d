//! The loaded model: tokenizer, BERT, mean pooling, normalisation. Blocking code only.

use std::fs;
use std::path::Path;

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};
use engram_domain::late_interaction::{is_content_piece, pack_signs};
use engram_domain::{Embedding, Error, Result};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Texts per forward pass.
const BATCH_SIZE: usize = 32;

/// Longer texts are truncated to this many tokens (sentence-transformers' `max_seq_length`).
const MAX_TOKENS: usize = 256;

/// Every token's vector of every text of a batch: `[text][token][dimension]`, padding
/// included.
type TokenVectors = Vec<Vec<Vec<f32>>>;

pub(super) struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
}

impl Model {
    /// Loads the model from a directory holding `config.json`, `tokenizer.json` and
    /// `model.safetensors`.
    pub(super) fn load(dir: &Path) -> Result<Self> {
        let fail = |what: &str, err: &dyn std::fmt::Display| {
            Error::Unavailable(format!(
                "cannot load the local embedding model's {what} from {}: {err}; if that is the \
                 cache, delete it to fetch the files again, or set ENGRAM_MODEL_DIR to a \
                 directory holding model.safetensors, tokenizer.json and config.json",
                dir.display()
            ))
        };
        let config =
            fs::read_to_string(dir.join("config.json")).map_err(|err| fail("config.json", &err))?;
        let config: Config =
            serde_json::from_str(&config).map_err(|err| fail("config.json", &err))?;

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|err| fail("tokenizer.json", &err))?;
        // The file pads every text to 128 tokens and truncates there; sentence-transformers
        // pads to the longest text of a batch and truncates at 256.
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|err| fail("tokenizer.json", &err))?;

        let weights = fs::read(dir.join("model.safetensors"))
            .map_err(|err| fail("model.safetensors", &err))?;
        let bert = VarBuilder::from_buffered_safetensors(weights, DTYPE, &Device::Cpu)
            .and_then(|vars| BertModel::load(vars, &config))
            .map_err(|err| fail("model.safetensors", &err))?;
        Ok(Self { bert, tokenizer })
    }

    /// Embeds `texts`: one unit vector per text, in order, with the packed signs of its
    /// content tokens' vectors ([`engram_domain::late_interaction`]).
    pub(super) fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        // Longest first, so that each batch pads little.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| std::cmp::Reverse(texts[index].len()));
        let mut embeddings = vec![Embedding::from(Vec::new()); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch = chunk.iter().map(|&index| texts[index].as_str()).collect();
            for (&index, embedding) in chunk.iter().zip(self.embed_batch(batch)?) {
                embeddings[index] = embedding;
            }
        }
        Ok(embeddings)
    }

    fn embed_batch(&self, texts: Vec<&str>) -> Result<Vec<Embedding>> {
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
        let type_ids = column(tokenizers::Encoding::get_type_ids);
        let mask = column(tokenizers::Encoding::get_attention_mask);
        let (vectors, hidden) = self
            .forward(ids, type_ids, mask, (rows, columns))
            .map_err(|err| Error::Internal(format!("running the local model: {err}")))?;
        let embeddings = (vectors.into_iter().zip(hidden).zip(&encodings))
            .map(|((vector, tokens), encoding)| {
                let content = (encoding.get_tokens().iter())
                    .zip(encoding.get_attention_mask())
                    .zip(&tokens)
                    .filter(|((piece, mask), _)| **mask == 1 && is_content_piece(piece))
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
        ids: Vec<u32>,
        type_ids: Vec<u32>,
        mask: Vec<u32>,
        shape: (usize, usize),
    ) -> candle_core::Result<(Vec<Vec<f32>>, TokenVectors)> {
        let device = &self.bert.device;
        let ids = Tensor::from_vec(ids, shape, device)?;
        let type_ids = Tensor::from_vec(type_ids, shape, device)?;
        let mask = Tensor::from_vec(mask, shape, device)?;
        let hidden = self.bert.forward(&ids, &type_ids, Some(&mask))?;
        let mask = mask.to_dtype(DTYPE)?.unsqueeze(2)?;
        let sums = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.maximum(1e-9)?;
        let means = sums.broadcast_div(&counts)?;
        let norms = means.sqr()?.sum_keepdim(1)?.sqrt()?.maximum(1e-12)?;
        Ok((means.broadcast_div(&norms)?.to_vec2()?, hidden.to_vec3()?))
    }
}
