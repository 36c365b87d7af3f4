"""`pagelab.explore(name)`: ipywidgets controls for an experiment's parameters, built from the C
workload table (ranges, defaults, choices), and a Run button. Nothing runs until it is pressed,
so a chapter that shows the controls still executes unattended."""

from ..core.errors import BadInput, PagelabError
from ..core.numbers import quote
from ..native.workloads import workload

SLIDER_SPAN = 1024  # wider ranges get a bounded number box: a slider step would be too coarse


def control(param, value=None):
    """The widget for one workload parameter, starting at ``value`` as users write it (a number,
    or a choice's name; default: the table's)."""
    import ipywidgets as widgets

    value = param.shown(param.default) if value is None else value
    label = f"{param.name} ({param.unit})" if param.unit else param.name
    common = dict(description=label, style={"description_width": "initial"})
    if param.choices:
        return widgets.Dropdown(options=param.choices, value=value, **common)
    if param.max - param.min <= SLIDER_SPAN:
        return widgets.IntSlider(value=value, min=param.min, max=param.max, **common)
    return widgets.BoundedIntText(value=value, min=param.min, max=param.max, **common)


def explore(name, *shown, live=False, sim=None, **fixed):
    """Controls for experiment ``name`` and a Run button that runs it and shows its text and
    figure. ``shown`` names the parameters to offer (default: all of them); ``fixed`` sets others,
    or the starting value of a shown one; ``live`` and ``sim`` go to ``pagelab.run``. Errors (a
    size over the memory budget, say) are printed as one line, and the kernel keeps running.
    Returns the widget box."""
    import ipywidgets as widgets
    from IPython.display import display

    from .runs import run

    params = workload(name).params  # BadInput for an unknown name
    for key in (*shown, *fixed):
        if key not in params:
            raise BadInput(f"{name} has no parameter {quote(key)} (it has: {', '.join(params)})")
    names = shown or tuple(params)
    controls = {k: control(params[k], fixed.get(k)) for k in names}
    settings = {k: v for k, v in fixed.items() if k not in controls}
    button = widgets.Button(description=f"Run {name}", button_style="primary")
    out = widgets.Output()

    def press(_):
        out.clear_output()
        with out:
            chosen = {k: c.value for k, c in controls.items()}
            try:
                result = run(name, live=live, sim=sim, **settings, **chosen)
            except PagelabError as e:
                print(f"{type(e).__name__}: {e}")
                return
            print(result)
            if result._figure is not None:
                display(result.figure())

    button.on_click(press)
    box = widgets.VBox([*controls.values(), button, out])
    box.press = press  # what the button does, callable from code and tests
    return box
