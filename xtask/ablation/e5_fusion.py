#!/usr/bin/env python3
"""Hybrid fusion for multilingual-e5-small on the LoCoMo dev split (facts and speakers
mappings): the server's ranking replicated (as locomo.py's late-interaction table) with every
signal precomputed per question, then variants of how the signals are scaled and weighed.

    OMP_NUM_THREADS=1 nice -n 10 python3 xtask/ablation/e5_fusion.py [--model multilingual-e5-small]

Vectors and token signs come from target/release/examples/embed_lines (questions embedded as
queries, ENGRAM_EMBED_AS=query) and are cached in target/ablation-e5-fusion/<model>/.
"""
import argparse, os, subprocess, sys, itertools

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo as L  # noqa: E402

ROOT = L.ROOT
BIN = os.path.join(ROOT, "target", "release", "examples", "embed_lines")
FACTS_R = "new general {entity_type} {name}: {observation}"
SPEAK_R = "sp new general {entity_type} {name}: {observation}"


def embed(lines, name, out, query=False):
    """Unit vectors and ±1 token-sign matrices of `lines`, cached under `out`."""
    os.makedirs(out, exist_ok=True)
    src, vec, sig = (os.path.join(out, f"{name}.{x}") for x in ("txt", "f32", "signs"))
    text = "\n".join(l.replace("\n", " ") for l in lines) + "\n"
    if not (os.path.exists(vec) and os.path.exists(sig) and os.path.exists(src)
            and open(src).read() == text):
        open(src, "w").write(text)
        env = dict(os.environ)
        env.pop("ENGRAM_EMBED_AS", None)
        if query:
            env["ENGRAM_EMBED_AS"] = "query"
        subprocess.run(["nice", "-n", "10", BIN, src, vec, sig], env=env, check=True)
    v = np.fromfile(vec, dtype="<f4").reshape(len(lines), -1)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    return v, L.read_signs(sig, len(lines), v.shape[1])


class Prepared:
    """Per question: candidates and every raw signal of the server's hybrid."""

    def __init__(self, facts, questions, Q, q_signs, D, d_signs, T, named_on, depth=50, text_depth=100, hub_k=10):
        self.rows = []
        asked = [L.named_dates(q["q"]) for q in questions]
        docs = [f"{f['date']}: {f['fact']}" for f in facts]
        dated = [L.named_dates(d) for d in docs]
        asked_days, doc_days = [L.days(q["q"]) for q in questions], [L.days(d) for d in docs]
        english = L.snowballstemmer.stemmer("english")
        doc_stems = [english.stemWords(L.words(d)) for d in docs]
        near2 = []
        for s in doc_stems:
            near2.append(set(zip(s, s[1:])) | set(zip(s, s[2:])))
        speakers = np.array([f["speaker"].lower() for f in facts])
        self.corpus_p = (np.concatenate([x for x in d_signs if len(x)]) > 0).mean(0)
        E = Q @ D.T
        for qi, q in enumerate(questions):
            terms = []
            for w in L.words(q["q"]):
                if w not in L.STOP and english.stemWord(w) not in terms:
                    terms.append(english.stemWord(w))
            t, e = T[qi], E[qi]
            ids = np.union1d(L.top(e, depth), [i for i in L.top(t, text_depth) if t[i] > 0]).astype(int)
            sim = e[ids]
            pair = D[ids] @ D[ids].T
            np.fill_diagonal(pair, -np.inf)
            hub = np.sort(pair, 1)[:, -min(hub_k, len(ids) - 1):].mean(1)
            qm, qy = asked[qi]
            bonus = 0.1 * np.array([bool(qm or qy) and (not qm or bool(qm & dated[i][0]))
                                    and (not qy or bool(qy & dated[i][1])) for i in ids])
            bonus += 0.05 * np.array([min(sum((a, b) in near2[i] for a, b in zip(terms, terms[1:])), 3)
                                      for i in ids])
            if named_on:
                bonus += 0.05 * np.isin(speakers[ids], L.words(q["q"]))
            if asked_days[qi]:
                bonus += 0.1 * np.array([max([0.0] + [1 - abs((a - b).days) / 7 for a in asked_days[qi]
                                                      for b in doc_days[i]]) for i in ids])
            qs = q_signs[qi]
            has = np.array([len(d_signs[i]) > 0 for i in ids])
            toks = np.concatenate([d_signs[i] for i in ids if len(d_signs[i])]) if has.any() else None
            starts = np.cumsum([0] + [len(d_signs[i]) for i in ids if len(d_signs[i])])[:-1]
            self.rows.append(dict(ids=ids, sim=sim, hub=hub, text=t[ids], bonus=bonus, qs=qs,
                                  has=has, toks=toks, starts=starts))
        self.cache = {}

    def agreements(self, dims="all"):
        """Per question, candidates x query tokens best agreements (NaN without tokens); `dims`:
        'all' (the server), ('corpus', c) the dimensions whose sign is balanced over every
        stored token (|share positive - 0.5| < c), ('cand', c) the same among the candidates'
        tokens, ('soft', src) each dimension weighted by its sign variance 1-(2p-1)^2."""
        key = str(dims)
        if key in self.cache:
            return self.cache[key]
        out = []
        for r in self.rows:
            qs, toks = r["qs"], r["toks"]
            if not len(qs) or toks is None:
                out.append(None)
                continue
            if dims == "all":
                w = np.ones(qs.shape[1])
            else:
                kind, c = dims
                p = self.corpus_p if kind == "corpus" or c == "corpus" else (toks > 0).mean(0)
                if kind == "soft":
                    w = 1 - (2 * p - 1) ** 2
                else:
                    w = (np.abs(p - 0.5) < c).astype(float)
            a = np.maximum.reduceat((qs * w) @ toks.T, r["starts"], axis=1).T / w.sum()
            agree = np.full((len(r["ids"]), len(qs)), np.nan)
            agree[r["has"]] = a
            out.append(agree)
        self.cache[key] = out
        return out


def late(agree, weighted=True, held=0.6, floor=0.05, mode="mean"):
    if agree is None:
        return None
    ok = ~np.isnan(agree[:, 0])
    rows = agree[ok]
    w = np.ones(agree.shape[1])
    if weighted and len(rows):
        if isinstance(held, str) and held.startswith("rel"):
            # held relative: a candidate holds a token when its agreement is within `d` of the best
            d = float(held[3:])
            hold = rows >= rows.max(0) - d
            w = np.maximum(np.log((len(rows) + 1) / (hold.sum(0) + 0.5)), floor)
        else:
            w = np.maximum(np.log((len(rows) + 1) / ((rows >= held).sum(0) + 0.5)), floor)
    a = agree
    if mode == "centred":  # each token's agreement less its median among the candidates
        a = agree - np.nanmedian(rows, 0)
    elif mode == "z":
        a = (agree - np.nanmean(rows, 0)) / (np.nanstd(rows, 0) + 1e-6)
    out = (a * w).sum(1) / w.sum()
    out[~ok] = np.nan
    return out


def scaled(v, how="minmax"):
    """Among the candidates: min-max to 0-1; NaN to the mean of the others."""
    if v is None:
        return 0.0
    ok = np.isfinite(v)
    if ok.sum() < 2:
        return np.zeros(len(v))
    lo, hi = v[ok].min(), v[ok].max()
    if hi <= lo:
        return np.zeros(len(v))
    if how == "minmax":
        s = (v - lo) / (hi - lo)
    elif how == "median":
        med = np.median(v[ok])
        s = np.maximum(v - med, 0) / (hi - med) if hi > med else np.zeros(len(v))
    elif how == "max":
        s = np.maximum(v, 0) / hi if hi > 0 else np.zeros(len(v))
    elif how.startswith("top"):  # (s - k-th best) / (best - k-th best), clipped at 0
        k = int(how[3:])
        kth = np.sort(v[ok])[::-1][min(k, ok.sum()) - 1]
        s = np.maximum(v - kth, 0) / (hi - kth) if hi > kth else np.zeros(len(v))
    elif how == "z":
        s = (v - v[ok].mean()) / (v[ok].std() + 1e-9)
    else:
        raise ValueError(how)
    mean = s[ok].mean()
    return np.where(ok, s, mean)


def text_scaled(t, how="max"):
    if t.max() <= 0:
        return np.zeros(len(t))
    if how == "max":
        return t / t.max()
    if how == "minmax":
        return (t - t.min()) / (t.max() - t.min())
    return scaled(t.astype(float), how)


def rank_all(P, w_emb=0.6, w_late=0.7, hub=0.4, sim_norm="max", text_norm="max",
             weighted=True, held=0.6, late_mode="mean", late_norm="minmax", bonus=1.0,
             rrf=None, dims="all"):
    out = []
    A = P.agreements(dims) if w_late else [None] * len(P.rows)
    for r, agree in zip(P.rows, A):
        ids = r["ids"]
        sim = r["sim"] - hub * r["hub"]
        m = late(agree, weighted, held, mode=late_mode) if w_late else None
        if rrf is not None:
            k = rrf
            s = np.zeros(len(ids))
            def rr(v):
                order = np.argsort(-v, kind="stable")
                rk = np.empty(len(v)); rk[order] = np.arange(len(v))
                return 1 / (k + rk + 1)
            s += w_emb * rr(sim)
            s += (1 - w_emb) * rr(r["text"]) * (r["text"] > 0)
            if m is not None and w_late:
                s += w_late * rr(np.nan_to_num(m, nan=np.nanmean(m)))
            s = s / (1 / (k + 1)) + bonus * r["bonus"]
        else:
            en = scaled(sim, sim_norm)
            tn = text_scaled(r["text"], text_norm)
            s = w_emb * en + (1 - w_emb) * tn + bonus * r["bonus"]
            if m is not None:
                s = s + w_late * scaled(m, late_norm)
        out.append(ids[np.argsort(-s, kind="stable")[:10]])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "locomo-dev"))
    ap.add_argument("--model", default="multilingual-e5-small")
    ap.add_argument("--part", default="all")
    args = ap.parse_args()
    os.environ["ENGRAM_MODEL"] = args.model
    out = os.path.join(ROOT, "target", "ablation-e5-fusion", args.model)
    facts, questions = L.load(args.data)
    judge = L.Judge(facts, questions)
    Q, q_signs = embed([q["q"] for q in questions], "questions", out, query=True)
    docs = [f"{f['date']}: {f['fact']}" for f in facts]
    T = L.bm25(docs, [q["q"] for q in questions])
    maps = {}
    for mapping, rendering in [("facts", FACTS_R), ("speakers", SPEAK_R)]:
        D, d_signs = embed([L.RENDERINGS[rendering](f) for f in facts], mapping, out)
        maps[mapping] = (D, Prepared(facts, questions, Q, q_signs, D, d_signs, T, mapping == "facts"))
    print(f"model {args.model}: {len(facts)} facts, {len(questions)} questions", file=sys.stderr)

    def row(name, **cfg):
        cells = []
        for mapping in ["facts", "speakers"]:
            r = judge.recall(rank_all(maps[mapping][1], **cfg))
            cells.append(" | ".join(f"{x:.3f}" for x in r))
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)

    def header(t):
        print(f"\n### {t}\n\n| variant | facts R@1 | R@5 | R@10 | MRR | speakers R@1 | R@5 | R@10 | MRR |\n"
              "|---|---|---|---|---|---|---|---|---|", flush=True)

    D = maps["facts"][0]
    E = Q @ D.T
    header("Reference")
    r = judge.recall([L.top(s) for s in E]); print(f"| embedding alone (facts) | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} |")
    r = judge.recall([L.top(s) for s in T]); print(f"| text alone | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} |")
    sims = np.sort(E, 1)[:, ::-1]
    print(f"cosine: best {np.median(sims[:, 0]):.3f}, 10th {np.median(sims[:, 9]):.3f}, 50th {np.median(sims[:, 49]):.3f}, "
          f"median {np.median(np.median(E, 1)):.3f}", file=sys.stderr)
    row("server (baseline: max, 0.6/0.4, late 0.7 weighted held 0.6, hub 0.4)")
    row("server without late interaction", w_late=0)
    row("server without hubness", hub=0)
    parts = args.part.split(",")
    if "all" in parts or "old" in parts:
        old_sections(row, header)
    if "all" in parts or "final" in parts:
        header("Proposal: similarity scaled from the candidates' median; late interaction over the sign "
               "dimensions that vary among the candidates (10-90% positive); else as the server")
        row("similarity median only", sim_norm="median")
        row("late interaction mask only", dims=("cand", 0.4))
        row("both (proposal)", sim_norm="median", dims=("cand", 0.4))
        row("both, embedding 0.5 / text 0.5, late 0.5", sim_norm="median", dims=("cand", 0.4), w_emb=0.5, w_late=0.5)
        row("similarity (s - 20th best) / (best - 20th), 0.5/0.5, late 0.5 tokens alike",
            sim_norm="top20", w_emb=0.5, w_late=0.5, weighted=False)
    if "all" in parts or "dims" in parts:
        header("3b. Late interaction over the informative sign dimensions (else as server)")
        for dims in [("corpus", 0.45), ("corpus", 0.4), ("corpus", 0.3), ("cand", 0.45), ("cand", 0.4),
                     ("cand", 0.3), ("soft", "corpus"), ("soft", "cand")]:
            for held in [0.5, 0.6, 0.7]:
                row(f"dims {dims}, weighted, held {held}", dims=dims, held=held)
            row(f"dims {dims}, tokens alike", dims=dims, weighted=False)


def old_sections(row, header):
    header("1. Similarity scaling among candidates (else as server)")
    for how in ["max", "minmax", "median", "top10", "top20", "z"]:
        row(f"similarity {how}", sim_norm=how)
    for how in ["minmax", "median"]:
        row(f"similarity {how}, text {how}", sim_norm=how, text_norm=how)

    header("3. Late interaction variants (else as server)")
    row("tokens alike", weighted=False)
    for held in [0.5, 0.55, 0.65, 0.7, 0.75, 0.8]:
        row(f"weighted, held {held}", held=held)
    for d in [0.05, 0.1]:
        row(f"weighted, held within {d} of best", held=f"rel{d}")
    row("centred per token (less median), weighted", late_mode="centred")
    row("z per token, alike", late_mode="z", weighted=False)
    row("late scaled median", late_norm="median")

    header("4. RRF of the signals (k, weights emb/text, late)")
    for k in [10, 30, 60]:
        row(f"RRF k={k}, 0.6/0.4, late 0.7", rrf=k)
        row(f"RRF k={k}, 0.5/0.5, late 1.0", rrf=k, w_emb=0.5, w_late=1.0)


if __name__ == "__main__":
    main()


def components(P, hub=0.4, sim_norm="max", text_norm="max", dims="all", weighted=True, held=0.6,
               late_norm="minmax"):
    """Per question the scaled signals (similarity, text, late interaction) and the bonuses."""
    A = P.agreements(dims)
    out = []
    for r, agree in zip(P.rows, A):
        en = scaled(r["sim"] - hub * r["hub"], sim_norm)
        tn = text_scaled(r["text"], text_norm)
        m = late(agree, weighted, held)
        ln = scaled(m, late_norm) if m is not None else np.zeros(len(en))
        out.append((r["ids"], en, tn, ln, r["bonus"]))
    return out


def fuse(C, w_emb, w_late, bonus=1.0):
    return [ids[np.argsort(-(w_emb * en + (1 - w_emb) * tn + w_late * ln + bonus * b), kind="stable")[:10]]
            for ids, en, tn, ln, b in C]


def grid(maps, judge, sim_norms, text_norms, late_norms, lates, hubs, w_embs, w_lates):
    """Every combination, both mappings; rows as (config, facts recall, speakers recall)."""
    res = []
    for sn, tn_, ln_, (dims, weighted, held), hub in itertools.product(sim_norms, text_norms, late_norms, lates, hubs):
        C = {m: components(maps[m][1], hub, sn, tn_, dims, weighted, held, ln_) for m in maps}
        for we, wl in itertools.product(w_embs, w_lates):
            rec = [judge.recall(fuse(C[m], we, wl)) for m in ["facts", "speakers"]]
            res.append((dict(sim=sn, text=tn_, late_norm=ln_, dims=dims, weighted=weighted, held=held,
                             hub=hub, w_emb=we, w_late=wl), *rec))
    return res
