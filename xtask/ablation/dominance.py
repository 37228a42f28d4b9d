#!/usr/bin/env python3
"""What any pair-only score can keep (issue 43): a bound that holds for every formula, fitted
or not, of the signals `calibration::Features` reads.

A score that is "pair-only" and sensible rises with the evidence a pair shows: it does not fall
when the cosine, the late interaction, the dates found, the adjacent terms or a named node
rise, nor rise when more of the query's names are lacking or the query is more fragmented.
Coverage may weigh either way (the fitted weight is near 0, sometimes below). Then if a right
answer's pair is kept at some threshold, every pair that is at least as good in each signal
(it *dominates* the right pair) is kept too. So for a right answer r, the unrelated questions
(and nonsense strings) that have a candidate dominating r are answered by any such score that
keeps r, whatever its weights and threshold.

This prints, for each memory size (each small memory with N padding nodes, as `padded.py`
pads them), how many right answers could be kept while answering at most 10 % of the
unrelated questions, and while answering no nonsense, under each sign of coverage's weight
(the better one counts), and what keeping the two-node example ("how do we handle declined
payments?") forces.

    python3 xtask/ablation/dominance.py [--model NAME] [--pads 0,100,1000,10000]
"""
import argparse, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo  # noqa: E402
import padded  # noqa: E402
import pair_scores  # noqa: E402

# Per signal of `calibration::Features`: +1 a score may not fall as it rises, −1 may not rise,
# 0 either way (coverage: tried with each sign).
RISING = np.array([1, 1, 0, 1, 1, 1, -1, -1])
COVERAGE = 2


def late_variants(terms, stems, qsigns, dsigns):
    """`--variants`: the late interaction read as `pair_scores.VARIANTS` reads it (the weakest
    token, the lower quartile, the share held, squared, trimmed), each a signal that rises."""
    agree = locomo.agreements(qsigns, dsigns) if len(qsigns) and len(dsigns) else None
    return [0.0 if agree is None else f(agree) for f in pair_scores.VARIANTS.values()]


def dominated(candidates, right, coverage_sign):
    """Whether a row of `candidates` is at least as good as `right` in every signal (the
    signals past `calibration::Features`' rising)."""
    sign = np.r_[RISING, np.ones(candidates.shape[1] - len(RISING), dtype=int)]
    sign[COVERAGE] = coverage_sign
    return bool((((candidates - right) * sign) >= 0).all(axis=1).any())


def found(mems, coef):
    """The (memory, question) pairs whose right answer the shipped formula `coef` puts in the
    top 5 with no threshold: the issue's denominator."""
    score = lambda x: coef[0] + np.asarray(x)[: len(coef) - 1] @ coef[1:]
    out = set()
    for name, _, rows in mems:
        for kind, text, answers, nodes in rows:
            top = sorted(nodes, key=lambda n: -max(score(x) for x in nodes[n]))[:5]
            if kind == "right" and set(top) & answers:
                out.add((name, text))
    return out


def forced(mems, coverage_sign):
    """Per right answer, per row of its answer nodes (a score keeps the answer when any row
    passes): the unrelated and the nonsense queries (of every memory: the score is one
    formula) that a score keeping that row must answer."""
    others = [(kind, np.array([x for xs in nodes.values() for x in xs]))
              for _, _, rows in mems for kind, _, _, nodes in rows if kind != "right"]
    out = []
    for name, _, rows in mems:
        for kind, text, answers, nodes in rows:
            if kind != "right" or not any(n in nodes for n in answers):
                continue
            per_row = []
            for row in (np.array(x) for n in answers for x in nodes.get(n, [])):
                hit = [k for k, cands in others if dominated(cands, row, coverage_sign)]
                per_row.append((hit.count("unrelated"), hit.count("nonsense")))
            out.append((name, text, per_row))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--pads", default="0,100,1000,10000")
    parser.add_argument("--coef", default="-2.91,5.74,16.57,-0.55,36.87,0.48,1.36,-5.23,-13.93",
                        help="the shipped formula, whose top 5 says which right answers are found")
    parser.add_argument("--variants", action="store_true",
                        help="add the late interaction's variants as signals that rise")
    args = parser.parse_args()
    coef = np.array([float(x) for x in args.coef.split(",")])
    print("| nodes beside each memory | right answers found (no threshold) | keepable, unrelated ≤ 10 % | keepable, no nonsense |"
          " keepable, both | two-node example forces: unrelated, nonsense |")
    print("|---|---|---|---|---|---|")
    for pad in [int(p) for p in args.pads.split(",")]:
        mems = padded.memories(args.model, pad, late_variants if args.variants else None)
        denominator = found(mems, coef)
        unrelated = sum(k == "unrelated" for _, _, rows in mems for k, *_ in rows)
        few_ok = lambda u, n: u <= 0.1 * unrelated
        clean_ok = lambda u, n: n == 0
        both_ok = lambda u, n: few_ok(u, n) and clean_ok(u, n)
        # Each column its own best sign of coverage's weight: every figure is an upper bound.
        # Keeping a set of right answers answers the union of what each forces; counting
        # per answer (any of its rows) bounds that from below, so "keepable" is an upper bound.
        by_sign = {sign: forced(mems, sign) for sign in (1, -1)}
        columns = []
        for ok in (few_ok, clean_ok, both_ok):
            columns.append(max(
                sum(any(ok(u, n) for u, n in per_row)
                    for name, text, per_row in by_sign[sign] if (name, text) in denominator)
                for sign in by_sign))
        two = [min(per_row, key=lambda r: (r[1], r[0]))
               for rows in by_sign.values() for name, text, per_row in rows
               if name == "two-nodes" and "declined" in text]
        two = min(two, key=lambda r: (r[1], r[0])) if two else None
        cells = f"{two[0]}/{unrelated} answered, {two[1]} nonsense" if two else "–"
        print(f"| {pad:,} | {len(denominator)} | {columns[0]} | {columns[1]} | {columns[2]} | {cells} |")


if __name__ == "__main__":
    main()
