#!/usr/bin/env python3
"""Pair-only relevance scores on the small-memory sets, offline (issue 43).

Every memory of `xtask/data/small-memories*.json` is rendered as the server's default
perspective renders it (`{entity_type} {name}: {observation}`), embedded by the server's model
through `embed_lines` (queries as queries), and each (question, fact) pair gets the features a
search can compute from that pair alone:

- cos: the cosine of the query and the rendered fact,
- late: late interaction with every query token weighted alike (no weights among candidates),
- coverage: the share of the query's terms the fact's text holds,
- dated: always 0 here (no dates named),
- pairs: consecutive query terms standing together in the fact (at most 3),
- named: 1 when every word of the node's type or of its name is a query word,
- alien and fragmented as `pair_scores.py` computes them.

The rows are in the order of the server's `calibration::Features`.

A node's value is its best fact's. For a candidate formula σ(w·x) it prints, at thresholds, the
right answers kept in the top 5, unrelated and nonsense questions answered, and the LoCoMo dev
questions (facts, `calibrate.py`'s cache of the same features) kept and answered off-topic.

    python3 xtask/ablation/small_memories.py [--model NAME]
"""
import argparse, glob, json, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import pair_scores  # noqa: E402
from calibrate import terms_of  # noqa: E402
from locomo import ROOT, words  # noqa: E402


def coverage(terms, text):
    if not terms:
        return 0.0
    stems = set(calibrate.ENGLISH.stemWords(words(text)))
    return sum(t in stems for t in terms) / len(terms)


def late(qsigns, dsigns):
    if len(qsigns) == 0 or len(dsigns) == 0:
        return 0.0
    return float(((qsigns @ dsigns.T).max(1) / qsigns.shape[1]).mean())


def features(model, extra=None):
    """Per memory: its nodes, and per query kind the (query, node, feature-row) lists; each
    row ends with `extra(terms, fact stems, query signs, fact signs)`'s values when given (a
    signal under trial)."""
    sets = sorted(glob.glob(os.path.join(ROOT, "xtask", "data", "small-memories*.json")))
    out = []
    for path in sets:
        data = json.load(open(path))
        for m in data["memories"]:
            facts, owner = [], []
            for n in m["nodes"]:
                for o in n["observations"]:
                    facts.append(f"{n['entity_type']} {n['name']}: {o}")
                    owner.append(n["name"])
            tag = f"small-{m['name']}"
            D, Ds = calibrate.embed(facts, tag + "-facts", "document", model)
            queries = [("right", q["question"], set(q["answers"])) for q in m["questions"]]
            queries += [("unrelated", q, set()) for q in m["unrelated"]]
            queries += [("nonsense", q, set()) for q in data["nonsense"]]
            Q, Qs = calibrate.embed([q[1] for q in queries], tag + "-queries", "query", model)
            kinds = {n["name"]: n["entity_type"] for n in m["nodes"]}
            rows = []
            for qi, (kind, text, answers) in enumerate(queries):
                terms, qwords = terms_of(text), set(words(text))
                nouns = pair_scores.proper_nouns(text)
                frag = pair_scores.fragmented(text, Qs[qi])
                cos = D @ Q[qi]
                per_node = {}
                for fi, node in enumerate(owner):
                    body = facts[fi].split(": ", 1)[1]
                    stems = calibrate.ENGLISH.stemWords(words(body))
                    named = any(words(t) and set(words(t)) <= qwords for t in (node, kinds[node]))
                    alien = pair_scores.alien(nouns, f"{kinds[node]} {node} {body}")
                    x = (cos[fi], late(Qs[qi], Ds[fi]), coverage(terms, body), 0.0,
                         min(calibrate.proximity(terms, stems), 3), float(named), alien, frag)
                    if extra:
                        x += tuple(extra(terms, set(stems), Qs[qi], Ds[fi]))
                    per_node.setdefault(node, []).append(x)
                rows.append((kind, text, answers, per_node))
            out.append((m["name"], len(m["nodes"]), rows))
    return out


def judge(memories, score, threshold):
    tally = dict(right=0, kept=0, kept0=0, unrelated=0, ua=0, nonsense=0, na=0)
    scores = []
    for _, _, rows in memories:
        for kind, text, answers, per_node in rows:
            ranked = sorted(((max(score(np.array(x)) for x in xs), n) for n, xs in per_node.items()),
                            reverse=True)[:5]
            if kind == "right":
                tally["right"] += 1
                hit = [s for s, n in ranked if n in answers]
                tally["kept0"] += bool(hit)
                tally["kept"] += bool(hit) and hit[0] >= threshold
                scores += hit[:1]
            elif kind == "unrelated":
                tally["unrelated"] += 1
                tally["ua"] += ranked[0][0] >= threshold
            else:
                tally["nonsense"] += 1
                tally["na"] += ranked[0][0] >= threshold
    return tally, scores


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    args = parser.parse_args()
    memories = features(args.model)
    # Print the feature distributions: right answers' best node vs unrelated questions' best.
    for kind in ("right", "unrelated", "nonsense"):
        best = []
        for _, _, rows in memories:
            for k, text, answers, per_node in rows:
                if k != kind:
                    continue
                nodes = answers if kind == "right" else per_node.keys()
                best.append(np.max([x for n in nodes for x in per_node[n]], axis=0))
        b = np.array(best)
        print(kind, len(b), "p10/p50/p90 cos", np.percentile(b[:, 0], [10, 50, 90]).round(3),
              "late", np.percentile(b[:, 1], [10, 50, 90]).round(3),
              "cov", np.percentile(b[:, 2], [10, 50, 90]).round(2),
              "named", np.percentile(b[:, 5], [10, 50, 90]).round(2))
    np.save(os.path.join(calibrate.CACHE, f"small-{args.model}.npy"),
            np.array(memories, dtype=object), allow_pickle=True)


if __name__ == "__main__":
    main()
