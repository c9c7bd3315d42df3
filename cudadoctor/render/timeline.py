"""`cudadoctor watch` output: sparkline timelines, the verdicts, and the live one-line status.

Sparklines use the block characters ▁▂▃▄▅▆▇█ and fall back to ASCII (` .:-=+*#%@`) where the output
encoding cannot carry them; a gap (no value known) is a blank. Lines fit 80 columns.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from cudadoctor.facts.watch import MAIN, WORKER, Sample, Timeline
from cudadoctor.knowledge.units import format_size
from cudadoctor.locale import ENGLISH, _, current, ngettext
from cudadoctor.model import Finding, Severity
from cudadoctor.render import fix_heading
from cudadoctor.render.layout import char_width, column_name, display_width, pad, wrap

BLOCKS = "▁▂▃▄▅▆▇█"
ASCII = " .:-=+*#%@"
WIDTH = 80
LABEL = 14  # label column
SPARK = 36  # sparkline columns
MARKS = {Severity.ERROR: ("✗", "x"), Severity.WARNING: ("!", "!"), Severity.INFO: ("i", "i"), Severity.OK: ("✓", "+")}


def can_encode(text: str, encoding: str | None) -> bool:
    try:
        text.encode(encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def resample(values: Sequence[float | None], width: int, how: str = "mean") -> list[float | None]:
    """At most `width` buckets, each the mean (or max) of its known values; None where none is known."""
    n = len(values)
    if n <= width:
        return list(values)
    out: list[float | None] = []
    for b in range(width):
        chunk = [v for v in values[b * n // width : (b + 1) * n // width] if v is not None]
        out.append(None if not chunk else (max(chunk) if how == "max" else sum(chunk) / len(chunk)))
    return out


def sparkline(
    values: Sequence[float | None],
    top: float | None = None,
    width: int = SPARK,
    unicode: bool = True,
    how: str = "mean",
) -> str:
    """One character per bucket, scaled from 0 to `top` (the largest value when not given)."""
    chars = BLOCKS if unicode else ASCII[1:]
    points = resample(values, width, how)
    known = [v for v in points if v is not None]
    if top is None:
        top = max(known, default=0.0)
    out = []
    for v in points:
        if v is None:
            out.append(" ")
        elif top <= 0:
            out.append(chars[0])
        else:
            level = min(len(chars) - 1, max(0, round(v / top * (len(chars) - 1))))
            out.append(chars[level])
    return "".join(out)


PCIE_SCALE_FLOOR = 1e9  # bytes/s


def _gbps(rate: float) -> str:
    """GB/s with the digits that say something: "12.3", "0.04", "< 0.01" (never a "0.0" beside a drawn bar)."""
    gbps = rate / 1e9
    return f"{gbps:.1f}" if gbps >= 1 else f"{gbps:.2f}" if gbps >= 0.01 else "< 0.01"


def _row(label: str, spark: str, tail: str) -> str:
    # by display width: a Chinese label is twice as wide as it has characters
    return f"  {pad(_clip(label, LABEL - 1), LABEL)}{spark:<{SPARK}} {tail}".rstrip()


def _clip(text: str, width: int) -> str:
    """The first `width` display columns of `text` (no ellipsis: it may not encode)."""
    out, used = "", 0
    for ch in text:
        used += char_width(ch)
        if used > width:
            break
        out += ch
    return out


def _peak(peak: float, total: int | None) -> str:
    if total:
        return _("peak {peak} of {total}").format(peak=format_size(int(peak)), total=format_size(total))
    return _("peak {peak}").format(peak=format_size(int(peak)))


def _series(samples: list[Sample], get) -> list[float | None]:  # type: ignore[no-untyped-def]
    return [get(s) for s in samples]


def _proc_cpu(s: Sample, pid: int) -> float | None:
    return next((p.cpu for p in s.procs if p.pid == pid), None)


def timeline_lines(tl: Timeline, unicode: bool = True) -> list[str]:
    """The timelines: per GPU the tree used (or every GPU when it used none), utilisation and memory; the
    main process and each worker's CPU; /dev/shm."""
    samples = tl.samples
    lines: list[str] = []
    if not samples:
        return lines
    span = f"{tl.duration:.0f} s" if tl.duration is not None else f"{samples[-1].t:.0f} s"
    lines.append(
        _("Timeline ({n} samples every {interval} s over {span})").format(
            n=len(samples), interval=f"{tl.interval:g}", span=span
        )
    )
    used = sorted({g.index for s in samples for g in s.gpus if g.tree_processes})
    shown = used or sorted({g.index for s in samples for g in s.gpus})
    infos = {g.index: g for g in tl.gpus or []}
    for i in shown:
        util = _series(samples, lambda s, i=i: next((g.util for g in s.gpus if g.index == i), None))
        known = [u for u in util if u is not None]
        tail = (
            _("avg {avg} %  max {max} %").format(avg=f"{sum(known) / len(known):.0f}", max=f"{max(known):.0f}")
            if known
            else _("unknown")
        )
        lines.append(_row(_("GPU {index} util").format(index=i), sparkline(util, 100, unicode=unicode), tail))
        mine = _series(samples, lambda s, i=i: next((g.tree_memory for g in s.gpus if g.index == i), None))
        total = infos[i].memory_total if i in infos else None
        if any(m is not None and m > 0 for m in mine):
            peak = max(m for m in mine if m is not None)
            lines.append(
                _row(
                    _("GPU {index} mem").format(index=i),
                    sparkline(mine, total, unicode=unicode, how="max"),
                    _peak(peak, total),
                )
            )
        else:
            dev = _series(samples, lambda s, i=i: next((g.memory_used for g in s.gpus if g.index == i), None))
            if any(d is not None for d in dev):
                peak = max(d for d in dev if d is not None)
                lines.append(
                    _row(
                        _("GPU {index} mem all").format(index=i),
                        sparkline(dev, total, unicode=unicode, how="max"),
                        _peak(peak, None),
                    )
                )
        pcie = _series(
            samples,
            lambda s, i=i: next(
                ((g.rx or 0) + (g.tx or 0) for g in s.gpus if g.index == i and (g.rx is not None or g.tx is not None)),
                None,
            ),
        )
        if any(p for p in pcie):
            peak = max(p for p in pcie if p is not None)
            tail = _("peak {gbps} GB/s").format(gbps=_gbps(peak))
            # scaled to at least 1 GB/s: a trickle of a few MB/s draws as the trickle it is, not as full bars
            spark = sparkline(pcie, max(peak, PCIE_SCALE_FLOOR), unicode=unicode)
            lines.append(_row(_("GPU {index} PCIe").format(index=i), spark, tail))
    procs: dict[int, str] = {}
    for s in samples:
        for p in s.procs:
            if p.role in (MAIN, WORKER) and p.pid not in procs:
                procs[p.pid] = p.role
    workers = 0
    for pid, role in list(procs.items())[:9]:
        cpu = _series(samples, lambda s, pid=pid: _proc_cpu(s, pid))
        known = [c for c in cpu if c is not None]
        if role == WORKER:
            workers += 1
        label = _("CPU main") if role == MAIN else _("CPU worker {n}").format(n=workers)
        tail = (
            _("avg {avg} %  pid {pid}").format(avg=f"{sum(known) / len(known):.0f}", pid=pid) if known else f"pid {pid}"
        )
        lines.append(_row(label, sparkline(cpu, max(100.0, max(known, default=0.0)), unicode=unicode), tail))
    if len(procs) > 9:
        lines.append("  " + _("… and {n} more processes (all in --json)").format(n=len(procs) - 9))
    shm = _series(samples, lambda s: s.shm_used)
    total = next((s.shm_total for s in samples if s.shm_total), None)
    if any(v for v in shm):
        peak = max(v for v in shm if v is not None)
        lines.append(_row("/dev/shm", sparkline(shm, total, unicode=unicode, how="max"), _peak(peak, total)))
    return lines


def finding_lines(findings: list[Finding], unicode: bool = True, width: int = WIDTH) -> list[str]:
    lines: list[str] = []
    for f in findings:
        mark = MARKS[f.severity][0 if unicode else 1]
        head = f"  {mark} {f.code} "
        lines.extend(_wrap(f.title, width, head, " " * len(head)))
        for table in f.tables:
            columns = [column_name(c) for c in table.columns]
            widths = [
                max(display_width(str(r[k])) if k < len(r) else 0 for r in [columns, *table.rows])
                for k in range(len(columns))
            ]
            for r in [columns, *table.rows]:
                lines.append(("        " + "  ".join(pad(str(c), w) for c, w in zip(r, widths, strict=False))).rstrip())
        if f.severity is Severity.OK:
            continue
        if f.why:
            lines.extend(_wrap(f.why, width, " " * 6, " " * 6))
        for rem in f.fix:
            lines.extend(_wrap(fix_heading(rem.when, rem.lang, bool(rem.commands)), width, " " * 6, " " * 8))
            lines.extend(" " * 10 + c for c in rem.commands)  # commands are never wrapped: they must paste
    return lines


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """`text` in lines of `width` display columns, the first indented by `first`, the others by `rest`."""
    if current() == ENGLISH:
        return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest)
    out = []
    for i, line in enumerate(wrap(text, width - len(rest))):
        out.append((rest if i else first) + line.lstrip())
    return out


def summary(tl: Timeline, findings: list[Finding], encoding: str | None) -> str:
    """The end-of-run report, on stderr: the command's own stdout stays the command's."""
    from cudadoctor.render.localize import findings as localized

    unicode = can_encode(BLOCKS + "✓✗—…×", encoding)
    lines = ["", "cudadoctor watch: " + _ended(tl)]
    lines += timeline_lines(tl, unicode)
    if findings:
        warnings = sum(1 for f in findings if f.severity is Severity.WARNING)
        notes = sum(1 for f in findings if f.severity is Severity.INFO)
        counts = [ngettext("{n} warning", "{n} warnings", warnings).format(n=warnings)] if warnings else []
        counts += [ngettext("{n} note", "{n} notes", notes).format(n=notes)] if notes else []
        lines += ["", _("Training") + (_(" ({details})").format(details=", ".join(counts)) if counts else "")]
        lines += finding_lines(localized(findings), unicode)
    lines += ["", _("Explain a code: cudadoctor explain CODE")]
    text = "\n".join(lines) + "\n"
    if not unicode:
        text = text.encode(encoding or "ascii", errors="replace").decode(encoding or "ascii", errors="replace")
    return text


def _ended(tl: Timeline) -> str:
    took = _(" after {seconds} s").format(seconds=f"{tl.duration:.1f}") if tl.duration is not None else ""
    if tl.exit_code is None:
        return (_("interrupted") if tl.interrupted else _("the process ended")) + took
    if tl.exit_code < 0:
        how = _("the command ended by signal {signal}").format(signal=-tl.exit_code)
    else:
        how = _("the command exited with {code}").format(code=tl.exit_code)
    return how + took + (_(" (interrupted)") if tl.interrupted else "")


def status_line(tl: Timeline, sample: Sample, width: int = WIDTH) -> str:
    """The live line: elapsed time, each GPU the tree uses, the main process and the workers, /dev/shm."""
    parts = [_("watch {seconds}s").format(seconds=f"{sample.t:5.0f}")]
    used = [g for g in sample.gpus if g.tree_processes] or sample.gpus[:1]
    for g in used:
        mem = f" {format_size(g.tree_memory)}" if g.tree_memory else ""
        parts.append(f"GPU{g.index} {g.util if g.util is not None else '?'}%{mem}")
    mains = [p.cpu for p in sample.procs if p.role == MAIN and p.cpu is not None]
    workers = [p.cpu for p in sample.procs if p.role == WORKER and p.cpu is not None]
    if mains:
        parts.append(_("main {cpu}%").format(cpu=f"{max(mains):.0f}"))
    if workers:
        parts.append(_("{n} workers {cpu}%").format(n=len(workers), cpu=f"{sum(workers) / len(workers):.0f}"))
    text = " | ".join(parts)
    return _clip(text, width - 1)
