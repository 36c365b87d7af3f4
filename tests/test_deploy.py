"""docs/jupyterhub/config.yaml (Zero to JupyterHub values) agrees with docs/deploy.md, with
pagelab's memory budget and with the doctor's fix texts."""

import errno
import re

import pytest
import yaml

from helpers import ROOT, run
from pagelab import _environment, _run, _workloads
from pagelab._lab import work_dir
from pagelab._reasons import Facts, explain
from pagelab.experiments import _common, latency

CONFIG = yaml.safe_load((ROOT / "docs" / "jupyterhub" / "config.yaml").read_text())
USER = CONFIG["singleuser"]
DOC = " ".join((ROOT / "docs" / "deploy.md").read_text().split())  # one line: wrapping ignored
MIB = 1 << 20


def quantity(text):
    """A Kubernetes memory quantity in bytes: 2G = 2e9, 2Gi = 2**30."""
    m = re.fullmatch(r"(\d+)([KMGT]i?)?", str(text))
    unit = m.group(2) or ""
    power = "KMGT".index(unit[0]) + 1 if unit else 0
    return int(m.group(1)) * ((1024 if unit.endswith("i") else 1000) ** power)


def default_need(name):
    """Resident bytes of an experiment's defaults; the latency sweep at its host-independent cap
    (the largest size it would pick on a machine with a huge last-level cache)."""
    p = _workloads.validate(name, {})
    if name == "latency":
        sweep = latency.sizes(p["min_kb"], _common.SWEEP_CAP_KB, p["points_per_octave"])
        p = _workloads.validate(name, {"max_kb": sweep[: latency.MAX_SIZES][-1]})
    return _run._module(name).memory(p)[0]


def test_memory_limit_leaves_a_budget_every_default_fits():
    """Half the pod's limit (pagelab's budget) holds every experiment's default run, and the doc
    states the same limit, budget and largest need."""
    limit = quantity(USER["memory"]["limit"])
    assert quantity(USER["memory"]["guarantee"]) == limit
    budget = int(_environment.BUDGET_FRACTION * limit)
    needs = {name: default_need(name) for name in _run.experiment_names()}
    largest = max(needs, key=needs.get)
    assert needs[largest] <= budget, f"{largest} needs {needs[largest]} B, budget {budget} B"
    assert f"singleuser.memory.limit: {USER['memory']['limit']}" in DOC
    assert f"it is {budget // MIB} MiB" in DOC
    assert f"{_environment.BUDGET_FRACTION:.0%} of the least of MemAvailable" in DOC
    assert f"the {largest} experiment, needs {needs[largest] // MIB} MiB" in DOC


def test_seccomp_profile_is_localhost_and_documented():
    """The pods use a Localhost seccomp profile, installed where the doc says kubelet finds it."""
    profile = USER["extraPodConfig"]["securityContext"]["seccompProfile"]
    assert profile["type"] == "Localhost"
    assert f"/var/lib/kubelet/seccomp/{profile['localhostProfile']}" in DOC
    assert '"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW"' in DOC


def test_no_capability_is_pretended_to_reach_the_student():
    """The values add no capability (it would not reach uid 1000) and keep no_new_privs; the doc
    says what a file capability would need instead."""
    assert USER["uid"] == 1000 and USER["allowPrivilegeEscalation"] is False
    assert "capabilities" not in yaml.safe_dump(CONFIG)
    for needed in ("setcap cap_perfmon+ep", "capabilities.add: [PERFMON]",
                   "allowPrivilegeEscalation: true", "no_new_privs", "uid 1000"):  # fmt: skip
        assert needed in DOC, needed


def test_doctor_fix_texts_match_the_doc():
    """The doctor's fixes for EACCES name what the doc says works in a pod, not capabilities.add
    alone."""
    paranoid = explain(errno.EACCES, "hw", Facts(3, "disabled", (), False)).fix
    assert "kernel.perf_event_paranoid to 2" in paranoid and "a pod cannot set it" in paranoid
    assert "allowPrivilegeEscalation: true" in paranoid and "setcap cap_perfmon+ep" in paranoid
    seccomp = explain(errno.EACCES, "sw", Facts(2, "filter", (), False)).fix
    assert "Localhost seccompProfile" in seccomp and "docs/deploy.md" in seccomp


def test_image_and_start_page_are_the_documented_ones(tmp_path, pagelab_cmd):
    """The image is the one the doc's repo2docker command builds; the postStart hook really copies
    the chapters, and defaultUrl opens chapter 00 in that copy."""
    image = f"{USER['image']['name']}:{USER['image']['tag']}"
    assert f"--image-name {image}" in DOC
    hook = USER["lifecycleHooks"]["postStart"]["exec"]["command"]
    assert hook[0] == "pagelab" and f"`{' '.join(hook)}`" in DOC
    p = run([*pagelab_cmd, *hook[1:]], env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    copy = work_dir().relative_to(work_dir().home())  # ~/pagelab-notebooks
    first = sorted((ROOT / "notebooks").glob("*.ipynb"))[0].name
    assert USER["defaultUrl"] == f"/lab/tree/{copy}/{first}"
    assert (tmp_path / copy / first).read_bytes() == (ROOT / "notebooks" / first).read_bytes()


@pytest.mark.parametrize("text", ["2G", "2Gi", "512Mi"])
def test_quantity_parser(text):
    """The quantity parser follows Kubernetes: decimal G, binary Gi."""
    assert quantity(text) == {"2G": 2 * 10**9, "2Gi": 2 << 30, "512Mi": 512 << 20}[text]
