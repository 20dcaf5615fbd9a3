"""Settings that carry, beside themselves, what they allow and what role they play.

A setting is a dataclass field made by `setting(default, rule, shape=..., resumable=...)`:
`rule` is (test, what is allowed in words); `shape` marks a field that defines a model's
weights, `resumable` one that a resumed run may change. `check_fields` checks every field of
an instance by its type and its rule, and raises one ConfigError naming the field, the value
and what is allowed. annotated.model's ModelConfig and annotated.configs' Config are made of
such fields.
"""
import math
import re
import types
from dataclasses import field, fields

from annotated.base.errors import ConfigError


def setting(default, rule, *, shape: bool = False, resumable: bool = False):
    """A field with its rule, (test, what is allowed in words), and its role."""
    return field(default=default, metadata=dict(rule=rule, shape=shape, resumable=resumable))


def at_least(low):
    return (lambda v: v >= low), f">= {low}"


def between(low, high, what: str = "value"):
    return (lambda v: low <= v <= high), f"{low} <= {what} <= {high:,}"


def one_of(*choices):
    return (lambda v: v in choices), ", ".join(choices[:-1]) + " or " + choices[-1]


PROBABILITY = ((lambda v: 0 <= v < 1), "0 <= value < 1")
LANGUAGE = ((lambda v: re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)?", v) is not None),
            "a language code in lower case, as the corpus files' names end (train.en), such "
            "as en, de, fr, zh; a region after a hyphen (pt-BR)")
ANY = ((lambda v: True), "true or false")
POSITIVE = ((lambda v: v > 0), "> 0")


def shown(value, width: int = 60, quote: bool = True) -> str:
    """repr(value) (or str, without `quote`) for an error message, cut to `width` characters:
    a value pasted by mistake (a whole file) must not fill the screen."""
    text = repr(value) if quote else str(value)
    return text if len(text) <= width else text[:width - 5] + "[...]"


def rule_of(f) -> tuple:
    """(test, what is allowed, in words) of the field `f`, 'value' read as its name."""
    test, allowed = f.metadata["rule"]
    return test, allowed.replace("value", f.name)


def plain_type(kind):
    """int for `int`, float for `float | None`: the type a value of the field has."""
    if isinstance(kind, types.UnionType):
        return next(k for k in kind.__args__ if k is not type(None))
    return kind


def check(f, value) -> None:
    """Raise ConfigError unless `value` has the field's type and passes its rule."""
    if isinstance(f.type, types.UnionType) and value is None:     # float | None: optional
        return
    kind = plain_type(f.type)
    ok_type = (type(value) is bool if kind is bool else
               isinstance(value, (int, float)) and type(value) is not bool if kind is float else
               isinstance(value, kind) and type(value) is not bool)
    test, allowed = rule_of(f)
    if not ok_type:
        raise ConfigError(f"config: {f.name} = {shown(value)} is not "
                          f"a{'n' if kind is int else ''} {kind.__name__}; allowed: {allowed}")
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"config: {f.name} = {shown(value)} is not a finite number; "
                          f"allowed: {allowed}")
    if not test(value):
        raise ConfigError(f"config: {f.name} = {shown(value)} is not allowed; allowed: "
                          f"{allowed}")


def check_fields(obj) -> None:
    """check() every field of the dataclass instance `obj`."""
    for f in fields(obj):
        check(f, getattr(obj, f.name))


def names_with(cls, role: str) -> tuple[str, ...]:
    """The fields of `cls` that have `role` (shape or resumable) beside them."""
    return tuple(f.name for f in fields(cls) if f.metadata.get(role))
