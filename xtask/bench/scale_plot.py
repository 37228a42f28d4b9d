"""Draws the scale benchmark's cost curves: p50 of each call against the number of
observations, one panel per store, log-log. Usage: scale_plot.py SCALE.json OUT.png"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CALLS = [
    "open_nodes",
    "search_nodes text",
    "search_nodes hybrid",
    "search_observations",
    "get_neighborhood depth 2",
    "get_path",
    "read_graph last page",
    "get_stats",
    "find_similar_nodes",
    "get_consolidation_report",
]


def main(source: str, out: str) -> None:
    runs = json.load(open(source))
    stores = sorted({run["store"] for run in runs})
    figure, axes = plt.subplots(1, len(stores), figsize=(6 * len(stores), 5), squeeze=False)
    for axis, store in zip(axes[0], stores):
        mine = sorted((r for r in runs if r["store"] == store), key=lambda r: r["observations"])
        sizes = [r["observations"] for r in mine]
        for call in CALLS:
            points = [(s, r["calls"][call]["p50"]) for s, r in zip(sizes, mine) if call in r["calls"]]
            if points:
                axis.plot(*zip(*points), marker="o", label=call)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(f"{store}: p50 per call")
        axis.set_xlabel("observations")
        axis.set_ylabel("ms")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    figure.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
