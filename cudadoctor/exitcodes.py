"""The exit codes, the same in every command (docs/exit-codes.md). Scripts depend on them: never renumber.

Their own module so that `cudadoctor gpus` (cli.py, commands/gpus.py) can use them without importing
report.py, whose enums and dataclasses cost start-up time; report.py names the same numbers.
"""

EXIT_OK = 0  # healthy, or only findings below --fail-on
EXIT_PROBLEMS = 1  # at least one finding at or above --fail-on
EXIT_USAGE = 2  # bad options or input
EXIT_INCOMPLETE = 3  # no verdict: a probe crashed or timed out, an internal error; triage: not enough to tell
EXIT_NOT_ENOUGH_GPUS = 4  # `gpus --pick N`: fewer than N GPUs qualify
EXIT_HANGUP = 129  # SIGHUP (128 + 1)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + 15)
