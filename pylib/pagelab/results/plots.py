"""plotly figures built from Readings: every bar and point carries its source in the hover text
and the legend, so a simulated or fallback value never looks like a measured one."""

from dataclasses import dataclass, field

from ..core.numbers import format_size

# The bundle plotly's own mimetype renderer displays, and JupyterLab's plotly extension renders.
MIMETYPE = "application/vnd.plotly.v1+json"
# Beside it, for a figure in plotly's default template: the dark template, which pagelab's lab
# extension draws the figure in while JupyterLab's theme is dark (labext/src/figure.ts).
THEMED = "application/vnd.pagelab.themed-figure+json"


def theme_templates(fig):
    """{"dark": plotly_dark} when ``fig`` is in plotly's default template, which the user left
    as it is (a template they chose is theirs to keep, in every theme); else None."""
    import plotly.io as pio

    if pio.templates.default != "plotly" or fig.layout.template != pio.templates["plotly"]:
        return None
    return {"dark": pio.templates["plotly_dark"].to_plotly_json()}


def displayable(fig):
    """fig, displayed by IPython as plotly's mimetype bundle (what JupyterLab's plotly extension
    renders) with HTML beside it (what nbconvert and code hosts show; plotly.js from its CDN, or
    embedded once per notebook: see results.plotlyjs), and THEMED where the figure follows the
    theme. Built here: plotly's display path first loads its renderer registry, which imports
    nbformat and jsonschema's format checkers (about 1.9 s on first display; 15 s on a busy
    2-vCPU VM)."""

    def show():
        from IPython.display import display

        from . import plotlyjs as _plotlyjs

        # a fixed height: a 100% div inside nbconvert's output area collapses to nothing
        html = fig.to_html(
            include_plotlyjs=_plotlyjs.include(),
            full_html=False,
            default_height=fig.layout.height or 450,
        )
        bundle = {MIMETYPE: fig.to_plotly_json(), "text/html": html}
        templates = theme_templates(fig)
        if templates:
            bundle[THEMED] = templates
        display(bundle, raw=True)

    fig._ipython_display_ = show
    return fig


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
    sources = [
        (r.best_source if r.best is not None else "not available")
        if r is not None
        else "not measured"
        for r in readings
    ]
    return ys, sources


def bars(title, labels, readings, log=False, name=None, y_title=""):
    import plotly.graph_objects as go

    ys, sources = _values(readings)
    trace = go.Bar(
        x=labels,
        y=ys,
        name=name or title,
        text=sources,
        textposition="outside",
        customdata=sources,
        hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>",
    )
    return Panel(title, [trace], "", y_title or title, log_y=log)


def hbars(title, labels, readings, name=None, x_title=""):
    """Horizontal bars, largest at the top: for ranked lists with long labels (e.g. profiles)."""
    import plotly.graph_objects as go

    ys, sources = _values(readings)
    trace = go.Bar(
        x=ys[::-1],
        y=labels[::-1],
        orientation="h",
        name=name or title,
        customdata=sources[::-1],
        hovertemplate="%{y}: %{x:.4g} (%{customdata})<extra></extra>",
    )
    return Panel(title, [trace], x_title or title, "")


def lines(title, x, series, x_title, log_x=False, log_y=False, y_title=""):
    """series: name -> list of Readings (one per x)."""
    import plotly.graph_objects as go

    traces = []
    for name, readings in series.items():
        ys, sources = _values(readings)
        label = f"{name} ({', '.join(sorted(set(sources)))})"
        traces.append(
            go.Scatter(
                x=x,
                y=ys,
                mode="lines+markers",
                name=label,
                customdata=sources,
                hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>",
            )
        )
    return Panel(title, traces, x_title, y_title or title, log_x, log_y)


def grouped_bars(title, labels, series, log=False, legend=True, y_title=""):
    """series: name -> list of Readings (one per label), drawn side by side in each group and
    annotated with value and source. Series keep their colour from panel to panel, so one
    legend serves several panels."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    traces = []
    for i, (name, readings) in enumerate(series.items()):
        ys, sources = _values(readings)
        text = [f"{y:,.0f} ({s})" if y is not None else s for y, s in zip(ys, sources)]
        traces.append(
            go.Bar(
                x=labels,
                y=ys,
                name=name,
                legendgroup=name,
                showlegend=legend,
                marker_color=qualitative.Plotly[i % len(qualitative.Plotly)],
                text=text,
                textposition="outside",
                customdata=sources,
                hovertemplate=f"{name}, %{{x}}: %{{y:.4g}} (%{{customdata}})<extra></extra>",
            )
        )
    return Panel(title, traces, "", y_title or title, log_y=log)


def side_by_side(title, *panels):
    """One row of panels."""
    return grid(title, panels)


def points(title, series, x_title, log_y=False, y_title=""):
    """Series that each have their own x: name -> (xs, readings, mode), mode a plotly Scatter
    mode such as "lines+markers" or "markers"."""
    import plotly.graph_objects as go

    traces = []
    for name, (xs, readings, mode) in series.items():
        ys, sources = _values(readings)
        label = f"{name} ({', '.join(sorted(set(sources)))})" if sources else name
        traces.append(
            go.Scatter(
                x=xs,
                y=ys,
                mode=mode,
                name=label,
                customdata=sources,
                hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>",
            )
        )
    return Panel(title, traces, x_title, y_title or title, log_y=log_y)


def _blocks(regions):
    """Adjacent regions of the same kind and file merged into blocks: (kind, name, start, end)."""
    out = []
    for r in regions:
        last = out[-1] if out else None
        if last and last[0] == r.kind and last[1] == r.name and last[3] == r.start:
            out[-1] = (last[0], last[1], last[2], r.end)
        else:
            out.append((r.kind, r.name, r.start, r.end))
    return out


def memory_map(title, columns, colors, marks=None, source="/proc/PID/maps, rusage"):
    """Memory maps as stacked blocks, low addresses at the bottom (the textbook picture).

    ``columns``: name -> parsed regions (objects with kind, name, start, end), one column each.
    A block's height is log2 of its size in 4 KiB pages, plus one, so a one-page mapping and a
    gigabyte both stay visible; unmapped gaps become breaks, labelled with their size when they
    are 1 GiB or more. The largest block of each kind is labelled with its start address beside
    the column. ``marks``: name -> {object name: address}, drawn as diamonds on their blocks.
    """
    import math

    import plotly.graph_objects as go

    gap, big_gap, px_per_unit, label_units = 0.6, 1 << 30, 5, 2.6
    traces, annotations, points, tallest = {}, [], [], 0.0
    for col, (cname, regions) in enumerate(columns.items()):
        y, prev_end, placed, largest = 0.0, None, [], {}
        for kind, name, start, end in _blocks(regions):
            if prev_end is not None and start > prev_end:
                step = gap * (4 if start - prev_end >= big_gap else 1)
                if start - prev_end >= big_gap:
                    annotations.append(
                        dict(
                            x=col,
                            y=y + step / 2,
                            showarrow=False,
                            text=f"{format_size(start - prev_end)} unmapped",
                            font=dict(size=9, color="#777"),
                        )
                    )
                y += step
            height = math.log2(max(end - start, 4096) / 4096) + 1
            t = traces.setdefault(kind, {"x": [], "y": [], "base": [], "hover": []})
            t["x"].append(col)
            t["y"].append(height)
            t["base"].append(y)
            t["hover"].append(
                f"{kind}: {name}<br>{start:x}-{end:x} ({format_size(end - start)})<br>"
                f"source: {source}"
            )
            if end - start > largest.get(kind, (0,))[0]:
                largest[kind] = (end - start, name, start, y + height / 2)
            placed.append((start, end, y + height / 2))
            y, prev_end = y + height, end
        tallest = max(tallest, y)
        left = col == 0  # labels outside the columns: left of the first, right of the others
        kept = []  # label the biggest kinds first; skip a label that would overlap a kept one
        for _kind, (_, name, start, mid) in sorted(largest.items(), key=lambda kv: -kv[1][0]):
            if any(abs(mid - k) < label_units for k in kept):
                continue
            kept.append(mid)
            annotations.append(
                dict(
                    x=col + (-0.3 if left else 0.3),
                    y=mid,
                    showarrow=False,
                    xanchor="right" if left else "left",
                    text=f"{name} {start:x}",
                    font=dict(size=10),
                )
            )
        for oname, address in (marks or {}).get(cname, {}).items():
            mid = next((m for s, e, m in placed if s <= address < e), None)
            if mid is not None:
                points.append((col + 0.22, mid, f"{oname}: {address:x}"))
    fig = go.Figure()
    for kind, t in traces.items():
        fig.add_trace(
            go.Bar(
                x=t["x"],
                y=t["y"],
                base=t["base"],
                name=kind,
                width=0.5,
                marker=dict(color=colors.get(kind), line=dict(width=0.5, color="white")),
                customdata=t["hover"],
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    if points:
        xs, ys, texts = zip(*points)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers",
                name="objects the process placed",
                marker=dict(symbol="diamond", size=7, color="black"),
                hovertext=texts,
                hoverinfo="text",
            )
        )
    fig.update_layout(
        title=title,
        barmode="overlay",
        height=int(max(500, min(1200, tallest * px_per_unit + 160))),
        annotations=annotations,
        xaxis=dict(
            tickvals=list(range(len(columns))),
            ticktext=list(columns),
            range=[-1.1, len(columns) + 0.1],
            showgrid=False,
        ),
        yaxis=dict(
            title="address, low at the bottom (height ~ log size; gaps shortened)",
            showticklabels=False,
            showgrid=False,
        ),
    )
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
    fig = make_subplots(
        rows=len(rows), cols=cols, specs=specs, subplot_titles=titles, vertical_spacing=0.15
    )
    for i, r in enumerate(rows, start=1):
        for j, p in enumerate(r):
            col = 1 + j * (cols // len(r))
            for t in p.traces:
                fig.add_trace(t, row=i, col=col)
            fig.update_xaxes(title_text=p.x_title, type="log" if p.log_x else None, row=i, col=col)
            # a linear axis starts at zero, so a small bar or a flat line is not magnified
            fig.update_yaxes(
                title_text=p.y_title,
                type="log" if p.log_y else None,
                rangemode=None if p.log_y else "tozero",
                row=i,
                col=col,
            )
    fig.update_layout(
        title=title,
        height=420 * len(rows),
        showlegend=True,
        barmode="group",
    )
    return fig


def markers(name, x, readings, symbol="x"):
    """A trace of markers only (e.g. detected knees), each value's source in the hover text and
    legend."""
    import plotly.graph_objects as go

    ys, sources = _values(readings)
    label = f"{name} ({', '.join(sorted(set(sources)))})" if sources else name
    return go.Scatter(
        x=x,
        y=ys,
        mode="markers",
        name=label,
        customdata=sources,
        marker={"symbol": symbol, "size": 11},
        hovertemplate="%{x}: %{y:.4g} (%{customdata})<extra></extra>",
    )


def size_axis(fig, lo, hi, col=1):
    """A log x axis of byte sizes with a tick at every power of two, labelled B/KiB/MiB/GiB."""
    ticks = [1 << k for k in range(max(int(lo).bit_length() - 1, 0), int(hi).bit_length())]
    fig.update_xaxes(
        type="log", tickvals=ticks, ticktext=[format_size(t) for t in ticks], row=1, col=col
    )


def vlines(fig, marks, col=1, log_x=True):
    """Dotted vertical lines at x with a label each: [(x, label)], e.g. reported cache sizes."""
    import math

    for x, label in marks:
        fig.add_vline(x=x, line_dash="dot", line_color="gray", row=1, col=col)
        # shapes take data coordinates on a log axis, annotations its log10 (plotly.js #1258)
        fig.add_annotation(
            x=math.log10(x) if log_x else x,
            y=1,
            yref="y domain",
            text=label,
            showarrow=False,
            xanchor="right",
            textangle=-90,
            yanchor="top",
            font={"color": "gray"},
            row=1,
            col=col,
        )
