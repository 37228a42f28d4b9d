#!/usr/bin/env python3
"""The local model's forward pass in numpy (BERT, mean pooling), to get each content token's
full vector, which `embed_lines` reduces to signs; checked against `embed_lines`' pooled vectors.

    pip install numpy tokenizers
    python3 xtask/ablation/numpy_bert.py MODEL_DIR IN OUT.npz [query|passage]

OUT.npz: `pooled` (lines x 384, unit), `tokens` (all content tokens x 384, raw), `offsets`
(where each line's tokens start; lines + 1 entries).
"""
import json, os, struct, sys

import numpy as np
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STOP = set(open(os.path.join(ROOT, "crates/engram-domain/src/stop_words.txt")).read().split())


def load_safetensors(path):
    f = open(path, "rb")
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        dt = {"F32": np.float32, "F16": np.float16}[v["dtype"]]
        out[k] = np.frombuffer(data[base + a:base + b], dtype=dt).reshape(v["shape"])
    return out


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
    s = np.sign(x)
    x = np.abs(x)
    t = 1 / (1 + 0.3275911 * x)
    y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-x * x)
    return s * y


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def is_content_piece(piece):
    marker = (piece.startswith("[") and piece.endswith("]")) or (piece.startswith("<") and piece.endswith(">"))
    word = piece.lstrip("\u2581")
    return (not marker) and any(c.isalnum() for c in word) and word.lower() not in STOP


class Bert:
    def __init__(self, model_dir):
        self.cfg = json.load(open(os.path.join(model_dir, "config.json")))
        w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.w = {k.removeprefix("bert."): v for k, v in w.items()}
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()
        self.eps = self.cfg.get("layer_norm_eps", 1e-12)
        self.heads = self.cfg["num_attention_heads"]

    def lin(self, x, name):
        return x @ self.w[name + ".weight"].astype(np.float32).T + self.w[name + ".bias"]

    def forward(self, ids):
        w = self.w
        x = w["embeddings.word_embeddings.weight"][ids].astype(np.float32)
        x = x + w["embeddings.position_embeddings.weight"][:len(ids)] + w["embeddings.token_type_embeddings.weight"][0]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        n, h = x.shape
        d = h // self.heads
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            q = self.lin(x, p + "attention.self.query").reshape(n, self.heads, d).transpose(1, 0, 2)
            k = self.lin(x, p + "attention.self.key").reshape(n, self.heads, d).transpose(1, 0, 2)
            v = self.lin(x, p + "attention.self.value").reshape(n, self.heads, d).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            c = (s @ v).transpose(1, 0, 2).reshape(n, h)
            x = layer_norm(self.lin(c, p + "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
            m = self.lin(x, p + "intermediate.dense")
            m = 0.5 * m * (1 + erf(m / np.sqrt(2)))
            x = layer_norm(self.lin(m, p + "output.dense") + x,
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x

    def embed(self, text, prefix):
        enc = self.tok.encode(prefix + text)
        hidden = self.forward(np.array(enc.ids))
        pooled = hidden.mean(0)
        pooled /= np.linalg.norm(pooled)
        keep = [j for j, (piece, (_, end)) in enumerate(zip(enc.tokens, enc.offsets))
                if end > len(prefix) and is_content_piece(piece)]
        return pooled, hidden[keep]


def main():
    model_dir, src, dst = sys.argv[1:4]
    role = sys.argv[4] if len(sys.argv) > 4 else "passage"
    prefix = {"query": "query: ", "passage": "passage: ", "none": ""}[role]
    bert = Bert(model_dir)
    pooled, tokens, offsets = [], [], [0]
    for line in open(src).read().split("\n")[:-1]:
        p, t = bert.embed(line, prefix)
        pooled.append(p)
        tokens.append(t)
        offsets.append(offsets[-1] + len(t))
    np.savez(dst, pooled=np.array(pooled, np.float32), tokens=np.concatenate(tokens).astype(np.float32),
             offsets=np.array(offsets))


if __name__ == "__main__":
    main()
