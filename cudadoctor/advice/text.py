"""Notes and fix labels built from parts, as messages a renderer translates: "a; b; c", a label with its
first letter lowered, and the label of a fix whose command depends on what is not known."""

from __future__ import annotations

from cudadoctor.model import Message, msg


def parts(items: list[Message]) -> Message:
    """The parts of a note in order with "; " between them, each translated on its own (the separator is
    part of a template, never a join of English)."""
    if len(items) == 1:
        return items[0]
    return msg("{first}; {rest}", first=items[0], rest=parts(items[1:]))


def not_known(label: str, unknown: list[str]) -> Message:
    """A fix label without a command: what it depends on is not known."""
    what = label if isinstance(label, Message) else msg(label)
    return msg(
        "{label}: which build fits is not known ({unknown}); run every check to see it",
        label=what,
        unknown=parts([u if isinstance(u, Message) else msg(u) for u in unknown]),
    )


def joined(parts: list[str], separator: str = "; ", names: bool = False) -> str:
    """ "a; b; c" (separator "; ", ", " or " and ") as one message, for a renderer to translate: each part
    in turn when it is a message or a text the translation catalogue holds, or shown as it is (`names`:
    package names, paths, versions). No parts: ""."""
    if not parts:
        return ""
    head = parts[0] if names or isinstance(parts[0], Message) else msg(parts[0])
    if len(parts) == 1:
        return head
    rest = joined(parts[1:], separator, names)
    if separator == "; ":
        return msg("{first}; {rest}", first=head, rest=rest)
    return msg("{first}, {rest}" if separator == ", " else "{first} and {rest}", first=head, rest=rest)


def lower_first(text: str) -> str:
    """ "Upgrade …" as it reads inside a sentence ("Or upgrade …"); a message stays one, by its template
    with the first letter lowered (the catalogue holds those too)."""
    if isinstance(text, Message) and text.plural is None and text.template[:1].isalpha():
        return Message(text.template[:1].lower() + text.template[1:], **text.args)
    return text[:1].lower() + text[1:]
