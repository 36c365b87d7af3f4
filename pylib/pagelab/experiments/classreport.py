"""Class results: `pagelab run all --json` documents from many machines, compared.

Each *.json file in a directory is one machine (named by the file's stem, e.g. alice.json). The
report shows who ran what where (profile, CPU, kernel), every claim per machine, and the headline
numbers (each experiment's summary metrics) side by side with their sources; it plots them, and
exports the timed ones in pyperf's JSON format for `python -m pyperf compare_to`.
"""

import importlib
import json
import statistics
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..core.errors import BadInput, PagelabError
from .runner import experiment_names

# Units of time pyperf can compare, in seconds.
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_VERDICT = {True: "holds", False: "FAILS", None: "n/e"}


@dataclass
class Machine:
    name: str
    version: str
    environment: dict
    results: list  # run documents, as `pagelab run EXPERIMENT --json` prints them

    @classmethod
    def load(cls, path):
        try:
            doc = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise BadInput(f"{path}: not a JSON file ({e})") from None
        results = doc.get("results") if isinstance(doc, dict) else None
        if isinstance(doc, dict) and "experiment" in doc:
            results = [doc]  # one `pagelab run EXPERIMENT --json` is fine too
        if not isinstance(results, list) or not isinstance(doc.get("environment"), dict):
            raise BadInput(f"{path}: not the output of `pagelab run all --json`")
        if not all(_well_formed(r) for r in results):
            raise BadInput(f"{path}: a result lacks experiment, measurements or claims")
        return cls(path.stem, str(doc.get("version", "?")), doc["environment"], results)

    @cached_property
    def claims(self):
        """claim id -> claim dict, over every experiment."""
        return {c["id"]: c for r in self.results for c in r["claims"]}

    @cached_property
    def headline(self):
        """(experiment, label, metric) -> reading dict, for each experiment's summary metrics."""
        out = {}
        for r in self.results:
            names = _summary(r["experiment"])
            for m in r["measurements"]:
                for name in names:
                    if name in m["metrics"]:
                        out[(r["experiment"], m["label"], name)] = m["metrics"][name]
        return out


def _well_formed(result):
    """A result as `pagelab run EXPERIMENT --json` prints it, as far as the report reads it."""

    def dicts(items, keys):
        return isinstance(items, list) and all(
            isinstance(i, dict) and keys <= i.keys() for i in items
        )

    return (
        isinstance(result, dict)
        and isinstance(result.get("experiment"), str)
        and dicts(result.get("claims"), {"id", "holds"})
        and dicts(result.get("measurements"), {"label", "metrics"})
        and all(
            isinstance(m["metrics"], dict)
            and all(isinstance(r, dict) for r in m["metrics"].values())
            for m in result["measurements"]
        )
    )


def _summary(experiment):
    """The metric names an experiment's text summary shows (its SUMMARY); none for an experiment
    this pagelab does not have (a file from another version)."""
    if experiment not in experiment_names():
        return ()
    return importlib.import_module(f"pagelab.experiments.{experiment.replace('-', '_')}").SUMMARY


# pyperf's own metadata names (the ones `pyperf collect_metadata` writes) for the machine facts
# pagelab records; a fact pyperf has no name for keeps its own, prefixed with pagelab_.
_PYPERF_NAMES = {
    "cpu": "cpu_model_name",
    "python": "python_version",
    "pagelab": "pagelab_version",
    "date": "date",
}


def pyperf_metadata(facts):
    """pyperf run metadata from a machine's facts (a doctor environment, or a bench document's
    machine): pyperf's names and types (cpu_count an int, load_avg_1min the load when the run
    began, as a float; platform as pyperf's Linux-RELEASE prefix), pagelab_* for the rest.
    Facts that are None are left out."""
    meta = {}
    for key, value in facts.items():
        if value is None:
            continue
        if key == "kernel":
            meta["platform"] = f"Linux-{value}"
        elif key == "load_1min":
            meta["load_avg_1min"] = float(value[0] if isinstance(value, list) else value)
        elif key == "cpus":
            meta["cpu_count"] = int(value)
        else:
            meta[_PYPERF_NAMES.get(key, f"pagelab_{key}")] = str(value)
    return meta


def _timed(reading):
    """The reading in seconds if it is a time pyperf can compare, else None."""
    scale = _SECONDS.get(reading.get("unit"))
    value = reading.get("value")
    if scale is None or not isinstance(value, (int, float)) or value <= 0:
        return None
    return value * scale


def _cell(reading):
    if reading is None:
        return "-"
    value = reading.get("value")
    if value is None:
        return f"n/a ({reading.get('source')})"
    unit = f" {reading['unit']}" if reading.get("unit") else ""
    number = f"{value:.4g}" if isinstance(value, float) else f"{value:,}"
    return f"{number}{unit} ({reading.get('source')})"


def _hover(claim):
    if claim is None:
        return "not run"
    return f"{_VERDICT[claim['holds']]}: {claim.get('evidence') or claim.get('reason', '')}"


def _table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    return "\n".join(
        "  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in [header, *rows]
    )


@dataclass
class ClassReport:
    machines: list

    @classmethod
    def load(cls, directory):
        directory = Path(directory)
        if not directory.is_dir():
            raise BadInput(f"{directory} is not a directory of `pagelab run all --json` files")
        paths = sorted(directory.glob("*.json"))
        if not paths:
            raise BadInput(f"{directory} holds no *.json files")
        return cls([Machine.load(p) for p in paths])

    def claim_ids(self):
        return list(dict.fromkeys(i for m in self.machines for i in m.claims))

    def headline_keys(self, timed=False):
        keys = {}
        for m in self.machines:
            for key, reading in m.headline.items():
                if not timed or _timed(reading) is not None:
                    keys.setdefault(key, None)
        return list(keys)

    def to_dict(self):
        return {
            "machines": [
                {"name": m.name, "version": m.version, "environment": m.environment}
                for m in self.machines
            ],
            "claims": {
                i: {m.name: m.claims.get(i) for m in self.machines} for i in self.claim_ids()
            },
            "headline": [
                {
                    "experiment": e,
                    "label": label,
                    "metric": metric,
                    "machines": {m.name: m.headline.get((e, label, metric)) for m in self.machines},
                }
                for e, label, metric in self.headline_keys()
            ],
        }

    def __str__(self):
        names = [m.name for m in self.machines]
        rows = []
        for m in self.machines:
            held = [c["holds"] for c in m.claims.values()]
            env = m.environment
            rows.append(
                [
                    m.name,
                    env.get("profile", "?"),
                    env.get("cpu", "?"),
                    env.get("cpus", "?"),
                    env.get("kernel", "?"),
                    env.get("perf_event_paranoid", "?"),
                    m.version,
                    f"{held.count(True)}/{len(held)} hold, {held.count(None)} n/e",
                ]
            )
        machines = _table(
            ["machine", "profile", "cpu", "cpus", "kernel", "paranoid", "pagelab", "claims"], rows
        )
        claims = _table(
            ["claim", *names],
            [
                [
                    i,
                    *(
                        _VERDICT[m.claims[i]["holds"]] if i in m.claims else "-"
                        for m in self.machines
                    ),
                ]
                for i in self.claim_ids()
            ],
        )
        numbers = _table(
            ["experiment", "measurement", "metric", *names],
            [
                [
                    e,
                    label,
                    metric,
                    *(_cell(m.headline.get((e, label, metric))) for m in self.machines),
                ]
                for e, label, metric in self.headline_keys(timed=True)
            ],
        )
        return (
            f"{len(self.machines)} machines\n\n{machines}\n\n"
            f"claims (n/e: not evaluated on that machine; `--json` has the evidence)\n{claims}\n\n"
            f"timed headline numbers (value, unit, source; `--json` has every headline number)\n"
            f"{numbers}"
        )

    def figure(self):
        """A plotly figure: the claims per machine, and the timed headline numbers per machine
        relative to the class median (hover for the value, unit and source)."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        from ..results.plots import displayable

        ids, names = self.claim_ids(), [m.name for m in self.machines]
        score = {True: 1.0, None: 0.5, False: 0.0}
        z, text = [], []
        for m in self.machines:
            claims = m.claims
            z.append([score[claims[i]["holds"]] if i in claims else None for i in ids])
            text.append([_hover(claims.get(i)) for i in ids])
        fig = make_subplots(
            rows=2,
            cols=1,
            vertical_spacing=0.25,
            subplot_titles=(
                "claims (green holds, red fails, grey not evaluated)",
                "timed headline numbers / class median",
            ),
        )
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=ids,
                y=names,
                text=text,
                hoverinfo="text",
                zmin=0,
                zmax=1,
                showscale=False,
                colorscale=[[0, "#d62728"], [0.5, "#bbbbbb"], [1, "#2ca02c"]],
            ),
            row=1,
            col=1,
        )
        keys = self.headline_keys(timed=True)
        medians = {
            key: statistics.median(
                t for m in self.machines if (t := _timed(m.headline.get(key, {}))) is not None
            )
            for key in keys
        }
        for m in self.machines:
            timed = [(k, m.headline[k]) for k in keys if _timed(m.headline.get(k, {})) is not None]
            fig.add_trace(
                go.Scatter(
                    x=[" / ".join(k) for k, _ in timed],
                    y=[_timed(r) / medians[k] for k, r in timed],
                    hovertext=[f"{m.name}: {_cell(r)}" for _, r in timed],
                    hoverinfo="text",
                    mode="markers",
                    name=m.name,
                ),
                row=2,
                col=1,
            )
        fig.update_yaxes(type="log", title_text="x class median", row=2, col=1)
        fig.update_layout(height=900, title="class results")
        return displayable(fig)

    def write_pyperf(self, directory):
        """One pyperf JSON file per machine (DIR/NAME.json): a benchmark per timed headline
        number, named experiment/measurement/metric. Each holds the one summary value pagelab
        keeps (no samples), so compare with `python -m pyperf compare_to --table A.json B.json`."""
        try:
            import pyperf
        except ImportError:
            raise PagelabError("pyperf is not installed: pip install 'pagelab[bench]'") from None
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for m in self.machines:
            env = {k: m.environment.get(k) for k in ("cpu", "kernel", "profile")}
            facts = {"unit": "second", **pyperf_metadata({**env, "pagelab": m.version})}
            benchmarks = [
                pyperf.Benchmark(
                    [
                        pyperf.Run(
                            [_timed(reading)],
                            metadata={"name": "/".join(key), **facts},
                            collect_metadata=False,
                        )
                    ]
                )
                for key, reading in m.headline.items()
                if _timed(reading) is not None
            ]
            if benchmarks:
                path = directory / f"{m.name}.json"
                pyperf.BenchmarkSuite(benchmarks).dump(str(path), replace=True)
                written.append(path)
        return written


def class_report(directory):
    """Compare `pagelab run all --json` files (one per machine) from ``directory``."""
    return ClassReport.load(directory)
