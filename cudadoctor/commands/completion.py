"""`cudadoctor completion bash|zsh|fish`: the shell completion script, from click's own machinery, so it
covers every command and option as they are."""

from __future__ import annotations

import click

from cudadoctor.commands.output import echo, fail

SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL.

    \b
    bash:  eval "$(cudadoctor completion bash)"     (in ~/.bashrc)
    zsh:   eval "$(cudadoctor completion zsh)"      (in ~/.zshrc)
    fish:  cudadoctor completion fish > ~/.config/fish/completions/cudadoctor.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        fail(f"no completion for {shell}")
    root = click.get_current_context().find_root().command  # the group that dispatched here (cli.py)
    echo(cls(root, {}, "cudadoctor", "_CUDADOCTOR_COMPLETE").source())
