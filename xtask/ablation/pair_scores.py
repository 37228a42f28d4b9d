#!/usr/bin/env python3
"""Pair-only scores: one formula that both orders a search's results and says how likely each
is relevant, from the (query, text) pair alone (issue 43; BENCHMARKS.md "Scores from the pair
alone").

LoCoMo dev as `calibrate.py` gathers it (each conversation its own memory; on-topic,
off-topic and nonsense queries; the hybrid candidates), once with the facts and once with the
raw dialogue turns (one observation a message, `dia_id` as evidence), plus the small-memory
sets (`small_memories.py`). Every candidate gets the pair-only signals of the server's
`calibration::Features`: cos, lateu (late interaction, every query token weighing alike),
coverage, dated, pairs, named and alien (the share of the names the query mentions that the
text lacks).

The fit has two steps. The signals' weights (but alien's) come from a pairwise logistic
regression: a query's evidence against its other candidates, so the score orders as well as
it can. Then σ(a + b·(w·x) + c·alien) is fitted with each source of right answers (LoCoMo
evidence, small-memory answers) and of unrelated texts (off-topic questions' candidates,
nonsense, small-memory unrelated questions and nonsense) weighing alike, so 0.5 reads "as
likely right as not" and alien, which orders nothing within a query, says "asked about
someone else". Leave-one-conversation-out figures: R@5 by the score against today's hybrid
order, and at thresholds the off-topic and nonsense queries answered and the small sets' right
answers kept. Text mode gets the same fit on its signals alone.

    ENGRAM_THRESHOLDS=0.5,0.8 python3 xtask/ablation/pair_scores.py [--model NAME]
"""
import argparse, glob, json, os, re, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import locomo  # noqa: E402
import small_memories  # noqa: E402
from calibrate import Memory, bm25, cross_val, fit, hybrid_candidates, predict, recall  # noqa: E402
from locomo import words  # noqa: E402


def load_turns(data):
    """Raw dialogue turns as facts: one per message, its dia_id its evidence."""
    facts, _ = locomo.load(data)
    turns = []
    for path in sorted(glob.glob(f"{data}/conv-*.json")):
        cid = os.path.basename(path)[:-5]
        d = json.load(open(path))
        s = 1
        while f"session_{s}_date_time" in d:
            for t in d.get(f"session_{s}", []):
                turns.append(dict(conv=cid, speaker=t["speaker"], date=d[f"session_{s}_date_time"],
                                  fact=t["text"], turns=[f"{cid}:{t['dia_id']}"],
                                  name=f"{cid}:{t['dia_id']}"))
            s += 1
    return turns


# Late interaction read otherwise than as the mean agreement, each from the pair alone.
VARIANTS = {
    "late_trim": lambda a: float(np.sort(a)[:-1].mean()) if len(a) > 1 else float(a.mean()),
    "late_min": lambda a: float(a.min()),
    "late_q25": lambda a: float(np.quantile(a, 0.25)),
    "late_held": lambda a: float((a >= 0.6).mean()),
    "late_sq": lambda a: float((np.maximum(a, 0) ** 2).mean()),
}


def proper_nouns(text):
    """The query's names: its capitalised words but the first and acronyms, lower-cased
    (`words::proper_nouns`)."""
    out = []
    for i, w in enumerate(re.findall(r"[^\W_]+", text)):
        acronym = len(w) >= 2 and w.isupper()
        if i > 0 and w[0].isupper() and w != "I" and not acronym and w.lower() not in out:
            out.append(w.lower())
    return out


def alien(names, text):
    """The share of `names` that `text` does not hold as a word (`ranking.rs`
    `QueryCues::alien`)."""
    if not names:
        return 0.0
    held = words(text)
    return sum(n not in held for n in names) / len(names)


def gather(data, model, kind):
    import pickle
    cache = os.path.join(calibrate.CACHE, f"pairs3-{model}-{kind}.pickle")
    if os.path.exists(cache):
        out = pickle.load(open(cache, "rb"))
    else:
        out = gather_anew(data, model, kind)
        pickle.dump(out, open(cache, "wb"))
    # The query-wide signal, from the queries' own token signs.
    _, questions = locomo.load(data)
    nonsense = calibrate.nonsense_strings()
    _, QS = calibrate.embed([q["q"] for q in questions], "questions", "query", model)
    _, NS = calibrate.embed(nonsense, "nonsense", "query", model)
    signs = dict(zip([q["q"] for q in questions], QS)) | dict(zip(nonsense, NS))
    for m, h in out:
        h["fragmented"] = np.full(len(h["ids"]), fragmented(m["q"], signs[m["q"]]))
    return out


def corpus(data, kind):
    """LoCoMo dev as `kind` (facts or turns): the facts, the questions, the conversations, each
    on-topic question's conversation, and the facts as the default perspective renders them."""
    facts, questions = locomo.load(data)
    if kind == "turns":
        facts = load_turns(data)
    convs = sorted(os.path.basename(p)[:-5] for p in glob.glob(f"{data}/conv-*.json"))
    qconv = []
    for c in convs:
        qa = json.load(open(f"{data}/{c}.json"))["qa"]
        qconv += [c] * sum(q["category"] <= 4 for q in qa)
    general = [f"{f['speaker']} {f['name']}: {f['date']}: {f['fact']}" for f in facts]
    return facts, questions, convs, qconv, general


def gather_anew(data, model, kind):
    facts, questions, convs, qconv, general = corpus(data, kind)
    FV, FS = calibrate.embed(general, kind, "document", model)
    nonsense = calibrate.nonsense_strings()
    QV, QS = calibrate.embed([q["q"] for q in questions], "questions", "query", model)
    NV, NS = calibrate.embed(nonsense, "nonsense", "query", model)
    mems = {c: Memory([i for i, f in enumerate(facts) if f["conv"] == c], facts, FV, FS) for c in convs}
    out = []

    def run(k, fold, qtext, qvec, qsigns, ev, c):
        mem = mems[c]
        T = bm25(mem.docs, [qtext])[0]
        h = hybrid_candidates(qtext, qvec, qsigns, mem, T, ev)
        docs = [mem.signs[i] for i in h["ids"]]
        h["lateu"] = np.nan_to_num(locomo.max_sims(qsigns, docs, weighted=False)) if len(qsigns) \
            else np.zeros(len(h["ids"]))
        names = proper_nouns(qtext)
        h["alien"] = np.array([alien(names, f"{mem.speakers[i]} {mem.docs[i]}") for i in h["ids"]])
        agree = [locomo.agreements(qsigns, x) if len(qsigns) else None for x in docs]
        for name, f in VARIANTS.items():
            h[name] = np.array([0.0 if a is None else f(a) for a in agree])
        out.append((dict(kind=k, fold=fold, q=qtext), h))

    for query in calibrate.each_query(questions, qconv, convs, (QV, QS), nonsense, (NV, NS)):
        run(*query)
    return out


FEATS = ["cos", "lateu", "coverage", "dated", "pairs", "named", "alien", "fragmented"]  # `calibration::Features`
TEXT_FEATS = ["coverage", "dated", "pairs", "named", "alien"]
# Fitted by the gates alone (`scale`): signals that order no query's candidates (alien
# rarely does; fragmented is the query's own). The last columns of FEATS.
GATES = ["alien", "fragmented"]


def fragmented(text, signs):
    """How much of the query the model's vocabulary knows only as letters and letter pairs
    (`calibration::fragmented`): its content words' bytes per content token b, as
    clamp(2.5 − b, 0, 1). "qwxz vlorp" (1.3 bytes a token) 1, "where are my ssh keys?" 0.17,
    a question of words 0."""
    content = [w for w in words(text) if w not in calibrate.STOP]
    if not len(signs):
        return 0.0
    return float(min(1.0, max(0.0, 2.5 - sum(len(w.encode()) for w in content) / len(signs))))


def pair_rows(data, small, folds, feats=None):
    """Differences (right − other) of the feature rows of on-topic queries in `folds`, and of
    every small-memory question (its answer's best fact against other nodes' facts)."""
    out = []
    for m, d in data:
        if m["kind"] != "on" or m["fold"] not in folds or not d["label"].any():
            continue
        F = np.column_stack([d[f] for f in (feats or FEATS)])
        pos, neg = F[d["label"]], F[~d["label"]]
        if len(neg):
            out.append((pos[:, None, :] - neg[None, :, :]).reshape(-1, F.shape[1]))
    if feats:
        return np.vstack(out)
    for _, _, rows in small:
        for kind, _, answers, per_node in rows:
            if kind != "right":
                continue
            pos = max((np.array(x) for n in answers for x in per_node[n]), key=lambda x: x[0] + x[1])
            neg = np.array([x for n, xs in per_node.items() if n not in answers for x in xs])
            if len(neg):
                out.append(np.repeat(pos[None, :] - neg, SMALL_WEIGHT, axis=0))
    return np.vstack(out)


SMALL_WEIGHT = 20  # a small memory's question counts as much as a LoCoMo question's pairs


def pairwise(X, l2=1e-4, gates=None):
    """Weights w maximising Σ log σ(w · (right − other)) (Newton, standardised); the last
    columns (the gates' signals) get no weight here."""
    X = X.copy()
    gates = len(GATES) if gates is None else gates
    X[:, X.shape[1] - gates:] = 0.0
    sd = X.std(0) + 1e-9
    Z, w = X / sd, np.zeros(X.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-Z @ w))
        g = Z.T @ (p - 1) / len(Z) + l2 * w
        H = (Z * (p * (1 - p))[:, None]).T @ Z / len(Z) + l2 * np.eye(len(w))
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w / sd


def scale(data, small, w, feats=None):
    """Offset and scales (a, b, c) of σ(a + b·s + c·gate), s = w·x, fitted so that each source
    of right answers and of unrelated texts weighs alike: LoCoMo's on-topic evidence and the
    small memories' answers against the candidates of LoCoMo's off-topic questions, of
    nonsense, and the facts met by the small memories' unrelated questions and nonsense."""
    groups = {}  # (label, source) -> rows of (s, gates…)
    gates = 1 if feats else len(GATES)

    def add(label, source, X):
        groups.setdefault((label, source), []).append(np.column_stack([X @ w, X[:, -gates:]]))

    for m, d in data:
        X = np.column_stack([d[f] for f in (feats or FEATS)])
        if m["kind"] == "on":
            add(1, "locomo", X[d["label"]])
        else:
            add(0, m["kind"], X)
    for _, _, rows in (small if not feats else []):
        for kind, _, answers, per_node in rows:
            for n, xs in per_node.items():
                if kind == "right" and n in answers:
                    add(1, "small", np.array(xs))
                elif kind != "right":
                    add(0, "small " + kind, np.array(xs))
    per_class = {label: sum(1 for (l, _) in groups if l == label) for label in (0, 1)}
    xs, ys, ws = [], [], []
    for (label, _), rows in groups.items():
        rows = np.vstack(rows)
        xs.append(rows)
        ys.append(np.full(len(rows), float(label)))
        ws.append(np.full(len(rows), 0.5 / per_class[label] / len(rows)))
    x, y, weight = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    if not GATED:
        x[:, 1:] = 0.0
    Z, c = np.hstack([np.ones((len(x), 1)), x]), np.zeros(x.shape[1] + 1)
    for _ in range(100):
        p = 1 / (1 + np.exp(-Z @ c))
        g = Z.T @ (weight * (p - y))
        H = (Z * (weight * p * (1 - p))[:, None]).T @ Z + 1e-9 * np.eye(len(c))
        step = np.linalg.solve(H, g)
        c -= step
        if np.abs(step).max() < 1e-10:
            break
    return c


GATED = os.environ.get("ENGRAM_GATED", "1") == "1"


def combined(w, c):
    """The shipped coefficients: intercept, then each signal's weight."""
    out = np.r_[c[0], c[1] * w]
    out[len(out) - len(c) + 2:] += c[2:]
    return out


def score_of(coef):
    """The shipped formula: σ(intercept + Σ weight × feature)."""
    return lambda X: 1 / (1 + np.exp(-(coef[0] + X @ coef[1:])))


def answered(data, scores, kind, t):
    rows = [(m, s) for (m, _), s in zip(data, scores) if m["kind"] == kind]
    return np.mean([len(s) > 0 and s.max() >= t for _, s in rows])


def small_figures(small, f, t):
    tally, scores = small_memories.judge(small, lambda x: f(np.array(x)[None, :])[0], t)
    return (f"right {tally['kept']}/{tally['kept0']} of {tally['right']}, unrelated {tally['ua']}/"
            f"{tally['unrelated']}, nonsense {tally['na']}/{tally['nonsense']}, right answers' median "
            f"{np.median(scores):.2f}, 10th percentile {np.percentile(scores, 10):.2f}")


def cross_validated(data, small):
    """Leave one conversation out: for each, the weights and scale fitted on the others score
    its queries. Returns those scores per mapping of `data` and the coefficients fitted on all
    (`FEATS`' signals)."""
    both = [row for rows in data.values() for row in rows]
    folds = sorted({m["fold"] for m, _ in both})
    oof = {kind: [None] * len(rows) for kind, rows in data.items()}
    for f in folds:
        rest = [g for g in folds if g != f]
        w = pairwise(pair_rows(both, small, rest))
        score = score_of(combined(w, scale([(m, d) for m, d in both if m["fold"] != f], small, w)))
        for kind, rows in data.items():
            for i, (m, d) in enumerate(rows):
                if m["fold"] == f:
                    oof[kind][i] = score(np.column_stack([d[x] for x in FEATS]))
    w = pairwise(pair_rows(both, small, folds))
    return oof, combined(w, scale(both, small, w))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data", default=os.path.join(locomo.ROOT, "..", "shared", "data", "locomo-dev"))
    args = parser.parse_args()
    small = small_memories.features(args.model)
    data = {kind: gather(args.data, args.model, kind) for kind in ("facts", "turns")}
    both = data["facts"] + data["turns"]
    folds = sorted({m["fold"] for m, _ in both})
    oof, coef = cross_validated(data, small)
    print(f"\n## {args.model}: σ({coef[0]:.2f} + " + " + ".join(
        f"{v:.2f}·{f}" for v, f in zip(coef[1:], FEATS)) + ")")
    f = score_of(coef)
    for kind, rows in data.items():
        print(f"{kind}: today's hybrid order R@1/5/10 {recall(rows, [d['score'] for _, d in rows]).round(3)},"
              f" by the score (CV) {recall(rows, oof[kind]).round(3)}")
    # Text mode: the pair's words alone, among the candidates that share a term with the query.
    text = [(m, {k: v[d["coverage"] > 0] for k, v in d.items() if isinstance(v, np.ndarray) and v.shape == d["coverage"].shape})
            for m, d in both]
    tw = pairwise(pair_rows(text, small, folds, TEXT_FEATS), gates=1)
    tc = scale(text, small, tw, TEXT_FEATS)
    tcoef = combined(tw, tc)
    print("text: σ(" + f"{tcoef[0]:.2f} + " + " + ".join(f"{v:.2f}·{f}" for v, f in zip(tcoef[1:], TEXT_FEATS)) + ")")
    tf = score_of(tcoef)
    tscores = [tf(np.column_stack([d[x] for x in TEXT_FEATS])) for _, d in text]
    for t in (0.1, 0.2, 0.3, 0.4):
        print(f"  text min_score {t}: R@5 {recall(text, tscores, t)[1]:.3f} (none {recall(text, tscores)[1]:.3f}),"
              f" off-topic {answered(text, tscores, 'off', t):.3f}, nonsense {answered(text, tscores, 'nonsense', t):.3f}")
    print("\n| min_score | facts R@5 | facts off-topic | turns R@5 | turns off-topic | nonsense | small memories |")
    print("|---|---|---|---|---|---|---|")
    for t in [float(x) for x in os.environ.get("ENGRAM_THRESHOLDS", "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7").split(",")]:
        fa, tu = data["facts"], data["turns"]
        print(f"| {t} | {recall(fa, oof['facts'], t)[1]:.3f} | {answered(fa, oof['facts'], 'off', t):.3f} |"
              f" {recall(tu, oof['turns'], t)[1]:.3f} | {answered(tu, oof['turns'], 'off', t):.3f} |"
              f" {answered(fa, oof['facts'], 'nonsense', t):.3f} | {small_figures(small, f, t)} |")


if __name__ == "__main__":
    main()
