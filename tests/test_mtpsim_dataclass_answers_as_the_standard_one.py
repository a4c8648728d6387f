"""`mtpsim.dataclass.dataclass` shares `__repr__`, `__eq__` and `__hash__` instead of compiling them
per class (start-up, docs/speed.md round 12): each class below is made by it and by
`dataclasses.dataclass`, and the two must answer alike."""

import copy
import dataclasses
import sys
from dataclasses import field

import pytest

from mtpsim.dataclass import dataclass as lean

NAN = float("nan")  # one object: a NaN's hash is its identity's


def _pair(make):
    return make(dataclasses.dataclass), make(lean)


def _plain(deco):
    @deco
    class P:
        a: int
        b: str = "x"
        c: list = field(default_factory=list)

    return P


def _frozen(deco):
    @deco(frozen=True, slots=True)
    class F:
        a: float
        b: tuple = ()
        hidden: int = field(default=0, repr=False)
        ignored: int = field(default=0, compare=False)
        unhashed: int = field(default=0, hash=False)

    return F


def _one(deco):
    @deco(frozen=True, slots=True)
    class One:
        a: float

    return One


def _empty(deco):
    @deco(frozen=True)
    class Empty:
        pass

    return Empty


def _mutable_slots(deco):
    @deco(slots=True)
    class M:
        a: int
        b: list = field(default_factory=list)

    return M


def _own_methods(deco):
    @deco(frozen=True, slots=True)
    class Own:
        a: int

        def __repr__(self):
            return "own"

        def __eq__(self, other):
            return True

        def __hash__(self):
            return 7

    return Own


def _own_eq_only(deco):
    @deco
    class OwnEq:
        a: int

        def __eq__(self, other):
            return isinstance(other, OwnEq)

    return OwnEq


MAKERS = [(_plain, lambda C: [C(1), C(1, "y"), C(2, c=[1])]),
          (_frozen, lambda C: [C(1.0), C(1.0, ignored=9), C(NAN),
                                C(1.0, (1, 2), hidden=3, ignored=4, unhashed=5)]),
          (_one, lambda C: [C(1.0), C(NAN), C(2.0)]),
          (_empty, lambda C: [C(), C()]),
          (_mutable_slots, lambda C: [C(1), C(1, [2])]),
          (_own_methods, lambda C: [C(1), C(2)]),
          (_own_eq_only, lambda C: [C(1), C(2)])]


def _answers(C, objs):
    out = {"repr": [repr(o) for o in objs], "fields": [f.name for f in dataclasses.fields(C)],
           "match_args": getattr(C, "__match_args__", None), "doc": C.__doc__,
           "hashable": C.__hash__ is not None, "slots": hasattr(C, "__slots__")}
    out["eq"] = [[a == b for b in objs] for a in objs]
    out["ne"] = [[a != b for b in objs] for a in objs]
    out["eq_other_class"] = [o.__eq__(object()) for o in objs]
    out["eq_tuple"] = [o == (1,) for o in objs]
    if C.__hash__ is not None:
        out["hash"] = [hash(o) for o in objs]
    out["astuple"] = [repr(dataclasses.astuple(o)) for o in objs]
    out["copies_equal"] = [(copy.copy(o) == o, copy.deepcopy(o) == o) for o in objs]
    return out


@pytest.mark.parametrize("make,build", MAKERS, ids=[m.__name__ for m, _ in MAKERS])
def test_the_same_answers_as_dataclasses(make, build):
    std, ours = _pair(make)
    std.__qualname__ = ours.__qualname__ = std.__name__  # both named as the class, not the test
    assert _answers(ours, build(ours)) == _answers(std, build(std))


def test_frozen_stays_frozen_and_subclass_instances_compare_as_before():
    for deco in (dataclasses.dataclass, lean):
        F = _frozen(deco)
        with pytest.raises(dataclasses.FrozenInstanceError):
            F(1.0).a = 2.0

        class Sub(F):
            pass

        assert (F(1.0) == Sub(1.0)) is False
        assert repr(Sub(1.0)).startswith(f"{Sub.__qualname__}(a=1.0")


def test_recursive_repr_shows_dots_as_the_standard_one():
    answers = []
    for deco in (dataclasses.dataclass, lean):
        @deco
        class Node:
            child: object = None

        n = Node()
        n.child = n
        answers.append(repr(n))
    assert answers[0] == answers[1]
    assert "..." in answers[1]


def test_other_options_go_to_the_standard_library():
    @lean(order=True)
    class Ordered:
        a: int

    assert Ordered(1) < Ordered(2)
    assert "__lt__" in Ordered.__dict__


def test_every_mtpsim_dataclass_is_made_by_it():
    """A class made by the standard decorator compiles its methods again at every start."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "mtpsim"
    standard = []
    for path in root.rglob("*.py"):
        if path == root / "dataclass.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "dataclasses" and \
                    any(a.name == "dataclass" for a in node.names):
                standard.append(f"{path.relative_to(root.parent)}:{node.lineno}")
            if isinstance(node, ast.Attribute) and node.attr == "dataclass" and \
                    isinstance(node.value, ast.Name) and node.value.id == "dataclasses":
                standard.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert standard == [], "use `from mtpsim.dataclass import dataclass`"


def _frozen_plain(deco):
    @deco(frozen=True)
    class G:
        a: int
        b: str = "x"

    return G


def _errors(call, *args):
    try:
        call(*args)
    except Exception as e:  # the type and the message are the answer
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("make", [_frozen, _one, _empty, _frozen_plain])
def test_frozen_set_and_delete_answer_as_the_standard_ones(make):
    """A frozen class's `__setattr__` / `__delattr__` (closures here, compiled text there): the
    same errors and messages for a field, a non-field and a subclass instance."""
    answers = []
    for deco in (dataclasses.dataclass, lean):
        C = make(deco)
        obj = C(*([1.0] if dataclasses.fields(C) else []))

        class Sub(C):
            pass

        sub = Sub(*([1.0] if dataclasses.fields(C) else []))
        names = [f.name for f in dataclasses.fields(C)] + ["other"]
        got = []
        for target in (obj, sub):
            for name in names:
                got.append(_errors(setattr, target, name, 2))
                got.append(_errors(delattr, target, name))
        got.append((C.__setattr__.__name__, C.__setattr__.__qualname__.split(".")[-2:],
                    C.__delattr__.__qualname__.split(".")[-2:], C.__setattr__.__module__))
        answers.append(got)
    assert answers[0] == answers[1]


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13 compiles a class's methods at once")
def test_frozen_set_and_delete_are_not_compiled_per_class():
    F = _frozen(lean)
    for fn in (F.__setattr__, F.__delattr__):
        assert fn.__code__.co_filename != "<string>"  # the generated ones' file name
    assert dataclasses._frozen_get_del_attr.__module__ == "dataclasses"  # put back after the call
