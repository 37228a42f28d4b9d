#!/usr/bin/env python3
"""Writes `target/padding.txt`: texts about nothing the small-memory sets ask, one a line, to
pad their memories up to 100,000 nodes (`cargo run --release -p engram --example
small_memories -- --pad N`).

Sources, shuffled together with a fixed seed: the one-line descriptions of Debian's packages
(apt's package lists: `apt-get update` first), the descriptions of the installed manual pages
(`apropos`), the entries of the installed packages' changelogs and news (`/usr/share/doc`), and
LoCoMo dev's facts and dialogue turns (people's lives). They are software and chatter, as a
large memory's other projects would be, and name none of the sets' services, people or bugs.

    python3 xtask/ablation/padding.py
"""
import glob, json, os, random, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo import ROOT  # noqa: E402


def packages():
    out = set()
    for path in glob.glob("/var/lib/apt/lists/*_Packages*"):
        reader = ["lz4cat", path] if path.endswith(".lz4") else ["cat", path]
        text = subprocess.run(reader, capture_output=True, text=True).stdout
        out |= {m.strip() for m in re.findall(r"^Description: (.+)$", text, re.M)}
    return out


def manuals():
    text = subprocess.run(["apropos", "-l", "."], capture_output=True, text=True).stdout
    return {line.split(" - ", 1)[1].strip() for line in text.splitlines() if " - " in line}


def changelogs():
    out = set()
    for name in ("changelog.Debian.gz", "changelog.gz", "NEWS.gz"):
        for path in glob.glob(f"/usr/share/doc/*/{name}"):
            text = subprocess.run(["zcat", path], capture_output=True, text=True, errors="replace").stdout
            out |= {m.strip() for m in re.findall(r"^\s*[-*+] (.+)$", text, re.M)}
    return out


def locomo():
    out = set()
    for path in glob.glob(os.path.join(ROOT, "..", "shared", "data", "locomo-dev", "conv-*.json")):
        d = json.load(open(path))
        for key, value in d.items():
            if key.endswith("_observation"):
                out |= {f[0] for facts in value.values() for f in facts}
            elif re.fullmatch(r"session_\d+", key):
                out |= {t["text"] for t in value}
    return out


def main():
    texts = sorted(t for t in packages() | manuals() | changelogs() | locomo() if len(t) >= 12)
    random.Random(43).shuffle(texts)
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "padding.txt"), "w") as f:
        f.write("\n".join(t.replace("\n", " ") for t in texts) + "\n")
    print(f"{len(texts)} texts in target/padding.txt")


if __name__ == "__main__":
    main()
