#!/usr/bin/env python3
"""Generate a large, valid product catalog for benchmarking `catalog build`.

Writes DIR/com.example.bench.plist: an Apple XML property list for one app
(`com.example.bench`), tab-indented like Xcode writes it, with N products
(default 100,000, about 600 bytes each, so ~60 MB).

Deterministic: the same --products and --seed always give the same bytes.
Standard library only.

Usage: scripts/gen-catalog.py [--products N] [--seed S] --out DIR
"""

import argparse
import os
import random
import sys

APP = "com.example.bench"

HEADER = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
    '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
    '<plist version="1.0">\n'
)

ADJECTIVES = ["Gold", "Silver", "Bronze", "Mega", "Mini", "Starter", "Deluxe",
              "Daily", "Weekly", "Premium", "Classic", "Turbo", "Lucky", "Royal"]
NOUNS = ["Coins", "Gems", "Pack", "Bundle", "Chest", "Pass", "Boost", "Skin",
         "Level", "Map", "Hint", "Life", "Key", "Crate"]
# One colour carries an escaped entity, so parsers really decode text.
COLORS = ["red", "green", "blue", "amber", "violet", "teal", "black &amp; white"]
TAGS = ["sale", "new", "popular", "limited", "seasonal", "starter", "pro",
        "gift", "event", "classic"]
PERIODS = ["P1W", "P1M", "P3M", "P6M", "P1Y"]


def pick_type(r):
    x = r.random()
    if x < 0.10:
        return "auto-renewable"
    if x < 0.20:
        return "non-consumable"
    if x < 0.25:
        return "non-renewing"
    return "consumable"


def pick_status(r):
    x = r.random()
    if x < 0.90:
        return "cleared"
    if x < 0.95:
        return "draft"
    if x < 0.98:
        return "removed"
    return "retired"


def product_xml(i, r):
    """One product dict, indented at depth 2 (root dict > products array)."""
    t2, t3, t4, t5 = "\t\t", "\t\t\t", "\t\t\t\t", "\t\t\t\t\t"
    kind = pick_type(r)
    pid = "%s.item%06d" % (APP, i)
    ref = "%s %s %06d" % (r.choice(ADJECTIVES), r.choice(NOUNS), i)
    assert len(pid) <= 100 and len(ref) <= 64
    # availableFrom: always in the past (2020-2024); availableUntil: 2035-2039.
    frm = "%04d-%02d-%02dT%02d:00:00Z" % (
        r.randint(2020, 2024), r.randint(1, 12), r.randint(1, 28), r.randint(0, 23))
    out = [
        t2, "<dict>\n",
        t3, "<key>id</key>\n",
        t3, "<string>", pid, "</string>\n",
        t3, "<key>type</key>\n",
        t3, "<string>", kind, "</string>\n",
        t3, "<key>referenceName</key>\n",
        t3, "<string>", ref, "</string>\n",
        t3, "<key>status</key>\n",
        t3, "<string>", pick_status(r), "</string>\n",
        t3, "<key>displayOrder</key>\n",
        t3, "<integer>", str(i), "</integer>\n",
    ]
    if r.random() < 0.5:
        out += [t3, "<key>availableFrom</key>\n", t3, "<date>", frm, "</date>\n"]
    if r.random() < 0.30:
        until = "%04d-%02d-%02dT00:00:00Z" % (
            r.randint(2035, 2039), r.randint(1, 12), r.randint(1, 28))
        out += [t3, "<key>availableUntil</key>\n",
                t3, "<date>", until, "</date>\n"]
    # A fifth of the products name a minimum app version; some of those need 2.0 (a second band).
    if r.random() < 0.2:
        out += [t3, "<key>minimumAppVersion</key>\n",
                t3, "<string>", "2.0" if r.random() < 0.25 else "1.0", "</string>\n"]
    # Most products inherit the app's platforms; a quarter narrow or restate them.
    if r.random() < 0.25:
        out += [t3, "<key>platforms</key>\n", t3, "<array>\n", t4, "<string>iOS</string>\n"]
        if r.random() >= 0.2:
            out += [t4, "<string>macOS</string>\n"]
        out += [t3, "</array>\n"]
    if kind == "auto-renewable":
        out += [
            t3, "<key>subscription</key>\n",
            t3, "<dict>\n",
            t4, "<key>group</key>\n",
            t4, "<string>bench.group", str(r.randint(1, 20)), "</string>\n",
            t4, "<key>period</key>\n",
            t4, "<string>", r.choice(PERIODS), "</string>\n",
            t4, "<key>rank</key>\n",
            t4, "<integer>", str(r.randint(1, 10)), "</integer>\n",
            t3, "</dict>\n",
        ]
    tags = r.sample(TAGS, r.randint(1, 2))
    out += [
        t3, "<key>metadata</key>\n",
        t3, "<dict>\n",
        t4, "<key>color</key>\n",
        t4, "<string>", r.choice(COLORS), "</string>\n",
        t4, "<key>qty</key>\n",
        t4, "<integer>", str(r.randint(1, 5000)), "</integer>\n",
        t4, "<key>featured</key>\n",
        t4, "<true/>\n" if r.random() < 0.2 else "<false/>\n",
    ]
    if r.random() < 0.3:
        out += [t4, "<key>weight</key>\n", t4, "<real>", "%.2f" % (r.random() * 100), "</real>\n",
                t4, "<key>tags</key>\n", t4, "<array>\n"]
        for tag in tags:
            out += [t5, "<string>", tag, "</string>\n"]
        out += [t4, "</array>\n"]
    out += [
        t3, "</dict>\n",
        t2, "</dict>\n",
    ]
    return "".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--products", type=int, default=100_000,
                    help="number of products (default 100000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args(argv)
    if not 1 <= args.products <= 999_999:
        ap.error("--products must be between 1 and 999999")

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, APP + ".plist")
    tmp = path + ".tmp"
    r = random.Random(args.seed)
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(HEADER)
        f.write("<dict>\n")
        f.write("\t<key>app</key>\n\t<string>%s</string>\n" % APP)
        f.write("\t<key>platforms</key>\n\t<array>\n"
                "\t\t<string>iOS</string>\n\t\t<string>macOS</string>\n\t</array>\n")
        f.write("\t<key>products</key>\n\t<array>\n")
        chunk = []
        for i in range(1, args.products + 1):
            chunk.append(product_xml(i, r))
            if len(chunk) == 1000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
        f.write("\t</array>\n</dict>\n</plist>\n")
    os.replace(tmp, path)
    size = os.path.getsize(path)
    print("%s: %d products, %d bytes (%.1f MB)" % (path, args.products, size, size / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
