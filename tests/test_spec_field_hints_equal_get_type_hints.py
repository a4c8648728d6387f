"""build_section evaluates only the annotations of the fields a spec sets (mtpsim.spec.fields
`field_hint`, docs/speed.md round 10); each must be what typing.get_type_hints gives."""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields

import pytest

from mtpsim.spec.experiment import SECTIONS
from mtpsim.spec.fields import field_hint


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_section_fields_hint_is_get_type_hints(section):
    cls = SECTIONS[section]
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        assert field_hint(cls, f.name) == hints[f.name], (section, f.name)


@dataclass
class _Base:
    a: int | None = None


@dataclass
class _Child(_Base):
    b: dict[str, tuple[float, ...]] | None = None
    c: None = None


def test_inherited_and_bare_none_fields_read_as_get_type_hints_reads_them():
    hints = typing.get_type_hints(_Child)
    for name in ("a", "b", "c"):
        assert field_hint(_Child, name) == hints[name]
    with pytest.raises(KeyError):
        field_hint(_Child, "missing")
