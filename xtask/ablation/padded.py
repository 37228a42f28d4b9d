#!/usr/bin/env python3
"""The small-memory sets padded offline (issue 43): each memory's questions asked of its nodes
plus N padding texts (`target/padding.txt`, `padding.py`), as `small_memories --pad N` asks
them of the server, so that a candidate formula can be judged at 10 to 100,000 nodes in
seconds instead of an end-to-end run.

Each padding text is a node of type `note` named `pad-NNNNNN`, as the example stores it. Its
candidates for a query are the 200 nearest by cosine and the 200 that hold the most of the
query's terms; each gets the signals of `calibration::Features` (`small_memories.py`,
`pair_scores.py`).

    python3 xtask/ablation/padded.py [--model NAME] [--pad 10000]
"""
import argparse, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import small_memories  # noqa: E402
import pair_scores  # noqa: E402
from calibrate import terms_of  # noqa: E402
from locomo import ROOT, words  # noqa: E402

DEPTH = 200
# The padding embedded once, each size its first N (fewer: ENGRAM_PAD_EMBEDDED, for a quick look).
EMBEDDED = int(os.environ.get("ENGRAM_PAD_EMBEDDED", "100000"))


def padding_rows(model, pad, queries, extra=None):
    """For each (text, vector, signs) query, {pad node: [feature row]} over its candidates,
    each row ending with `extra`'s values when given (`small_memories.features`)."""
    if pad > EMBEDDED:
        sys.exit(f"--pad {pad} is more than the {EMBEDDED} padding texts embedded (ENGRAM_PAD_EMBEDDED)")
    texts = open(os.path.join(ROOT, "target", "padding.txt")).read().splitlines()[:EMBEDDED]
    facts = [f"note pad-{i:06}: {t}" for i, t in enumerate(texts)]
    P, Ps = calibrate.embed(facts, f"padding-{EMBEDDED}", "document", model)
    texts, P, Ps = texts[:pad], P[:pad], Ps[:pad]
    stems = [calibrate.ENGLISH.stemWords(words(t)) for t in texts]
    index = {}
    for i, s in enumerate(stems):
        for w in set(s):
            index.setdefault(w, []).append(i)
    out = []
    for text, qvec, qsigns in queries:
        terms, qwords = terms_of(text), set(words(text))
        cos = P @ qvec
        held = np.zeros(len(texts))
        for t in terms:
            held[index.get(t, [])] += 1
        lexical = [i for i in np.argsort(-held, kind="stable")[:DEPTH] if held[i] > 0]
        ids = sorted(set(np.argsort(-cos)[:DEPTH]) | set(lexical))
        nouns = pair_scores.proper_nouns(text)
        named = float("note" in qwords)
        frag = pair_scores.fragmented(text, qsigns)
        rows = {}
        for i in ids:
            late = small_memories.late(qsigns, Ps[i])
            coverage = sum(t in set(stems[i]) for t in terms) / len(terms) if terms else 0.0
            pairs = min(calibrate.proximity(terms, stems[i]), 3)
            alien = pair_scores.alien(nouns, f"note pad-{i:06} {texts[i]}")
            row = (cos[i], late, coverage, 0.0, pairs, named, alien, frag)
            if extra:
                row += tuple(extra(terms, set(stems[i]), qsigns, Ps[i]))
            rows[f"pad-{i:06}"] = [row]
        out.append(rows)
    return out


def memories(model, pad, extra=None):
    """`small_memories.features`, each query's rows joined by the padding's (with `extra`'s
    values last, as there)."""
    out = []
    for name, size, rows in small_memories.features(model, extra):
        tag = f"small-{name}"
        texts = [r[1] for r in rows]
        Q, Qs = calibrate.embed(texts, tag + "-queries", "query", model)
        queries = list(zip(texts, Q, Qs))
        padded = padding_rows(model, pad, queries, extra) if pad else [{} for _ in rows]
        new = []
        for qi, (kind, text, answers, per_node) in enumerate(rows):
            new.append((kind, text, answers, padded[qi] | per_node))
        out.append((name, size, new))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--pad", type=int, default=10000)
    parser.add_argument("--coef", default="-3.65,5.28,15.23,-0.51,33.90,0.44,1.25,-3.59,0",
                        help="intercept, then the weights of `calibration::Features` in order")
    parser.add_argument("--thresholds", default="0.5,0.8")
    args = parser.parse_args()
    coef = np.array([float(x) for x in args.coef.split(",")])
    mems = memories(args.model, args.pad)
    score = lambda x: 1 / (1 + np.exp(-(coef[0] + np.asarray(x)[: len(coef) - 1] @ coef[1:])))
    for t in [float(x) for x in args.thresholds.split(",")]:
        tally, scores = small_memories.judge(mems, score, t)
        print(f"pad {args.pad} min_score {t}: right {tally['kept']}/{tally['kept0']} of {tally['right']},"
              f" unrelated {tally['ua']}/{tally['unrelated']}, nonsense {tally['na']}/{tally['nonsense']}")
    # What the unrelated and nonsense questions find.
    for _, _, rows in mems:
        for kind, text, answers, per_node in rows:
            if kind == "right":
                continue
            best = max(((score(x), n, x) for n, xs in per_node.items() for x in xs), key=lambda r: r[0])
            if best[0] >= 0.5:
                print(f"  {kind}: {text!r} -> {best[1]} {best[0]:.3f} {np.round(best[2], 2)}")


if __name__ == "__main__":
    main()
