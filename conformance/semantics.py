"""The compatibility data as a product: data/semantics.json, keyed by semantic feature (a variant of the
reference semantics, oracle/variants/), and per framework where it holds: as its room declares it (known.yaml:
version range, devices, modes, apis, backends, replicas, engines, the upstream link, the confirming snippet) and as the
runs observed it (each run whose divergences needed it, with those cases). SCHEMA (semantics.schema.json beside
this file) is the dataset's JSON Schema; DATASET_VERSION its semver: a major step when a field changes meaning
or goes, a minor one when a field is added.

    python -m conformance semantics [--results DIR ...] [--out FILE] [--package DIR]
    # default reports/data/semantics.json; --package: an installable package of it (conformance-semantics)
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .oracle.known import load_known
from .oracle.variants import VARIANTS
from .results import VariantRecord
from .runners import ROOMS

DATASET_VERSION = "1.1.0"  # 1.1: engine (observed) and engines (declared)
SCHEMA = Path(__file__).parent / "semantics.schema.json"


class Observed(BaseModel):
    """One run whose divergences needed the feature."""
    model_config = ConfigDict(extra="forbid")
    version: str
    device: str
    mode: str
    api: str
    backend: str
    replicas: str
    engine: str = ""  # the data-parallel engine, where not the room's plain one
    cases: list[str]  # the case instances whose divergence needed it


class FrameworkEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    declared: list[VariantRecord]  # the room's known.yaml entries for it
    observed: list[Observed]       # the runs read, where it was needed


class Feature(BaseModel):
    model_config = ConfigDict(extra="forbid")
    behaviour: str   # what the framework does
    reference: str   # what the reference semantics do instead
    cases: list[str]  # every case (base id) a run needed it for, in any framework
    frameworks: dict[str, FrameworkEntry]


class Dataset(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset_version: str
    built: str
    runs_read: int
    features: dict[str, Feature]


def schema_text() -> str:
    return json.dumps(Dataset.model_json_schema(), indent=1, sort_keys=True) + "\n"


def build(columns) -> Dataset:
    """The dataset from every room's known.yaml and the runs of these report columns (report.page.load_columns)."""
    runs = [c for c in columns if c.doc]
    known = {framework: load_known(framework) for framework in ROOMS}  # each room's file read once
    features = {}
    for name, variant in VARIANTS.items():
        entries, cases = {}, set()
        for framework in ROOMS:
            declared = [VariantRecord.of(k) for k in known[framework] if k.variant == name]
            observed = []
            for col in (c for c in runs if c.framework == framework):
                needed = sorted(case.id for case in col.doc.cases if name in case.variants)
                if needed:
                    run = col.doc.environment.run
                    observed.append(Observed(version=run.version, device=run.device, mode=run.mode, api=run.api,
                                             backend=run.backend, replicas=run.replicas, engine=run.engine,
                                             cases=needed))
                    cases.update(case.base_id for case in col.doc.cases if name in case.variants)
            if declared or observed:
                entries[framework] = FrameworkEntry(declared=declared, observed=observed)
        if entries:
            features[name] = Feature(behaviour=variant.behaviour, reference=variant.reference, cases=sorted(cases),
                                     frameworks=entries)
    return Dataset(dataset_version=DATASET_VERSION, runs_read=len(runs), features=features,
                   built=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


PACKAGE = "conformance_semantics"
PACKAGE_INIT = '''"""The conformance suite's compatibility data: each semantic feature (a way a framework departs from the
reference semantics), the cases it changes, and per framework where it is declared and where runs observed it.

    import conformance_semantics
    data = conformance_semantics.load()      # the dataset, as semantics.json holds it
    data["features"]["dropout-positional-is-keep-prob"]["frameworks"]["mindspore"]

DATASET_VERSION is the dataset's semver (major: a field changes meaning or goes; minor: a field is added);
the package's own version adds the data's build time as its patch. schema.json is its JSON Schema.
"""
import json
from importlib import resources

DATASET_VERSION = "{dataset_version}"


def load() -> dict:
    return json.loads(resources.files(__name__).joinpath("semantics.json").read_text(encoding="utf-8"))
'''


def package(dataset: Dataset, folder: Path) -> str:
    """An installable package of the dataset in `folder` (pip install FOLDER); its version."""
    from .kernel.files import write_atomic
    major, minor, _ = dataset.dataset_version.split(".")
    built = datetime.datetime.fromisoformat(dataset.built)
    version = f"{major}.{minor}.{built:%Y%m%d%H%M}"
    inside = folder / PACKAGE
    inside.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "pyproject.toml", "\n".join([
        "[build-system]", 'requires = ["setuptools>=64"]', 'build-backend = "setuptools.build_meta"', "",
        "[project]", 'name = "conformance-semantics"', f'version = "{version}"',
        'description = "Framework semantics for gradients and regularization, keyed by feature, from the '
        'conformance suite"', 'requires-python = ">=3.9"', "",
        "[tool.setuptools.package-data]", f'{PACKAGE} = ["semantics.json", "schema.json"]', ""]))
    write_atomic(inside / "__init__.py", PACKAGE_INIT.format(dataset_version=dataset.dataset_version))
    write_atomic(inside / "semantics.json", dataset.model_dump_json(indent=1))
    write_atomic(inside / "schema.json", schema_text())
    return version


def cmd_semantics(args) -> int:
    from .kernel.files import write_atomic
    from .kernel.lines import say
    from .report.page import load_columns
    from .results import results_dirs
    out = Path(args.out)
    columns = load_columns(args.results or results_dirs(), out.parent, lambda message: say(f"warning: {message}"))
    dataset = build(columns)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, dataset.model_dump_json(indent=1))
    say(f"wrote {out}: {len(dataset.features)} features from {dataset.runs_read} runs")
    if args.package:
        version = package(dataset, Path(args.package))
        say(f"wrote the package conformance-semantics {version} in {args.package} (pip install {args.package})")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("semantics", help="write data/semantics.json: each semantic feature, where it is declared and "
                                         "where the runs observed it")
    p.add_argument("--results", type=Path, action="append", default=None,
                   help="a folder of results files, again for more (default reports/results and reports/machines/*)")
    p.add_argument("--out", default="reports/data/semantics.json", help="the file to write")
    p.add_argument("--package", metavar="DIR", help="also write an installable package of it there "
                                                   "(conformance-semantics: load(), DATASET_VERSION, schema.json)")
