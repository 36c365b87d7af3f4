"""The real-kernel matrix: Debian's kernels booted under QEMU (KVM where it starts a guest, TCG
otherwise) with the boot parameters the chapters' stories need (tests/kernels.py lists them), the
doctor, four experiments and a squeeze run in each as root and as an unprivileged user, and
nbval on the chapter whose story needs that kernel. Every claim holds or says why it was not
evaluated, with the kernel's reason; nothing is a traceback.

Chapters under nbval: 04 (emulate mode, in guest a) only. Under TCG a chapter takes 2 to 4
minutes (its Jupyter kernel alone starts in about one), and the matrix's budget is 12 minutes for
all three guests. 07's swap-backed faults and 14's squeeze are the experiments' own claims here.
"""

import shutil
import tempfile
from pathlib import Path

import pytest

import kernels
from helpers import TIMED

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kvm():
    return kernels.kvm_works()


@pytest.fixture(scope="module", params=kernels.CONFIGS, ids=lambda c: c.name)
def guest(request, nobody_python, kvm):
    """(config, results) of one booted guest."""
    if why := kernels.missing():
        pytest.skip(why)
    config = request.param
    image = kernels.kernel_image(config)
    if image is None:
        pytest.skip(f"no /boot/{config.kernel}: apt-get install the kernel (make setup as root)")
    # a directory of its own, not pytest's: another pytest run of this user prunes old ones
    out = Path(tempfile.mkdtemp(prefix=f"pagelab-guest-{config.name}-"))
    try:
        results = kernels.boot(config, image, nobody_python[0], out, kvm)
    finally:
        shutil.rmtree(out)
    kernels.RECORDED.append((config, results))
    assert "error" not in results, results["error"]
    return config, results


def _steps(results, user):
    run = results[user]
    assert "steps" in run, f"{user}: {run.get('error')}"
    return run["steps"]


def _claims(results, user, step):
    return {c["id"]: c for c in _steps(results, user)[step]["json"]["claims"]}


def _env(results, user="root"):
    return _steps(results, user)["doctor"]["json"]["environment"]


def test_guest_is_the_configured_kernel(guest):
    """The guest booted the configured kernel and boot parameters, with loopback networking
    only, and the doctor reads back what was asked."""
    config, results = guest
    env = _env(results)
    assert results["network"] in ([], ["lo"])
    release = kernels.kernel_image(config).name.removeprefix("vmlinuz-")
    assert env["kernel"] == release
    facts = dict(p.split("=") for p in config.append.split())
    if "vsyscall" in facts:
        assert env["vsyscall"] == facts["vsyscall"] and env["vsyscall_cmdline"] == facts["vsyscall"]
    if "transparent_hugepage" in facts:
        assert env["thp"] == facts["transparent_hugepage"]
    assert env["perf_event_paranoid"] == 3  # Debian's kernels default to 3


def test_nothing_is_a_traceback(guest):
    """Every step, as root and as nobody, exits normally with its JSON document."""
    _, results = guest
    for user in ("root", "nobody"):
        for name, step in _steps(results, user).items():
            assert step["traceback"] is None, f"{user}: {name}: {step['traceback']}"
            assert step["rc"] == 0 and step["json"] is not None, f"{user}: {name}: {step}"


def test_every_claim_holds_or_says_why(guest):
    """Each claim holds, or is not evaluated with a reason; only timing claims may be judged
    either way (TCG's clock is no hardware's)."""
    _, results = guest
    for user in ("root", "nobody"):
        for name, step in _steps(results, user).items():
            for c in (step["json"] or {}).get("claims", []):
                where = f"{user}: {name}: {c}"
                if c["holds"] is None:
                    assert c.get("reason"), where
                elif c["id"] in TIMED:
                    assert c["evidence"], where
                else:
                    assert c["holds"] is True, where


def test_the_kernel_shows_what_the_story_needs(guest):
    """What each configuration is for: emulate mode's trap, swap-backed major faults and a real
    squeeze, also interrupted, in a; vsyscall=none and THP never said as reasons in b; a second
    version in c."""
    config, results = guest
    root = _claims(results, "root", "vsyscall")
    if config.name == "a":
        assert root["vsyscall-fault-per-call"]["holds"] is True
        assert _claims(results, "root", "competition")["anon-pageout-swaps"]["holds"] is True
        squeeze = _claims(results, "root", "squeeze")
        assert squeeze["squeeze-major-faults"]["holds"] is True
        assert squeeze["squeeze-bounded"]["holds"] is True
        # an interrupt ends the scene and its competitor, and the cgroup goes with them
        stopped = _steps(results, "root")["squeeze-interrupted"]["json"]
        assert stopped["sandboxed"] and stopped["interrupted"], stopped
        assert stopped["processes"] >= 2 and not stopped["still_running"], stopped
        assert not stopped["cgroup_left"], stopped
        # the distribution's paranoid level 3 stops nobody's perf events, and the claim says so
        nobody = _claims(results, "nobody", "vsyscall")["vsyscall-fault-per-call"]
        assert nobody["holds"] is None and "paranoid" in nobody["reason"]
    elif config.name == "b":
        assert all(c["holds"] is None and "vsyscall=none" in c["reason"] for c in root.values())
        huge = _claims(results, "root", "first-touch")["huge-pages-cut-faults"]
        assert huge["holds"] is None and "never" in huge["reason"]
    else:
        assert _env(results)["kernel"].startswith("6.12.")


def test_chapters_pass_nbval(guest):
    """The chapters whose story needs this kernel pass nbval in it."""
    config, results = guest
    assert sorted(n[:2] for n in results["nbval"]) == sorted(config.chapters)
    for name, run in results["nbval"].items():
        assert run["rc"] == 0, f"{name}: " + "\n".join(run["tail"])
