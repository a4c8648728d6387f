"""`dataclass`: the standard library's, with `__repr__`, `__eq__` and `__hash__` shared instead of
generated per class.

`dataclasses.dataclass` writes each class's methods as source text and compiles it when the
class is created, in every process: a printed `mtpsim simulate` creates 43 dataclasses, and
compiling their methods was ~0.06 of its ~0.5 CPU-seconds here (docs/speed.md, start-up round 12).
`__init__` (and a frozen class's `__setattr__` / `__delattr__`) are still the standard library's;
`__repr__`, `__eq__` and `__hash__` are the same three functions for every class, reading the
class's field names, made once at class creation without compiling anything. They answer as the
generated ones do: the same repr text (recursion shown as `...`), equality of the compared
fields' tuples between instances of the very same class (NotImplemented otherwise), the hash of
the hashed fields' tuple for a frozen class, `__hash__ = None` for a mutable one, and a method the
class body defines itself is kept (`tests/test_mtpsim_dataclass_answers_as_the_standard_one.py`).
Any other option (order, unsafe_hash, eq=False, ...) goes to the standard library unchanged.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
import typing
from collections.abc import Callable
from typing import Any

_MISSING = object()


@typing.dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False,
              **options: Any) -> Any:
    """`@dataclass`, `@dataclass(frozen=True, slots=True)`, ... as `dataclasses.dataclass`."""

    def wrap(c: type) -> type:
        if options:
            return dataclasses.dataclass(c, frozen=frozen, slots=slots, **options)
        return _lean(c, frozen, slots)

    return wrap if cls is None else wrap(cls)


def _lean(cls: type, frozen: bool, slots: bool) -> type:
    own = cls.__dict__
    class_hash = own.get("__hash__", _MISSING)
    explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
    keep = {name for name in ("__repr__", "__eq__") if name in own}
    cls = dataclasses.dataclass(cls, frozen=frozen, slots=slots, repr=False, eq=False)
    fields = dataclasses.fields(cls)
    if "__repr__" not in keep:
        cls.__repr__ = _repr_of(tuple(f.name for f in fields if f.repr))
    if "__eq__" not in keep:
        cls.__eq__ = _eq_of(_getter(tuple(f.name for f in fields if f.compare)))
    if not explicit_hash:
        cls.__hash__ = _hash_of(_getter(tuple(
            f.name for f in fields if (f.compare if f.hash is None else f.hash)))) if frozen else None
    return cls


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """The tuple of these attributes of an object (the generated methods' `(self.a, self.b,)`)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr("...")
    def __repr__(self: Any) -> str:
        return (self.__class__.__qualname__ + "("
                + ", ".join(f"{name}={getattr(self, name)!r}" for name in names) + ")")

    return __repr__


def _eq_of(values: Callable[[Any], tuple]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_of(values: Callable[[Any], tuple]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__
