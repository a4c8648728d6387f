"""`dataclass`: the standard library's, with `__repr__`, `__eq__` and `__hash__` shared instead of
generated per class, and a frozen class's `__setattr__` / `__delattr__` made without compiling.

`dataclasses.dataclass` writes each class's methods as source text and compiles it when the
class is created, in every process: a printed `mtpsim simulate` creates 43 dataclasses, and
compiling their methods was ~0.06 of its ~0.5 CPU-seconds here (docs/speed.md, start-up round 12).
`__init__` is still the standard library's; `__repr__`, `__eq__` and `__hash__` are the same three
functions for every class, reading the class's field names, made once at class creation without
compiling anything. They answer as the generated ones do: the same repr text (recursion shown as
`...`), equality of the compared fields' tuples between instances of the very same class
(NotImplemented otherwise), the hash of the hashed fields' tuple for a frozen class, `__hash__ =
None` for a mutable one, and a method the class body defines itself is kept
(`tests/test_mtpsim_dataclass_answers_as_the_standard_one.py`). A frozen class's `__setattr__`
and `__delattr__` are the standard library's text as two closures over the class and its field
names (`_frozen_get_del_attr`): on Python 3.11-3.12 `dataclasses` compiles them apart from
`__init__`, two compiles per frozen class (a printed simulate creates 28 frozen classes: 56
compiles, 36.8 M of its ~936 M instructions, docs/speed.md round 14). Any other option (order,
unsafe_hash, eq=False, ...) goes to the standard library unchanged.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
import sys
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
    if frozen and _STANDARD_FROZEN is not None:
        # the standard decorator asks this module function of dataclasses for the two methods
        # (3.11-3.12: `_frozen_get_del_attr(cls, fields, globals)`, each compiled from text);
        # it gets the same two as closures for this one call
        dataclasses._frozen_get_del_attr = _frozen_get_del_attr
        try:
            cls = dataclasses.dataclass(cls, frozen=frozen, slots=slots, repr=False, eq=False)
        finally:
            dataclasses._frozen_get_del_attr = _STANDARD_FROZEN
    else:
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


# Python 3.13 builds all of a class's methods in one compile and calls this function otherwise:
# there the standard one is kept.
_STANDARD_FROZEN = (getattr(dataclasses, "_frozen_get_del_attr", None)
                    if sys.version_info < (3, 13) else None)


def _frozen_get_del_attr(cls: type, fields: list[dataclasses.Field],
                         globals: dict[str, Any]) -> tuple[Callable[..., None], Callable[..., None]]:
    """dataclasses' `_frozen_get_del_attr` of Python 3.11-3.12, not compiled: the same tests (the
    instance's type is `cls` itself, or `name` is a field's), the same errors and messages, else
    `super(cls, self)`'s method; `cls` is the class as the decorator had it then, as there."""
    names = tuple(f.name for f in fields)
    frozen_error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for fn in (__setattr__, __delattr__):
        fn.__module__ = cls.__module__  # as the generated ones (compiled in the class's module)
    return __setattr__, __delattr__


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
