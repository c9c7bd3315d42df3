"""The console entry point. `cudadoctor gpus` goes straight to its own small parser, so that the
fast command never pays for importing click; everything else goes through the click CLI."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["gpus"]:
        from cudadoctor.gpus_command import main as gpus_main

        try:
            sys.exit(gpus_main(sys.argv[2:]))
        except KeyboardInterrupt:
            sys.exit(130)
    from cudadoctor.cli import main as cli_main

    cli_main()
