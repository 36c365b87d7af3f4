"""`pagelab.explore`: controls built from the C workload table, a Run button that runs the real
experiment and turns bad choices into one printed line; and the default progress bar, which in a
real kernel is a widget, so no stderr line is ever saved into a chapter."""

import pytest

import pagelab
from helpers import Kernel
from pagelab.native import workloads as _workloads


def test_controls_come_from_the_workload_table():
    """Every parameter gets a widget with the table's range, default and choices: a slider for a
    narrow range, a bounded box for a wide one, a dropdown for named choices."""
    for name, w in _workloads.WORKLOADS.items():
        box = pagelab.explore(name)
        controls = box.children[: len(w.params)]
        for param, widget in zip(w.params.values(), controls):
            assert widget.description.split(" ")[0] == param.name
            if param.choices:
                assert widget.options == param.choices
                assert widget.value == param.shown(param.default)
            else:
                assert (widget.min, widget.max, widget.value) == (
                    param.min,
                    param.max,
                    param.default,
                )
                wide = param.max - param.min > 1024
                assert type(widget).__name__ == ("BoundedIntText" if wide else "IntSlider")


def test_shown_and_fixed_parameters():
    """Only the named controls are shown, starting where ``fixed`` says; a choice starts by name."""
    box = pagelab.explore("ebizzy", "mode", "threads", mode="pool", threads=3, records=5)
    mode, threads = box.children[:2]
    assert (mode.value, threads.value) == ("pool", 3)
    assert box.children[2].description == "Run ebizzy"


def test_unknown_names_are_one_clear_error():
    """An unknown experiment or parameter raises BadInput before any widget is built."""
    with pytest.raises(pagelab.BadInput, match="unknown experiment"):
        pagelab.explore("firsttouch")
    with pytest.raises(pagelab.BadInput, match="has no parameter 'size'"):
        pagelab.explore("first-touch", size=4)


def test_run_button_runs_the_experiment_and_prints_errors(capsys):
    """Pressing Run runs the real experiment with the controls' values; a size over the memory
    budget prints one line naming the error instead of raising into the kernel."""
    box = pagelab.explore("first-touch", size_mb=1, threads=1, rounds=2)
    box.press(None)
    out = capsys.readouterr().out
    assert "first-touch (size_mb=1, threads=1, rounds=2)" in out and "minflt=" in out
    size = box.children[0]
    size.value = size.max
    box.press(None)
    out = capsys.readouterr().out.replace("\x1b[2K\r", "").strip()  # clear_output off a kernel
    assert out.startswith("BudgetExceeded: first-touch needs") and "\n" not in out


def test_progress_must_be_a_bar_none_or_a_function():
    """Anything else is refused before the run starts."""
    with pytest.raises(pagelab.BadInput, match="progress must be True"):
        pagelab.run("vsyscall", progress="yes")
    with pytest.raises(pagelab.BadInput, match="progress must be None or a function"):
        pagelab.start("vsyscall", progress=True)


@pytest.mark.slow
def test_default_progress_in_a_kernel_is_a_widget_not_stderr():
    """In a real ipykernel the default progress is a tqdm widget: the cell's output has a widget
    view and no stderr at all, and the run's result still prints."""
    k = Kernel()
    try:
        out = k.run("import pagelab\nprint(pagelab.run('vsyscall', calls=1000).experiment)")
    finally:
        k.stop()
    assert out["status"] == "ok", out
    assert out["stderr"] == ""
    assert out["stdout"].strip() == "vsyscall"
    assert any("application/vnd.jupyter.widget-view+json" in d for d in out["data"])


def test_terminal_progress_is_a_bar_that_clears(capfd):
    """Outside a notebook the bar writes the run's steps to stderr and erases itself when done."""
    pagelab.run("vsyscall", calls=1000, processes=2)
    err = capfd.readouterr().err
    assert "vsyscall: " in err and "process 2 of 2" in err


def test_sim_reaches_the_run(capsys):
    """``sim`` goes to the run: True prints sim readings, False none (whatever the profile)."""
    small = dict(size_mb=1, sets=64, lines=64, passes=1)
    for sim in (True, False):
        pagelab.explore("cache", "lines", sim=sim, **small).press(None)
        assert ("(sim)" in capsys.readouterr().out) is sim
