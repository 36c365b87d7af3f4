"""plotly figures built from Readings: every bar and point carries its source in the hover text
and the legend, so a simulated or fallback value never looks like a measured one."""

from dataclasses import dataclass, field


@dataclass
class Panel:
    title: str
    traces: list = field(default_factory=list)
    x_title: str = ""
    y_title: str = ""
    log_x: bool = False
    log_y: bool = False


def _values(readings):
    ys = [r.best if r is not None else None for r in readings]
    sources = [(r.best_source if r.best is not None else "not available") if r is not None
               else "not measured" for r in readings]
    return ys, sources


def bars(title, labels, readings, log=False, name=None, y_title=""):
    import plotly.graph_objects as go

    ys, sources = _values(readings)
    trace = go.Bar(x=labels, y=ys, name=name or title, text=sources, textposition="outside",
                   customdata=sources, hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>")
    return Panel(title, [trace], "", y_title or title, log_y=log)


def hbars(title, labels, readings, name=None, x_title=""):
    """Horizontal bars, largest at the top: for ranked lists with long labels (e.g. profiles)."""
    import plotly.graph_objects as go

    ys, sources = _values(readings)
    trace = go.Bar(x=ys[::-1], y=labels[::-1], orientation="h", name=name or title,
                   customdata=sources[::-1],
                   hovertemplate="%{y}: %{x:.4g} (%{customdata})<extra></extra>")
    return Panel(title, [trace], x_title or title, "")


def lines(title, x, series, x_title, log_x=False, log_y=False, y_title=""):
    """series: name -> list of Readings (one per x)."""
    import plotly.graph_objects as go

    traces = []
    for name, readings in series.items():
        ys, sources = _values(readings)
        label = f"{name} ({', '.join(sorted(set(sources)))})"
        traces.append(go.Scatter(x=x, y=ys, mode="lines+markers", name=label, customdata=sources,
                                 hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>"))
    return Panel(title, traces, x_title, y_title or title, log_x, log_y)


def side_by_side(title, *panels):
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p.title for p in panels])
    for col, p in enumerate(panels, start=1):
        for t in p.traces:
            fig.add_trace(t, row=1, col=col)
        fig.update_xaxes(title_text=p.x_title, type="log" if p.log_x else None, row=1, col=col)
        fig.update_yaxes(title_text=p.y_title, type="log" if p.log_y else None, row=1, col=col)
    fig.update_layout(title=title, height=420, template="plotly_white", showlegend=True)
    return fig


def grid(title, *rows):
    """Panels in rows, each row's panels sharing its width (a lone panel spans the whole row):
    for panels whose labels need room, such as a profile under two bar charts."""
    import math

    from plotly.subplots import make_subplots

    cols = math.lcm(*(len(r) for r in rows))
    specs, titles = [], []
    for r in rows:
        span = cols // len(r)
        specs.append([c for p in r for c in ({"colspan": span}, *[None] * (span - 1))])
        titles += [p.title for p in r]
    fig = make_subplots(rows=len(rows), cols=cols, specs=specs, subplot_titles=titles,
                        vertical_spacing=0.15)
    for i, r in enumerate(rows, start=1):
        for j, p in enumerate(r):
            col = 1 + j * (cols // len(r))
            for t in p.traces:
                fig.add_trace(t, row=i, col=col)
            fig.update_xaxes(title_text=p.x_title, type="log" if p.log_x else None, row=i, col=col)
            fig.update_yaxes(title_text=p.y_title, type="log" if p.log_y else None, row=i, col=col)
    fig.update_layout(title=title, height=380 * len(rows), template="plotly_white",
                      showlegend=True)
    return fig
