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


def points(name, x, readings, symbol="x"):
    """Markers only (e.g. detected knees), each value's source in the hover text and legend."""
    import plotly.graph_objects as go

    ys, sources = _values(readings)
    label = f"{name} ({', '.join(sorted(set(sources)))})" if sources else name
    return go.Scatter(x=x, y=ys, mode="markers", name=label, customdata=sources,
                      marker={"symbol": symbol, "size": 11},
                      hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>")


def _bytes_text(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def size_axis(fig, lo, hi, col=1):
    """A log x axis of byte sizes with a tick at every power of two, labelled B/KiB/MiB/GiB."""
    ticks = [1 << k for k in range(max(int(lo).bit_length() - 1, 0), int(hi).bit_length())]
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[_bytes_text(t) for t in ticks],
                     row=1, col=col)


def vlines(fig, marks, col=1, log_x=True):
    """Dotted vertical lines at x with a label each: [(x, label)], e.g. reported cache sizes."""
    import math

    for x, label in marks:
        fig.add_vline(x=x, line_dash="dot", line_color="gray", row=1, col=col)
        # shapes take data coordinates on a log axis, annotations its log10 (plotly.js #1258)
        fig.add_annotation(x=math.log10(x) if log_x else x, y=1, yref="y domain",
                           text=label, showarrow=False, xanchor="right", textangle=-90,
                           yanchor="top", font={"color": "gray"}, row=1, col=col)
