"""`cudadoctor watch` output: sparkline timelines, the verdicts, and the live one-line status.

Sparklines use the block characters ▁▂▃▄▅▆▇█ and fall back to ASCII (` .:-=+*#%@`) where the output
encoding cannot carry them; a gap (no value known) is a blank. Lines fit 80 columns.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from cudadoctor.facts.watch import MAIN, WORKER, Sample, Timeline
from cudadoctor.knowledge.units import format_size
from cudadoctor.report import Finding, Severity, plural

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


def _row(label: str, spark: str, tail: str) -> str:
    return f"  {label[: LABEL - 1]:<{LABEL}}{spark:<{SPARK}} {tail}".rstrip()


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
    lines.append(f"Timeline ({len(samples)} samples every {tl.interval:g} s over {span})")
    used = sorted({g.index for s in samples for g in s.gpus if g.tree_processes})
    shown = used or sorted({g.index for s in samples for g in s.gpus})
    infos = {g.index: g for g in tl.gpus or []}
    for i in shown:
        util = _series(samples, lambda s, i=i: next((g.util for g in s.gpus if g.index == i), None))
        known = [u for u in util if u is not None]
        tail = f"avg {sum(known) / len(known):.0f} %  max {max(known):.0f} %" if known else "unknown"
        lines.append(_row(f"GPU {i} util", sparkline(util, 100, unicode=unicode), tail))
        mine = _series(samples, lambda s, i=i: next((g.tree_memory for g in s.gpus if g.index == i), None))
        total = infos[i].memory_total if i in infos else None
        if any(m is not None and m > 0 for m in mine):
            peak = max(m for m in mine if m is not None)
            of = f" of {format_size(total)}" if total else ""
            lines.append(
                _row(
                    f"GPU {i} mem",
                    sparkline(mine, total, unicode=unicode, how="max"),
                    f"peak {format_size(int(peak))}{of}",
                )
            )
        else:
            dev = _series(samples, lambda s, i=i: next((g.memory_used for g in s.gpus if g.index == i), None))
            if any(d is not None for d in dev):
                peak = max(d for d in dev if d is not None)
                lines.append(
                    _row(
                        f"GPU {i} mem all",
                        sparkline(dev, total, unicode=unicode, how="max"),
                        f"peak {format_size(int(peak))}",
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
            lines.append(_row(f"GPU {i} PCIe", sparkline(pcie, unicode=unicode), f"peak {peak / 1e9:.1f} GB/s"))
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
        label = "CPU main" if role == MAIN else f"CPU worker {workers}"
        tail = f"avg {sum(known) / len(known):.0f} %  pid {pid}" if known else f"pid {pid}"
        lines.append(_row(label, sparkline(cpu, max(100.0, max(known, default=0.0)), unicode=unicode), tail))
    if len(procs) > 9:
        lines.append(f"  … and {len(procs) - 9} more processes (all in --json)")
    shm = _series(samples, lambda s: s.shm_used)
    total = next((s.shm_total for s in samples if s.shm_total), None)
    if any(v for v in shm):
        peak = max(v for v in shm if v is not None)
        of = f" of {format_size(total)}" if total else ""
        lines.append(
            _row("/dev/shm", sparkline(shm, total, unicode=unicode, how="max"), f"peak {format_size(int(peak))}{of}")
        )
    return lines


def finding_lines(findings: list[Finding], unicode: bool = True, width: int = WIDTH) -> list[str]:
    lines: list[str] = []
    for f in findings:
        mark = MARKS[f.severity][0 if unicode else 1]
        head = f"  {mark} {f.code} "
        lines.extend(textwrap.wrap(f.title, width, initial_indent=head, subsequent_indent=" " * len(head)))
        for table in f.tables:
            widths = [
                max(len(str(r[k])) if k < len(r) else 0 for r in [table.columns, *table.rows])
                for k in range(len(table.columns))
            ]
            for r in [table.columns, *table.rows]:
                lines.append(
                    ("        " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False))).rstrip()
                )
        if f.severity is Severity.OK:
            continue
        if f.why:
            lines.extend(textwrap.wrap(f.why, width, initial_indent=" " * 6, subsequent_indent=" " * 6))
        for rem in f.fix:
            lines.extend(textwrap.wrap(f"Fix — {rem.when}:", width, initial_indent=" " * 6, subsequent_indent=" " * 8))
            lines.extend(" " * 10 + c for c in rem.commands)  # commands are never wrapped: they must paste
    return lines


def summary(tl: Timeline, findings: list[Finding], encoding: str | None) -> str:
    """The end-of-run report, on stderr: the command's own stdout stays the command's."""
    unicode = can_encode(BLOCKS + "✓✗—…×", encoding)
    lines = ["", "cudadoctor watch: " + _ended(tl)]
    lines += timeline_lines(tl, unicode)
    if findings:
        counts = [
            f"{plural(n, word)}"
            for word, sev in (("warning", Severity.WARNING), ("note", Severity.INFO))
            if (n := sum(1 for f in findings if f.severity is sev))
        ]
        lines += ["", "Training" + (f" ({', '.join(counts)})" if counts else "")]
        lines += finding_lines(findings, unicode)
    lines += ["", "Explain a code: cudadoctor explain CODE"]
    text = "\n".join(lines) + "\n"
    if not unicode:
        text = text.encode(encoding or "ascii", errors="replace").decode(encoding or "ascii", errors="replace")
    return text


def _ended(tl: Timeline) -> str:
    took = f" after {tl.duration:.1f} s" if tl.duration is not None else ""
    if tl.exit_code is None:
        return f"{'interrupted' if tl.interrupted else 'the process ended'}{took}"
    how = f"ended by signal {-tl.exit_code}" if tl.exit_code < 0 else f"exited with {tl.exit_code}"
    return f"the command {how}{took}" + (" (interrupted)" if tl.interrupted else "")


def status_line(tl: Timeline, sample: Sample, width: int = WIDTH) -> str:
    """The live line: elapsed time, each GPU the tree uses, the main process and the workers, /dev/shm."""
    parts = [f"watch {sample.t:5.0f}s"]
    used = [g for g in sample.gpus if g.tree_processes] or sample.gpus[:1]
    for g in used:
        mem = f" {format_size(g.tree_memory)}" if g.tree_memory else ""
        parts.append(f"GPU{g.index} {g.util if g.util is not None else '?'}%{mem}")
    mains = [p.cpu for p in sample.procs if p.role == MAIN and p.cpu is not None]
    workers = [p.cpu for p in sample.procs if p.role == WORKER and p.cpu is not None]
    if mains:
        parts.append(f"main {max(mains):.0f}%")
    if workers:
        parts.append(f"{len(workers)} workers {sum(workers) / len(workers):.0f}%")
    text = " | ".join(parts)
    return text[: width - 1]
