#!/usr/bin/env python3
"""The fault benchmark's pictures: one PNG per fault, latency over time.

Reads OUT/runs.json (written by bench/faults) and writes OUT/<fault>.png for
each fault of the runs over Leaf's HTTP API: one panel per store, each
second's p99.9 of frond, the single-buffer reference and the trivial server
on a log scale, the fault's span shaded, seconds with errors marked.
Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"frond": "#1f77b4", "single buffer": "#d62728", "trivial": "#7f7f7f"}


def main(out):
    runs = json.load(open(os.path.join(out, "runs.json")))
    faults = []
    for r in runs:
        if r["Door"] == "leaf" and r["Fault"] not in faults:
            faults.append(r["Fault"])
    for fault in faults:
        rs = [r for r in runs if r["Door"] == "leaf" and r["Fault"] == fault]
        fig, axes = plt.subplots(len(rs), 1, figsize=(9, 2.6 * len(rs) + 0.6), sharex=True, squeeze=False)
        for ax, r in zip(axes[:, 0], rs):
            ax.axvspan(r["FaultFrom"], r["FaultTo"], color="#f4c542", alpha=0.3, lw=0)
            top = 1.0
            for t in r["Targets"]:
                if t["Name"] not in COLORS:
                    continue  # the trivial server of the reference's pass: in the tables
                tl = t.get("Timeline") or []
                xs = [s["T"] for s in tl if s["Requests"] > 0]
                ys = [max(s["P999"], 1) / 1000 for s in tl if s["Requests"] > 0]
                if not xs:
                    continue
                top = max(top, max(ys))
                errs = sum((t.get("Errors") or {}).values())
                label = "%s (%d errors)" % (t["Name"], errs) if errs else t["Name"]
                ax.plot(xs, ys, label=label, color=COLORS.get(t["Name"]), lw=1.4 if t["Name"] == "frond" else 1.1)
                ex = [s["T"] for s in tl if s["Errors"] > 0]
                ey = [max(s["P999"], 1) / 1000 for s in tl if s["Errors"] > 0]
                if ex:
                    ax.scatter(ex, ey, marker="x", color=COLORS.get(t["Name"]), s=30, zorder=3)
            ax.set_yscale("log")
            ax.set_ylim(0.1, top * 2)
            ax.set_ylabel("p99.9 a second (ms)")
            runway = r.get("Horizon", -1)
            rw = "frond's runway %.0f s" % runway if runway >= 0 else ""
            ax.set_title("%s, %d requests/s each; %s" % (r["Store"], r["Rate"], rw), fontsize=9, loc="left")
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=8, loc="upper left")
        axes[-1, 0].set_xlabel("seconds (shaded: the fault; x: a second with errors)")
        fig.suptitle("Latency through a store fault: %s" % rs[0]["Title"], fontsize=11)
        fig.tight_layout()
        path = os.path.join(out, "%s.png" % fault)
        fig.savefig(path, dpi=90)
        plt.close(fig)
        print("wrote", path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "faults-out")
