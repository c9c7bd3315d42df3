"""CD714: the GPU idles while nothing on the CPU side is busy either (seen on a real H100: a loop that
sleeps or reads between small steps showed 1 % utilisation and got no verdict but "a larger batch fits")."""

from __future__ import annotations

from tests.commands.test_watch import SWING, codes, fix_text, the, timeline


def test_idle_gpu_and_idle_cpu_is_a_program_that_waits() -> None:
    f = the(timeline([1, 0, 2, 1, 0, 1, 0, 1], main=20.0), "CD714")
    assert f.severity.value == "warning"
    assert "sat idle in 100 % of samples" in f.title and "20 % of a core" in f.title
    assert "py-spy record --idle -o profile.svg -- python train.py" in fix_text(f)
    assert "CD701" not in codes(timeline([1, 0, 2, 1, 0, 1, 0, 1], main=20.0))


def test_a_swinging_gpu_with_a_calm_cpu_waits_too() -> None:
    assert "CD714" in codes(timeline(SWING, main=5.0))


def test_not_said_when_the_cpu_explains_it_or_is_unknown() -> None:
    assert "CD714" not in codes(timeline(SWING, main=99.0))  # input-bound (CD701) instead
    assert "CD714" not in codes(timeline(SWING, main=[None] * len(SWING)))  # CPU unknown: say nothing
    assert "CD714" not in codes(timeline(SWING, main=8.0, cpu_busy=100.0, load=8.0, cpu_count=2))  # starved
    assert "CD714" not in codes(timeline([97, 95, 99, 98, 96, 97], main=5.0))  # the GPU is busy
    # a second read: a steady 62 % is not idle, and a main process at 80 % of a core is not waiting
    assert "CD714" not in codes(timeline([60, 62, 65, 61, 63, 64, 60, 62], main=20.0))
    assert "CD714" not in codes(timeline([40] * 8, main=80.0))


def test_not_said_when_copies_explain_the_wait() -> None:
    c = codes(timeline([5] * 8, main=10.0, rx=30 * 10**9))
    assert "CD704" in c and "CD714" not in c
