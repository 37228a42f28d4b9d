#!/usr/bin/env python3
"""Signals tried on top of the shipped hybrid ranking and not kept (BENCHMARKS.md, "Tried on
2026-11-24 and not kept"). Each variant re-scores the shipped candidates (50 nearest ∪ 100 best
bm25 matches) with every shipped signal (similarity less hubness, text, month/year, day,
proximity, named type) plus or instead of one new one. Run from the repository root after
`locomo.py` (it reuses that script's loading, bm25 and cached vectors):

    python3 xtask/ablation/not_kept.py [--data ../shared/data/locomo-dev]
"""
import argparse, math, os, re, sys
from collections import Counter

import numpy as np
import snowballstemmer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo as L  # noqa: E402

ENGLISH = snowballstemmer.stemmer("english")


class Shipped:
    """The shipped hybrid's candidates and signals, per question."""

    def __init__(self, data):
        self.facts, self.questions = L.load(data)
        self.judge = L.Judge(self.facts, self.questions)
        self.Q = L.embed([q["q"] for q in self.questions], "questions")
        name = "new general {entity_type} {name}: {observation}"
        self.D = L.embed([L.RENDERINGS[name](f) for f in self.facts], f"docs-{list(L.RENDERINGS).index(name)}")
        self.E = self.Q @ self.D.T
        self.docs = [f"{f['date']}: {f['fact']}" for f in self.facts]
        self.T = L.bm25(self.docs, [q["q"] for q in self.questions])
        self.speakers = np.array([f["speaker"].lower() for f in self.facts])
        self.asked = [L.named_dates(q["q"]) for q in self.questions]
        self.dated = [L.named_dates(d) for d in self.docs]
        self.asked_days = [L.days(q["q"]) for q in self.questions]
        self.doc_days = [L.days(d) for d in self.docs]
        self.doc_stems = [ENGLISH.stemWords(L.words(d)) for d in self.docs]
        self.terms = []
        for q in self.questions:
            t = []
            for w in L.words(q["q"]):
                if w not in L.STOP and ENGLISH.stemWord(w) not in t:
                    t.append(ENGLISH.stemWord(w))
            self.terms.append(t)
        self.parts = [self.signals(qi) for qi in range(len(self.questions))]

    def pairs(self, qi, i, window=2):
        s, near = self.doc_stems[i], set()
        for k in range(1, window + 1):
            near |= set(zip(s, s[k:]))
        return sum((a, b) in near for a, b in zip(self.terms[qi], self.terms[qi][1:]))

    def signals(self, qi, E=None, T=None, hub=0.4, hub_k=10, D=None):
        E = self.E if E is None else E
        T = self.T if T is None else T
        D = self.D if D is None else D
        t, e = T[qi], E[qi]
        ids = np.union1d(L.top(e, 50), [i for i in L.top(t, 100) if t[i] > 0])
        pair = D[ids] @ D[ids].T
        np.fill_diagonal(pair, -np.inf)
        sim = e[ids] - hub * np.sort(pair, 1)[:, -min(hub_k, len(ids) - 1):].mean(1)
        qm, qy = self.asked[qi]
        day = np.zeros(len(ids))
        if self.asked_days[qi]:
            day = np.array([max([0.0] + [1 - abs((a - b).days) / 7 for a in self.asked_days[qi]
                                         for b in self.doc_days[i]]) for i in ids])
        return ids, dict(
            en=np.maximum(sim, 0) / max(sim.max(), 1e-9),
            tn=t[ids] / t[ids].max() if t[ids].max() > 0 else t[ids],
            date=np.array([bool(qm or qy) and (not qm or bool(qm & self.dated[i][0]))
                           and (not qy or bool(qy & self.dated[i][1])) for i in ids], float),
            prox=np.array([min(self.pairs(qi, i), 3) for i in ids], float),
            named=np.isin(self.speakers[ids], L.words(self.questions[qi]["q"])).astype(float),
            day=day, sim=e[ids], t=t[ids])

    @staticmethod
    def score(c, weight=0.6):
        return (weight * c["en"] + (1 - weight) * c["tn"] + 0.1 * c["date"] + 0.05 * c["prox"]
                + 0.05 * c["named"] + 0.1 * c["day"])

    def run(self, fn, parts=None):
        out = []
        for qi, (ids, c) in enumerate(parts or self.parts):
            out.append(ids[np.argsort(-fn(qi, ids, c), kind="stable")[:10]])
        return self.judge.recall(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.path.join(L.ROOT, "..", "shared", "data", "locomo-dev"))
    s = Shipped(parser.parse_args().data)
    qs, facts = s.questions, s.facts
    L.header("Not kept, on top of the shipped hybrid (facts mapping)")
    L.row("shipped", s.run(lambda qi, ids, c: s.score(c)))

    first = [next((w for w in L.words(q["q"]) if w in set(s.speakers)), None) for q in qs]
    for bonus in [0.03, 0.05, 0.08]:
        L.row(f"+ the type a question names first, +{bonus}",
              s.run(lambda qi, ids, c: s.score(c) + bonus * (s.speakers[ids] == first[qi])))

    tf = [Counter(L.STEM.stemWords(L.words(d))) for d in s.docs]
    df = Counter(w for c in tf for w in c)
    n = len(s.docs)
    idf = lambda w: max(1e-6, math.log((n - df[w] + 0.5) / (df[w] + 0.5)))
    ideal = np.array([sum(idf(w) for w in L.query_terms(q["q"]) if df[w]) for q in qs])
    for lo, hi in [(0.5, 0.7), (0.55, 0.65)]:
        L.row(f"text weight from {1 - hi:.2f} to {1 - lo:.2f} as the best match covers the question",
              s.run(lambda qi, ids, c: s.score(c, hi - (hi - lo) * min(1, c["t"].max() / max(ideal[qi], 1e-9)))))
    for g, k in [(0.05, 5), (0.1, 20), (0.2, 5)]:
        def rrf(qi, ids, c, g=g, k=k):
            rt = np.argsort(np.argsort(-c["t"], kind="stable"), kind="stable")
            re_ = np.argsort(np.argsort(-c["en"], kind="stable"), kind="stable")
            return s.score(c) + g * k * (1 / (k + rt + 1) + 1 / (k + re_ + 1))
        L.row(f"+ an RRF term, weight {g}, k {k}", s.run(rrf))
    L.row("text divided by the question's ideal bm25",
          s.run(lambda qi, ids, c: s.score(dict(c, tn=np.minimum(c["t"] / max(ideal[qi], 1e-9), 1)))))

    for lam in [0.05, 0.1, 0.2]:
        def diffusion(qi, ids, c, lam=lam):
            score = s.score(c)
            best = np.argsort(-score)[:20]
            sim = s.D[ids] @ s.D[ids].T
            np.fill_diagonal(sim, -1)
            sim = sim[:, best]
            near = np.argsort(-sim, 1)[:, :3]
            return score + lam * (np.take_along_axis(sim, near, 1) * score[best][near]).mean(1)
        L.row(f"+ score diffusion among the top 20, lambda {lam}", s.run(diffusion))

    for k1, b in [(1.2, 0.0), (0.6, 0.0)]:
        T = L.bm25(s.docs, [q["q"] for q in qs], k1=k1, b=b)
        L.row(f"bm25 k1={k1} b={b}", s.run(lambda qi, ids, c: s.score(c),
                                           [s.signals(qi, T=T) for qi in range(len(qs))]))

    # Soft term matching: each question word's best cosine to the observation's words (every
    # word embedded alone by the same model) above a threshold, times its idf.
    doc_words = [[w for w in L.words(f["fact"]) if w not in L.STOP and not w.isdigit()] for f in facts]
    q_words = [list(dict.fromkeys(w for w in L.words(q["q"]) if w not in L.STOP and not w.isdigit())) for q in qs]
    vocab = sorted(set(w for ws in doc_words + q_words for w in ws))
    W = L.embed(vocab, "vocab")
    at = {w: i for i, w in enumerate(vocab)}
    wdf = Counter(w for ws in doc_words for w in set(ws))
    widf = lambda w: max(1e-6, math.log((n - wdf.get(w, 0) + 0.5) / (wdf.get(w, 0) + 0.5)))
    for threshold in [0.5, 0.6]:
        soft = []
        for qi, (ids, c) in enumerate(s.parts):
            out = np.zeros(len(ids))
            if q_words[qi]:
                qv = W[[at[w] for w in q_words[qi]]]
                for k, i in enumerate(ids):
                    if doc_words[i]:
                        best = (qv @ W[[at[w] for w in set(doc_words[i])]].T).max(1)
                        out[k] = sum(widf(w) * x for w, x in zip(q_words[qi], best) if x >= threshold)
            soft.append(out / out.max() if out.max() > 0 else out)
        L.row(f"+ soft term matching above {threshold}, weight 0.2",
              s.run(lambda qi, ids, c: s.score(c) + 0.2 * soft[qi]))

    aux = set("did does do is are was were has have had can would will could should might may".split())
    wh = set("what when where who whom whose which why how kind type types of many much long often sort".split())

    def statement(q):
        w = re.findall(r"[\w'’-]+", q)
        i = next((k for k, x in enumerate(w) if x.lower() not in wh), len(w))
        j = i + 1 if i < len(w) and w[i].lower() in aux else i
        return " ".join(w[j:]) or q
    E2 = L.embed([statement(q["q"]) for q in qs], "questions-declarative") @ s.D.T
    for a in [0.3, 0.5]:
        L.row(f"the question and its statement form mixed, {a}",
              s.run(lambda qi, ids, c: s.score(c), [s.signals(qi, E=(1 - a) * s.E + a * E2) for qi in range(len(qs))]))

    time_words = re.compile(r"\b(yesterday|today|tonight|tomorrow|ago|recently|lately|last|next|"
                            r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|"
                            + "|".join(m.lower() for m in L.MONTHS) + r"|\d{4}|since|until|earlier|soon)\b", re.I)
    timed = np.array([bool(time_words.search(f["fact"])) for f in facts])
    when = np.array([bool(re.match(r"\s*(when|what (year|month|day|date|time)|how long ago)\b", q["q"], re.I)) for q in qs])
    for bonus in [0.05, 0.1]:
        L.row(f"+ a time expression when the question asks when, +{bonus}",
              s.run(lambda qi, ids, c: s.score(c) + (bonus * timed[ids] if when[qi] else 0)))

    for lam in [0.8, 0.9]:
        out = []
        for ids, c in s.parts:
            score = s.score(c)
            order = list(np.argsort(-score, kind="stable")[:20])
            sim = s.D[ids[order]] @ s.D[ids[order]].T
            chosen = []
            while len(chosen) < min(10, len(order)):
                rest = [j for j in range(len(order)) if j not in chosen]
                pick = max(rest, key=lambda j: lam * score[order[j]] - (1 - lam) * max((sim[j, k] for k in chosen), default=0))
                chosen.append(pick)
            out.append(ids[[order[j] for j in chosen]])
        L.row(f"MMR over the top 20, lambda {lam}", s.judge.recall(out))

    second_session(s)


def second_session(s):
    """Tried in the session that added late interaction (BENCHMARKS.md)."""
    qs, facts = s.questions, s.facts
    L.header("Not kept, second round (facts mapping)")

    def fused(norm, weight):
        def f(qi, ids, c):
            if norm == "min-max":
                en, tn = [(x - x.min()) / max(x.max() - x.min(), 1e-9) for x in (c["en"], c["t"])]
            else:
                en, tn = [(x - x.mean()) / (3 * x.std()) if x.std() > 0 else 0 * x for x in (c["en"], c["t"])]
            return (weight * en + (1 - weight) * tn + 0.1 * c["date"] + 0.05 * c["prox"]
                    + 0.05 * c["named"] + 0.1 * c["day"])
        return f
    for norm in ["min-max", "z-score"]:
        for weight in [0.6, 0.7]:
            L.row(f"each signal {norm} among the candidates, similarity weight {weight}", s.run(fused(norm, weight)))

    def unit(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)
    mean = s.D.mean(0)
    _, _, top_directions = np.linalg.svd(s.D - mean, full_matrices=False)
    for name, project in [("centred on the corpus mean", lambda x: unit(x - mean))] + [
            (f"all-but-the-top, {k} direction(s) removed", lambda x, k=k: unit((x - mean) - ((x - mean) @ top_directions[:k].T) @ top_directions[:k]))
            for k in (1, 2)]:
        D2 = project(s.D)
        E2 = project(s.Q) @ D2.T
        L.row(f"vectors {name}", s.run(lambda qi, ids, c: s.score(c), [s.signals(qi, E=E2, D=D2) for qi in range(len(qs))]))

    # Irregular verbs and nouns: a query word's other forms count as the word (one term, its
    # document frequency over all forms).
    forms = {}
    for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "irregular_forms.txt")):
        stems = {L.STEM.stemWord(w) for w in line.split()}
        for stem in stems:
            forms.setdefault(stem, set()).update(stems)
    tf = [Counter(L.STEM.stemWords(L.words(d))) for d in s.docs]
    dl = np.array([sum(c.values()) for c in tf], float)
    T2 = np.zeros_like(s.T)
    for qi, q in enumerate(qs):
        for w in L.query_terms(q["q"]):
            counts = {i: sum(c.get(f, 0) for f in forms.get(w, {w})) for i, c in enumerate(tf)}
            counts = {i: n for i, n in counts.items() if n}
            idf = max(1e-6, math.log((len(s.docs) - len(counts) + 0.5) / (len(counts) + 0.5)))
            for i, n in counts.items():
                T2[qi, i] += idf * n * 2.2 / (n + 1.2 * (0.25 + 0.75 * dl[i] / dl.mean()))
    L.row("irregular forms as one term: text", s.judge.recall([L.top(x) for x in T2]))
    L.row("irregular forms as one term: hybrid", s.run(lambda qi, ids, c: s.score(c), [s.signals(qi, T=T2) for qi in range(len(qs))]))

    for name, render in [("type name: fact", lambda f: f"{f['speaker']} {f['name']}: {f['fact']}"),
                         ("type: fact", lambda f: f"{f['speaker']}: {f['fact']}")]:
        D2 = L.embed([render(f) for f in facts], "docs-" + name.replace(" ", "").replace(":", "-"))
        L.row(f"rendered without the date, {name}", s.run(lambda qi, ids, c: s.score(c), [s.signals(qi, E=s.Q @ D2.T, D=D2) for qi in range(len(qs))]))

    # With late interaction (0.7 x MaxSim, scaled among the candidates): the observation's own
    # coverage of the question (each of its tokens' best match in the question) beside it, or
    # the F1 of the two instead.
    q_signs = L.embed_tokens([q["q"] for q in qs], "questions")
    name = "new general {entity_type} {name}: {observation}"
    d_signs = L.embed_tokens([L.RENDERINGS[name](f) for f in facts], f"docs-{list(L.RENDERINGS).index(name)}")

    def scaled(m):
        ok = np.isfinite(m)
        if ok.sum() < 2 or np.nanmax(m) == np.nanmin(m):
            return np.zeros_like(m)
        return np.nan_to_num((m - np.nanmin(m)) / (np.nanmax(m) - np.nanmin(m)))
    coverage = []
    for qi, (ids, _) in enumerate(s.parts):
        both = [((q @ d.T).max(1).mean() / 384, (q @ d.T).max(0).mean() / 384)
                if len(q) and len(d) else (np.nan, np.nan) for q, d in ((q_signs[qi], d_signs[i]) for i in ids)]
        coverage.append(np.array(both).reshape(-1, 2))
    L.row("late interaction, tokens alike (as first built)", s.run(lambda qi, ids, c: s.score(c) + 0.7 * scaled(coverage[qi][:, 0])))
    for a in [0.1, 0.3]:
        L.row(f"late interaction and the observation's coverage, +{a}",
              s.run(lambda qi, ids, c: s.score(c) + 0.7 * scaled(coverage[qi][:, 0]) + a * scaled(coverage[qi][:, 1])))
    f1 = [2 * x[:, 0] * x[:, 1] / (x[:, 0] + x[:, 1]) for x in coverage]
    L.row("late interaction as F1 of both coverages, 0.7", s.run(lambda qi, ids, c: s.score(c) + 0.7 * scaled(f1[qi])))


if __name__ == "__main__":
    main()
