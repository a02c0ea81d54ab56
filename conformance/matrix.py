"""`python -m conformance matrix --json`: every run of every room's tox envs, one object each, for a CI system to
run as one job per run (.github/workflows/matrix.yml does, on GitHub Actions), each job writing one results file.

A run is a room's tox env (one framework version, its pins in room.yaml) on one device, with the axes of one of
the runs its room offers (OFFERS). Each object says where it runs: a hosted runner for cpu, a self-hosted runner
with the device's label for cuda and ascend.
"""
from __future__ import annotations

import json
import shlex

from .run import AXES
from .runners import offers
from .runners.manifest import load_rooms

RUNS_ON = {"cpu": "ubuntu-latest", "cuda": ["self-hosted", "gpu"], "ascend": ["self-hosted", "ascend"]}
DEFAULT_PYTHON = "3.11"


def runs(devices=("cpu",), envs=None, all_envs=False) -> list[dict]:
    """Every run of the rooms' envs on these devices: the envs of the main job (`tox -m frameworks`), or every env
    (all_envs), or those named (envs)."""
    out = []
    for framework, manifest in load_rooms().items():
        room = offers(framework)
        for env in manifest.envs:
            if envs is not None and env.name not in envs or envs is None and not all_envs and env.outside_labels:
                continue
            for device in devices:
                if device not in room.devices:
                    continue
                for run in room.every_run(framework, device):
                    argv = ["python", "-m", "conformance", "run", "--framework", framework]
                    argv += [f"--{a.name}={getattr(run, a.name)}" for a in AXES
                             if a.option and getattr(run, a.name) and getattr(run, a.name) != a.default
                             or a.name == "device"]
                    axes = {a.name: getattr(run, a.name) for a in AXES if a.name not in ("framework", "version")}
                    out.append({"id": f"{env.name}-{run.line.split('-', 1)[1]}",  # torch-cpu-graph+inductor-loop
                                "env": env.name, "framework": framework, "pins": env.deps + env.extras,
                                "python": env.python or DEFAULT_PYTHON, **axes, "runs_on": RUNS_ON[device],
                                "install": shlex.join(["python", "-m", "pip", "install", "-e", ".",
                                                       *env.deps, *env.extras]),
                                "command": shlex.join(argv)})
    return out


def cmd_matrix(args) -> int:
    from .kernel.lines import say
    from .session import UsageError
    devices = tuple(args.device or ["cpu"])
    known_envs = {env.name for m in load_rooms().values() for env in m.envs}
    unknown = sorted(set(args.env or ()) - known_envs)
    if unknown:
        raise UsageError(f"--env {unknown[0]}: no room.yaml names it; the envs are {', '.join(sorted(known_envs))}")
    found = runs(devices, set(args.env) if args.env else None, args.all_envs)
    if args.json:
        say(json.dumps(found))
    else:
        for run in found:
            say(f"{run['id']:<40} {run['command']}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("matrix", help="every run of every room's tox envs, one per line, or --json for a CI matrix")
    p.add_argument("--json", action="store_true", help="one JSON list of objects (id, env, framework, pins, python, "
                                                       "device, mode, api, backend, replicas, runs_on, install, command)")
    p.add_argument("--device", action="append", choices=sorted(RUNS_ON),
                   help="the devices to run on, again for more (default cpu)")
    p.add_argument("--env", action="append", help="only this tox env, again for more")
    p.add_argument("--all-envs", action="store_true", help="also the envs outside the main job (room.yaml outside_labels)")
