"""Adapters build and read DynamoDB items through the codec (lambdas/pipeline/adapters/items.py),
never by hand: no adapter but the codec spells a type tag, whether as a dict key (`{"S": value}`,
`dict(S=value)`), a subscript (`item[NAME]["S"]`) or a lookup (`.get("N")`). Read from each
module's syntax tree, so a tag inside a string or a comment is not one."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "lambdas" / "pipeline" / "adapters"
CODEC = ADAPTERS / "items.py"
TYPE_TAGS = frozenset({"S", "N", "B", "SS", "NS", "BS", "BOOL", "NULL", "L", "M"})


def _is_tag(node: ast.AST | None) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and node.value in TYPE_TAGS


def tag_spellings(source: str) -> Iterator[str]:
    """Each place `source` spells a DynamoDB type tag, as `line: how`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            yield from (f"{key.lineno}: dict key {key.value!r}" for key in node.keys if _is_tag(key))
        elif isinstance(node, ast.Subscript) and _is_tag(node.slice):
            yield f"{node.lineno}: subscript [{node.slice.value!r}]"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"get", "pop", "setdefault"} and node.args and _is_tag(node.args[0]):
                yield f"{node.lineno}: .{node.func.attr}({node.args[0].value!r})"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            yield from (f"{node.lineno}: dict({kw.arg}=...)" for kw in node.keywords if kw.arg in TYPE_TAGS)


ADAPTER_MODULES = sorted(path for path in ADAPTERS.rglob("*.py") if path != CODEC)


@pytest.mark.parametrize("path", ADAPTER_MODULES, ids=lambda path: str(path.relative_to(ADAPTERS)))
def test_no_adapter_but_the_codec_spells_a_dynamodb_type_tag(path):
    assert list(tag_spellings(path.read_text())) == []


def test_every_adapter_is_checked():
    assert len(ADAPTER_MODULES) > 20
    assert ADAPTERS / "webhook_log.py" in ADAPTER_MODULES


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('item = {"id": {"S": row_id}}', ["dict key 'S'"]),
        ('values = {":hashes": {"SS": hashes}, ":n": {"N": "1"}}', ["dict key 'SS'", "dict key 'N'"]),
        ('body = item[BODY]["B"]', ["subscript ['B']"]),
        ('count = item.get(PARTS, {}).get("N", "1")', [".get('N')"]),
        ('hashes = item.pop("BS")', [".pop('BS')"]),
        ("flag = dict(BOOL=True)", ["dict(BOOL=...)"]),
        (
            'other = {"NULL": True, "L": [], "M": {}, "NS": []}',
            ["dict key 'NULL'", "dict key 'L'", "dict key 'M'", "dict key 'NS'"],
        ),
    ],
)
def test_the_checker_finds_each_way_of_spelling_a_tag(source, found):
    assert [where.split(": ", 1)[1] for where in tag_spellings(source)] == found


def test_the_checker_ignores_tags_in_text_and_other_keys():
    source = '"""A Binary Set ({"BS": ...})."""\n# item["S"]\nnames = {"#s": STATUS, "Keys": keys}\nx = row["status"]\n'
    assert list(tag_spellings(source)) == []
