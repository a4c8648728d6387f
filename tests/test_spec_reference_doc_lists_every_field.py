"""docs/spec.md's field tables are the spec's own help texts: every section lists every field,
in order, with the help its `option(...)` declares, so the reference cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mtpsim.spec.experiment import SECTIONS
from mtpsim.spec.fields import describe

DOC = Path(__file__).resolve().parents[1] / "docs" / "spec.md"


def _tables() -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    section = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^\*\*\[(\w+)\]\*\*", line):
            section = m.group(1)
            out[section] = []
        elif section and (m := re.match(r"^\| `(\w+)` \| [^|]*\| (.*) \|$", line)):
            out[section].append((m.group(1), m.group(2)))
    return out


@pytest.mark.parametrize("section", list(SECTIONS))
def test_each_section_documents_its_fields_with_their_help(section):
    assert _tables().get(section) == describe(SECTIONS[section])
