"""The option types and checks the commands share, and how a command's options become one object.

A command's click function receives the options as keyword arguments and builds its options object (a
frozen dataclass, one field per option) with `build()`; the command's body takes that one object."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cudadoctor.locale import _

T = TypeVar("T")


def build(cls: type[T], given: dict[str, Any], **extra: Any) -> T:
    """`cls` (a dataclass) from click's keyword arguments: a parameter without a field is a programming
    error, raised at once rather than dropped."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(given) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field for {', '.join(unknown)}")
    return cls(**given, **extra)


def apply(*decorators: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """One decorator for a list of click decorators, applied as if written above the function in this
    order (so `--help` lists the options in it)."""

    def decorate(fn: Any) -> Any:
        for decorator in reversed(decorators):
            fn = decorator(fn)
        return fn

    return decorate


class Seconds(click.FloatRange):
    """A time bound in seconds: finite ("nan" and "inf" would remove the bound), at least `min` and at most
    a million (a deadline further off overflows the platform's time_t in waits)."""

    name = "number of seconds"  # click's "'x' is not a valid {name}."
    MOST = 1e6

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if not math.isfinite(result):
            self.fail(_("{value} is not a finite number of seconds").format(value=repr(value)), param, ctx)
        if result > self.MOST:
            self.fail(
                _("{value} is more than {most} seconds").format(value=repr(value), most=f"{self.MOST:g}"), param, ctx
            )
        return result


def names_option(option: str, value: str | None, known: list[str]) -> set[str]:
    """A comma-separated list of names, each one checked against `known`."""
    names = {n.strip() for n in (value or "").split(",") if n.strip()}
    unknown = sorted(names - set(known))
    if unknown:
        raise click.BadParameter(
            _("unknown name {names}; choose from {known}").format(names=", ".join(unknown), known=", ".join(known)),
            param_hint=option,
        )
    return names


def complete_probe_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a comma-separated list of probe names (`--only driver,to<TAB>`): the name being
    typed, after the ones already given, which it does not offer again."""
    from click.shell_completion import CompletionItem

    from cudadoctor import probes

    done, comma, last = incomplete.rpartition(",")
    given = {n.strip() for n in done.split(",")}
    return [CompletionItem(done + comma + n) for n in probes.names() if n.startswith(last) and n not in given]


def size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from cudadoctor.knowledge.units import parse_size

    if value is None:
        return None
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if size <= 0:
        raise click.BadParameter(_("{value} is not a positive size").format(value=repr(value)))
    return size
