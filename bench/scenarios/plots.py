"""PNG plots for the report (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:  # type: ignore[no-untyped-def]
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def ecdf(
    path: Path,
    title: str,
    series: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    log_x: bool = False,
    markers: Mapping[str, float] | None = None,
) -> Path:
    """Cumulative distributions, one line per series: the whole wait distribution at a glance."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (label, values), colour in zip(series.items(), COLOURS, strict=False):
        ordered = sorted(values)
        if not ordered:
            continue
        ys = [(i + 1) / len(ordered) for i in range(len(ordered))]
        ax.step(ordered, ys, where="post", label=f"{label} (n={len(ordered)})", color=colour)
    for label, x in (markers or {}).items():
        ax.axvline(x, linestyle=":", color="grey")
        ax.text(x, 0.03, f" {label}", rotation=90, va="bottom", fontsize=8, color="grey")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction at or below")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    return _save(fig, path)


def timeseries(
    path: Path,
    title: str,
    panels: Sequence[tuple[str, Mapping[str, tuple[Sequence[float], Sequence[float]]]]],
    *,
    spans: Sequence[tuple[float, float, str]] = (),
    hlines: Sequence[tuple[float, str]] = (),
    xlabel: str = "seconds since start",
    step: bool = False,
) -> Path:
    """One panel per (ylabel, {label: (xs, ys)}), sharing the time axis; spans shade phases."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.6 * len(panels) + 0.6), sharex=True, squeeze=False)
    for ax, (ylabel, series) in zip(axes[:, 0], panels, strict=True):
        for (label, (xs, ys)), colour in zip(series.items(), COLOURS, strict=False):
            if step:
                ax.step(xs, ys, where="post", label=label, color=colour)
            else:
                ax.plot(xs, ys, label=label, color=colour, linewidth=1.4)
        for start, end, label in spans:
            ax.axvspan(start, end, color="grey", alpha=0.15, label=label if ax is axes[0, 0] else None)
        for y, label in hlines:
            ax.axhline(y, linestyle="--", color="black", linewidth=1, label=label)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel(xlabel)
    axes[0, 0].set_title(title, fontsize=10)
    return _save(fig, path)


def bars(
    path: Path,
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    ylabel: str,
    stacked: bool = False,
) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    count = len(series)
    width = 0.8 / (1 if stacked else max(1, count))
    bottoms = [0.0] * len(groups)
    for index, ((label, values), colour) in enumerate(zip(series.items(), COLOURS, strict=False)):
        if stacked:
            xs = list(range(len(groups)))
            ax.bar(xs, values, width, bottom=bottoms, label=label, color=colour)
            bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
        else:
            xs = [g + (index - (count - 1) / 2) * width for g in range(len(groups))]
            ax.bar(xs, values, width, label=label, color=colour)
    ax.set_xticks(list(range(len(groups))))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return _save(fig, path)
