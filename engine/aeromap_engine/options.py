"""Processing options: ODM's names, types and meanings, declared by the stage that honours them.

Each stage module declares `OPTIONS: list[Option]`; `Option.stage` names the earliest stage whose output depends
on the option, so that a changed option re-runs the pipeline from there (as ODM does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import OptionsError
from .resources import cpu_limit

OptionType = Literal["int", "float", "string", "bool", "enum"]

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no", ""}


@dataclass(frozen=True)
class Option:
    name: str
    type: OptionType
    default: Any
    help: str
    stage: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], None] | None = None  # raises ValueError saying what is wrong with a value
    domain: str | None = None  # NodeODM's domain when it is not the type's ("json": a string holding JSON)

    def parse(self, value: Any) -> Any:
        """Convert a value as sent by a client (often a string) to this option's type, or raise OptionsError."""
        try:
            parsed = self._convert(value)
        except (TypeError, ValueError):
            raise OptionsError(f"Option {self.name}: {value!r} is not a valid {self.type}") from None
        if self.type == "enum" and parsed not in self.choices:
            raise OptionsError(f"Option {self.name}: {parsed!r} is not one of {', '.join(self.choices)}")
        if self.type in ("int", "float"):
            if not math.isfinite(parsed):
                raise OptionsError(f"Option {self.name}: {value!r} is not a finite number")
            if self.minimum is not None and parsed < self.minimum:
                raise OptionsError(f"Option {self.name}: {parsed} is below the minimum {self.minimum:g}")
            if self.maximum is not None and parsed > self.maximum:
                raise OptionsError(f"Option {self.name}: {parsed} is above the maximum {self.maximum:g}")
        if self.check is not None:
            try:
                self.check(parsed)
            except ValueError as exc:
                raise OptionsError(f"Option {self.name}: {exc}") from None
        return parsed

    def _convert(self, value: Any) -> Any:
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(value)
        if self.type == "int":
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)
            if not number.is_integer():
                raise ValueError(value)
            return int(number)
        if self.type == "float":
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if value is None:
            return ""
        if isinstance(value, (dict, list)):  # a JSON value sent as itself, not as text (cameras)
            return json.dumps(value)
        return str(value)

    def to_nodeodm(self) -> dict[str, Any]:
        """The option as NodeODM's /options lists it: the default as a string, enums' domain as a list."""
        return {
            "name": self.name,
            "type": self.type,
            "value": _default_text(self.default),
            "domain": list(self.choices) if self.type == "enum" else self.domain or self._domain_text(),
            "help": self.help,
        }

    def _domain_text(self) -> str:
        if self.type == "bool":
            return ""
        if self.type == "string":
            return "string"
        kind = "integer" if self.type == "int" else "float"
        if self.minimum is not None and self.maximum is not None:
            return f"{kind}: {self.minimum:g} <= x <= {self.maximum:g}"
        if self.minimum == 0:
            return f"positive {kind}"
        if self.minimum is not None:
            return f"{kind} >= {self.minimum:g}"
        return kind


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


@dataclass
class Options:
    """Typed option values of one run; read as attributes with dashes as underscores (opts.feature_quality)."""

    values: dict[str, Any]
    given: frozenset[str] = field(default_factory=frozenset)

    def __getattr__(self, attr: str) -> Any:
        name = attr.replace("_", "-")
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(f"no option named {name}") from None

    def was_given(self, name: str) -> bool:
        """Whether the user set the option explicitly (some defaults depend on the data, as in ODM)."""
        return name in self.given


def default_concurrency() -> int:
    return cpu_limit()


def resolve(specs: list[Option], pairs: list[dict[str, Any]]) -> tuple[Options, list[str]]:
    """Typed Options from NodeODM-style `[{name, value}]` pairs; unknown names are dropped and returned."""
    by_name = {spec.name: spec for spec in specs}
    values = {spec.name: spec.default for spec in specs}
    given: set[str] = set()
    dropped: list[str] = []
    for pair in pairs:
        if not isinstance(pair, dict) or "name" not in pair:
            raise OptionsError(f"Each option must be an object with a name and a value, got {pair!r}")
        name = str(pair["name"])
        spec = by_name.get(name)
        if spec is None:
            dropped.append(name)
            continue
        values[name] = spec.parse(pair.get("value"))
        given.add(name)
    return Options(values, frozenset(given)), dropped
