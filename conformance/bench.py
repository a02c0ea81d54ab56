"""Read asv results of the masked-update benchmarks and plot them for the report."""
from __future__ import annotations

import ast
import base64
import io
import itertools
import json
from pathlib import Path

import pandas as pd

RELATIVE = "track_step_cost_relative"  # masked step time / unmasked step time


def _value(text):
    try:
        return ast.literal_eval(text)  # asv stores parameter values as their repr
    except (ValueError, SyntaxError):
        return text


def load_benchmarks(results_dir: Path) -> pd.DataFrame | None:
    """One row per (machine, benchmark, parameter combination), newest result only; None if no asv results."""
    results_dir = Path(results_dir)
    index = results_dir / "benchmarks.json"
    if not index.exists():
        return None
    meta = json.loads(index.read_text())
    rows = []
    for path in sorted(results_dir.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        try:
            data = json.loads(path.read_text())
            columns = data["result_columns"]
        except (OSError, ValueError, KeyError):
            continue  # not a results file of this asv version
        for name, row in data["results"].items():
            record = dict(zip(columns, row))
            short = name.rsplit(".", 1)[-1]
            names = meta.get(name, {}).get("param_names", [])
            params = record.get("params") or []
            values = record["result"] if params else [record["result"]]
            for combo, value in zip(itertools.product(*params), values or []):
                rows.append({**{k: _value(v) for k, v in zip(names, combo)}, "benchmark": short,
                             "value": value, "machine": path.parent.name, "date": data.get("date", 0),
                             "env": data.get("env_name", "")})
    if not rows:
        return None
    frame = pd.DataFrame(rows).dropna(subset=["value"])
    keys = [c for c in frame.columns if c not in ("value", "date", "env")]
    return frame.sort_values("date").drop_duplicates(keys, keep="last").reset_index(drop=True)


def plot_benchmarks(frame: pd.DataFrame) -> str | None:
    """PNG data URI: relative step cost vs masked fraction, a panel per mask kind, a line per
    framework and optimizer, the ideal (cost proportional to the unmasked share) dashed."""
    data = frame[frame.benchmark == RELATIVE]
    if data.empty:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    masks = list(dict.fromkeys(data["mask"]))
    fig, axes = plt.subplots(1, len(masks), figsize=(4 * len(masks) + 2, 3.6), sharey=True, squeeze=False)
    styles = {"sgd_wd": "-", "adamw": "--"}
    colours = dict(zip(sorted(set(data["framework"])), plt.get_cmap("tab10").colors))
    for ax, mask in zip(axes[0], masks):
        part = data[data["mask"] == mask]
        for (framework, optimizer), line in part.groupby(["framework", "optimizer"]):
            line = line.sort_values("fraction")
            ax.plot(line["fraction"], line["value"], styles.get(optimizer, ":"), marker="o",
                    color=colours[framework], label=f"{framework} {optimizer}")
        ax.plot([0, 1], [1, 0], "k:", label="ideal (1 - fraction)")
        ax.set_title(mask)
        ax.set_xlabel("masked fraction")
        ax.set_ylim(0, max(1.05, 1.05 * float(data["value"].max())))  # shared y: zero_grad goes above 1
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
    """framework x (mask, fraction) of the relative step cost, per optimizer."""
    data = frame[frame.benchmark == RELATIVE]
    return data.pivot_table(index=["framework", "optimizer"], columns=["mask", "fraction"], values="value")
