"""Report building from synthetic results and asv files (no framework needed)."""
import json
import re

import pandas as pd

from conformance import results
from conformance.__main__ import main
from conformance.run import AXES
from conformance.runners import ROOMS
from conformance.report.bench import env_label, load_benchmarks
from conformance.report.page import build
from conftest import INSTANCES, env, record, write_asv


def runs_of(page):
    return re.findall(r'<tr class="fw-row[^"]*" data-framework="\w+" data-run="([^"]+)"', page)


def write_run(folder, environment, cases):
    """A results file named as `run` names it, by the run's axes."""
    e = environment
    name = e.run.name
    results.write(results.Results(complete=True, environment=e, cases=cases), folder / f"{name}.json")

def rows_of(html, table_id):
    table = html.split(f'id="{table_id}"', 1)[1].split("<h2", 1)[0]
    return re.findall(r'<tr class="case-row" data-case="([^"]+)"', table)


def test_page_has_every_case_and_every_framework(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    assert rows_of(page, "matrix") == [i.id for i in INSTANCES]
    assert rows_of(page, "seed-matrix") == [i.id for i in INSTANCES if i.topic == "seeds"]
    header = page.split('id="matrix"', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<th class="fw" data-run="[^"]*">(\w+)', header) == list(ROOMS)  # the registry's order
    assert page.index('id="seeds"') < page.index('id="matrix"')
    assert "http" not in re.sub(r'href="https?://[^"]*"|title="https?://[^"]*"|https?://[^\s<"]*', "", page)


def test_strings_from_results_are_escaped(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_missing_and_malformed_results_get_their_column(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    fw = {k: v.strip() for k, v in re.findall(r'data-framework="(\w+)" data-run="[^"]*">.*?<td class="status">([a-z ]+)', page, re.S)}
    assert fw["mindspore"] == "not run" and fw["paddle"] == "malformed" and fw["tensorflow"] == "incomplete"
    assert "run `tox -e mindspore`" in page
    assert 'href="./results/torch.json"' in page


def test_verdict_cells_and_documented_links(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    first = page.split(f'data-case="{INSTANCES[0].id}"', 1)[1].split("</tr>", 1)[0]
    assert 'class="cell v-documented"' in first and 'href="https://example.org/doc"' in first
    assert "changed by max 1e-3" in first
    assert 'class="cell v-error" title="error | crashed: SIGSEGV"' in page
    assert page.count('class="cell v-missing"') >= len(INSTANCES)  # the whole mindspore column


def test_undocumented_divergences_listed_first(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    listed = page.split('id="undocumented-list"', 1)[1].split("</table>", 1)[0]
    assert f'href="#{INSTANCES[3].id}"' in listed and "undocumented one" in listed
    assert INSTANCES[0].id not in listed  # documented
    assert page.index('id="undocumented"') < page.index('id="seeds"')
    assert f'id="{INSTANCES[3].id}"' in page.split('id="matrix"', 1)[1]


def test_summary_csv(report_dir):
    build(report_dir / "results", report_dir, bench_dir=None)
    table = pd.read_csv(report_dir / "summary.csv")
    assert set(table.framework) == {"torch", "tensorflow"}
    torch = table[table.framework == "torch"]
    assert len(torch) == len(INSTANCES)
    assert torch.set_index("id").loc[INSTANCES[0].id, "cell"] == "documented"
    assert torch.cell.value_counts()["divergence"] == 1


def test_summary_csv_has_every_run_axis(tmp_path):
    """A column per entry of the axis table (the version's named as the results file names it), holding
    each run's value: runs that differ in one axis only stay apart in the CSV."""
    folder = tmp_path / "results"
    folder.mkdir()
    single = [i for i in INSTANCES if not i.case.data_parallel]
    parallel = [i for i in INSTANCES if i.case.data_parallel]
    one = env("torch", "2.13.0", device="cuda").model_copy(update=dict(mode="graph", backend="aot_eager"))
    two = one.model_copy(update=dict(replicas="2"))
    write_run(folder, one, [record(i) for i in single])
    write_run(folder, two, [record(i) for i in parallel])
    build(folder, tmp_path, bench_dir=None)
    table = pd.read_csv(tmp_path / "summary.csv", dtype=str, keep_default_na=False)
    columns = ["framework_version" if axis.name == "version" else axis.name for axis in AXES]
    assert [c for c in columns if c not in table.columns] == [], "summary.csv lacks a run axis"
    for environment, instances in ((one, single), (two, parallel)):
        rows = table[table.run == environment.run.name]
        assert len(rows) == len(instances)
        for axis, column in zip(AXES, columns):
            assert set(rows[column]) == {getattr(environment.run, axis.name)}, (axis.name, set(rows[column]))


def test_benchmarks_parsed_and_plotted(report_dir, tmp_path):
    bench = tmp_path / "asv"
    bench.mkdir()
    # itertools.product order: torch-frozen-0.0-sgd_wd, torch-frozen-0.0-adamw, torch-frozen-0.9-sgd_wd, ...
    values = [1.0, 1.0, 0.2, 0.9, 1.0, 1.0, 1.0, 1.0] + [None] * 8  # paddle skipped (not installed)
    write_asv(bench, values)
    frame = load_benchmarks(bench)
    assert len(frame) == 8 and set(frame.framework) == {"torch"}
    row = frame[(frame["mask"] == "frozen") & (frame.fraction == 0.9) & (frame.optimizer == "sgd_wd")]
    assert row.value.item() == 0.2
    page = build(report_dir / "results", report_dir, bench_dir=bench).read_text()
    assert re.search(r'<img class="bench" id="bench-plot" [^>]*src="data:image/png;base64,', page)


def test_no_benchmarks_says_so(report_dir, tmp_path):
    page = build(report_dir / "results", report_dir, bench_dir=tmp_path / "none").read_text()
    assert 'id="bench-missing"' in page


def test_a_second_folder_adds_columns_and_drops_none(report_dir, tmp_path, capsys):
    first = runs_of(build(report_dir / "results", report_dir, bench_dir=None).read_text())
    cuda_box = tmp_path / "from-a-cuda-box"
    cuda_box.mkdir()
    write_run(cuda_box, env("torch", "2.13.0", device="cuda"), [record(i) for i in INSTANCES])
    write_run(cuda_box, env("paddle", "2.6.2"), [record(i) for i in INSTANCES])
    merged = runs_of(build([report_dir / "results", cuda_box], report_dir, bench_dir=None).read_text())
    assert set(first) <= set(merged) and len(merged) == len(first) + 2
    assert {"torch-2.13.0-cuda-eager-loop", "paddle-2.6.2-cpu-eager-loop"} <= set(merged)
    assert merged.index("torch-2.13.0-cpu-eager-loop") < merged.index("torch-2.13.0-cuda-eager-loop") \
        < merged.index("paddle-2.6.2-cpu-eager-loop")  # grouped by framework
    summary = pd.read_csv(report_dir / "summary.csv")
    assert {"run", "framework", "framework_version", "device", "mode", "api"} <= set(summary.columns)
    # a room without results is a "not run" column of the page, not a run of summary.csv
    assert set(summary.run) == {r for r in merged if not r.startswith("paddle-malformed") and "-not_run-" not in r}


def test_the_same_run_twice_is_one_column_the_newer_file(report_dir, tmp_path, capsys):
    again = tmp_path / "again"
    again.mkdir()
    later = env("torch", "2.13.0", started="2026-02-01T00:00:00+00:00")
    write_run(again, later, [record(i, "error", reason="newer run") for i in INSTANCES])
    page = build([report_dir / "results", again], report_dir, bench_dir=None).read_text()
    assert runs_of(page).count("torch-2.13.0-cpu-eager-loop") == 1
    err = capsys.readouterr().err
    assert "hold the same run (torch-2.13.0-cpu-eager-loop): showing the newer" in err
    assert "newer run" in page.split('id="matrix"', 1)[1]


def test_changed_between_versions_lists_the_cases_that_changed(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    old = [record(i) for i in INSTANCES]
    new = [record(i) for i in INSTANCES]
    new[2] = record(INSTANCES[2], "unsupported", reason="cannot any more")
    write_run(folder, env("tensorflow", "2.15.1"), old)
    write_run(folder, env("tensorflow", "2.21.0"), new)
    page = build(folder, tmp_path, bench_dir=None).read_text()
    section = page.split('id="versions"', 1)[1].split("<h2", 1)[0]
    assert "tensorflow 2.15.1\n  → 2.21.0" in section and "1 case changed" in section
    assert re.findall(r'<tr data-case="([^"]+)"', section) == [INSTANCES[2].id]
    assert "cannot any more" in section


def test_benchmarks_of_two_framework_versions_stay_apart(tmp_path):
    write_asv(tmp_path, [1.0] * 16)
    first = tmp_path / "machine1" / "abc-existing.json"
    data = json.loads(first.read_text())
    for env_name, value in (("existing-py_w_.tox_paddle_bin_python", 0.3),
                            ("existing-py_w_.tox_paddle26_bin_python", 0.6)):
        name = next(iter(data["results"]))
        data["results"][name][0] = [value] * 16
        data["env_name"] = env_name
        (tmp_path / "machine1" / f"abc-{env_name}.json").write_text(json.dumps(data))
    first.unlink()
    frame = load_benchmarks(tmp_path)
    assert set(frame.run) == {"paddle", "paddle26"}
    assert frame.groupby("run").value.max().to_dict() == {"paddle": 0.3, "paddle26": 0.6}
    assert env_label("virtualenv-py3.11-paddlepaddle2.6.2") == "paddlepaddle2.6.2"


def test_graph_and_trainer_runs_are_columns_and_their_differences_are_listed(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    eager = [record(i) for i in INSTANCES]
    graph = [record(i) for i in INSTANCES]
    graph[3] = record(INSTANCES[3], "divergence", reason="only when compiled")
    graph[4] = record(INSTANCES[4], "conform", reason="numbers differ, outcome does not")
    trainer = [record(i) for i in INSTANCES]
    trainer[5] = record(INSTANCES[5], "unsupported", reason="checks only gradients")
    trainer[6] = record(INSTANCES[6], unobserved=["grad a.weight @ step 0"])
    write_run(folder, env("torch", "2.13.0"), eager)
    write_run(folder, env("torch", "2.13.0").model_copy(update=dict(mode="graph", backend="aot_eager")), graph)
    write_run(folder, env("torch", "2.13.0").model_copy(update=dict(api="trainer")), trainer)
    page = build(folder, tmp_path, bench_dir=None).read_text()
    assert {"torch-2.13.0-cpu-eager-loop", "torch-2.13.0-cpu-graph+aot_eager-loop",
            "torch-2.13.0-cpu-eager-trainer"} <= set(re.findall(r'data-run="([^"]+)"', page))
    section = page.split('id="executions"', 1)[1].split("<h2", 1)[0]
    parts = section.split('class="execution-pair"')[1:]
    graph_part, trainer_part = (next(p for p in parts if f'data-run="torch-2.13.0-cpu-{run}"' in p)
                                for run in ("graph+aot_eager-loop", "eager-trainer"))
    assert "eager loop → graph (aot_eager) loop: 1 case differs" in graph_part
    assert re.findall(r'<tr data-case="([^"]+)"', graph_part) == [INSTANCES[3].id]
    assert "eager loop → eager trainer: 0 cases differ" in trainer_part
    assert "1 case not run by eager trainer" in trainer_part and "checks only gradients" in trainer_part
    assert "not observed: grad a.weight @ step 0" in page
    csv = pd.read_csv(tmp_path / "summary.csv")
    assert set(csv.backend.fillna("")) == {"", "aot_eager"} and set(csv.api) == {"loop", "trainer"}


def test_a_run_on_another_device_is_compared_with_the_cpu_run_of_its_version(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    cpu = [record(i) for i in INSTANCES]
    cuda = [record(i) for i in INSTANCES]
    cuda[1] = record(INSTANCES[1], "divergence", reason="max |observed - reference| 3e-04")
    cuda[2] = record(INSTANCES[2], "unsupported", reason="no such kernel")
    gpu = "Test GPU (compute capability 9.0), driver 1.2.3, CUDA 13.0, TF32 matmul off, cuDNN conv on"
    write_run(folder, env("torch", "2.11.0"), cpu)
    write_run(folder, env("torch", "2.11.0", device="cuda").model_copy(update=dict(accelerator=gpu)), cuda)
    write_run(folder, env("torch", "2.13.0", device="cuda"), cpu)  # no cpu run of 2.13.0 here: not compared
    page = build(folder, tmp_path, bench_dir=None).read_text()
    section = page.split('id="devices"', 1)[1].split("<h2", 1)[0]
    assert section.count('class="device-pair"') == 1
    assert "torch 2.11.0\n  eager loop: cpu → cuda: 1 case differs" in section and gpu in section
    assert re.findall(r'<tr data-case="([^"]+)"', section) == [INSTANCES[1].id]
    assert "1 case run on one device only" in section and "no such kernel" in section
    findings = (tmp_path / "findings.md").read_text()
    assert f"| torch 2.11.0 cuda | {gpu} | `{INSTANCES[1].id}` |" in findings


def test_the_report_reads_each_other_machines_folder_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports" / "results").mkdir(parents=True)
    write_run(tmp_path / "reports" / "results", env("torch", "2.13.0"), [record(i) for i in INSTANCES])
    box = tmp_path / "reports" / "machines" / "nvidia-h200-2026-12-03"
    box.mkdir(parents=True)
    write_run(box, env("torch", "2.11.0", device="cuda"), [record(i) for i in INSTANCES])
    assert main(["report"]) == 0
    assert {"torch-2.13.0-cpu-eager-loop", "torch-2.11.0-cuda-eager-loop"} <= set(
        runs_of((tmp_path / "reports" / "index.html").read_text()))


def test_a_run_mostly_of_errors_is_flagged_on_the_page(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    cases = [record(i, "error" if n % 3 else "conform", reason="harness fell over") for n, i in enumerate(INSTANCES)]
    write_run(folder, env("paddle", "2.6.2"), cases)
    write_run(folder, env("torch", "2.13.0"), [record(i) for i in INSTANCES])
    page = build(folder, tmp_path, bench_dir=None).read_text()
    assert re.findall(r'<tr class="fw-row flagged" data-framework="\w+" data-run="([^"]+)"', page) == \
        ["paddle-2.6.2-cpu-eager-loop"]
    assert page.count("mostly errors</span>") == 1


def test_constructor_defaults_are_tabled_per_run(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    def with_default(observed, held):
        check = results.CheckRecord(check="default optimizer.eps", expected="1e-08", observed=observed, held=held)
        return [record(INSTANCES[0], checks=[check])] + [record(i) for i in INSTANCES[1:]]
    write_run(folder, env("torch", "2.13.0"), with_default("1e-08", True))
    write_run(folder, env("tensorflow", "2.21.0"), with_default("1e-07", False))
    page = build(folder, tmp_path, bench_dir=None).read_text()
    section = page.split('id="defaults"', 1)[1].split("<h2", 1)[0]
    row = section.split(f'data-case="{INSTANCES[0].id}" data-setting="optimizer.eps"', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r"<td>(.*?)</td>", row)[-3:] == ["1e-08", "1e-08", '<b class="differs">1e-07</b>']
    empty = build(tmp_path / "none", tmp_path / "out", bench_dir=None).read_text()
    assert "No run left a setting to its framework's default." in empty


def test_initial_draws_are_tabled_beside_the_defaults(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    def drawn(std, held):
        check = results.CheckRecord(check="initial a.weight", expected="the reference's draw", held=held,
                                    observed=f"mean 0.001, std {std} (reference mean 0.0002, std 0.036)")
        return [record(INSTANCES[0], checks=[check])] + [record(i) for i in INSTANCES[1:]]
    write_run(folder, env("torch", "2.13.0"), drawn("0.0361", True))
    write_run(folder, env("paddle", "3.3.1"), drawn("0.0789", False))
    page = build(folder, tmp_path, bench_dir=None).read_text()
    section = page.split('id="defaults"', 1)[1].split("<h2", 1)[0]
    row = section.split(f'data-case="{INSTANCES[0].id}" data-setting="a.weight as built"', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert cells[-3] == "mean 0.0002, std 0.036" and "std 0.0789</b>" in " ".join(cells[-2:])


def test_porting_notes_carry_the_variants_of_the_data_parallel_runs(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    single = [i for i in INSTANCES if not i.case.data_parallel]
    parallel = [i for i in INSTANCES if i.case.data_parallel]
    summed = results.VariantRecord(name="replica-grads-summed", reason="sums across replicas", replicas=["2"],
                                   link="https://example.org/dp", snippet="conformance/runners/mindspore/confirm/x.py")
    dp_cases = [record(i) for i in parallel]
    dp_cases[0] = record(parallel[0], "divergence", reason="twice the step",
                         documented=results.Explanation(variants=[summed]))
    write_run(folder, env("torch", "2.13.0"), [record(i) for i in single])
    write_run(folder, env("mindspore", "2.10.0"), [record(i) for i in single])
    two = env("mindspore", "2.10.0").model_copy(update=dict(replicas="2"))
    results.write(results.Results(complete=True, environment=two, cases=dp_cases, profile=[summed]),
                  folder / f"{two.run.name}.json")
    page = build(folder, tmp_path, bench_dir=None).read_text()
    note = page.split('data-from="torch" data-to="mindspore"', 1)[1].split("</details>", 1)[0]
    assert "(1 difference)" in note
    assert "<code>replica-grads-summed</code> (data-parallel, 2 replicas)" in note
    assert parallel[0].id in note and "sums across replicas" in note
