#!/usr/bin/env python3
"""Offline ablations of engram's retrieval on the LoCoMo dev split (facts and speakers mappings).

Reproduces the tables in BENCHMARKS.md ("Search quality: what was tried"). The vectors are the
server's own: every rendering is embedded by engram's local model (all-MiniLM-L6-v2 in candle)
through `cargo run --release -p engram-embed --example embed_lines`; full text is FTS5's bm25
re-implemented (Porter stemming, the same stop words), which matches the server's text mode to
within 0.002 (R@5 0.596 both). Run from the repository root:

    pip install numpy snowballstemmer
    python3 xtask/ablation/locomo.py [--data ../shared/data/locomo-dev]

Vectors are cached in target/ablation/. The numbers judge *rankings*; the server's own
`cargo xtask eval locomo` is the end-to-end check.
"""
import argparse, datetime, glob, json, math, os, re, subprocess, sys
from collections import Counter, defaultdict

import numpy as np
import snowballstemmer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "target", "ablation")
STOP = set(open(os.path.join(ROOT, "crates/engram-domain/src/search/stop_words.txt")).read().split())
STEM = snowballstemmer.stemmer("porter")


def load(data):
    facts, questions = [], []
    for path in sorted(glob.glob(f"{data}/conv-*.json")):
        cid = os.path.basename(path)[:-5]
        d = json.load(open(path))
        first = len(facts)
        s = 1
        while f"session_{s}_observation" in d:
            date = d[f"session_{s}_date_time"]
            obs = d[f"session_{s}_observation"]
            for speaker in sorted(obs):
                for fact, turns in obs[speaker]:
                    turns = [turns] if isinstance(turns, str) else turns
                    facts.append(dict(conv=cid, speaker=speaker, date=date, fact=fact,
                                      turns=[f"{cid}:{t}" for t in turns]))
            s += 1
        for i, f in enumerate(facts[first:]):
            f["name"] = f"{f['turns'][0]}:{i}"
        for q in d["qa"]:
            if q["category"] > 4:
                continue
            ev = {f"{cid}:" + p.replace("D:", "D", 1)
                  for e in q.get("evidence", []) for p in re.split(r"[;, ]", e) if p}
            questions.append(dict(q=q["question"], cat=q["category"], ev=ev))
    return facts, questions


# Renderings of a fact (observation = "<date>: <fact>"); `sp_*` render it on a speaker node.
RENDERINGS = {
    "content {observation}": lambda f: f"{f['date']}: {f['fact']}",
    "old general {name}: {observation}": lambda f: f"{f['name']}: {f['date']}: {f['fact']}",
    "technical {entity_type} {name} [{tags}]": lambda f: f"{f['speaker']} {f['name']} []: {f['date']}: {f['fact']}",
    "relational {name} ({relations})": lambda f: f"{f['name']} (): {f['date']}: {f['fact']}",
    "temporal On {date}, {name} (fact {ordinal})": lambda f: f"On 2026-11-22, {f['name']} (fact 1): {f['date']}: {f['fact']}",
    "project {name}, {summary} [{tags}]": lambda f: f"{f['name']},  []: {f['date']}: {f['fact']}",
    "typed {entity_type}: {observation}": lambda f: f"{f['speaker']}: {f['date']}: {f['fact']}",
    "new general {entity_type} {name}: {observation}": lambda f: f"{f['speaker']} {f['name']}: {f['date']}: {f['fact']}",
    "fact without its date (reference only)": lambda f: f["fact"],
    "sp content {observation}": lambda f: f"{f['date']}: {f['fact']}",
    "sp old general {name}: {observation}": lambda f: f"{f['conv']}:{f['speaker']}: {f['date']}: {f['fact']}",
    "sp new general {entity_type} {name}: {observation}": lambda f: f"person {f['conv']}:{f['speaker']}: {f['date']}: {f['fact']}",
}
OLD_FIVE = ["old general {name}: {observation}", "technical {entity_type} {name} [{tags}]",
            "relational {name} ({relations})", "temporal On {date}, {name} (fact {ordinal})",
            "project {name}, {summary} [{tags}]"]


def embed(lines, name):
    os.makedirs(OUT, exist_ok=True)
    src, dst = os.path.join(OUT, f"{name}.txt"), os.path.join(OUT, f"{name}.f32")
    text = "\n".join(l.replace("\n", " ") for l in lines) + "\n"
    if not (os.path.exists(dst) and os.path.exists(src) and open(src).read() == text):
        open(src, "w").write(text)
        subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "engram-embed", "--example",
                        "embed_lines", src, dst], cwd=ROOT, check=True)
    v = np.fromfile(dst, dtype="<f4").reshape(len(lines), -1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def embed_tokens(lines, name):
    """The token signs of each line (late interaction), as ±1 matrices of 384 columns, one row
    per content token; cached beside the vectors."""
    os.makedirs(OUT, exist_ok=True)
    src, vec, dst = (os.path.join(OUT, f"{name}.{x}") for x in ("txt", "f32", "signs"))
    text = "\n".join(l.replace("\n", " ") for l in lines) + "\n"
    if not (os.path.exists(dst) and os.path.exists(src) and open(src).read() == text):
        open(src, "w").write(text)
        subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "engram-embed", "--example",
                        "embed_lines", src, vec, dst], cwd=ROOT, check=True)
    return read_signs(dst, len(lines), 384)


def read_signs(path, count, dims):
    """The token signs `embed_lines` wrote to `path` for `count` lines of `dims`-dimensional
    vectors: one ±1 matrix per line, a row per content token."""
    raw, out, at = open(path, "rb").read(), [], 0
    while at < len(raw):
        n = int.from_bytes(raw[at:at + 4], "little")
        bits = np.unpackbits(np.frombuffer(raw[at + 4:at + 4 + n], np.uint8), bitorder="little")
        out.append(bits.reshape(-1, dims).astype(np.float32) * 2 - 1)
        at += 4 + n
    assert len(out) == count
    return out


def agreements(query, doc):
    """Each query token's best agreement with a document token (1 - 2 x Hamming distance /
    384), both token-sign matrices; None when either has no token."""
    if len(query) == 0 or len(doc) == 0:
        return None
    return (query @ doc.T).max(1) / 384


def token_idf(best, held=0.6):
    """Each query token's idf among texts, from `best` (texts × query tokens: each text's best
    agreement with the token): a text holds a token when it agrees in `held` (at least 0.05,
    `late_interaction::token_weights`)."""
    return np.maximum(np.log((len(best) + 1) / ((best >= held).sum(0) + 0.5)), 0.05)


def max_sims(query, docs, weighted=True, held=0.6):
    """Late interaction of the query with each candidate: the mean of its agreements, each
    query token weighted by its idf among the candidates (a candidate holds a token when it
    agrees in `held`), or all alike."""
    found = [agreements(query, d) for d in docs]
    rows = np.array([a for a in found if a is not None])
    weights = np.ones(len(query))
    if weighted and len(rows):
        weights = token_idf(rows, held)
    return np.array([np.nan if a is None else (a * weights).sum() / weights.sum() for a in found])


def words(t):
    return [w for w in re.split(r"[^0-9a-zA-Z]+", t.lower()) if w]


def query_terms(q):
    out = []
    for w in words(q):
        if w not in STOP and STEM.stemWord(w) not in out:
            out.append(STEM.stemWord(w))
    return out


def bm25(docs, queries, k1=1.2, b=0.75):
    tf = [Counter(STEM.stemWords(words(d))) for d in docs]
    dl = np.array([sum(c.values()) for c in tf], float)
    df = Counter(w for c in tf for w in c)
    post = defaultdict(list)
    for i, c in enumerate(tf):
        for w, n in c.items():
            post[w].append((i, n))
    out = np.zeros((len(queries), len(docs)))
    for qi, q in enumerate(queries):
        for w in query_terms(q):
            idf = max(1e-6, math.log((len(docs) - df[w] + 0.5) / (df[w] + 0.5)))
            for i, n in post.get(w, []):
                out[qi, i] += idf * n * (k1 + 1) / (n + k1 * (1 - b + b * dl[i] / dl.mean()))
    return out


MONTHS = "January February March April May June July August September October November December".split()


def named_dates(text):
    """The months and years `text` names (as the server's `search/dates.rs`)."""
    months = {i + 1 for i, m in enumerate(MONTHS) for w in re.findall(r"[A-Z][a-z]+", text)
              if w == m or (3 <= len(w) <= 4 and m.startswith(w) and w != "Marc")}
    return months, set(re.findall(r"\b(19\d\d|20\d\d)\b", text))


def days(text):
    """The days `text` names ("1 May, 2022", "8th of December 2023", "May 8, 2023")."""
    found = set()
    month = "(" + "|".join(m[:3] + "[a-z]*" for m in MONTHS) + ")"
    for d, m, y in re.findall(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + month + r",?\s+(\d{4})", text):
        found.add((int(y), next(i for i, n in enumerate(MONTHS) if n.startswith(m[:3])) + 1, int(d)))
    for m, d, y in re.findall(month + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})", text):
        found.add((int(y), next(i for i, n in enumerate(MONTHS) if n.startswith(m[:3])) + 1, int(d)))
    out = set()
    for y, m, d in found:
        try:
            out.add(datetime.date(y, m, d))
        except ValueError:
            pass
    return out


class Judge:
    def __init__(self, facts, questions):
        self.facts, self.questions = facts, questions

    def recall(self, rankings):
        hits, mrr = np.zeros(3), 0.0
        for q, ranking in zip(self.questions, rankings):
            rel = [bool(set(self.facts[i]["turns"]) & q["ev"]) for i in ranking[:10]]
            for j, k in enumerate([1, 5, 10]):
                hits[j] += any(rel[:k])
            mrr += next((1 / (r + 1) for r, x in enumerate(rel) if x), 0.0)
        n = len(self.questions)
        return (*(hits / n), mrr / n)


def top(s, k=10):
    idx = np.argpartition(-s, k)[:k]
    return idx[np.argsort(-s[idx], kind="stable")]


def hybrid(E, T, weight=0.6, depth=50, norm="max"):
    """The server's hybrid: candidates = `depth` nearest ∪ 2·`depth` best text matches, every
    signal scored for every candidate, each divided by its best among the candidates."""
    out = []
    for e, t in zip(E, T):
        ids = np.union1d(top(e, depth), [i for i in top(t, 2 * depth) if t[i] > 0])
        ee, tt = np.maximum(e[ids], 0), t[ids]
        tn = tt / tt.max() if tt.max() > 0 else tt
        en = ee / ee.max() if norm == "max" else (e[ids] if norm == "raw" else ee)
        out.append(ids[np.argsort(-(weight * en + (1 - weight) * tn), kind="stable")[:10]])
    return out


def rrf(lists, k=60, depth=50):
    out = []
    for qi in range(len(lists[0])):
        acc = defaultdict(float)
        for S in lists:
            s = S[qi]
            for r, i in enumerate(top(s, depth)):
                if s[i] > 0:
                    acc[int(i)] += 1 / (k + r + 1)
        out.append(sorted(acc, key=lambda i: -acc[i])[:10])
    return out


def row(name, r):
    print(f"| {name} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} |")


def header(title):
    print(f"\n### {title}\n\n| variant | R@1 | R@5 | R@10 | MRR |\n|---|---|---|---|---|")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "locomo-dev"))
    args = parser.parse_args()
    facts, questions = load(args.data)
    judge = Judge(facts, questions)
    print(f"{len(facts)} facts, {len(questions)} questions (categories 1-4)", file=sys.stderr)
    Q = embed([q["q"] for q in questions], "questions")
    D = {name: embed([r(f) for f in facts], f"docs-{i}") for i, (name, r) in enumerate(RENDERINGS.items())}
    E = {name: Q @ D[name].T for name in D}
    docs = [f"{f['date']}: {f['fact']}" for f in facts]
    T = bm25(docs, [q["q"] for q in questions])
    T2 = bm25(docs, [q["q"] for q in questions], k1=0.9, b=0.4)
    new = "new general {entity_type} {name}: {observation}"

    header("Perspectives: each rendering alone (embedding mode) and in hybrid (facts mapping)")
    for name in RENDERINGS:
        if not name.startswith("sp "):
            row(f"{name}: embedding", judge.recall([top(s) for s in E[name]]))
            row(f"{name}: hybrid", judge.recall(hybrid(E[name], T)))
    five = np.array([E[n] for n in OLD_FIVE])
    row("the old five, best per node (old default): embedding", judge.recall([top(s) for s in five.max(0)]))
    row("the old five, mean: embedding", judge.recall([top(s) for s in five.mean(0)]))
    row("the old five, RRF k=60: embedding", judge.recall(rrf(list(five))))
    row("the old five, best per node: hybrid", judge.recall(hybrid(five.max(0), T)))
    row("new general + content, best per node: hybrid", judge.recall(hybrid(np.maximum(E[new], E["content {observation}"]), T)))
    row("new general + content, mean: hybrid", judge.recall(hybrid((E[new] + E["content {observation}"]) / 2, T)))

    header("Perspectives on the speakers mapping (search_observations; node name `conv:Speaker`, type `person`)")
    for name in RENDERINGS:
        if name.startswith("sp "):
            row(f"{name[3:]}: embedding", judge.recall([top(s) for s in E[name]]))
            row(f"{name[3:]}: hybrid", judge.recall(hybrid(E[name], T)))

    header("Fusion of embedding (new general) and text")
    e = E[new]
    row("text alone (bm25)", judge.recall([top(s) for s in T]))
    row("embedding alone", judge.recall([top(s) for s in e]))
    for k in [1, 5, 10, 20, 60]:
        row(f"RRF k={k}, depth 50", judge.recall(rrf([e, T], k=k)))
    for norm in ["raw", "max"]:
        for w in [0.5, 0.6, 0.7, 0.8]:
            row(f"score fusion, similarity {norm}, weight {w}", judge.recall(hybrid(e, T, w, norm=norm)))
    for depth in [10, 20, 50, 100]:
        row(f"score fusion (max, 0.6), depth {depth}", judge.recall(hybrid(e, T, depth=depth)))

    header("Cheap signals on top of hybrid (new general, max, 0.6)")
    row("hybrid, no further signal", judge.recall(hybrid(e, T)))
    types = np.array([f["speaker"].lower() for f in facts])
    for beta in [0.05, 0.1, 0.2]:
        boosted = []
        for qi, q in enumerate(questions):
            t = T[qi]; tn = t / t.max() if t.max() > 0 else t
            ee = np.maximum(e[qi], 0); ee = ee / ee.max()
            s = 0.6 * ee + 0.4 * tn + beta * np.isin(types, words(q["q"]))
            boosted.append(top(s))
        row(f"+ a question that names a node's type: +{beta}", judge.recall(boosted))
    asked = [named_dates(q["q"]) for q in questions]
    dated = [named_dates(d) for d in docs]
    for bonus in [0.05, 0.1, 0.2]:
        out = []
        for qi in range(len(questions)):
            t, ee = T[qi], e[qi]
            ids = np.union1d(top(ee, 50), [i for i in top(t, 100) if t[i] > 0])
            en = np.maximum(ee[ids], 0) / max(ee[ids].max(), 1e-9)
            tn = t[ids] / t[ids].max() if t[ids].max() > 0 else t[ids]
            qm, qy = asked[qi]
            match = np.array([bool(qm or qy) and (not qm or bool(qm & dated[i][0]))
                              and (not qy or bool(qy & dated[i][1])) for i in ids])
            s = 0.6 * en + 0.4 * tn + bonus * match
            out.append(ids[np.argsort(-s, kind="stable")[:10]])
        row(f"+ dates the question names, +{bonus}" + (" (kept)" if bonus == 0.1 else ""), judge.recall(out))

    # Term proximity (pairs of consecutive query terms at most `window` words apart, in order,
    # Snowball English stems) and closeness to a day the question names, on top of the dates.
    english = snowballstemmer.stemmer("english")
    doc_stems = [english.stemWords(words(d)) for d in docs]
    terms = []
    for q in questions:
        t = []
        for w in words(q["q"]):
            if w not in STOP and english.stemWord(w) not in t:
                t.append(english.stemWord(w))
        terms.append(t)

    def pairs(qi, i, window):
        s, near = doc_stems[i], set()
        for k in range(1, window + 1):
            near |= set(zip(s, s[k:]))
        return sum((a, b) in near for a, b in zip(terms[qi], terms[qi][1:]))

    asked_days, doc_days = [days(q["q"]) for q in questions], [days(d) for d in docs]

    doc_vectors = D[new]

    speakers = np.array([f["speaker"].lower() for f in facts])

    def cues(proximity=0.0, window=2, cap=3, day=0.0, hub_k=0, hub=0.0, corpus_hubness=None, named=0.0):
        out = []
        for qi in range(len(questions)):
            t, ee = T[qi], e[qi]
            ids = np.union1d(top(ee, 50), [i for i in top(t, 100) if t[i] > 0])
            sim = ee[ids].copy()
            if hub:
                if corpus_hubness is not None:
                    sim -= hub * corpus_hubness[ids]
                else:
                    # Each candidate's mean similarity to its `hub_k` most similar fellows.
                    pair = doc_vectors[ids] @ doc_vectors[ids].T
                    np.fill_diagonal(pair, -np.inf)
                    k = min(hub_k, len(ids) - 1)
                    sim -= hub * np.sort(pair, 1)[:, -k:].mean(1)
            en = np.maximum(sim, 0) / max(sim.max(), 1e-9)
            tn = t[ids] / t[ids].max() if t[ids].max() > 0 else t[ids]
            qm, qy = asked[qi]
            s = 0.6 * en + 0.4 * tn + 0.1 * np.array(
                [bool(qm or qy) and (not qm or bool(qm & dated[i][0])) and (not qy or bool(qy & dated[i][1])) for i in ids])
            s += proximity * np.array([min(pairs(qi, i, window), cap) for i in ids])
            if named:
                # The node's type (here the speaker) is a word of the question.
                s += named * np.isin(speakers[ids], words(questions[qi]["q"]))
            if day and asked_days[qi]:
                s += day * np.array([max([0.0] + [1 - abs((a - b).days) / 7 for a in asked_days[qi] for b in doc_days[i]]) for i in ids])
            out.append(ids[np.argsort(-s, kind="stable")[:10]])
        return judge.recall(out)

    for window, cap, proximity in [(1, 2, 0.05), (2, 2, 0.05), (2, 3, 0.03), (2, 3, 0.05), (2, 3, 0.08), (3, 3, 0.05)]:
        row(f"+ query terms side by side: window {window}, at most {cap} pairs, +{proximity} each" + (" (kept)" if (window, cap, proximity) == (2, 3, 0.05) else ""), cues(proximity, window, cap))
    for day in [0.05, 0.1, 0.2]:
        row(f"+ both, and the day the question names (within a week), +{day}" + (" (kept)" if day == 0.1 else ""), cues(0.05, 2, 3, day))
    header("Hubness (on top of the dates and proximity): similarity less weight x mean similarity to the k most similar")
    for k in [5, 10, 20]:
        for hub in [0.3, 0.4, 0.5]:
            row(f"among the candidates, k={k}, weight {hub}" + (" (kept)" if (k, hub) == (10, 0.4) else ""), cues(0.05, 2, 3, 0.1, k, hub))
    pair = doc_vectors @ doc_vectors.T
    np.fill_diagonal(pair, -np.inf)
    for k in [5, 10]:
        corpus = np.sort(pair, 1)[:, -k:].mean(1)
        for hub in [0.4, 0.5]:
            row(f"over the whole corpus (CSLS), k={k}, weight {hub}", cues(0.05, 2, 3, 0.1, k, hub, corpus))
            row(f"over the whole corpus (CSLS), k={k}, weight {hub}: embedding alone", judge.recall([top(s - hub * corpus) for s in e]))
    for named in [0.03, 0.05, 0.1]:
        row(f"+ a question that names a node's type, +{named}" + (" (shipped)" if named == 0.05 else ""), cues(0.05, 2, 3, 0.1, 10, 0.4, None, named))
    header("Not kept (on hybrid with the month-or-year signal alone)")
    docs_vectors = D[new]
    for m, beta in [(3, 0.3), (5, 0.3), (10, 0.5)]:
        out = []
        for qi in range(len(questions)):
            first = hybrid(e[qi:qi + 1], T[qi:qi + 1])[0][:m]
            q2 = Q[qi] + beta * docs_vectors[first].mean(0)
            q2 /= np.linalg.norm(q2)
            out.append(hybrid((docs_vectors @ q2)[None, :], T[qi:qi + 1])[0])
        row(f"+ pseudo-relevance feedback (top {m}, weight {beta})", judge.recall(out))
    keywords = embed([" ".join(w for w in re.findall(r"[\w']+", q["q"]) if w.lower() not in STOP) for q in questions], "questions-keywords")
    ek = keywords @ docs_vectors.T
    row("question without stop words, embedded", judge.recall(hybrid(ek, T)))
    row("question and its keywords, best of both", judge.recall(hybrid(np.maximum(e, ek), T)))
    row("bm25 k1=0.9 b=0.4", judge.recall(hybrid(e, T2)))
    row("bm25 over type + content", judge.recall(hybrid(e, bm25([f"{f['speaker']} {d}" for f, d in zip(facts, docs)], [q["q"] for q in questions]))))

    # PostgreSQL's ranking: `ts_rank` gives a word's k-th occurrence 1/k² of the first's weight
    # and does not normalise by length; of the whole query it weighs no word by rarity, per
    # lexeme × BM25's idf (what the store does since) it does. Hybrid with every signal above.
    header("PostgreSQL-like text ranking (ts_rank), with every hybrid signal")
    tf = [Counter(STEM.stemWords(words(d))) for d in docs]
    df = Counter(w for c in tf for w in c)
    for weighted in [False, True]:
        P = np.zeros_like(T)
        for qi, q in enumerate(questions):
            for w in query_terms(q["q"]):
                idf = max(1e-6, math.log((len(docs) - df[w] + 0.5) / (df[w] + 0.5))) if weighted else 1.0
                for i, c in enumerate(tf):
                    if c.get(w):
                        P[qi, i] += idf * sum(1 / (j + 1) ** 2 for j in range(c[w]))
        name = "each lexeme x its idf (shipped)" if weighted else "the whole query, no idf (before)"
        row(f"{name}: text", judge.recall([top(s) for s in P]))
        T_saved = T
        T = P
        row(f"{name}: hybrid", cues(0.05, 2, 3, 0.1, 10, 0.4, None, 0.05))
        T = T_saved


    # Late interaction (crates/engram-domain/src/search/late_interaction.rs): each candidate's MaxSim
    # over the signs of its content tokens' vectors and the question's, scaled among the
    # candidates from 0 to 1, times a weight, on top of every signal above.
    header("Late interaction (token signs) on top of every signal above")
    q_signs = embed_tokens([q["q"] for q in questions], "questions")
    sp = "sp new general {entity_type} {name}: {observation}"
    for mapping, rendering, vectors in [("facts", new, D[new]), ("speakers", sp, D[sp])]:
        d_signs = embed_tokens([RENDERINGS[rendering](f) for f in facts], f"docs-{list(RENDERINGS).index(rendering)}")
        ee = Q @ vectors.T
        variants = [(False, w, 0.6) for w in (0.0, 0.3, 0.5, 0.7, 1.0)]
        variants += [(True, w, 0.6) for w in (0.5, 0.7, 1.0)] + [(True, 0.7, h) for h in (0.4, 0.5, 0.7, 0.8)]
        for weighted, weight, held in variants:
            out = []
            for qi in range(len(questions)):
                t = T[qi]
                ids = np.union1d(top(ee[qi], 50), [i for i in top(t, 100) if t[i] > 0])
                sim = ee[qi][ids].copy()
                pair = vectors[ids] @ vectors[ids].T
                np.fill_diagonal(pair, -np.inf)
                sim -= 0.4 * np.sort(pair, 1)[:, -min(10, len(ids) - 1):].mean(1)
                en = np.maximum(sim, 0) / max(sim.max(), 1e-9)
                tn = t[ids] / t[ids].max() if t[ids].max() > 0 else t[ids]
                qm, qy = asked[qi]
                s = 0.6 * en + 0.4 * tn + 0.1 * np.array(
                    [bool(qm or qy) and (not qm or bool(qm & dated[i][0])) and (not qy or bool(qy & dated[i][1])) for i in ids])
                s += 0.05 * np.array([min(pairs(qi, i, 2), 3) for i in ids])
                if mapping == "facts":  # A speaker node's name (`conv-26:Caroline`) is never named whole.
                    s += 0.05 * np.isin(speakers[ids], words(questions[qi]["q"]))
                if asked_days[qi]:
                    s += 0.1 * np.array([max([0.0] + [1 - abs((a - b).days) / 7 for a in asked_days[qi] for b in doc_days[i]]) for i in ids])
                m = max_sims(q_signs[qi], [d_signs[i] for i in ids], weighted, held)
                if np.isfinite(m).sum() > 1 and np.nanmax(m) > np.nanmin(m):
                    s += weight * np.nan_to_num((m - np.nanmin(m)) / (np.nanmax(m) - np.nanmin(m)))
                out.append(ids[np.argsort(-s, kind="stable")[:10]])
            tokens = f"tokens weighted by their idf among the candidates (held from {held})" if weighted else "tokens alike"
            shipped = weighted and weight == 0.7 and held == 0.6
            row(f"{mapping}: weight {weight}, {tokens}" + (" (shipped)" if shipped else ""), judge.recall(out))


if __name__ == "__main__":
    main()
