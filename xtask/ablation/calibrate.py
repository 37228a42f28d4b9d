#!/usr/bin/env python3
"""Calibrated, absolute search scores fitted offline on the LoCoMo dev split (facts mapping).

Every conversation is its own memory (as a user's would be). For each query the hybrid
candidates are gathered as the server gathers them (`locomo.py`, `fusion.rs` `rank()`: the 50
nearest by embedding ∪ the 100 best bm25 matches) and each candidate gets the features
`crate::calibration::Features` holds:

- cos: its raw cosine with the query (no hubness correction),
- late: late interaction, the weighted mean of the query tokens' best agreements (-1..1,
  before scaling among the candidates),
- coverage: the share of the query's terms (English-stemmed, stop words out) its text holds,
- share: its hybrid ranking score over the best among the query's candidates,

and, to judge what else would help, a few more absolute ones (see `EXTRA`). Label: the
candidate comes from an evidence dia_id. Three query sets: on-topic (a conversation's questions
against its own facts), off-topic (conversation i's questions against conversation i+1's facts:
every candidate negative) and nonsense (50 strings against every conversation's facts).
Logistic regressions are fitted with leave-one-conversation-out cross-validation (nonsense
strings split into five folds as well), then on everything. Run from the repository root:

    pip install numpy snowballstemmer
    OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 nice -n 10 python3 xtask/ablation/calibrate.py \
        [--data ../shared/data/locomo-dev] [--model multilingual-e5-small]

Vectors and token signs come from `target/release/examples/embed_lines` (built by
`cargo build --release -p engram-embed --examples`), questions embedded as queries
(`ENGRAM_EMBED_AS=query`), facts as documents; cached in target/ablation/calibrate/.
"""
import argparse, glob, json, math, os, random, subprocess, sys
from collections import Counter

import numpy as np
import snowballstemmer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo  # noqa: E402
from locomo import ROOT, STOP, bm25, days, load, max_sims, named_dates, top, words  # noqa: E402

ENGLISH = snowballstemmer.stemmer("english")  # the server's `words::query_terms` / `stems`
CACHE = os.path.join(ROOT, "target", "ablation", "calibrate")
BINARY = os.path.join(ROOT, "target", "release", "examples", "embed_lines")

# Hybrid constants (crates/engram-domain/src/fusion.rs).
EMBEDDING_WEIGHT, DATE_BONUS, DAY_BONUS, PROXIMITY_BONUS, PROXIMITY_PAIRS = 0.6, 0.1, 0.1, 0.05, 3
NAMED_BONUS, TOKEN_WEIGHT, HUBNESS_WEIGHT, HUBNESS_NEIGHBOURS = 0.05, 0.7, 0.4, 10
DEPTH, TEXT_DEPTH = 50, 100

BASE = ["cos", "late", "coverage", "share"]
# Extra absolute features, each computable from what a search has (or a store can count):
EXTRA = {
    "idfcov": "coverage with each term weighted by its idf over the memory's facts",
    "found": "share of the query's terms that occur in the memory at all (query-level)",
    "rare": "the candidate's agreement on the query token weighted most (rarest among the candidates)",
    "tokmin": "the least, over query tokens, of the best agreement any candidate has (query-level)",
    "gap": "cos minus the mean cos of the query's 50 nearest",
    "cosmax": "the best cos among the query's candidates (query-level)",
    "named": "the query names the candidate's node (every word of its type or name is a query word)",
    "pairs": "pairs of consecutive query terms side by side in its text (proximity, at most 3)",
    "covall": "coverage of the node's type and the text together",
}


def nonsense_strings():
    fixed = ["zzzzqqq", "asdf jkl", "qwertyuiop", "asdfghjkl", "capital of France quantum banana",
             "hjkl hjkl hjkl", "mnbvcxz", "zxcvbnm asdf", "qazwsxedc rfvtgb", "ooooooooooo",
             "lorem ipsum dolor sit amet", "blorft wizzle snark", "xylophone zeppelin quasar",
             "purple elephant carburetor symphony", "fjdksla fjdksla", "wqpeoriu tyalskdj",
             "aaaaaaa bbbbbbb", "jjjjjjjj kkkkkk", "pfffft", "1234567890",
             "ghjghj ghj", "sdfsdf sdf", "kkkkkkkkkkkk", "uiop uiop", "yxcvb nmlkj"]
    rng = random.Random(7)
    letters = [''.join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 12)))
               for _ in range(12)]
    vocab = ("quantum banana tectonic saxophone nebula carburetor lattice turbine molecule "
             "glacier sprocket algebra walrus tungsten vortex meridian plywood cobalt "
             "isotope kazoo").split()
    combos = [' '.join(rng.sample(vocab, rng.randint(2, 4))) for _ in range(13)]
    out = fixed + letters + combos
    assert len(out) == 50 and len(set(out)) == 50
    return out


def embed(lines, name, role, model):
    """Vectors (unit rows) and token-sign matrices (±1, one row per content token)."""
    os.makedirs(CACHE, exist_ok=True)
    stem = os.path.join(CACHE, f"{model}-{role}-{name}")
    src, vec, sig = stem + ".txt", stem + ".f32", stem + ".signs"
    text = "\n".join(l.replace("\n", " ") for l in lines) + "\n"
    if not (all(os.path.exists(p) for p in (src, vec, sig)) and open(src).read() == text):
        open(src, "w").write(text)
        env = dict(os.environ, ENGRAM_MODEL=model, OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1")
        if role == "query":
            env["ENGRAM_EMBED_AS"] = "query"
        else:
            env.pop("ENGRAM_EMBED_AS", None)
        print(f"embedding {len(lines)} {name} as {role}s", file=sys.stderr)
        subprocess.run(["nice", "-n", "10", BINARY, src, vec, sig], cwd=ROOT, env=env, check=True)
    v = np.fromfile(vec, dtype="<f4").reshape(len(lines), -1)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    raw, signs, at = open(sig, "rb").read(), [], 0
    dims = v.shape[1]
    while at < len(raw):
        n = int.from_bytes(raw[at:at + 4], "little")
        bits = np.unpackbits(np.frombuffer(raw[at + 4:at + 4 + n], np.uint8), bitorder="little")
        signs.append(bits.reshape(-1, dims).astype(np.float32) * 2 - 1)
        at += 4 + n
    assert len(signs) == len(lines)
    return v, signs


def terms_of(q):
    """`words::query_terms`: non-stop words, English-stemmed, each once."""
    out = []
    for w in words(q):
        if w not in STOP:
            s = ENGLISH.stemWord(w)
            if s not in out:
                out.append(s)
    return out


class Memory:
    """One conversation's facts as a memory: vectors, signs, texts and their statistics."""

    def __init__(self, idx, facts, vectors, signs):
        self.idx = np.array(idx)
        self.docs = [f"{facts[i]['date']}: {facts[i]['fact']}" for i in idx]
        self.turns = [set(facts[i]["turns"]) for i in idx]
        self.speakers = [facts[i]["speaker"].lower() for i in idx]
        self.V = vectors[idx]
        self.signs = [signs[i] for i in idx]
        self.stems = [ENGLISH.stemWords(words(d)) for d in self.docs]
        self.stemsets = [set(s) for s in self.stems]
        self.df = Counter(w for s in self.stemsets for w in s)
        self.dated = [named_dates(d) for d in self.docs]
        self.days = [days(d) for d in self.docs]

    def idf(self, term):
        return math.log((len(self.docs) + 1) / (self.df.get(term, 0) + 0.5))


def proximity(terms, stems):
    if len(terms) < 2:
        return 0
    n = 0
    for a, b in zip(terms, terms[1:]):
        if any(s == a and b in stems[i + 1:i + 3] for i, s in enumerate(stems)):
            n += 1
    return n


def scaled_among(values):
    """fusion.rs `scaled_among`: min-max among the candidates, the mean for those without."""
    known = values[np.isfinite(values)]
    if len(known) == 0 or known.max() <= known.min():
        return np.zeros(len(values))
    s = (values - known.min()) / (known.max() - known.min())
    return np.where(np.isfinite(s), s, np.nanmean(s))


def hybrid_candidates(qtext, qvec, qsigns, mem, T, ev):
    """The hybrid candidates of one query in one memory with their features and rank score."""
    e = mem.V @ qvec
    ids = np.union1d(top(e, DEPTH), [i for i in top(T, TEXT_DEPTH) if T[i] > 0]).astype(int)
    cos = e[ids]
    pair = mem.V[ids] @ mem.V[ids].T
    np.fill_diagonal(pair, -np.inf)
    k = min(HUBNESS_NEIGHBOURS, len(ids) - 1)
    hub = np.sort(pair, 1)[:, -k:].mean(1) if k > 0 else np.zeros(len(ids))
    sim = cos - HUBNESS_WEIGHT * hub
    best = max(sim.max(), 0.0)
    en = np.maximum(sim, 0) / best if best > 0 else np.zeros(len(ids))
    tt = T[ids]
    tn = tt / tt.max() if tt.max() > 0 else np.zeros(len(ids))
    terms, qwords = terms_of(qtext), words(qtext)
    (qm, qy), qdays = named_dates(qtext), days(qtext)
    bonus, pairs, named = np.zeros(len(ids)), np.zeros(len(ids)), np.zeros(len(ids))
    for j, i in enumerate(ids):
        dm, dy = mem.dated[i]
        if (qm or qy) and (not qm or qm & dm) and (not qy or qy & dy):
            bonus[j] += DATE_BONUS
        if qdays:
            bonus[j] += DAY_BONUS * max([0.0] + [1 - abs((a - b).days) / 7 for a in qdays for b in mem.days[i]])
        pairs[j] = min(proximity(terms, mem.stems[i]), PROXIMITY_PAIRS)
        bonus[j] += PROXIMITY_BONUS * pairs[j]
        if mem.speakers[i] in qwords:
            named[j] = 1.0
            bonus[j] += NAMED_BONUS
    docs = [mem.signs[i] for i in ids]
    late = max_sims(qsigns, docs) if len(qsigns) else np.full(len(ids), np.nan)
    score = EMBEDDING_WEIGHT * en + (1 - EMBEDDING_WEIGHT) * tn + TOKEN_WEIGHT * scaled_among(late) + bonus
    share = np.maximum(score, 0) / score.max() if score.max() > 0 else np.zeros(len(ids))
    coverage = np.array([sum(t in mem.stemsets[i] for t in terms) / len(terms) if terms else 0.0 for i in ids])
    # Extras.
    covall = np.array([sum(t in mem.stemsets[i] or t == ENGLISH.stemWord(mem.speakers[i]) for t in terms) / len(terms)
                       if terms else 0.0 for i in ids])
    idfs = np.array([mem.idf(t) for t in terms])
    idfcov = np.array([sum(w for t, w in zip(terms, idfs) if t in mem.stemsets[i]) / idfs.sum()
                       if terms else 0.0 for i in ids])
    found = np.mean([mem.df.get(t, 0) > 0 for t in terms]) if terms else 0.0
    if len(qsigns):
        agree = [locomo.agreements(qsigns, d) for d in docs]
        rows = np.array([a for a in agree if a is not None])
        if len(rows):
            w = np.maximum(np.log((len(rows) + 1) / ((rows >= 0.6).sum(0) + 0.5)), 0.05)
            r = int(np.argmax(w))
            rare = np.array([a[r] if a is not None else 0.0 for a in agree])
            tokmin = rows.max(0).min()
        else:
            rare, tokmin = np.zeros(len(ids)), 0.0
    else:
        rare, tokmin = np.zeros(len(ids)), 0.0
    gap = cos - np.sort(e)[-DEPTH:].mean()
    label = np.array([bool(mem.turns[i] & ev) for i in ids], bool)
    n = len(ids)
    return dict(cos=cos, late=np.nan_to_num(late), coverage=coverage, share=share, score=score,
                idfcov=idfcov, found=np.full(n, found), rare=rare, tokmin=np.full(n, tokmin),
                gap=gap, cosmax=np.full(n, cos.max()), named=named, pairs=pairs, covall=covall,
                ids=ids, label=label)


def gather(args):
    facts, questions = load(args.data)
    convs = sorted(os.path.basename(p)[:-5] for p in glob.glob(f"{args.data}/conv-*.json"))
    qconv = []
    for c in convs:
        qa = json.load(open(f"{args.data}/{c}.json"))["qa"]
        qconv += [c] * sum(q["category"] <= 4 for q in qa)
    assert len(qconv) == len(questions)
    general = [f"{f['speaker']} {f['name']}: {f['date']}: {f['fact']}" for f in facts]
    FV, FS = embed(general, "facts", "document", args.model)
    nonsense = nonsense_strings()
    QV, QS = embed([q["q"] for q in questions], "questions", "query", args.model)
    NV, NS = embed(nonsense, "nonsense", "query", args.model)
    mems = {c: Memory([i for i, f in enumerate(facts) if f["conv"] == c], facts, FV, FS) for c in convs}

    hyb, emb, txt = [], [], []  # per query: dict of arrays + meta

    def run(kind, fold, qtext, qvec, qsigns, ev, c):
        mem = mems[c]
        T = bm25(mem.docs, [qtext])[0]
        h = hybrid_candidates(qtext, qvec, qsigns, mem, T, ev)
        meta = dict(kind=kind, fold=fold, q=qtext)
        hyb.append((meta, h))
        e = mem.V @ qvec
        ids = top(e, DEPTH)
        terms = terms_of(qtext)
        cover = lambda i: sum(t in mem.stemsets[i] for t in terms) / len(terms) if terms else 0.0
        emb.append((meta, dict(cos=e[ids], coverage=np.array([cover(i) for i in ids]),
                               label=np.array([bool(mem.turns[i] & ev) for i in ids]))))
        tids = [i for i in top(T, TEXT_DEPTH) if T[i] > 0]
        tcov = np.array([sum(t in mem.stemsets[i] for t in terms) / len(terms) if terms else 0.0 for i in tids])
        txt.append((meta, dict(coverage=tcov, share=T[tids] / T[tids].max() if tids else np.zeros(0),
                               label=np.array([bool(mem.turns[i] & ev) for i in tids], bool))))

    for qi, q in enumerate(questions):
        f = convs.index(qconv[qi])
        run("on", f, q["q"], QV[qi], QS[qi], q["ev"], qconv[qi])
        run("off", f, q["q"], QV[qi], QS[qi], set(), convs[(f + 1) % len(convs)])
    for si, s in enumerate(nonsense):
        for c in convs:
            run("nonsense", si % len(convs), s, NV[si], NS[si], set(), c)
    return hyb, emb, txt


# ---------------------------------------------------------------- logistic regression

def fit(X, y, l2=1e-3, iters=50):
    """Newton's method on standardised features; coefficients returned in raw units."""
    mu, sd = X.mean(0), X.std(0) + 1e-12
    Z = np.hstack([np.ones((len(X), 1)), (X - mu) / sd])
    w = np.zeros(Z.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-Z @ w))
        g = Z.T @ (p - y) + l2 * np.r_[0, w[1:]] * len(y)
        H = (Z * (p * (1 - p))[:, None]).T @ Z + l2 * len(y) * np.diag(np.r_[0, np.ones(len(w) - 1)])
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    b = w[1:] / sd
    return np.r_[w[0] - (w[1:] * mu / sd).sum(), b], w[1:]


def predict(coef, X):
    return 1 / (1 + np.exp(-(coef[0] + X @ coef[1:])))


def stack(data, feats):
    X = np.vstack([np.column_stack([d[f] for f in feats]) for _, d in data if len(d["label"])])
    y = np.concatenate([d["label"] for _, d in data if len(d["label"])]).astype(float)
    fold = np.concatenate([np.full(len(d["label"]), m["fold"]) for m, d in data if len(d["label"])])
    return X, y, fold


def cross_val(data, feats):
    """Out-of-fold predictions per query (leave one conversation out) and the full fit."""
    X, y, fold = stack(data, feats)
    oof = np.zeros(len(y))
    for f in np.unique(fold):
        coef, _ = fit(X[fold != f], y[fold != f])
        oof[fold == f] = predict(coef, X[fold == f])
    coef, std = fit(X, y)
    out, at = [], 0
    for m, d in data:
        n = len(d["label"])
        out.append(oof[at:at + n])
        at += n
    ll = -np.mean(y * np.log(np.clip(oof, 1e-12, 1)) + (1 - y) * np.log(np.clip(1 - oof, 1e-12, 1)))
    return out, coef, std, ll


# ---------------------------------------------------------------- evaluation

def recall(data, scores, kind="on", t=None):
    hits, n = np.zeros(3), 0
    for (m, d), s in zip(data, scores):
        if m["kind"] != kind:
            continue
        n += 1
        if len(s) == 0:
            continue
        order = np.argsort(-s, kind="stable")
        if t is not None:
            order = order[s[order] >= t]
        rel = d["label"][order]
        for j, k in enumerate([1, 5, 10]):
            hits[j] += rel[:k].any()
    return hits / n


def any_share(data, scores, kind, t):
    got = [(len(s) and s.max() >= t) for (m, d), s in zip(data, scores) if m["kind"] == kind]
    return float(np.mean(got))


THRESHOLDS = [round(0.05 * i, 2) for i in range(13)]


def threshold_table(name, data, scores, fine=False):
    base = recall(data, scores)[1]
    print(f"\n#### {name}\n\n| t | off-topic any | nonsense any | on-topic R@5 | drop |\n|---|---|---|---|---|")
    ts = THRESHOLDS + ([round(0.01 * i, 2) for i in range(61) if i % 5] if fine else [])
    best = None
    for t in sorted(ts):
        off, non, r5 = any_share(data, scores, "off", t), any_share(data, scores, "nonsense", t), recall(data, scores, t=t)[1]
        ok = off <= 0.10 and non == 0 and base - r5 <= 0.01
        if ok and best is None:
            best = t
        if t in THRESHOLDS or ok:
            print(f"| {t:.2f} | {off:.3f} | {non:.3f} | {r5:.3f} | {base - r5:+.3f}{' ✓' if ok else ''} |")
    print(f"\ntarget (off ≤ 0.10, nonsense 0, R@5 drop ≤ 0.01): {'reached from t=' + str(best) if best is not None else 'not reached'}")
    return best


def describe(name, feats, coef, std, ll):
    terms = " + ".join(f"{c:.3f}·{f}" for f, c in zip(feats, coef[1:]))
    stds = ", ".join(f"{f} {s:+.2f}" for f, s in zip(feats, std))
    print(f"- {name}: σ({coef[0]:.3f} + {terms}); CV log-loss {ll:.4f}; standardised weights: {stds}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "locomo-dev"))
    parser.add_argument("--model", default=os.environ.get("ENGRAM_MODEL", "multilingual-e5-small"))
    args = parser.parse_args()
    hyb, emb, txt = gather(args)
    counts = Counter(m["kind"] for m, _ in hyb)
    print(f"# Calibration ({args.model}): {dict(counts)} queries; "
          f"{sum(len(d['label']) for _, d in hyb)} hybrid candidates, "
          f"{int(sum(d['label'].sum() for _, d in hyb))} relevant")

    # The cosine's scale: positives against the best of off-topic and nonsense queries.
    pos = np.concatenate([d["cos"][d["label"]] for m, d in hyb if m["kind"] == "on"])
    tops = {k: np.array([d["cos"].max() for m, d in hyb if m["kind"] == k]) for k in ("on", "off", "nonsense")}
    q = lambda a: " / ".join(f"{x:.3f}" for x in np.percentile(a, [5, 25, 50, 75, 95]))
    print("\n## Cosine distribution (5/25/50/75/95th percentiles)\n")
    print(f"- relevant candidates (on-topic): {q(pos)}")
    for k, a in tops.items():
        print(f"- best candidate of {k} queries: {q(a)}")
    negs = np.concatenate([d["cos"][~d["label"]] for m, d in hyb if m["kind"] == "on"])
    print(f"- irrelevant on-topic candidates: {q(negs)}")
    for f in ["late", "coverage", "idfcov", "found", "tokmin", "rare", "gap"]:
        p = np.concatenate([d[f][d["label"]] for m, d in hyb if m["kind"] == "on"])
        o = np.array([d[f][np.argmax(d["share"])] for m, d in hyb if m["kind"] == "off"])
        print(f"- {f}: relevant {q(p)}; off-topic top-ranked {q(o)}")

    print("\n## Fits (leave-one-conversation-out CV; coefficients fitted on all five)\n")
    variants = {
        "hybrid (cos, late, coverage, share)": BASE,
        "hybrid without share": ["cos", "late", "coverage"],
        "hybrid + idfcov": BASE + ["idfcov"],
        "hybrid + found": BASE + ["found"],
        "hybrid + tokmin": BASE + ["tokmin"],
        "hybrid + rare": BASE + ["rare"],
        "hybrid + gap": BASE + ["gap"],
        "hybrid + idfcov + found + tokmin": BASE + ["idfcov", "found", "tokmin"],
        "hybrid, idfcov for coverage": ["cos", "late", "idfcov", "share"],
    }
    results = {}
    for name, feats in variants.items():
        oof, coef, std, ll = cross_val(hyb, feats)
        results[name] = (oof, coef, feats)
        describe(name, feats, coef, std, ll)
    eo, ecoef, estd, ell = cross_val(emb, ["cos"])
    describe("embedding", ["cos"], ecoef, estd, ell)
    to, tcoef, tstd, tll = cross_val(txt, ["coverage"])
    describe("text", ["coverage"], tcoef, tstd, tll)
    to2, tcoef2, tstd2, tll2 = cross_val(txt, ["coverage", "share"])
    describe("text + share", ["coverage", "share"], tcoef2, tstd2, tll2)

    print("\n## On-topic recall (CV scores) against the plain ranking\n\n| ordering | R@1 | R@5 | R@10 |\n|---|---|---|---|")
    r = recall(hyb, [d["score"] for _, d in hyb])
    print(f"| hybrid rank score | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} |")
    for name, (oof, _, _) in results.items():
        r = recall(hyb, oof)
        print(f"| calibrated: {name} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} |")
    r = recall(emb, [d["cos"] for _, d in emb])
    print(f"| embedding (cos) | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} |")
    r = recall(txt, [d["share"] for _, d in txt])
    print(f"| text (bm25) | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} |")
    r = recall(txt, to2)
    print(f"| text calibrated (coverage + share) | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} |")

    print("\n## Thresholds on the calibrated score (CV)")
    for name, (oof, _, _) in results.items():
        threshold_table(name, hyb, oof, fine=True)
    threshold_table("embedding", emb, eo, fine=True)
    threshold_table("text (coverage)", txt, to, fine=True)
    threshold_table("text (coverage + share)", txt, to2, fine=True)


if __name__ == "__main__":
    main()
