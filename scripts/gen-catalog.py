#!/usr/bin/env python3
"""Generate a large, valid product catalog for benchmarking `catalog build`.

Writes DIR/com.example.bench.plist: an Apple XML property list for one app
(`com.example.bench`), tab-indented like Xcode writes it, with N products
(default 100,000, about 600 bytes each, so ~60 MB).

With --purchases, the app also has purchase settings (appAppleId, environments, transferPolicy,
a webhook), its non-consumables and subscriptions name entitlements, its non-renewing
subscriptions a duration, and it sells content: an item for one non-consumable in ten and one
dated item per subscription group, each with one small file in DIR/com.example.bench.content/.
The products and their order are the same as without it.

Deterministic: the same --products, --seed and --purchases always give the same bytes.
Standard library only.

Usage: scripts/gen-catalog.py [--products N] [--seed S] [--purchases] --out DIR
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


def purchase_fields(i, kind):
    """--purchases: what the product adds, from its number only (the random stream stays the same)."""
    t3, t4 = "\t\t\t", "\t\t\t\t"
    if kind == "non-renewing":
        return [t3, "<key>duration</key>\n", t3, "<string>", PERIODS[i % len(PERIODS)], "</string>\n"]
    if kind in ("non-consumable", "auto-renewable"):
        names = ["bench.pro"] if kind == "auto-renewable" else ["bench.level.%d" % (i % 500)]
        if i % 3 == 0:
            names.append("bench.ad-free")
        return [t3, "<key>entitlements</key>\n", t3, "<array>\n"] + \
            [x for name in names for x in (t4, "<string>", name, "</string>\n")] + [t3, "</array>\n"]
    return []


def product_xml(i, r, purchases=False, sold=None):
    """One product dict, indented at depth 2 (root dict > products array). With `purchases`,
    its purchase fields; `sold` collects (id, type, group) of what content can be sold with."""
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
    group = None
    if kind == "auto-renewable":
        group = "bench.group" + str(r.randint(1, 20))
        out += [
            t3, "<key>subscription</key>\n",
            t3, "<dict>\n",
            t4, "<key>group</key>\n",
            t4, "<string>", group, "</string>\n",
            t4, "<key>period</key>\n",
            t4, "<string>", r.choice(PERIODS), "</string>\n",
            t4, "<key>rank</key>\n",
            t4, "<integer>", str(r.randint(1, 10)), "</integer>\n",
            t3, "</dict>\n",
        ]
    if purchases:
        out += purchase_fields(i, kind)
        if sold is not None:
            sold.append((pid, kind, group))
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


def content_xml(sold, folder):
    """The `content` array, and its files under `folder`: an item for every tenth non-consumable,
    and one dated item per subscription group."""
    t2, t3, t4 = "\t\t", "\t\t\t", "\t\t\t\t"
    os.makedirs(folder, exist_ok=True)
    out = ["\t<key>content</key>\n\t<array>\n"]

    def item(item_id, seller, files):
        out.extend([t2, "<dict>\n", t3, "<key>id</key>\n", t3, "<string>", item_id, "</string>\n"] + seller +
                   [t3, "<key>files</key>\n", t3, "<array>\n"])
        for name in files:
            with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as f:
                f.write(("{\"item\": \"%s\", \"file\": \"%s\"}\n" % (item_id, name)) * 16)
            out.extend([t4, "<string>", name, "</string>\n"])
        out.extend([t3, "</array>\n", t2, "</dict>\n"])

    non_consumables = [pid for pid, kind, _ in sold if kind == "non-consumable"]
    for pid in non_consumables[::10]:
        name = pid.rsplit(".", 1)[1]
        item(name, [t3, "<key>product</key>\n", t3, "<string>", pid, "</string>\n"], [name + ".json"])
    for group in sorted({g for _, _, g in sold if g}):
        item(group + ".issue-1", [t3, "<key>group</key>\n", t3, "<string>", group, "</string>\n",
                                  t3, "<key>published</key>\n", t3, "<date>2026-01-01T00:00:00Z</date>\n"],
             [group + ".issue-1.json"])
    out.append("\t</array>\n")
    return "".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--products", type=int, default=100_000,
                    help="number of products (default 100000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--purchases", action="store_true",
                    help="add purchase settings, entitlements, durations and content")
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
        if args.purchases:
            f.write("\t<key>appAppleId</key>\n\t<integer>1234567890</integer>\n"
                    "\t<key>environments</key>\n\t<array>\n\t\t<string>production</string>\n"
                    "\t\t<string>sandbox</string>\n\t</array>\n"
                    "\t<key>transferPolicy</key>\n\t<string>keep</string>\n"
                    "\t<key>webhookURL</key>\n\t<string>https://example.com/hooks/entitlements</string>\n"
                    "\t<key>webhookSecretFile</key>\n\t<string>secrets/webhook</string>\n")
        f.write("\t<key>products</key>\n\t<array>\n")
        chunk = []
        sold = []
        for i in range(1, args.products + 1):
            chunk.append(product_xml(i, r, args.purchases, sold))
            if len(chunk) == 1000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
        f.write("\t</array>\n")
        if args.purchases:
            f.write(content_xml(sold, os.path.join(args.out, APP + ".content")))
        f.write("</dict>\n</plist>\n")
    os.replace(tmp, path)
    size = os.path.getsize(path)
    print("%s: %d products, %d bytes (%.1f MB)" % (path, args.products, size, size / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
