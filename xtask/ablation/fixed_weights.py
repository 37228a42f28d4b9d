#!/usr/bin/env python3
"""Word weights that do not come from the memory, tried as pair-only signals (issue 43;
BENCHMARKS.md "What no pair-only score can keep").

Before scores became pair-only, late interaction weighed each query token by its rarity among
the search's candidates, and LoCoMo dev's facts R@5 was 0.682. A pair-only score may not look
at the other candidates, but it may weigh a word by a table fixed in advance. Two such signals
are added, in turn, to `pair_scores.py`'s signals and fitted and scored as it fits and scores
(leaving one conversation out):

- wcov: the query terms' coverage, each term weighing its idf in a fixed corpus. The corpus is
  `target/padding.txt` without LoCoMo's texts: Debian's package, manual-page and changelog
  texts (`padding.py`).
- latew: late interaction, each query token weighing its idf among 2,000 fixed background
  texts. These are the first of that corpus embedded (`padded.py`'s cache): a background text
  holds a token when one of its tokens agrees with it in 0.6 of the signs, as
  `late_interaction::token_weights` counts among candidates.

    ENGRAM_PAD_EMBEDDED=10000 python3 xtask/ablation/fixed_weights.py [--model NAME]
"""
import argparse, math, os, sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import locomo  # noqa: E402
import padded  # noqa: E402
import pair_scores  # noqa: E402
import small_memories  # noqa: E402
from locomo import words  # noqa: E402

BACKGROUND = 2000


class Tables:
    """The fixed idf of stems and the background texts' token signs."""

    def __init__(self, model, data):
        facts, _ = locomo.load(data)
        locomo_texts = {f["fact"] for f in facts} | {t["fact"] for t in pair_scores.load_turns(data)}
        texts = open(os.path.join(locomo.ROOT, "target", "padding.txt")).read().splitlines()
        kept = [t for t in texts if t not in locomo_texts]
        df = Counter(w for t in kept for w in set(calibrate.ENGLISH.stemWords(words(t))))
        self.idf = {w: math.log((len(kept) + 1) / (c + 0.5)) for w, c in df.items() if c >= 2}
        self.unseen = math.log((len(kept) + 1) / 0.5)
        first = texts[: padded.EMBEDDED]
        _, signs = calibrate.embed([f"note pad-{i:06}: {t}" for i, t in enumerate(first)],
                                   f"padding-{padded.EMBEDDED}", "document", model)
        background = [s for t, s in zip(first, signs) if t not in locomo_texts and len(s)][:BACKGROUND]
        self.tokens = np.vstack(background)
        self.owner = np.concatenate([[j] * len(s) for j, s in enumerate(background)])
        self.texts = len(background)
        self.weights = {}

    def wcov(self, terms, stems):
        if not terms:
            return 0.0
        w = [self.idf.get(t, self.unseen) for t in terms]
        return sum(x for t, x in zip(terms, w) if t in stems) / sum(w)

    def token_weights(self, qsigns):
        key = qsigns.tobytes()
        if key not in self.weights:
            agree = (qsigns @ self.tokens.T) / qsigns.shape[1]
            best = np.full((self.texts, len(qsigns)), -1.0)
            np.maximum.at(best, self.owner, agree.T)
            self.weights[key] = locomo.token_idf(best)
        return self.weights[key]

    def latew(self, qsigns, dsigns):
        if not len(qsigns) or not len(dsigns):
            return 0.0
        w = self.token_weights(qsigns)
        return float((locomo.agreements(qsigns, dsigns) * w).sum() / w.sum())

    def extra(self, terms, stems, qsigns, dsigns):
        return self.wcov(terms, stems), self.latew(qsigns, dsigns)


def add_locomo(tables, data, model, kind, rows):
    """Each LoCoMo candidate's wcov and latew, the queries met in `gather`'s order."""
    facts, questions, convs, qconv, general = pair_scores.corpus(data, kind)
    _, FS = calibrate.embed(general, kind, "document", model)
    _, QS = calibrate.embed([q["q"] for q in questions], "questions", "query", model)
    nonsense = calibrate.nonsense_strings()
    _, NS = calibrate.embed(nonsense, "nonsense", "query", model)
    members = {c: [i for i, f in enumerate(facts) if f["conv"] == c] for c in convs}
    docs = {c: [set(calibrate.ENGLISH.stemWords(words(f"{facts[i]['date']}: {facts[i]['fact']}")))
                for i in members[c]] for c in convs}
    none = np.zeros((len(questions), 1)), np.zeros((len(nonsense), 1))
    queries = calibrate.each_query(questions, qconv, convs, (none[0], QS), nonsense, (none[1], NS))
    for (m, h), (_, _, text, _, qsigns, _, conv) in zip(rows, queries):
        assert m["q"] == text
        terms = calibrate.terms_of(text)
        h["wcov"] = np.array([tables.wcov(terms, docs[conv][i]) for i in h["ids"]])
        h["latew"] = np.array([tables.latew(qsigns, FS[members[conv][i]]) for i in h["ids"]])


def figures(data, small, feats):
    """Leave-one-conversation-out R@5 and off-topic answers at 0 and 0.8, the small sets at 0.8."""
    pair_scores.FEATS = feats
    oof, coef = pair_scores.cross_validated(data, small)
    score = pair_scores.score_of(coef)
    tally, _ = small_memories.judge(small, lambda x: score(np.array(x)[None, :])[0], 0.8)
    cells = []
    for kind, rows in data.items():
        for t in (0, 0.8):
            cells.append(f"{calibrate.recall(rows, oof[kind], t)[1]:.3f}")
        cells.append(f"{pair_scores.answered(rows, oof[kind], 'off', 0.8):.1%}")
    cells.append(f"{tally['kept']}/{tally['kept0']}, {tally['ua']}/{tally['unrelated']}, {tally['na']}/{tally['nonsense']}")
    return cells


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data", default=os.path.join(locomo.ROOT, "..", "shared", "data", "locomo-dev"))
    args = parser.parse_args()
    tables = Tables(args.model, args.data)
    small = small_memories.features(args.model, tables.extra)
    data = {kind: pair_scores.gather(args.data, args.model, kind) for kind in ("facts", "turns")}
    for kind, rows in data.items():
        add_locomo(tables, args.data, args.model, kind, rows)
    shipped = list(pair_scores.FEATS)
    columns = shipped + ["wcov", "latew"]
    print("| signals | facts R@5 | at 0.8 | facts off-topic | turns R@5 | at 0.8 | turns off-topic |"
          " small at 0.8: right kept, unrelated, nonsense |")
    print("|---|---|---|---|---|---|---|---|")
    for label, feats in (("shipped", shipped),
                         ("+ wcov", shipped[:3] + ["wcov"] + shipped[3:]),
                         ("coverage → wcov", [("wcov" if f == "coverage" else f) for f in shipped]),
                         ("late → latew", [("latew" if f == "lateu" else f) for f in shipped]),
                         ("+ latew", shipped[:2] + ["latew"] + shipped[2:])):
        index = [columns.index(f) for f in feats]
        chosen = [(n, s, [(k, t, a, {node: [tuple(np.array(x)[index]) for x in xs] for node, xs in per.items()})
                          for k, t, a, per in rows]) for n, s, rows in small]
        print(f"| {label} | " + " | ".join(figures(data, chosen, feats)) + " |")


if __name__ == "__main__":
    main()
