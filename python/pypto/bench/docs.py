"""`python -m pypto.bench.docs RESULT.json`: rewrite the figures in docs/performance.md and docs/bench.md from a
harness result, so that the documented figures are always one run's output and cannot drift by hand.

Each generated figure sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`; only the text between a pair
is replaced (REGIONS says what each NAME renders), everything else in the file is left byte for byte. A pair whose
opening marker ends its line is a block (the region is rewritten as whole lines); otherwise it is inline text.
`--check` rewrites nothing and exits 1 when a marked region differs from what the JSON renders.
docs/figures/bench.json is the result the committed docs were written from; docs/figures/kernels.json (a
`--kernels --json` result, given with `--kernels`) renders the kernel-speed region.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path

from . import report, schema

DOCS = ("performance.md", "bench.md")
WIDTH = 116  # the docs' line width; a generated sentence is wrapped to it
_MARK = re.compile(r"<!-- bench:([\w-]+) -->(.*?)<!-- /bench:\1 -->", re.S)
_OPEN = re.compile(r"<!-- (/?)bench:([\w-]+) -->")


def _best(r: dict) -> float:
    return r["clean_median_ns"] if r["clean_median_ns"] is not None else r["median_ns"]


def _x(ratio: float) -> str:
    """A ratio with the digits a reader can use: 0.52x, 5.6x, 10.1x, 127x."""
    return f"{ratio:.2f}x" if ratio <= 1 else f"{ratio:.1f}x" if ratio < 20 else f"{ratio:.0f}x"


def _rows(res: dict) -> dict[str, dict]:
    return {r["name"]: r for r in res["rows"]}


def _not_run(res: dict, section: str) -> str:
    why = res["errors"].get(section)
    return f"not measured in this run{f' ({why})' if why else ''}"


def render_report(res: dict) -> str:
    """The harness's plain-text report, as a fenced block (trailing blanks dropped)."""
    lines = [ln.rstrip() for ln in report.render_plain(res).splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```"


# performance.md's peer table: (label, the harness rows it shows, joined with " / ")
PEER_TABLE = (("**pypto hit**", ("pypto hit",)),
              ("C vectorcall no-op (same arguments)", ("C vectorcall no-op",)),
              ("Python no-op (same arguments)", ("python no-op",)),
              ("Numba `@njit` (keywords / positional)", ("numba njit (keywords)", "numba njit (positional)")),
              ("`torch.add(a, b, out=out)`", ("torch.add(a, b, out=out)",)),
              ("Warp recorded launch / `wp.launch`", ("warp recorded launch", "warp wp.launch")),
              ("`jax.jit` + `block_until_ready`", ("jax.jit + block_until_ready",)),
              ("the reference design's Python dispatch (launch = C no-op)", ("reference dispatcher (Python)",)),
              ("`torch.compile`", ("torch.compile",)))


def render_peers(res: dict) -> str:
    rows = _rows(res)
    fastest = res["peers"]["fastest"]
    out = [f"| row | median ns | vs {'pypto' if fastest == 'pypto hit' else fastest} |", "|---|---|---|"]
    for label, names in PEER_TABLE:
        got = [rows[n] for n in names if n in rows]
        if not got:
            continue
        med = " / ".join(f"{_best(r):,.0f}" for r in got)
        ratio = " / ".join("-" if r["ratio"] is None else _x(r["ratio"]) for r in got)
        if label.startswith("**"):
            med = f"**{med}**"
        out.append(f"| {label} | {med} | {ratio} |")
    for peer, why in res["peers"]["missing"].items():
        out.append(f"| {peer} | {why} | |")
    return "\n".join(out)


def render_scale(res: dict) -> str:
    """First row -> last row of the sets that show how the hit scales."""
    groups: dict[str, list[dict]] = {}
    for r in res["rows"]:
        groups.setdefault(r["group"], []).append(r)
    parts = []
    for group, what in (("specializations", "specializations in the table"), ("tensors", "tensor arguments"),
                        ("globals", "guarded globals")):
        rs = groups.get(group)
        if not rs or len(rs) < 2:
            continue
        a, b = rs[0], rs[-1]
        s = f"{a['x']:,} -> {b['x']:,} {what} {_best(a):,.0f} -> {_best(b):,.0f} ns ({b['ratio']:.2f}x"
        if group == "tensors" and b["x"] != a["x"]:
            s += f"; ~{(_best(b) - _best(a)) / (b['x'] - a['x']):.0f} ns per tensor"
        parts.append(s + ")")
    return "; ".join(parts) or "no scenario sets in this run"


def render_inputs(res: dict) -> str:
    """The input-kind rows (the `inputs` set) as a table, each with its ratio to the set's first row (torch)."""
    rs = [r for r in res["rows"] if r["group"] == "inputs"]
    if not rs:
        return _not_run(res, "inputs")
    out = [f"| input kind (`{rs[0]['name']}` is the base) | median ns | vs {rs[0]['name']} |", "|---|---|---|"]
    for r in rs:
        out.append(f"| {r['name']} | {_best(r):,.0f} | {r['ratio']:.2f}x |")
    return "\n".join(out)


def render_callgrind(res: dict) -> str:
    cg = res["callgrind"]
    if cg is None:
        return _not_run(res, "callgrind")
    return f"**{cg['pypto_hit_instructions']:,.0f}** for the call above (torch.add(out=): {cg['torch_add_instructions']:,.0f})"


_STAGE_WORDS = {"bind": "bind", "read": "read tensors", "guards": "guards", "key": "key", "lookup": "lookup",
                "launch": "launch with the kernel"}


def render_breakdown(res: dict) -> str:
    bd = res["breakdown"]
    if bd is None:
        return _not_run(res, "breakdown")
    if not bd["available"]:
        return f"unavailable ({bd['reason']})"
    return ", ".join(f"{_STAGE_WORDS.get(s, s)} {100 * v / bd['sum_ns']:.0f} %" for s, v in bd["stages_ns"].items())


def _dur(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1e3:.0f} ms"


def render_cold(res: dict) -> str:
    c = res["cold"]
    if c is None:
        return _not_run(res, "cold")
    e, w = c["empty_cache"], c["warm_disk_cache"]
    return (f"`import pypto` {_dur(c['import_pypto_s'])}; with an empty `PYPTO_CACHE_DIR` the fast torch reader's "
            f"one-off build {_dur(e['torch_reader_s'])} (once per cache directory, in "
            f"`$PYPTO_CACHE_DIR/torch_reader/`) and the first call of a kernel {_dur(e['first_call_s'])} (trace + "
            f"codegen + g++ + load + launch); a fresh process with a warm disk cache loads the reader in "
            f"{_dur(w['torch_reader_s'])} and makes its first call in {_dur(w['first_call_s'])}")


def kernel_table(k: dict) -> list[str]:
    """`python -m pypto.bench --kernels`'s table (markdown) and its geometric-mean lines, from its result."""
    lines = ["| kernel | threads | pypto ms | torch ms | pypto / torch | copy ms | pypto / copy |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {x['kernel']} | {x['threads']} | {x['pypto_ms']:.2f} | {x['torch_ms']:.2f} | {x['ratio']:.2f}x | "
              f"{x['copy_ms']:.2f} | {x['copy_ratio']:.2f}x |" for x in k["rows"]]
    return lines


def render_kernels(res: dict) -> str:
    """The kernel-speed table and its summary, from the `--kernels --json` result attached as res["kernels"]."""
    k = res["kernels"]
    geo = k.get("geomean_five") or {}
    summary = ("Geometric mean of pypto / torch over the five issue kernels (axpy, softmax, layernorm, matmul "
               "512^3, row sum): " + ", ".join(f"**{v:.2f}x at {t} thread{'s' if str(t) != '1' else ''}**"
                                               for t, v in geo.items()) + ".")
    comp = k.get("compile_s")
    if comp:
        summary += (" Compile (fresh g++ build of the generated source): "
                    + ", ".join(f"{n} {v * 1e3:.0f} ms" for n, v in comp.items()) + ".")
    return "\n".join(kernel_table(k) + [""] + textwrap.wrap(summary, WIDTH, break_on_hyphens=False))


KERNEL_KEYS = ("kernel", "threads", "pypto_ms", "torch_ms", "ratio", "copy_ms", "copy_ratio")


def load_kernels(path) -> dict:
    """A `python -m pypto.bench --kernels --json` result (docs/figures/kernels.json)."""
    k = json.loads(Path(path).read_text())
    rows = k.get("rows") if isinstance(k, dict) else None
    if not isinstance(rows, list) or not rows or not isinstance(k.get("geomean_five"), dict) or any(
            not isinstance(r, dict) or any(key not in r for key in KERNEL_KEYS) for r in rows):
        raise ValueError(f"{path}: not a `pypto.bench --kernels --json` result (rows with {', '.join(KERNEL_KEYS)} "
                         f"and geomean_five)")
    return k


def _onednn(isa: dict) -> str:
    """', oneDNN capped at X' where the run capped torch's oneDNN (its bf16 matmul), else nothing."""
    cap = isa.get("torch_onednn_max_isa", "unset")
    return "" if cap == "unset" else f", oneDNN capped at {cap}"


def sweep_table(runs: list) -> list[str]:
    """The op sweep's table (markdown): one row per kernel, pypto / torch per (ISA, threads) of each run
    (`--kernels --sweep --json` results: one per PYPTO_KERNEL_ISA, or one per ISA and thread count, e.g. 1 thread
    in CPU time and 2 in wall time), then a geomean, worst-row and count line per column."""
    cols = [(r["isa"]["kernel_isa"], nt) for r in runs for nt in r["threads"]]
    cell = {(r["isa"]["kernel_isa"], x["threads"], x["kernel"]): x for r in runs for x in r["rows"]}
    names = list(dict.fromkeys(x["kernel"] for r in runs for x in r["rows"]))
    lines = ["| kernel | " + " | ".join(f"{isa} {nt}T" for isa, nt in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for n in names:
        vals = [cell.get((isa, nt, n)) for isa, nt in cols]
        lines.append(f"| {n} | " + " | ".join(f"{v['ratio']:.2f}x" if v else "n/a" for v in vals) + " |")
    lines.append("")
    for isa, nt in cols:
        rows = [x for (i, t, _), x in cell.items() if (i, t) == (isa, nt)]
        worst = max(rows, key=lambda x: x["ratio"])
        over = sum(1 for x in rows if x["ratio"] > 1.25)
        run = next(r for r in runs if r["isa"]["kernel_isa"] == isa and nt in r["threads"])
        gm = (run.get("geomean_sweep") or {}).get(str(nt), (run.get("geomean_sweep") or {}).get(nt))
        g5 = (run.get("geomean_five") or {}).get(str(nt), (run.get("geomean_five") or {}).get(nt))
        lines.append(f"- {isa} ({run['isa']['target_features']}; torch {run['isa']['torch_cpu_capability']}"
                     f"{_onednn(run['isa'])}), "
                     f"{nt} thread(s): sweep geomean {gm:.2f}x, five kernels {g5:.2f}x, {over} of {len(rows)} rows "
                     f"above 1.25x, worst {worst['kernel']} {worst['ratio']:.2f}x" if gm and g5 else
                     f"- {isa}, {nt} thread(s): {len(rows)} rows")
    return lines


def render_sweep(res: dict) -> str:
    return "\n".join(sweep_table(res["sweep"]))


def load_sweep(path) -> dict:
    """A `python -m pypto.bench --kernels --sweep --json` result (docs/figures/sweep-<isa>.json)."""
    k = load_kernels(path)
    if not isinstance(k.get("isa"), dict) or "kernel_isa" not in k["isa"]:
        raise ValueError(f"{path}: not a `pypto.bench --kernels --sweep --json` result (no isa record)")
    return k


REGIONS = {"report": render_report, "peers": render_peers, "scale": render_scale, "inputs": render_inputs,
           "callgrind": render_callgrind,
           "breakdown": render_breakdown, "cold": render_cold, "kernels": render_kernels, "sweep": render_sweep}
# regions rendered from another result than the harness's: left as they are when that result is not given
SOURCE = {"kernels": "kernels", "sweep": "sweep"}


def load(path) -> dict:
    """A harness result, checked against the schema. A transcribed result (docs/figures/bench.json) may leave
    null the fields its `transcribed.not_recorded` paths name (`[*]` for any index)."""
    res = json.loads(Path(path).read_text())
    allowed = set(res.get("transcribed", {}).get("not_recorded", ())) if isinstance(res, dict) else set()
    problems = [p for p in schema.errors(res)
                if not (re.sub(r"\[\d+\]", "[*]", p.split(":", 1)[0]) in allowed and p.endswith("got NoneType None"))]
    if problems:
        raise ValueError(f"{path}: not a pypto.bench result:\n  " + "\n  ".join(problems))
    return res


def rewrite(text: str, res: dict, where: str = "document") -> str:
    """`text` with every marked region re-rendered from `res`; the rest unchanged."""
    opened: list[str] = []
    for m in _OPEN.finditer(text):  # unbalanced or unknown markers are a mistake in the document: say where
        line = text.count("\n", 0, m.start()) + 1
        closing, name = m.group(1), m.group(2)
        if name not in REGIONS:
            raise ValueError(f"{where}:{line}: unknown figure region 'bench:{name}' (known: {', '.join(REGIONS)})")
        if not closing:
            if opened:
                raise ValueError(f"{where}:{line}: 'bench:{name}' opens inside 'bench:{opened[-1]}'")
            opened.append(name)
        elif opened != [name]:
            raise ValueError(f"{where}:{line}: '/bench:{name}' closes a region that is not open")
        else:
            opened.pop()
    if opened:
        raise ValueError(f"{where}: 'bench:{opened[0]}' is never closed")

    def sub(m: re.Match) -> str:
        name, body = m.group(1), m.group(2)
        if name in SOURCE and SOURCE[name] not in res:
            return m.group(0)
        new = REGIONS[name](res)
        if body.startswith("\n"):
            new = f"\n{new}\n"
        else:  # a sentence inside a paragraph: wrap it as the docs are wrapped, from the column it starts at
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + len(f"<!-- bench:{name} -->")
            new = "\n".join(textwrap.wrap(new, WIDTH, initial_indent="\0" * col, break_on_hyphens=False,
                                           break_long_words=False)).lstrip("\0")
        return f"<!-- bench:{name} -->{new}<!-- /bench:{name} -->"

    return _MARK.sub(sub, text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pypto.bench.docs",
                                description="rewrite the marked figures in the docs from a `python -m pypto.bench "
                                            "--json` result")
    p.add_argument("result", help="the JSON that `python -m pypto.bench --json PATH` wrote")
    p.add_argument("--docs", default="docs", help="the docs folder (default: ./docs)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a marked figure differs")
    p.add_argument("--kernels", metavar="KERNELS.json",
                   help="also the kernel-speed region, from a `python -m pypto.bench --kernels --json` result "
                        "(docs/figures/kernels.json); without it that region is left as it is")
    p.add_argument("--sweep", metavar="SWEEP.json", action="append",
                   help="also the op-sweep region, from `python -m pypto.bench --kernels --sweep --json` results, "
                        "one per kernel ISA (repeatable: docs/figures/sweep-native.json, sweep-avx2.json)")
    args = p.parse_args(argv)
    try:
        res = load(args.result)
        if args.kernels:
            res = dict(res, kernels=load_kernels(args.kernels))
        if args.sweep:
            res = dict(res, sweep=[load_sweep(f) for f in args.sweep])
    except (OSError, ValueError) as e:
        print(f"pypto.bench.docs: {e}", file=sys.stderr)
        return 2
    stale = []
    for name in DOCS:
        path = Path(args.docs) / name
        old = path.read_text()
        try:
            new = rewrite(old, res, str(path))
        except ValueError as e:
            print(f"pypto.bench.docs: {e}", file=sys.stderr)
            return 2
        if new != old:
            stale.append(str(path))
            if not args.check:
                path.write_text(new)
    verb = "differ from the JSON" if args.check else "rewritten"
    print(f"{verb}: {', '.join(stale)}" if stale else "all marked figures match the JSON")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
