"""The JSON schema of `python -m pypto.bench --json` (a JSON Schema subset; docs/bench.md documents it) and a
small validator for that subset (type, enum, minimum, required, properties, additionalProperties, items), so the
harness checks its own output without a dependency.
"""
from __future__ import annotations

SCHEMA_ID = "pypto.bench/1"

_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_MHZ = {"type": ["object", "null"], "required": ["min", "max", "mean"],
        "properties": {"min": _NUM, "max": _NUM, "mean": _NUM}}

ROW = {
    "type": "object",
    "required": ["name", "group", "median_ns", "p10_ns", "p90_ns", "p99_ns", "single_median_ns", "cpu_median_ns",
                 "clean_median_ns", "clean_rounds",
                 "number",
                 "rounds", "single_calls", "ratio", "cpu_ratio", "ratio_to"],
    "properties": {
        "name": {"type": "string"},
        "group": {"type": "string"},  # "peers", "noise" or a scenario set
        "x": {"type": ["integer", "string", "null"]},  # the set's variable (tensor count, table size, ...)
        "note": {"type": "string"},
        "floor": {"type": "boolean"},  # a no-op peer: does none of the work, never the reference of ratios
        "median_ns": _NUM, "p10_ns": _NUM, "p90_ns": _NUM, "p99_ns": _NUM, "single_median_ns": _NUM,
        "cpu_median_ns": _NUM, "clean_median_ns": _NUM_OR_NULL, "clean_rounds": {"type": "integer", "minimum": 0},
        "number": {"type": "integer", "minimum": 1},
        "rounds": {"type": "integer", "minimum": 1},
        "single_calls": {"type": "integer", "minimum": 1},
        # clean_median_ns (else median_ns) / the same figure of the row named in ratio_to
        "ratio": _NUM_OR_NULL,
        "cpu_ratio": _NUM_OR_NULL,  # the same with cpu_median_ns
        "ratio_to": {"type": ["string", "null"]},
        "extra": {"type": "object"},
    },
}

SCHEMA = {
    "type": "object",
    "required": ["schema", "meta", "noise", "rows", "peers", "callgrind", "breakdown", "cold", "errors"],
    "properties": {
        "schema": {"enum": [SCHEMA_ID]},
        "meta": {"type": "object",
                 "required": ["command", "python", "pypto", "torch", "numpy", "cpus", "pypto_march", "quick",
                              "rounds", "target_loop_s", "sets", "peers", "started_utc", "total_seconds"],
                 "properties": {"command": {"type": "string"}, "python": {"type": "string"},
                                "pypto": {"type": "string"}, "torch": {"type": ["string", "null"]},
                                "numpy": {"type": "string"}, "cpus": {"type": ["integer", "null"]},
                                "pypto_march": {"type": "string"}, "quick": {"type": "boolean"},
                                "omp_wait_policy": {"type": ["string", "null"]},
                                "rounds": {"type": "integer", "minimum": 1}, "target_loop_s": _NUM,
                                "sets": {"type": "array", "items": {"type": "string"}},
                                "peers": {"type": "array", "items": {"type": "string"}},
                                "started_utc": {"type": "string"}, "total_seconds": _NUM}},
        "noise": {"type": "object",
                  "required": ["clock_overhead_ns", "measure_seconds", "cpu_mhz_before", "cpu_mhz_after",
                               "probe_p90_over_p10", "probe_max_over_min", "rows_median_p90_over_p10",
                               "wall_over_cpu_median", "wall_over_cpu_p90", "preempted_loops"],
                  "properties": {"clock_overhead_ns": _NUM, "measure_seconds": _NUM, "cpu_mhz_before": _MHZ,
                                 "cpu_mhz_after": _MHZ, "probe_p90_over_p10": _NUM_OR_NULL,
                                 "probe_max_over_min": _NUM_OR_NULL, "rows_median_p90_over_p10": _NUM_OR_NULL,
                                 "wall_over_cpu_median": _NUM_OR_NULL, "wall_over_cpu_p90": _NUM_OR_NULL,
                                 "preempted_loops": _NUM_OR_NULL}},
        "rows": {"type": "array", "items": ROW},
        "peers": {"type": "object", "required": ["fastest", "missing"],
                  "properties": {"fastest": {"type": ["string", "null"]},  # fastest peer doing the work
                                 "missing": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "callgrind": {"type": ["object", "null"],  # null: not run (see errors.callgrind for why, if asked)
                      "required": ["pypto_hit_instructions", "torch_add_instructions", "n1", "n2", "method"],
                      "properties": {"pypto_hit_instructions": _NUM, "torch_add_instructions": _NUM,
                                     "n1": {"type": "integer"}, "n2": {"type": "integer"},
                                     "seconds": _NUM, "method": {"type": "string"}}},
        "breakdown": {"type": ["object", "null"], "required": ["available"],
                      "properties": {"available": {"type": "boolean"}, "reason": {"type": "string"},
                                     "calls": {"type": "integer"}, "rounds": {"type": "integer"},
                                     "clean_rounds": {"type": "integer"}, "sum_ns": _NUM,
                                     "profiled_wall_ns": _NUM,
                                     "stages_ns": {"type": "object",
                                                   "required": ["bind", "read", "guards", "key", "lookup",
                                                                "launch"],
                                                   "additionalProperties": _NUM}}},
        "cold": {"type": ["object", "null"],
                 "required": ["import_pypto_s", "empty_cache", "warm_disk_cache"],
                 "properties": {"import_pypto_s": _NUM, "empty_cache": {"type": "object"},
                                "warm_disk_cache": {"type": "object"}}},
        "errors": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[t])


def errors(value, schema: dict = SCHEMA, path: str = "$") -> list[str]:
    """Every way `value` breaks `schema`, as 'path: what' strings (empty when it conforms)."""
    out = []
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_is(value, t) for t in types):
            return [f"{path}: expected {' or '.join(types)}, got {type(value).__name__} {value!r:.60}"]
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: expected one of {schema['enum']}, got {value!r:.60}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        out.append(f"{path}: {value} < minimum {schema['minimum']}")
    if isinstance(value, dict):
        out += [f"{path}: missing key {k!r}" for k in schema.get("required", ()) if k not in value]
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                out += errors(v, props[k], f"{path}.{k}")
            elif extra is False:
                out.append(f"{path}: unexpected key {k!r}")
            elif isinstance(extra, dict):
                out += errors(v, extra, f"{path}.{k}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += errors(v, schema["items"], f"{path}[{i}]")
    return out
