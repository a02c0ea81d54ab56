"""Read asv results of the masked-update benchmarks and plot them for the report."""
from __future__ import annotations

import ast
import base64
import io
import itertools
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd

from ..spec.safe_yaml import read_text
from ..kernel.lines import printable

MAX_ASV_BYTES = 64 << 20  # an asv results file is a few KiB per benchmark
RELATIVE = "track_step_cost_relative"  # masked step time / unmasked step time
PLOT_PARAMS = ("framework", "mask", "fraction", "optimizer")  # of each track_step_cost_relative point
MAX_PANELS = 8  # more would not fit a page (and past 2**16 px matplotlib refuses the image)
# Plot labels are plain names: matplotlib reads $...$ as TeX and fails on bad TeX or lone surrogates.
NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def env_label(env_name: str) -> str:
    """asv's environment as a short plain name that tells framework versions apart: the tox env of an
    existing interpreter (`existing-py_..._.tox_paddle26_bin_python` -> paddle26), else the requirements
    of an asv virtualenv (`virtualenv-py3.11-paddlepaddle2.6.2` -> paddlepaddle2.6.2)."""
    tox_env = re.search(r"\.tox_(.+?)_bin_python", env_name)
    label = tox_env.group(1) if tox_env else env_name.split("-", 2)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:40] or "env"
MAX_RELATIVE = 1e6  # no real step is a million times slower; near float's limit matplotlib overflows


def one_line(message: str) -> str:
    """A warning as one line the terminal shows safely: a name read from a file may hold line breaks (any
    str.splitlines splits on) or escape sequences, which appear escaped."""
    return printable(" ".join(str(message).splitlines()))


def _warn(message):
    print(f"warning: {one_line(message)}", file=sys.stderr)


def _finite(x) -> float | None:
    """x as a float when it is a finite real number (not a bool), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        x = float(x)
    except OverflowError:  # an int past float's range
        return None
    return x if math.isfinite(x) else None


def _value(text):
    """A parameter value: asv stores the repr; only scalars are kept (pandas must hash them)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # what literal_eval may raise
        return text
    return value if isinstance(value, (str, int, float, bool, type(None))) else text


def _kind(x) -> str:
    return {dict: "an object", list: "a list", str: "a string"}.get(type(x), type(x).__name__)


def _short(x) -> str:
    text = _kind(x) if isinstance(x, (dict, list)) else repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_json(path: Path):
    """The parsed file; ValueError with a one-line reason when it cannot be read or is not JSON."""
    text = read_text(path, MAX_ASV_BYTES)  # a regular file of bounded size, UTF-8; else ValueError
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON (line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of 5000 digits, nesting past the stack
        raise ValueError(f"not JSON ({str(exc).splitlines()[0][:80]})") from None


def _unplottable(point: dict, value) -> str | None:
    """Why a track_step_cost_relative point cannot go on the plot, or None."""
    if not all(isinstance(point[k], str) and NAME.fullmatch(point[k]) for k in ("framework", "mask", "optimizer")):
        return f"framework, mask or optimizer of {_short(tuple(point[k] for k in PLOT_PARAMS))} is not a name"
    fraction = _finite(point["fraction"])
    if fraction is None or not 0 <= fraction <= 1:
        return f"fraction {_short(point['fraction'])} is not a number in [0, 1]"
    if not 0 <= _finite(value) <= MAX_RELATIVE:
        return f"relative cost {_short(value)} is outside [0, {MAX_RELATIVE:g}]"
    return None


def _entry(row, columns: list, names) -> tuple[list, list]:
    """(params, values) of one benchmark's row of an asv results file; ValueError saying what is wrong."""
    if not isinstance(row, list):
        raise ValueError(f"expected a list, found {_kind(row)}")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ValueError("benchmarks.json has no list of its parameter names")
    record = dict(zip(columns, row))
    params = record.get("params") or []
    if not (isinstance(params, list) and all(isinstance(p, list) and all(isinstance(v, str) for v in p)
                                             for p in params)):
        raise ValueError("params is not a list of lists of strings")
    if len(names) != len(params):
        raise ValueError(f"{len(params)} parameters, benchmarks.json names {len(names)}")
    if "result" not in record:
        raise ValueError("no result")
    values = record["result"] if params else [record["result"]]
    if not isinstance(values, list) or len(values) != math.prod(len(p) for p in params):
        raise ValueError("result is not a list of one value per parameter combination")
    return params, values


def _points(path: Path, meta: dict, problems: list) -> list[dict]:
    """The points of one asv results file. A problem with the whole file raises ValueError; a bad
    benchmark or point is left out and described in `problems`."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"expected an object, found {_kind(data)}")
    columns, results = data.get("result_columns"), data.get("results")
    if not (isinstance(columns, list) and all(isinstance(c, str) for c in columns) and isinstance(results, dict)):
        raise ValueError("no 'result_columns' list of names and 'results' object: not asv results")
    date = _finite(data.get("date", 0))
    if date is None:
        problems.append(f"date {_short(data.get('date'))} is not a number")
        date = 0.0
    env = data.get("env_name") if isinstance(data.get("env_name"), str) else ""
    points = []
    for name, row in results.items():
        short = name.rsplit(".", 1)[-1]
        entry = meta.get(name)
        names = entry.get("param_names", []) if isinstance(entry, dict) else []
        try:
            params, values = _entry(row, columns, names)
            if short == RELATIVE and not set(PLOT_PARAMS) <= set(names):
                raise ValueError(f"parameters {_short(names)}, expected {list(PLOT_PARAMS)}")
        except ValueError as exc:
            problems.append(f"{short[:60]}: {exc}")
            continue
        for combo, value in zip(itertools.product(*params), values):
            point = {k: _value(v) for k, v in zip(names, combo)}
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue  # asv's marks for a failed (null) or skipped (NaN) combination
            why = (f"value {_short(value)} is not a finite number" if _finite(value) is None
                   else _unplottable(point, value) if short == RELATIVE else None)
            if why:
                problems.append(f"{short[:60]}: {why}")
                continue
            points.append({**point, "benchmark": short, "value": float(value), "machine": path.parent.name,
                           "date": date, "env": env, "run": env_label(env)})
    return points


def load_benchmarks(results_dir: Path, warn=_warn) -> pd.DataFrame | None:
    """One row per (machine, benchmark, parameter combination), newest result only; None if no usable
    asv results. What cannot be read is skipped with one `warn` line per file."""
    results_dir = Path(results_dir)
    index = results_dir / "benchmarks.json"
    if not index.exists():
        return None
    try:
        meta = _read_json(index)
        if not isinstance(meta, dict):
            raise ValueError(f"expected an object, found {_kind(meta)}")
    except ValueError as exc:
        warn(f"{index}: {exc}; benchmarks not shown")
        return None
    rows = []
    for path in sorted(results_dir.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        problems = []
        try:
            rows += _points(path, meta, problems)
        except ValueError as exc:
            problems.insert(0, f"{exc}; skipped")
        if problems:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            warn(f"{path}: {problems[0]}{more}")
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    keys = [c for c in frame.columns if c not in ("value", "date", "env")]
    return frame.sort_values("date", kind="stable").drop_duplicates(keys, keep="last").reset_index(drop=True)


def plot_benchmarks(frame: pd.DataFrame) -> str | None:
    """PNG data URI: relative step cost vs masked fraction, a panel per mask kind, a line per
    framework and optimizer, the ideal (cost proportional to the unmasked share) dashed; at most
    MAX_PANELS panels (the table below the plot has every mask kind)."""
    data = frame[frame.benchmark == RELATIVE]
    if data.empty:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    masks = list(dict.fromkeys(data["mask"]))[:MAX_PANELS]
    fig, axes = plt.subplots(1, len(masks), figsize=(4 * len(masks) + 2, 3.6), sharey=True, squeeze=False)
    styles = {"sgd_wd": "-", "adamw": "--"}
    top = max(1.05, 1.05 * float(data["value"].max()))  # shared y: zero_grad goes above 1
    # a line per environment (framework version) and optimizer: paddle and paddle26 are told apart
    colours = dict(zip(sorted(set(data["run"])), itertools.cycle(plt.get_cmap("tab10").colors)))
    for ax, mask in zip(axes[0], masks):
        part = data[data["mask"] == mask]
        for (run, optimizer), line in part.groupby(["run", "optimizer"]):
            line = line.sort_values("fraction")
            ax.plot(line["fraction"], line["value"], styles.get(optimizer, ":"), marker="o",
                    color=colours[run], label=f"{run} {optimizer}")
        ax.plot([0, 1], [1, 0], "k:", label="ideal (1 - fraction)")
        ax.set_title(mask)
        ax.set_xlabel("masked fraction")
        ax.set_ylim(0, top)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("step time / unmasked step time")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="center right")  # beside the panels, not over them
    fig.tight_layout(rect=(0, 0, 0.86, 1))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def relative_table(frame: pd.DataFrame) -> pd.DataFrame:
    """(framework, environment) x (mask, fraction) of the relative step cost, per optimizer."""
    data = frame[frame.benchmark == RELATIVE]
    if data.empty:  # the frame may then lack the parameter columns
        return pd.DataFrame()
    return data.pivot_table(index=["framework", "run", "optimizer"], columns=["mask", "fraction"], values="value")
