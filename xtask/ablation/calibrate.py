#!/usr/bin/env python3
"""Calibrated, absolute search scores fitted offline on the LoCoMo dev split (facts mapping).

Every conversation is its own memory (as a user's would be). For each query the hybrid
candidates are gathered as the server gathers them (`locomo.py`, `search/ranking.rs` `rank()`: the 50
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
strings split into five folds as well), then on everything. A last section (`rescue`) tries
rules that keep a query's clearly best match by cosine alone, for questions whose terms the
text cannot share (another language). Run from the repository root:

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

# Hybrid constants (crates/engram-domain/src/search/ranking.rs).
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
    return v, locomo.read_signs(sig, len(lines), v.shape[1])


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
    """search/ranking.rs `scaled_among`: min-max among the candidates, the mean for those without."""
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
    dated = bonus.copy()
    for j, i in enumerate(ids):
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
                gap=gap, cosmax=np.full(n, cos.max()), named=named, pairs=pairs, covall=covall, dated=dated,
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

    for query in each_query(questions, qconv, convs, (QV, QS), nonsense, (NV, NS)):
        run(*query)
    return hyb, emb, txt


def each_query(questions, qconv, convs, embedded, nonsense, nonsense_embedded):
    """Every query of the three sets as (kind, fold, text, vector, signs, evidence, memory):
    each question on-topic against its conversation and off-topic against the next one, each
    nonsense string against every conversation."""
    (QV, QS), (NV, NS) = embedded, nonsense_embedded
    for qi, q in enumerate(questions):
        f = convs.index(qconv[qi])
        yield "on", f, q["q"], QV[qi], QS[qi], q["ev"], qconv[qi]
        yield "off", f, q["q"], QV[qi], QS[qi], set(), convs[(f + 1) % len(convs)]
    for si, s in enumerate(nonsense):
        for c in convs:
            yield "nonsense", si % len(convs), s, NV[si], NS[si], set(), c


# ---------------------------------------------------------------- logistic regression

L2 = 1e-6  # ridge on standardised weights, only for numerical safety (plain maximum likelihood)


def fit(X, y, l2=L2, iters=100):
    """Newton's method on standardised features; returns (coefficients in raw units: intercept
    first, standardised weights)."""
    mu, sd = X.mean(0), X.std(0) + 1e-12
    Z = np.hstack([np.ones((len(X), 1)), (X - mu) / sd])
    w = np.zeros(Z.shape[1])
    ridge = l2 * len(y) * np.diag(np.r_[0, np.ones(Z.shape[1] - 1)])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-Z @ w))
        step = np.linalg.solve((Z * (p * (1 - p))[:, None]).T @ Z + ridge, Z.T @ (p - y) + ridge @ w)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return np.r_[w[0] - (w[1:] * mu / sd).sum(), w[1:] / sd], w[1:]


def predict(coef, X):
    return 1 / (1 + np.exp(-(coef[0] + X @ coef[1:])))


def stack(data, feats):
    rows = [(m, d) for m, d in data if len(d["label"])]
    X = np.vstack([np.column_stack([d[f] for f in feats]) for _, d in rows])
    y = np.concatenate([d["label"] for _, d in rows]).astype(float)
    fold = np.concatenate([np.full(len(d["label"]), m["fold"]) for m, d in rows])
    return X, y, fold


def cross_val(data, feats):
    """Leave-one-conversation-out predictions (per query), the fit on everything, its
    standardised weights and the CV log-loss."""
    X, y, fold = stack(data, feats)
    oof = np.zeros(len(y))
    for f in np.unique(fold):
        coef, _ = fit(X[fold != f], y[fold != f])
        oof[fold == f] = predict(coef, X[fold == f])
    coef, std = fit(X, y)
    out, at = [], 0
    for _, d in data:
        out.append(oof[at:at + len(d["label"])])
        at += len(d["label"])
    p = np.clip(oof, 1e-12, 1 - 1e-12)
    return out, coef, std, float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


# ---------------------------------------------------------------- evaluation

def recall(data, scores, t=None):
    """On-topic R@1/5/10 of the candidates ordered by `scores`, those below `t` left out."""
    hits, n = np.zeros(3), 0
    for (m, d), s in zip(data, scores):
        if m["kind"] != "on":
            continue
        n += 1
        order = np.argsort(-s, kind="stable")
        if t is not None:
            order = order[s[order] >= t]
        rel = d["label"][order]
        hits += [rel[:k].any() for k in (1, 5, 10)]
    return hits / n


def extremes(data, scores):
    """Per on-topic question the best score of an evidence among its top 5 (-1: a miss), and
    the best score of each off-topic and nonsense query (-1: no candidate)."""
    need, off, non = [], [], []
    for (m, d), s in zip(data, scores):
        if m["kind"] == "on":
            o = np.argsort(-s, kind="stable")[:5]
            ev = s[o][d["label"][o]]
            need.append(ev.max() if len(ev) else -1)
        else:
            (off if m["kind"] == "off" else non).append(s.max() if len(s) else -1)
    return np.array(need), np.array(off), np.array(non)


def threshold_at_drop(need, drop=0.01):
    """The highest threshold that loses at most `drop` of R@5."""
    hits = np.sort(need[need >= 0])
    return hits[int(np.floor(drop * len(need)))]


def nested(data, scores, drop=0.01):
    """min_score chosen on four conversations (R@5 drop ≤ `drop`), judged on the fifth."""
    folds = np.array([m["fold"] for m, _ in data])
    off = non = lost = n_on = n_off = n_non = 0
    ts = []
    for f in range(5):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        t = threshold_at_drop(extremes([data[i] for i in tr], [scores[i] for i in tr])[0], drop)
        need, o, n = extremes([data[i] for i in te], [scores[i] for i in te])
        off, non, lost = off + (o >= t).sum(), non + (n >= t).sum(), lost + ((need >= 0) & (need < t)).sum()
        n_on, n_off, n_non = n_on + len(need), n_off + len(o), n_non + len(n)
        ts.append(t)
    return off / n_off, non / n_non, lost / n_on, ts


GRID = [round(0.05 * i, 2) for i in range(13)]
FINE = [0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.01, 0.015, 0.02, 0.03]


def threshold_table(name, data, scores):
    need, off, non = extremes(data, scores)
    base = (need >= 0).mean()
    print(f"\n#### {name}\n\n| t | off-topic ≥1 result | nonsense ≥1 result | on-topic R@5 | R@5 drop |\n|---|---|---|---|---|")
    for t in sorted(set(GRID + FINE)):
        r5 = (need >= t).mean()
        ok = (off >= t).mean() <= 0.10 and (non >= t).mean() == 0 and base - r5 <= 0.01
        print(f"| {t:g} | {(off >= t).mean():.3f} | {(non >= t).mean():.3f} | {r5:.3f} | {base - r5:.3f}{' ✓' if ok else ''} |")


def formula(feats, coef):
    return f"σ({coef[0]:.2f} " + " ".join(f"{'+' if c >= 0 else '−'} {abs(c):.2f}·{f}" for f, c in zip(feats, coef[1:])) + ")"


# ---------------------------------------------------------------- rescue of a clear best match

def rescue(hyb, emb, coef, min_score=0.005):
    """Rules that keep a query's best candidate by cos (only it) when the calibrated score drops
    it: its coverage is ~0 across languages (English stems), leaving cos alone. Statistics of the
    query's 50 nearest (`emb`): top − median cos, top − second, z = (top − mean) / std. Figures
    with the shipped gate (scores to 4 decimals, ties in ranking order, `min_score`) + the rule;
    "fires, evidence": on-topic questions whose best candidate is evidence and the rule keeps it
    by itself (how often it would help were coverage 0); "coverage 0": R@5 of the on-topic
    questions with every coverage set to 0 (as for a question in another language)."""
    rows = []
    for (m, d), (_, e) in zip(hyb, emb):
        c = np.sort(e["cos"])[::-1]
        b = int(np.argmax(d["cos"]))
        X = lambda cov: np.column_stack([d["cos"], d["late"], cov])
        p, p0 = (np.round(predict(coef, X(cov)), 4) for cov in (d["coverage"], np.zeros(len(d["cos"]))))
        kept = lambda p: [i for i in np.lexsort((-d["score"], -p)) if p[i] >= min_score]
        rows.append(dict(kind=m["kind"], top=c[0], dmed=c[0] - np.median(c), d2=c[0] - c[1],
                         z=(c[0] - c.mean()) / (c.std() + 1e-12), rel=bool(d["label"][b]), best=b,
                         late=d["late"][b], cov=d["coverage"][b], kept=kept(p), kept0=kept(p0), label=d["label"]))
    col = lambda k: np.array([r[k] for r in rows])
    kind, rel = col("kind"), col("rel")
    q = lambda a: " / ".join(f"{x:.3f}" for x in np.percentile(a, [5, 25, 50, 75, 95])) + f" (max {np.max(a):.3f})"
    print("\n## Rescue of a clear best match (top = the best cos among the query's 50 nearest)\n")
    groups = [("on-topic, top is evidence", (kind == "on") & rel), ("on-topic, top not evidence", (kind == "on") & ~rel),
              ("off-topic", kind == "off"), ("nonsense", kind == "nonsense")]
    for f, name in [("top", "top cos"), ("dmed", "top − median cos"), ("d2", "top − second cos"), ("z", "z of top")]:
        print(f"- {name} (5/25/50/75/95th): " + "; ".join(f"{g} {q(col(f)[s])}" for g, s in groups))
    on, off, non = kind == "on", kind == "off", kind == "nonsense"
    rules = [("none", lambda a: np.zeros(len(a["top"]), bool))]
    rules += [(f"top − median ≥ {x}", (lambda x: lambda a: a["dmed"] >= x)(x)) for x in (0.04, 0.05, 0.06, 0.07, 0.08, 0.1)]
    rules += [(f"top − second ≥ {x}", (lambda x: lambda a: a["d2"] >= x)(x)) for x in (0.02, 0.03, 0.04)]
    rules += [(f"z ≥ {x}", (lambda x: lambda a: a["z"] >= x)(x)) for x in (3, 4, 5, 6)]
    rules += [(f"coverage 0, late ≥ {x}", (lambda x: lambda a: (a["cov"] == 0) & (a["late"] >= x))(x)) for x in (0.75, 0.78, 0.8)]
    rules += [(f"top ≥ {c}", (lambda c: lambda a: a["top"] >= c)(c)) for c in (0.84, 0.86)]
    rules += [(f"top ≥ {c} and top − median ≥ {x}", (lambda c, x: lambda a: (a["top"] >= c) & (a["dmed"] >= x))(c, x))
              for c in (0.80, 0.82, 0.84) for x in (0.04, 0.05, 0.06)]
    a = {k: col(k) for k in ("top", "dmed", "d2", "z", "late", "cov")}
    print("\n| rule | off-topic ≥1 result | nonsense ≥1 result | on-topic R@5 | fires, on-topic | fires, evidence | coverage 0: R@5 |")
    print("|---|---|---|---|---|---|---|")
    for name, rule in rules:
        fire = rule(a)
        res = lambda r, f, k: r[k] + ([r["best"]] if f and r["best"] not in r[k] else [])
        anyr = np.array([len(res(r, f, "kept")) > 0 for r, f in zip(rows, fire)])
        r5 = np.mean([r["label"][res(r, f, "kept")[:5]].any() for r, f in zip(rows, fire) if r["kind"] == "on"])
        r50 = np.mean([r["label"][res(r, f, "kept0")[:5]].any() for r, f in zip(rows, fire) if r["kind"] == "on"])
        print(f"| {name} | {anyr[off].mean():.3f} | {anyr[non].mean():.3f} | {r5:.3f} | {fire[on].mean():.3f} | "
              f"{(fire & rel)[on].mean():.3f} | {r50:.3f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "locomo-dev"))
    parser.add_argument("--model", default=os.environ.get("ENGRAM_MODEL", "multilingual-e5-small"))
    args = parser.parse_args()
    hyb, emb, txt = gather(args)
    counts = Counter(m["kind"] for m, _ in hyb)
    print(f"# Calibration ({args.model}, facts mapping, one memory per conversation)\n\n"
          f"{dict(counts)} queries; {sum(len(d['label']) for _, d in hyb)} hybrid candidates, "
          f"{int(sum(d['label'].sum() for _, d in hyb))} relevant.")

    q = lambda a: " / ".join(f"{x:.3f}" for x in np.percentile(a, [5, 25, 50, 75, 95]))
    on = [d for m, d in hyb if m["kind"] == "on"]
    print("\n## Feature distributions (5/25/50/75/95th percentiles)\n")
    print(f"- cos, relevant candidates: {q(np.concatenate([d['cos'][d['label']] for d in on]))}")
    print(f"- cos, irrelevant on-topic candidates: {q(np.concatenate([d['cos'][~d['label']] for d in on]))}")
    for k in ("on", "off", "nonsense"):
        print(f"- cos, best candidate of {k} queries: {q([d['cos'].max() for m, d in hyb if m['kind'] == k])}")
    for f in ["late", "coverage"] + list(EXTRA):
        p = np.concatenate([d[f][d["label"]] for d in on])
        o = [d[f][np.argmax(d["score"])] for m, d in hyb if m["kind"] == "off"]
        print(f"- {f}: relevant {q(p)}; off-topic first-ranked {q(o)}")

    nos = ["cos", "late", "coverage"]
    variants = [("hybrid", hyb, f) for f in
                [BASE, nos, ["cos", "coverage"], ["cos", "late"], ["late", "coverage"]]
                + [nos + [x] for x in EXTRA] + [BASE + ["named"]]]
    variants += [("embedding", emb, ["cos"]), ("embedding", emb, ["cos", "coverage"]),
                 ("text", txt, ["coverage"]), ("text", txt, ["coverage", "share"])]
    print("\n## Fits: leave-one-conversation-out CV (coefficients fitted on all five)\n")
    print("R@k: on-topic, candidates ordered by the CV score. Off/nonsense at drop 0.01: the share "
          "returning anything at the highest threshold that costs ≤ 0.01 of R@5 (pooled CV scores). "
          "Held-out: that threshold chosen on four conversations, judged on the fifth.\n")
    print("| mode | features | CV log-loss | R@1 | R@5 | R@10 | off / nonsense at drop 0.01 | held-out off / nonsense / drop | formula | standardised weights |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ref = {"hybrid": [d["score"] for _, d in hyb], "embedding": [d["cos"] for _, d in emb],
           "text": [d["share"] for _, d in txt]}
    for mode, data in (("hybrid", hyb), ("embedding", emb), ("text", txt)):
        r = recall(data, ref[mode])
        need, off, non = extremes(data, ref[mode])
        t = threshold_at_drop(need)
        name = {"hybrid": "rank score (uncalibrated)", "embedding": "raw cos", "text": "bm25 / best"}[mode]
        print(f"| {mode} | {name} | – | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {(off >= t).mean():.3f} / {(non >= t).mean():.3f} | – | – | – |")
    oofs = {}
    for mode, data, feats in variants:
        oof, coef, std, ll = cross_val(data, feats)
        oofs[(mode, tuple(feats))] = (oof, coef)
        r = recall(data, oof)
        need, off, non = extremes(data, oof)
        t = threshold_at_drop(need)
        ho, hn, hd, _ = nested(data, oof)
        print(f"| {mode} | {'+'.join(feats)} | {ll:.4f} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | "
              f"{(off >= t).mean():.3f} / {(non >= t).mean():.3f} | {ho:.3f} / {hn:.3f} / {hd:.3f} | "
              f"{formula(feats, coef)} | {', '.join(f'{s:+.2f}' for s in std)} |")

    print("\n## Thresholds on the calibrated score (CV scores; ✓ meets off ≤ 0.10, nonsense 0, R@5 drop ≤ 0.01)")
    for mode, data, feats in [("hybrid", hyb, BASE), ("hybrid", hyb, nos), ("hybrid", hyb, ["cos", "coverage"]),
                              ("hybrid", hyb, nos + ["named"]), ("embedding", emb, ["cos", "coverage"]),
                              ("embedding", emb, ["cos"]), ("text", txt, ["coverage"])]:
        threshold_table(f"{mode}: {formula(feats, oofs[(mode, tuple(feats))][1])}", data, oofs[(mode, tuple(feats))][0])

    print("\n## Recommended (CV scores rounded to 3 decimals, as `fusion::calibrate` does; ties by id)\n")
    print("| mode | formula (fitted on all five) | min_score | R@1 / R@5 / R@10 unfiltered | off-topic ≥1 | nonsense ≥1 | R@5 at min_score | drop |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, data, feats, mins in [("hybrid", hyb, nos, (0.004, 0.005, 0.006)),
                                    ("embedding", emb, ["cos", "coverage"], (0.005, 0.006, 0.007)),
                                    ("text", txt, ["coverage"], (0.006, 0.007))]:
        oof, coef = oofs[(mode, tuple(feats))]
        rounded = [np.round(s, 3) for s in oof]
        hits, n = np.zeros(3), 0
        for (m, d), s in zip(data, rounded):
            if m["kind"] == "on":
                n += 1
                rel = d["label"][np.lexsort((np.arange(len(s)), -s))]
                hits += [rel[:k].any() for k in (1, 5, 10)]
        need, off, non = extremes(data, rounded)
        for t in mins:
            print(f"| {mode} | {formula(feats, coef)} | {t} | {' / '.join(f'{h:.3f}' for h in hits / n)} | "
                  f"{(off >= t).mean():.3f} | {(non >= t).mean():.3f} | {(need >= t).mean():.3f} | {(need >= 0).mean() - (need >= t).mean():.3f} |")

    print("\n## Reliability of the hybrid cos+late+coverage score (CV, all candidates)\n")
    oof = np.concatenate(oofs[("hybrid", tuple(nos))][0])
    y = np.concatenate([d["label"] for _, d in hyb])
    print("| predicted | candidates | mean predicted | observed |\n|---|---|---|---|")
    for lo, hi in [(0, 0.001), (0.001, 0.005), (0.005, 0.02), (0.02, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 0.4), (0.4, 1.01)]:
        s = (oof >= lo) & (oof < hi)
        if s.any():
            print(f"| {lo:g}–{min(hi, 1):g} | {s.sum()} | {oof[s].mean():.4f} | {y[s].mean():.4f} |")

    rescue(hyb, emb, oofs[("hybrid", tuple(nos))][1])


if __name__ == "__main__":
    main()
