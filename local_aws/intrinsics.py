"""CloudFormation intrinsic functions, resolved against a deployed stack's physical values, for
the parts of the template the runtime plays itself (alarms, routes, schedules)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Lookup = Callable[[str], str]
AttrLookup = Callable[[str, str], str]
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")


class UnresolvableIntrinsic(ValueError):
    pass


class Resolver:
    def __init__(self, *, ref: Lookup, get_att: AttrLookup, pseudo: dict[str, str], parameters: dict[str, str]) -> None:
        self._ref = ref
        self._get_att = get_att
        self._pseudo = pseudo
        self._parameters = parameters

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self._resolve_ref(arg)
            if key == "Fn::GetAtt":
                logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self._get_att(logical_id, attribute)
            if key == "Fn::Join":
                separator, parts = arg
                return separator.join(str(self.resolve(p)) for p in self.resolve(parts))
            if key == "Fn::Sub":
                return self._sub(arg)
            if key == "Fn::Select":
                index, items = arg
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                separator, text = arg
                return str(self.resolve(text)).split(separator)
            if key.startswith("Fn::"):
                raise UnresolvableIntrinsic(f"{key} is not supported by the local runtime")
        return {k: self.resolve(v) for k, v in value.items()}

    def _resolve_ref(self, name: str) -> str:
        if name in self._pseudo:
            return self._pseudo[name]
        if name in self._parameters:
            return self._parameters[name]
        return self._ref(name)

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.resolve(variables[name]))
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self._get_att(logical_id, attribute)
            return self._resolve_ref(name)

        return _SUB.sub(replace, text)


def references(value: Any) -> set[str]:
    """Logical IDs a template fragment refers to."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= references(item)
    elif isinstance(value, dict):
        if "Ref" in value and isinstance(value["Ref"], str):
            found.add(value["Ref"])
        if "Fn::GetAtt" in value:
            arg = value["Fn::GetAtt"]
            found.add(arg[0] if isinstance(arg, list) else arg.split(".", 1)[0])
        if "Fn::Sub" in value:
            text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
            found |= {m.split(".", 1)[0] for m in _SUB.findall(text)}
        for item in value.values():
            found |= references(item)
    return found


def substitute(value: Any, replacements: dict[str, dict[str, str]]) -> Any:
    """Replace references to the given logical IDs with literal values: {"Ref": ..., attr: ...}."""
    if isinstance(value, list):
        return [substitute(v, replacements) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref" and arg in replacements:
            return replacements[arg]["Ref"]
        if key == "Fn::GetAtt":
            logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            if logical_id in replacements:
                return replacements[logical_id].get(attribute, replacements[logical_id]["Ref"])
    return {k: substitute(v, replacements) for k, v in value.items()}
