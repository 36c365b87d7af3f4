"""docs/jupyterhub/config.yaml (Zero to JupyterHub values) agrees with docs/deploy.md, with
pagelab's memory budget and with the doctor's fix texts."""

import asyncio
import errno
import re

import jsonschema
import pytest
import yaml
from kubernetes_asyncio.client import ApiClient
from kubespawner.objects import make_pod

from helpers import ROOT, run
from pagelab.cli.lab import work_dir
from pagelab.counters.reasons import Facts, explain
from pagelab.experiments import common, latency
from pagelab.experiments import runner as _run
from pagelab.machine import environment as _environment
from pagelab.native import workloads as _workloads

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
        sweep = latency.sizes(p["min_kb"], common.SWEEP_CAP_KB, p["points_per_octave"])
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


# The part of the chart's values schema (zero-to-jupyterhub-k8s jupyterhub/values.schema.yaml,
# chart 4.4; no registry package ships it, so it is written out here) that these values touch:
# unknown keys are errors at the top, in singleuser and in hub, and hub.config sections are
# traitlets class names. `required` is left out: the chart's own values.yaml supplies those.
def _names(names):
    return {n: {} for n in names.split()}


VALUES_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **_names(
            "enabled fullnameOverride nameOverride imagePullSecret imagePullSecrets proxy "
            "scheduling ingress httpRoute prePuller custom cull debug rbac global"
        ),
        "hub": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **_names(
                    "activeServerLimit allowNamedServers annotations args "
                    "authenticatePrometheus baseUrl command concurrentSpawnLimit "
                    "consecutiveFailureLimit containerSecurityContext cookieSecret db "
                    "deploymentStrategy existingSecret extraConfig extraContainers extraEnv "
                    "extraFiles extraPodSpec extraVolumeMounts extraVolumes fsGid image "
                    "initContainers labels lifecycle livenessProbe loadRoles "
                    "namedServerLimitPerUser networkPolicy nodeSelector pdb "
                    "podSecurityContext readinessProbe redirectToServer resources "
                    "revisionHistoryLimit service serviceAccount services shutdownOnLogout "
                    "templatePaths templateVars tolerations"
                ),
                "config": {
                    "type": "object",
                    "additionalProperties": False,
                    "patternProperties": {
                        "^[A-Z].*$": {"type": "object", "additionalProperties": True}
                    },
                },
            },
        },
        "singleuser": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **_names(
                    "cloudMetadata cmd events extraAnnotations extraContainers extraFiles "
                    "extraLabels extraNodeAffinity extraPodAffinity extraPodAntiAffinity "
                    "extraResource extraTolerations initContainers networkPolicy networkTools "
                    "nodeSelector podNameTemplate profileList serviceAccountName startTimeout "
                    "storage"
                ),
                "image": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "tag"],
                    "properties": {
                        "name": {"type": "string"},
                        "tag": {"type": "string"},
                        "pullPolicy": {"enum": [None, "", "IfNotPresent", "Always", "Never"]},
                        "pullSecrets": {"type": "array"},
                    },
                },
                "defaultUrl": {"type": ["string", "null"]},
                "lifecycleHooks": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "postStart": {"type": "object", "additionalProperties": True},
                        "preStop": {"type": "object", "additionalProperties": True},
                    },
                },
                "memory": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "limit": {"type": ["number", "string", "null"]},
                        "guarantee": {"type": ["number", "string", "null"]},
                    },
                },
                "cpu": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "limit": {"type": ["number", "null"]},
                        "guarantee": {"type": ["number", "null"]},
                    },
                },
                "uid": {"type": ["integer", "null"]},
                "fsGid": {"type": ["integer", "null"]},
                "allowPrivilegeEscalation": {"type": ["boolean", "null"]},
                "extraPodConfig": {"type": "object", "additionalProperties": True},
                "extraEnv": {"type": ["object", "array"], "additionalProperties": True},
            },
        },
    },
}
# The chart's defaults for what the security contexts are built from (its values.yaml).
CHART_DEFAULTS = {"uid": 1000, "fsGid": 100, "allowPrivilegeEscalation": False}


def security_contexts(values):
    """(pod securityContext, user container securityContext) of a user pod as kubespawner's own
    make_pod builds it from the values, handed over the way the chart's jupyterhub_config.py
    does (singleuser.uid -> uid, fsGid -> fs_gid, allowPrivilegeEscalation,
    extraPodConfig -> extra_pod_config; hub.config.KubeSpawner.* as given)."""
    user = {**CHART_DEFAULTS, **values.get("singleuser", {})}
    spawner = values.get("hub", {}).get("config", {}).get("KubeSpawner", {})
    pod = make_pod(
        name="jupyter-student",
        cmd=["jupyterhub-singleuser"],
        port=8888,
        image="pagelab:test",
        uid=user["uid"],
        fs_gid=user["fsGid"],
        allow_privilege_escalation=user["allowPrivilegeEscalation"],
        pod_security_context=spawner.get("pod_security_context"),
        container_security_context=spawner.get("container_security_context"),
        extra_pod_config=user.get("extraPodConfig"),
    )
    spec = asyncio.run(_serialized(pod))["spec"]
    return spec.get("securityContext", {}), spec["containers"][0].get("securityContext", {})


async def _serialized(model):
    """A kubernetes model as the JSON the API server receives (camelCase keys)."""
    async with ApiClient() as api:
        return api.sanitize_for_serialization(model)


def test_values_fit_the_charts_schema():
    """The values validate against the chart's schema (no misplaced key the chart would
    reject), and a key in the wrong place is caught."""
    jsonschema.validate(CONFIG, VALUES_SCHEMA)
    misplaced = {**CONFIG, "singleuser": {**USER, "containerSecurityContext": {}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(misplaced, VALUES_SCHEMA)


def test_seccomp_profile_merges_and_keeps_fs_group():
    """The Localhost seccomp profile reaches the user container while the pod keeps the fsGroup
    that fsGid sets (a writable home volume) and the container keeps uid 1000 without privilege
    escalation; the profile is installed where the doc says kubelet finds it."""
    pod, container = security_contexts(CONFIG)
    assert pod == {"fsGroup": 100}
    profile = container["seccompProfile"]
    assert container["runAsUser"] == 1000 and container["allowPrivilegeEscalation"] is False
    assert profile["type"] == "Localhost"
    assert f"/var/lib/kubelet/seccomp/{profile['localhostProfile']}" in DOC
    assert '"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW"' in DOC
    assert "extraPodConfig" not in yaml.safe_dump(CONFIG)


def test_profile_in_extra_pod_config_would_lose_fs_group():
    """As kubespawner builds it: the profile in singleuser.extraPodConfig's
    securityContext (the old values) replaces the pod's securityContext and drops fsGroup."""
    profile = {"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}
    old = {"singleuser": {"extraPodConfig": {"securityContext": profile}}}
    assert security_contexts(old)[0] == profile  # no fsGroup: home not writable on some storage
    merged = {"hub": {"config": {"KubeSpawner": {"pod_security_context": profile}}}}
    assert security_contexts(merged)[0] == {"fsGroup": 100, **profile}


def test_image_pins_the_hubs_jupyterhub_major():
    """The student image's jupyterhub-singleuser is pinned to the major version of the
    JupyterHub that the documented chart runs (chart 4.x: JupyterHub 5)."""
    header = (ROOT / "docs" / "jupyterhub" / "config.yaml").read_text()
    chart, hub = re.search(r"chart `jupyterhub`, (\d+)\.x: JupyterHub (\d+)\)", header).groups()
    assert f"--version {chart}." in header and f"--version {chart}." in DOC
    deps = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())["dependencies"]
    pin = next(d for d in deps if isinstance(d, str) and d.startswith("jupyterhub-singleuser"))
    assert pin == f"jupyterhub-singleuser>={hub},<{int(hub) + 1}"
    assert f"JupyterHub {hub}" in DOC


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
    paranoid = explain(errno.EACCES, "hw", Facts(2, "disabled", (), False)).fix
    assert "kernel.perf_event_paranoid to 2" in paranoid and "a pod cannot set it" in paranoid
    assert "allowPrivilegeEscalation: true" in paranoid and "setcap cap_perfmon+ep" in paranoid
    # at Debian's 3 (Ubuntu's 4) no capability short of CAP_SYS_ADMIN helps: the fix says so
    distro = explain(errno.EACCES, "hw", Facts(3, "disabled", (), False)).fix
    assert "kernel.perf_event_paranoid to 2" in distro and "a pod cannot set it" in distro
    assert "CAP_PERFMON is not enough" in distro and "setcap" not in distro
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
