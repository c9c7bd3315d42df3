"""pytest plugin (registered as `cudadoctor`): a GPU health gate at session start, and a marker
that skips tests the machine cannot run.

    pytest --cudadoctor [--cudadoctor-fail-on warning] [--cudadoctor-config FILE]

    @pytest.mark.cuda(min_free="8GiB", capability="8.0", gpus=2)
    def test_big_model(): ...

Facts are collected once per session, and only when the gate or a marker needs them.
"""

from __future__ import annotations

from typing import Any

import pytest

_FACTS = pytest.StashKey[tuple[Any, Any]]()
_GATE = pytest.StashKey[Any]()  # the gate's check.Judged: its report, and the findings select/ignore left out
_SECONDS = pytest.StashKey[float]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cudadoctor", "GPU health gate")
    group.addoption("--cudadoctor", action="store_true", help="run the cudadoctor health gate once before the tests")
    group.addoption(
        "--cudadoctor-fail-on",
        choices=("error", "warning"),
        default=None,
        help="lowest finding severity that fails the gate (default: config, else error)",
    )
    group.addoption(
        "--cudadoctor-skip",
        default="",
        metavar="PROBES",
        help="probes the gate and the markers leave out (comma-separated), e.g. torch",
    )
    group.addoption(
        "--cudadoctor-config",
        default=None,
        metavar="FILE",
        help="requirements file (default: cudadoctor.toml or [tool.cudadoctor] in pyproject.toml)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cuda(min_free=None, capability=None, gpus=1): skip unless CUDA can use this many GPUs with this "
        "much free memory and at least this compute capability (cudadoctor)",
    )


def _facts(config: pytest.Config) -> tuple[Any, Any]:
    if _FACTS not in config.stash:
        import sys
        import time

        from cudadoctor import probes
        from cudadoctor.commands import check as check_command

        skip = {n.strip() for n in (config.getoption("--cudadoctor-skip") or "").split(",") if n.strip()}
        unknown = skip - set(probes.names())
        if unknown:
            raise pytest.UsageError(f"--cudadoctor-skip: unknown probe {', '.join(sorted(unknown))}")
        start = time.monotonic()
        config.stash[_FACTS] = check_command.collect(probes.select(set(), skip, False), sys.executable, None)
        config.stash[_SECONDS] = time.monotonic() - start
    return config.stash[_FACTS]


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("--cudadoctor"):
        return
    from cudadoctor.commands import check as check_command
    from cudadoctor.commands.config import ConfigError
    from cudadoctor.rules import evaluate

    try:  # the config's select and ignore apply to the gate as to `cudadoctor check`
        req, selection = check_command.settings(
            config.getoption("--cudadoctor-config"), {"fail_on": config.getoption("--cudadoctor-fail-on")}
        )
    except ConfigError as exc:
        raise pytest.UsageError(f"cudadoctor: {exc}") from None
    facts, outcomes = _facts(config)
    judged = check_command.judge(facts, outcomes, evaluate(facts, outcomes, req), req, selection)
    config.stash[_GATE] = judged
    report = judged.report
    if report.exit_code != 0:
        from cudadoctor.model import Severity

        failing = [f for f in report.findings if f.severity.rank >= Severity(req.fail_on).rank]
        lines = [f"cudadoctor gate failed: {report.verdict}"]
        lines += [f"  {f.code} {f.title}" for f in failing[:10]]
        lines.append("  (run `cudadoctor check` for the fixes)")
        pytest.exit("\n".join(lines), returncode=report.exit_code)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    judged = config.stash.get(_GATE, None)
    seconds = config.stash.get(_SECONDS, None)
    if judged is None and seconds is None:
        return
    terminalreporter.section("cudadoctor")
    if seconds is not None:
        terminalreporter.write_line(f"facts collected once for the session in {seconds:.1f} s")
    if judged is None:
        return
    terminalreporter.write_line(judged.report.verdict)
    for f in judged.report.findings:
        if f.severity.value == "warning":
            terminalreporter.write_line(f"  warning {f.code} {f.title}")
    for f, why in judged.ignored:
        if f.severity.value in ("error", "warning"):
            terminalreporter.write_line(f"  ignored {f.code} {f.title} ({why})")


def pytest_runtest_setup(item: pytest.Item) -> None:
    markers = list(item.iter_markers("cuda"))
    if not markers:
        return
    from cudadoctor.commands import check as check_command
    from cudadoctor.commands.config import ConfigError, Requirements
    from cudadoctor.knowledge.units import parse_size

    for marker in markers:
        opts = dict(marker.kwargs)
        unknown = set(opts) - {"min_free", "capability", "gpus"}
        if marker.args or unknown:
            raise pytest.UsageError(f"cuda marker takes min_free=, capability=, gpus= (got {marker})")
        try:
            req = Requirements(
                require_gpus=int(opts.get("gpus", 1)),
                min_free_memory=parse_size(str(opts["min_free"])) if "min_free" in opts else None,
                min_compute_capability=str(opts["capability"]) if "capability" in opts else None,
            )
        except (ValueError, ConfigError) as exc:
            raise pytest.UsageError(f"cuda marker on {item.nodeid}: {exc}") from None
        report = check_command.diagnose(*_facts(item.config), req)
        torch = report.facts.torch
        if torch is not None and torch.is_available is False:
            cause = next((f for f in report.findings if f.severity.value == "error"), None)
            pytest.skip(
                f"cudadoctor: CUDA is not usable here: {cause.code + ' ' + cause.title if cause else 'unknown'}"
            )
        unmet = [f for f in report.findings if f.section == "Requirements" and f.severity.value == "error"]
        if unmet:
            pytest.skip("cudadoctor: " + "; ".join(f"{f.code} {f.title}" for f in unmet))
