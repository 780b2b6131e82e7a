"""Output: the terminal tables (rich when installed, plain text otherwise), and PNG plots (matplotlib)."""
from __future__ import annotations

import os

STAGE_LABELS = {"bind": "bind arguments", "read": "read tensors", "guards": "guards", "key": "pack + hash key",
                "lookup": "table lookup", "launch": "launch (incl. kernel)"}


def _ns(x) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _ratio(x) -> str:
    return "" if x is None else f"{x:.2f}x"


def tables(res: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) for every table of the report, in order."""
    out = []
    head = ["row", "median ns", "p10", "p90", "p99 (single)", "clean median (loops)", "thread cpu ns", "ratio",
            "note"]
    by_group: dict[str, list[dict]] = {}
    for r in res["rows"]:
        by_group.setdefault(r["group"], []).append(r)

    def body(rows):
        return [[r["name"], _ns(r["median_ns"]), _ns(r["p10_ns"]), _ns(r["p90_ns"]), _ns(r["p99_ns"]),
                 f"{_ns(r['clean_median_ns'])} ({r['clean_rounds']})", _ns(r["cpu_median_ns"]), _ratio(r["ratio"]),
                 r.get("note", "")]
                for r in rows]

    if "peers" in by_group or res["peers"]["missing"]:
        rows = body(by_group.get("peers", []))
        rows += [[name, "-", "-", "-", "-", "", "-", "", reason] for name, reason in res["peers"]["missing"].items()]
        out.append((f"peers: k(a, b, c, out, m=2, n=3), 4 x fp32[16]; ratio to the fastest peer doing the work "
                    f"({res['peers']['fastest']})", head, rows))
    for group, rows in by_group.items():
        if group in ("peers", "noise"):
            continue
        out.append((f"scenario set '{group}': ratio to its first row", head, body(rows)))
    n = res["noise"]
    probe = by_group.get("noise", [])
    mhz = " / ".join(f"{s['min']:.0f}-{s['max']:.0f} MHz" if s else "n/a"
                     for s in (n["cpu_mhz_before"], n["cpu_mhz_after"]))
    noise_rows = [["fixed integer loop, p90/p10 over rounds", _fmtx(n["probe_p90_over_p10"])],
                  ["fixed integer loop, max/min over rounds", _fmtx(n["probe_max_over_min"])],
                  ["median row p90/p10", _fmtx(n["rows_median_p90_over_p10"])],
                  ["wall / thread CPU time per loop, median", _fmtx(n["wall_over_cpu_median"])],
                  ["wall / thread CPU time per loop, p90", _fmtx(n["wall_over_cpu_p90"])],
                  ["loops that lost > 20 % to other processes",
                   "n/a" if n["preempted_loops"] is None else f"{100 * n['preempted_loops']:.0f} %"],
                  ["/proc/cpuinfo MHz before / after", mhz],
                  ["clock overhead subtracted from single calls", f"{n['clock_overhead_ns']:.0f} ns"],
                  ["measuring took", f"{n['measure_seconds']:.1f} s"]]
    if probe:
        noise_rows.insert(0, ["fixed integer loop, median", f"{probe[0]['median_ns']:,.0f} ns"])
    out.append(("noise and CPU frequency (1.00x = none)", ["figure", "value"], noise_rows))
    bd = res["breakdown"]
    if bd is not None:
        if bd["available"]:
            rows = [[STAGE_LABELS[s], f"{v:.1f}", f"{100 * v / bd['sum_ns']:.0f} %"]
                    for s, v in bd["stages_ns"].items()]
            rows.append(["sum of stages", f"{bd['sum_ns']:.1f}", "100 %"])
            rows.append(["wall per call, profiled build", f"{bd['profiled_wall_ns']:.1f}", ""])
            out.append((f"breakdown of the pypto hit (PYPTO_PROFILE=1 build, {bd['calls']:,} calls in "
                        f"{bd['rounds']} rounds; median over the {bd['clean_rounds']} clean rounds, or all if < 3)",
                        ["stage", "ns per call", "share"], rows))
        else:
            out.append(("breakdown of the pypto hit", ["status"], [[f"breakdown unavailable: {bd['reason']}"]]))
    cg = res["callgrind"]
    if cg is not None:
        out.append((f"callgrind, instructions per call (N1={cg['n1']}, N2={cg['n2']}, {cg.get('seconds', 0):.0f} s)",
                    ["call", "instructions"],
                    [["pypto hit (inside jit_vectorcall)", f"{cg['pypto_hit_instructions']:,.1f}"],
                     ["torch.add(out=) (inside THPVariable_add)", f"{cg['torch_add_instructions']:,.1f}"]]))
    cold = res["cold"]
    if cold is not None:
        e, w = cold["empty_cache"], cold["warm_disk_cache"]
        ms = [("import pypto (median of 3 processes)", cold["import_pypto_s"]),
              ("empty cache: torch reader build (once per cache directory)", e["torch_reader_s"]),
              ("empty cache: first call (trace + codegen + compile + load + launch)", e["first_call_s"]),
              ("warm disk cache: torch reader load", w["torch_reader_s"]),
              ("warm disk cache: first call (load + launch)", w["first_call_s"]),
              ("warm disk cache: second call (a hit, timed alone)", w["second_call_s"])]
        out.append(("cold paths (fresh processes)", ["figure", "ms"], [[k, f"{v * 1e3:,.3f}"] for k, v in ms]))
    if res["errors"]:
        out.append(("not measured", ["section", "why"], [[k, v] for k, v in res["errors"].items()]))
    return out


def _fmtx(x) -> str:
    return "n/a" if x is None else f"{x:.3f}x"


def header(res: dict) -> str:
    m = res["meta"]
    return (f"pypto.bench: python {m['python']}, pypto {m['pypto']}, torch {m['torch']}, numpy {m['numpy']}, "
            f"{m['cpus']} CPUs, PYPTO_MARCH={m['pypto_march']}\n"
            f"{m['rounds']} interleaved rounds, loops of ~{m['target_loop_s'] * 1e3:.0f} ms, GC off; median/p10/p90 "
            f"of per-call means over rounds, p99 of individually timed calls\ncommand: {m['command']}")


def render_plain(res: dict) -> str:
    lines = [header(res)]
    for title, head, rows in tables(res):
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        lines += ["", title, "  " + "  ".join(h.ljust(w) for h, w in zip(head, widths))]
        lines += ["  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def print_report(res: dict, plain: bool = False) -> None:
    try:
        if plain:
            raise ImportError
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(render_plain(res))
        return
    console = Console()
    if not console.is_terminal:  # a file or a pipe: do not wrap the tables at 80 columns
        console = Console(width=200)
    console.print(header(res))
    for title, head, rows in tables(res):
        t = Table(title=title, title_justify="left")
        for i, h in enumerate(head):
            t.add_column(h, justify="right" if 0 < i < len(head) - 1 or len(head) == 3 and i == 1 else "left")
        for row in rows:
            t.add_row(*row)
        console.print(t)


def plot(res: dict, outdir: str) -> list[str]:
    """PNG files: latency vs tensor count, vs specializations (and every other set), bars per peer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(outdir, exist_ok=True)
    written = []
    groups: dict[str, list[dict]] = {}
    for r in res["rows"]:
        groups.setdefault(r["group"], []).append(r)
    for group, rows in groups.items():
        if group == "noise":
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        med = [r["median_ns"] for r in rows]
        err = [[m - r["p10_ns"] for m, r in zip(med, rows)], [r["p90_ns"] - m for m, r in zip(med, rows)]]
        best = [r["clean_median_ns"] if r["clean_median_ns"] is not None else r["median_ns"] for r in rows]
        if group != "peers" and all(isinstance(r.get("x"), int) for r in rows):
            xs = [r["x"] for r in rows]
            ax.errorbar(xs, med, yerr=err, marker="o", capsize=3, label="median, p10-p90 (all loops)")
            ax.plot(xs, best, marker="s", linestyle="--", label="clean median (the ratios' figure)")
            ax.legend(fontsize=8)
            if group == "specializations":
                ax.set_xscale("log")
            ax.set_xlabel(group.replace("_", " "))
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{x:,}" for x in xs])
            ax.set_ylim(bottom=0)
            ax.set_ylabel("ns per call")
            name = f"latency_vs_{group}.png"
        else:
            labels = [r["name"] for r in rows]
            ax.barh(labels, best, xerr=[[max(0.0, b - r["p10_ns"]) for b, r in zip(best, rows)],
                                        [max(0.0, r["p90_ns"] - b) for b, r in zip(best, rows)]], capsize=3)
            ax.invert_yaxis()
            if group == "peers" and max(med) / max(min(med), 1) > 50:
                ax.set_xscale("log")
            ax.set_xlabel("ns per call (clean median, else median; bars p10-p90)")
            name = f"{group}.png"
        ax.set_title(f"pypto.bench: {group}")
        fig.tight_layout()
        path = os.path.join(outdir, name)
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    bd = res["breakdown"]
    if bd and bd["available"]:
        fig, ax = plt.subplots(figsize=(7, 1.8))
        left = 0.0
        for stage, v in bd["stages_ns"].items():
            ax.barh(["pypto hit"], [v], left=left, label=STAGE_LABELS[stage])
            left += v
        ax.set_xlabel("ns per call (profiled build)")
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        ax.set_title("pypto.bench: breakdown of the hit")
        fig.tight_layout()
        path = os.path.join(outdir, "breakdown.png")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written
