"""The table of bench/clients.sh: reads DIR/pass-N-LANG.txt (each client
benchmark's own output) and DIR/machine.txt, writes Markdown to stdout.

Each figure is ns per ID; each ratio is to the same language's counter in
the same pass (the machine's speed moves between minutes, the ratio less):
the median over the passes, then the passes' range.

  python3 bench/clients/summary.py DIR"""

import glob
import os
import re
import statistics
import sys

NUM = r"([0-9]+(?:\.[0-9]+)?)"

# Per language: (label of the counter, [(label, key)], headline key, the
# plain ID's key: a gene ID's row (key shard or NextShard...) is also given
# as a ratio to it).
ROWS = {
    "go": ("`atomic.Int64.Add`", [
        ("`tag.Next(ctx)`", "Client_TagNext"),
        ("`c.Next(ctx, tag)`", "Client_Next"),
        ("`c.NextShard(ctx, tag, shard)` (shard:4)", "Client_NextShard"),
        ("`c.NextForKey(ctx, tag, key)` (shard:4)", "Client_NextForKey"),
    ], "Client_TagNext", "Client_Next"),
    "java": ("`AtomicLong.incrementAndGet()`", [
        ("`tag.next()`", "handle"),
        ("`client.nextId(tag)`", "byName"),
        ("`client.nextShard(tag, shard)` (shard:4)", "shard"),
        ("`client.nextForKey(tag, key)` (shard:4)", "key"),
    ], "handle", "byName"),
    "typescript": ("a local `bigint` counter (`v += 1n`)", [
        ("the counter kept in an object", "boxed"),
        ("`tag.tryNext()`", "tryNext"),
        ("`await tag.next()`", "awaitNext"),
        ("`await client.nextId(tag)`", "byName"),
    ], "tryNext", None),
    "python": ("a Python-level counter (`__next__` adds one), 1 thread", [
        ("`itertools.count`, 1 thread", "count-1"),
        ("`tag.next()`, 1 thread", "next-1"),
        ("`tag.try_next()`, 1 thread", "try-1"),
        ("`client.next_id(tag)`, 1 thread", "byName-1"),
        ("`tag.next()`, 8 threads (vs the counter, 8 threads)", "next-8"),
        ("`tag.try_next()`, 8 threads (vs the counter, 8 threads)", "try-8"),
    ], "next-1", None),
}
NAMES = {"go": "Go", "java": "Java", "typescript": "TypeScript", "python": "Python"}


def parse(lang, text):
    """The figures of one benchmark's output: key -> ns per ID ("base" is
    the counter; Python's 8-thread rows also have "base-8")."""
    v = {}
    if lang == "go":
        for m in re.finditer(r"^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+" + NUM + r" ns/op", text, re.M):
            v["base" if m.group(1) == "AtomicAdd" else m.group(1)] = float(m.group(2))
    elif lang == "java":
        m = re.search(r"AtomicLong.incrementAndGet " + NUM + r" ns/op; client.nextId\(tag\) " + NUM +
                      r" ns/op .*?tag.next\(\) " + NUM + " ns/op", text)
        g = re.search(r"nextShard\(tag, shard\) " + NUM + r" ns/op .*?nextForKey\(tag, \"user-N\"\) " + NUM + " ns/op", text)
        if m and g:
            v = {"base": float(m.group(1)), "byName": float(m.group(2)), "handle": float(m.group(3)),
                 "shard": float(g.group(1)), "key": float(g.group(2))}
    elif lang == "typescript":
        m = re.search(r"bigint counter " + NUM + r"; the counter in an object " + NUM + r" .*?tag.tryNext\(\) " + NUM +
                      r" .*?await tag.next\(\) " + NUM + r" .*?await client.nextId\(tag\) " + NUM, text)
        if m:
            v = dict(zip(["base", "boxed", "tryNext", "awaitNext", "byName"], map(float, m.groups())))
    elif lang == "typescript-genes":
        m = re.search(r"client.tryNext\(tag\) " + NUM + r"; tryNextShard " + NUM + r" .*?tryNextForKey " + NUM +
                      r" .*?await client.nextId\(tag\) " + NUM + r"; await nextShard " + NUM + r" .*?await nextForKey " + NUM, text)
        if m:
            v = dict(zip(["try", "tryShard", "tryKey", "plain", "shard", "key"], map(float, m.groups())))
    elif lang == "python-genes":
        part = text.split("8 threads")[0]  # the one-thread table
        for pat, k in [(r"`client.next_id\(\"bench\"\)` \(plain, from the lease\)", "plain"),
                       (r"`client.next_shard\(\"genes\", 5\)`", "shard"),
                       (r"`client.next_for_key\(\"genes\", \"user-42\"\)`", "key"),
                       (r"`client.next_for_key\(\"genes\", key\)`, a 21-byte key", "key21"),
                       (r"`client.next_for_key\(\"genes\", key\)`, a new key each call \(`user-N`\)", "keyNew")]:
            m = re.search(r"^\| " + pat + r" \| " + NUM + r" \|", part, re.M)
            if m:
                v[k] = float(m.group(1))
    elif lang == "python":
        keys = {"Python-level counter": "base", "`itertools.count`": "count", "`tag.try_next()`": "try",
                "`tag.next()`": "next", "`client.next_id": "byName"}
        for m in re.finditer(r"^\| (.+?) \| " + NUM + r" \([^)]*\) \| " + NUM + r" \([^)]*\) \|$", text, re.M):
            for prefix, k in keys.items():
                if m.group(1).startswith(prefix):
                    one, eight = float(m.group(2)), float(m.group(3))
                    if k == "base":
                        v["base"], v["base-8"] = one, eight
                    else:
                        v[k + "-1"], v[k + "-8"] = one, eight
    return v


def fmt(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def spread(xs, f, unit=""):
    """The median, then the range when there is more than one value."""
    med = f(statistics.median(xs)) + unit
    if len(xs) < 2:
        return med
    return f"{med} ({f(min(xs))}-{f(max(xs))})"


def main(d):
    runs = {}  # lang -> [figures of each pass]
    for path in sorted(glob.glob(os.path.join(d, "pass-*-*.txt")), key=lambda p: int(p.split("pass-")[-1].split("-")[0])):
        lang = os.path.basename(path)[:-4].split("-", 2)[2]
        with open(path) as f:
            v = parse(lang, f.read())
        if not v or (not lang.endswith("-genes") and "base" not in v):
            sys.exit(f"{path}: no figures found (did the benchmark fail?)")
        runs.setdefault(lang, []).append(v)
    if not runs:
        sys.exit(f"{d}: no pass-N-LANG.txt")
    print("# Every client's ID from its lease, one run (bench/clients.sh)\n")
    try:
        with open(os.path.join(d, "machine.txt")) as f:
            print("".join("    " + line for line in f))
    except OSError:
        pass
    passes = max(len(v) for v in runs.values())
    print(f"ns per ID: the median of {passes} pass{'es' if passes > 1 else ''}, the passes' range in brackets; "
          "each ratio is to the same language's counter in the same pass.\n")
    print("| | the counter | an ID from the lease | ratio |")
    print("|---|---|---|---|")
    for lang in ROWS:
        if lang not in runs:
            continue
        base_label, rows, head, _ = ROWS[lang]
        label = dict((k, l) for l, k in rows)[head]
        vs = runs[lang]
        print(f"| {NAMES[lang]} | {base_label}: {spread([v['base'] for v in vs], fmt, ' ns')} | {label}: "
              f"{spread([v[head] for v in vs], fmt, ' ns')} | {spread([v[head] / v['base'] for v in vs], lambda x: f'{x:.2f}', 'x')} |")
    for lang in ROWS:
        if lang not in runs:
            continue
        base_label, rows, _, plain = ROWS[lang]
        vs = runs[lang]
        ratio = lambda x: f"{x:.2f}"  # noqa: E731
        print(f"\n## {NAMES[lang]}\n")
        print("| | ns per ID | vs the counter |" + (" vs the plain ID |" if plain else ""))
        print("|---|---|---|" + ("---|" if plain else ""))
        print(f"| {base_label} | {spread([v['base'] for v in vs], fmt)} | 1 |" + (" |" if plain else ""))
        for label, k in rows:
            have = [v for v in vs if k in v]
            if not have:
                continue
            base = "base-8" if k.endswith("-8") else "base"
            line = f"| {label} | {spread([v[k] for v in have], fmt)} | {spread([v[k] / v[base] for v in have], ratio, 'x')} |"
            if plain:
                gene = "shard:4" in label
                line += f" {spread([v[k] / v[plain] for v in have], ratio, 'x')} |" if gene else " |"
            print(line)
    genes(runs)


GENES = [  # (language, where its figures are, plain, by a shard, by a key, what)
    ("Go", "go", "Client_Next", "Client_NextShard", "Client_NextForKey", "`c.Next`, `c.NextShard`, `c.NextForKey` (key `user-42`)"),
    ("Java", "java", "byName", "shard", "key", "`nextId`, `nextShard`, `nextForKey` (keys `user-0` to `user-1023`)"),
    ("TypeScript", "typescript-genes", "plain", "shard", "key", "awaited `nextId`, `nextShard`, `nextForKey` (key `user-42`)"),
    ("TypeScript", "typescript-genes", "try", "tryShard", "tryKey", "`tryNext`, `tryNextShard`, `tryNextForKey`"),
    ("Python", "python-genes", "plain", "shard", "key", "`next_id`, `next_shard`, `next_for_key` (key `user-42`, its hash cached), CPU time, 1 thread"),
    ("Python", "python-genes", "plain", "shard", "keyNew", "the same, `next_for_key` with a new key each call (`user-N`: the hash computed)"),
]


def genes(runs):
    rows = [g for g in GENES if g[1] in runs]
    if not rows:
        return
    ratio = lambda x: f"{x:.2f}"  # noqa: E731
    print("\n## Gene IDs (a tag with 4 shard bits)\n")
    print("| | calls | the plain ID, ns | by a shard | by a key |")
    print("|---|---|---|---|---|")
    for name, lang, plain, shard, key, what in rows:
        vs = [v for v in runs[lang] if plain in v and shard in v and key in v]
        if not vs:
            continue
        print(f"| {name} | {what} | {spread([v[plain] for v in vs], fmt)} | "
              f"{spread([v[shard] for v in vs], fmt)} ns, {spread([v[shard] / v[plain] for v in vs], ratio, 'x')} | "
              f"{spread([v[key] for v in vs], fmt)} ns, {spread([v[key] / v[plain] for v in vs], ratio, 'x')} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "clients-out")
