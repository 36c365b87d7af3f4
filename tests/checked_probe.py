"""Which checked cells depend on the machine: the probe tests/chapters/test_notebooks.py loads
into the kernels nbval starts (through an IPython startup file, never through the chapters).

After each cell that starts with ``# NBVAL_CHECK_OUTPUT`` has run, the probe runs the cell's code
again in copies of the kernel's namespace, its output captured so nbval never sees it:

- once unchanged (the control: it must print what the cell printed, or the probe proves nothing);
- once per perturbation in PERTURBATIONS, with every value the machine gave pagelab changed: in
  each pagelab object the namespace holds (a Result, Reading, Claim, memory-map Region, doctor
  report...) and in whatever a pagelab function returns while the cell runs, every number is
  replaced and every flag flipped (a claim's ``holds`` too). Parameters (``Result.params``),
  names, units, sources and texts stay, and so do definitions (a perf event, a source listing):
  they are what was asked, not what was measured. A model's answer stays too (see ``is_model``):
  a deterministic model of a fixed input prints the same on every machine. Plain Python values
  stay as they are.

A cell that depends on the machine prints something else (or raises) under at least one
perturbation; a static or tautological one (a list of names, a claim's text, a constant table) or
a re-check of a model prints the same every time. One JSON line per probed cell goes to
``<out>/<kernel pid>.jsonl``.
"""

import ast
import contextlib
import copy
import json
import numbers
import os
import re
import sys
import types

CHECK = "# NBVAL_CHECK_OUTPUT"
# Numbers: all zero; all large; each scaled and shifted by its own amount (so that ratios and
# orderings between two readings change too). Flags: all off, all on, each flipped.
PERTURBATIONS = ("zero", "large", "scramble")
_SCALES = (0.3, 7.0, 0.02, 40.0, 1.7, 0.6, 13.0)
_SHIFTS = (1, 0, 5, 0, 2, 0, 9)
_KEPT = {"params"}  # what the user asked for, not what was measured
DEFINITIONS = ("Event", "Source")  # what a perf event or a listing is, not what was measured
MODELS = "pagelab.sim"  # the simulator and the reclaim model, and their results


def _is_pagelab(value):
    module = type(value).__module__ or ""
    if not (module == "pagelab" or module.startswith("pagelab.")):
        return False
    pagelab = sys.modules["pagelab"]
    return not isinstance(value, tuple(getattr(pagelab, name) for name in DEFINITIONS))


def is_model(value):
    """A model's answer, not the machine's: anything the simulator or the reclaim model made, a
    reading whose value (or labelled fallback) is simulated, and a claim whose evidence cites
    simulated readings only (a claim keeps no readings, but its evidence names their sources)."""
    from pagelab.core.reading import SOURCES

    pagelab = sys.modules["pagelab"]
    if (type(value).__module__ or "").startswith(MODELS):
        return True
    if isinstance(value, pagelab.Reading):
        return value.best_source == "sim"
    if isinstance(value, pagelab.Claim):  # "(sim)", "(clock; cache sizes from sysfs)"
        cited = re.findall(rf"\(({'|'.join(SOURCES)})\b", value.evidence or "")
        return set(cited) == {"sim"}
    return False


class Perturber:
    """Copies of values with every number and flag the machine gave pagelab changed the ``mode``
    way."""

    def __init__(self, mode):
        self.mode = mode
        self.count = 0
        self.memo = {}

    def number(self, x):
        if self.mode == "zero":
            y = 0
        elif self.mode == "large":
            y = x * 1000 + 1000
        else:
            i = self.count % len(_SCALES)
            y = x * _SCALES[i] + _SHIFTS[i]
        self.count += 1
        return type(x)(round(y)) if isinstance(x, numbers.Integral) else type(x)(y)

    def flag(self, b):
        return {"zero": False, "large": True}.get(self.mode, not b)

    def value(self, v, inside=False):
        """v, or a perturbed copy; ``inside``: v belongs to a pagelab object (numbers change)."""
        key = (id(v), inside)
        if key in self.memo:
            return self.memo[key]
        out = self._value(v, inside)
        self.memo[key] = out
        return out

    def _value(self, v, inside):
        np = sys.modules.get("numpy")
        if v is None or isinstance(v, (str, bytes, type, types.ModuleType, types.FunctionType)):
            return v
        if isinstance(v, bool) or (np is not None and isinstance(v, np.bool_)):
            return self.flag(bool(v)) if inside else v
        if isinstance(v, numbers.Number) and not isinstance(v, complex):
            return self.number(v) if inside else v
        if np is not None and isinstance(v, np.ndarray):
            if inside and v.dtype.kind in "iuf":
                return np.array([self.number(x) for x in v.ravel().tolist()], v.dtype).reshape(
                    v.shape
                )
            return v
        if isinstance(v, dict):
            new = copy.copy(v)  # the same kind of mapping, keys unchanged
            for k, x in v.items():
                new[k] = self.value(x, inside)
            return new
        if isinstance(v, (list, set, frozenset)):
            return type(v)(self.value(x, inside) for x in v)
        if isinstance(v, tuple):
            items = [self.value(x, inside) for x in v]
            return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
        if _is_pagelab(v) and not _is_widget(v) and not is_model(v):
            return self._object(v)
        return v

    def _object(self, v):
        new = copy.copy(v)
        self.memo[(id(v), True)] = self.memo[(id(v), False)] = new
        names = list(getattr(v, "__dict__", {}))
        for cls in type(v).__mro__:
            names += [s for s in getattr(cls, "__slots__", ()) if s != "__dict__"]
        for name in names:
            if name in _KEPT or not hasattr(v, name):
                continue
            with contextlib.suppress(AttributeError, TypeError):  # a read-only slot stays
                object.__setattr__(new, name, self.value(getattr(v, name), inside=True))
        return new


def _is_widget(v):
    traitlets = sys.modules.get("traitlets")
    return traitlets is not None and isinstance(v, traitlets.HasTraits)


class _Pagelab(types.ModuleType):
    """The pagelab module as a perturbed cell sees it: every function's result perturbed (a
    context manager, a measurement still under way, is left alone)."""

    def __init__(self, real, perturber):
        super().__init__(real.__name__, real.__doc__)
        self._real, self._perturber = real, perturber

    def __getattr__(self, name):
        value = getattr(self._real, name)
        if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            return value
        perturber = self._perturber

        def perturbed(*args, **kwargs):
            out = value(*args, **kwargs)
            return out if hasattr(out, "__enter__") else perturber.value(out)

        return perturbed


def _code(shell, source):
    """The cell as Python (magics transformed) split like IPython runs it: statements, then
    the last expression whose value the cell displays (None if it ends with a statement)."""
    tree = ast.parse(shell.transform_cell(source))
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    return compile(tree, "<checked cell>", "exec"), last and compile(last, "<checked cell>", "eval")


def rerun(shell, source, mode):
    """What the cell prints when run again in a copy of the namespace, perturbed ``mode`` way
    (None: unchanged); an exception's name and message instead if it raises."""
    from IPython.lib.pretty import pretty
    from IPython.utils.capture import capture_output

    perturber = Perturber(mode) if mode else None
    real = sys.modules.get("pagelab")
    ns = {}
    for name, value in shell.user_ns.items():
        if perturber is None or name.startswith("_") or name in ("In", "Out"):
            ns[name] = value
        elif value is real:
            ns[name] = _Pagelab(real, perturber)
        else:
            ns[name] = perturber.value(value)
    for name, value in ns.items():  # the notebook's own functions read the perturbed globals
        if isinstance(value, types.FunctionType) and value.__globals__ is shell.user_ns:
            ns[name] = types.FunctionType(
                value.__code__, ns, value.__name__, value.__defaults__, value.__closure__
            )
    with capture_output() as cap:
        try:
            if perturber is not None and real is not None:
                sys.modules["pagelab"] = _Pagelab(real, perturber)
            body, last = _code(shell, source)
            exec(body, ns)
            shown = eval(last, ns) if last else None
            if shown is not None:
                print(pretty(shown))
        except Exception as e:  # what the cell raised is its answer
            return f"raised {type(e).__name__}: {e}"
        finally:
            if real is not None:
                sys.modules["pagelab"] = real
    return cap.stdout


def install(shell, out_dir):
    """Probe every checked cell this kernel runs; records go to out_dir/<pid>.jsonl."""
    path = os.path.join(out_dir, f"{os.getpid()}.jsonl")

    def after(result):
        source = result.info.raw_cell if result.info else ""
        if not source.startswith(CHECK) or not result.success:
            return
        record = {"source": source, "control": rerun(shell, source, None)}
        record["perturbed"] = {mode: rerun(shell, source, mode) for mode in PERTURBATIONS}
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")

    shell.events.register("post_run_cell", after)
