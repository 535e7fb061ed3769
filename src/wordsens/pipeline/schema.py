"""The configuration against its JSON Schema (``SCHEMA``, with the registered studies' sections joined to
it: ``assembled``): validated and filled with the schema's defaults as Snakemake fills them, every error named
at once, one line each, an unknown key with the closest known one; ``--config`` text read as the schema
wants it (``coerce_text``); and a copy without the keys the schema refuses (``without_problems``), on which
the checks beyond the schema still run. Torch is not imported.
"""

from __future__ import annotations

import copy
import difflib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

# Package data (a symbolic link to workflow/schemas/config.schema.yaml, which the wheel build copies),
# resolved so that a checkout's messages name the file to edit
SCHEMA = Path(str(resources.files(__package__ or "wordsens.pipeline") / "config.schema.yaml")).resolve()


class ConfigError(ValueError):
    """A configuration that cannot run; ``problems`` names each key and its fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))


def _key(path: Iterable[Any]) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _unknown_keys(error: Any) -> list[str] | None:
    """One line per key that an object's schema does not know, with the closest known key as a "did you
    mean"; None for other errors."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return None
    known = list((error.schema.get("properties") or {}) if isinstance(error.schema, dict) else {})
    unknown = [key for key in error.instance if key not in known]
    if not known or not unknown:
        return None
    out = []
    for key in unknown:
        text = f"{_key([*error.absolute_path, key])}: unknown key"
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        if close:
            text += f"; did you mean {_key([*error.absolute_path, close[0]])}?"
        else:
            text += f"; the keys here are {', '.join(known)}"
        out.append(text)
    return out


def _schema_problem(error: Any, root: dict | None = None) -> str:
    """One line from a jsonschema error: the dotted key, what is wrong, and the key's description
    (``root``: the schema that holds it)."""
    text = f"{_key(error.absolute_path)}: {error.message}"
    if error.context:  # oneOf/anyOf: what each alternative wanted
        text += " (" + "; ".join(sorted({sub.message for sub in error.context})) + ")"
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    if not description and root is not None and error.absolute_path:
        description = _description(list(error.absolute_path), root)
    if description and error.absolute_path:
        text += f" -- {' '.join(description.split())}"
    return text


def apply_schema(config: dict, schema: str | Path) -> None:
    """The schema's checks and defaults, in place, as Snakemake's validation fills them (``_validator``);
    the ``ConfigError`` names every error."""
    if list(_validator(schema).iter_errors(config)):
        raise ConfigError(schema_problems(config, schema))


@functools.lru_cache(maxsize=4)
def _base(schema: str) -> dict:
    import yaml

    with open(schema) as fh:
        return yaml.safe_load(fh)


def assembled(schema: str | Path = SCHEMA) -> dict:
    """The file ``schema`` (the keys every study shares) with every registered study's section
    (``StudySpec.schema``) after ``model``, and each section's ``$defs`` among the schema's."""
    from ..studies import registry as studies

    base = copy.deepcopy(_base(str(schema)))
    properties: dict[str, Any] = {}
    for key, value in base["properties"].items():
        properties[key] = value
        if key != "model":
            continue
        for spec in studies.specs():
            if spec.section is None or spec.schema is None:
                continue
            section = copy.deepcopy(dict(spec.schema))
            for name, definition in section.pop("$defs", {}).items():
                if base["$defs"].setdefault(name, definition) != definition:
                    raise ValueError(f"study {spec.name!r}: its schema's $defs.{name} differs from the schema's")
            properties[spec.section] = section
    base["properties"] = properties
    return base


def _validator(schema: str | Path) -> Any:
    """A Draft 2020-12 validator of ``schema`` that fills the schema's defaults in, as Snakemake's
    validation does."""
    from jsonschema import Draft202012Validator, validators

    loaded = copy.deepcopy(assembled(str(schema)))
    properties = Draft202012Validator.VALIDATORS["properties"]

    def with_defaults(validator: Any, props: dict, instance: Any, sub: dict) -> Any:
        if isinstance(instance, dict):
            for name, subschema in props.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from properties(validator, props, instance, sub)

    return validators.extend(Draft202012Validator, {"properties": with_defaults})(loaded)


def _target(error: Any) -> list[list[Any]]:
    """The keys an error is about: each unknown key of an ``additionalProperties`` error, else the key
    (not a list index) at the error's path."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = (error.schema.get("properties") or {}) if isinstance(error.schema, dict) else {}
        return [[*error.absolute_path, key] for key in error.instance if key not in known]
    path = list(error.absolute_path)
    while path and isinstance(path[-1], int):
        path.pop()
    return [path]


def schema_problems(config: dict, schema: str | Path = SCHEMA) -> list[str]:
    """Every error of ``config`` (left unchanged) against the schema, one line each, in the order of the
    keys, with the defaults filled on a copy as Snakemake fills them."""
    validator = _validator(schema)
    out: list[str] = []
    errors = sorted(validator.iter_errors(copy.deepcopy(config)), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        out += _unknown_keys(error) or [_schema_problem(error, validator.schema)]
    return list(dict.fromkeys(out))


def without_problems(config: dict, schema: str | Path = SCHEMA) -> tuple[dict, list[str]] | None:
    """A copy of ``config`` that the schema accepts, each key it refuses removed (its default takes its
    place, or the key above it goes), with the dotted keys removed; None when nothing short of the whole
    configuration would have to go."""
    validator = _validator(schema)
    work = copy.deepcopy(config)
    removed: list[str] = []
    for _ in range(100):
        errors = list(validator.iter_errors(work))
        if not errors:
            return work, removed
        before, progress = set(removed), False
        for found in dict.fromkeys(tuple(path) for error in errors for path in _target(error)):
            path = _up(list(found), before)  # a key removed before whose default is refused: the key above
            if not path:
                return None
            parent: Any = work
            for part in path[:-1]:
                parent = parent[part] if isinstance(parent, (dict, list)) and part in _indices(parent) else None
            if isinstance(parent, dict) and path[-1] in parent:
                del parent[path[-1]]
                removed.append(_key(path))
                progress = True
        if not progress:
            return None
    return None


def _up(path: list[Any], removed: set[str]) -> list[Any]:
    """``path``, or the nearest key above it (not a list index) that is not in ``removed``."""
    while path and (isinstance(path[-1], int) or _key(path) in removed):
        path = path[:-1]
    return path


def _indices(container: dict | list) -> Iterable[Any]:
    return container.keys() if isinstance(container, dict) else range(len(container))


# Snakemake reads a nested --config value as text ('trained={n: [32]}' gives {"n": ["32"]})
_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?([0-9]+[.][0-9]*|[.][0-9]+|[0-9]+([.][0-9]*)?[eE][-+]?[0-9]+|[.][0-9]+[eE][-+]?[0-9]+)")
_BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = ("", "~", "null", "Null", "NULL")
_TEXT = object()  # a text that is no number, boolean or null


def _typed(text: str) -> Any:
    """The number, boolean or null ``text`` spells unambiguously (YAML 1.2's core forms), else ``_TEXT``."""
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if text in _BOOLEANS:
        return _BOOLEANS[text]
    return None if text in _NULLS else _TEXT


def _resolve(schema: Any, root: dict) -> Any:
    """``schema`` with a local ``$ref`` ("#/$defs/...") replaced by what it names (its own keys kept)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/"):
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _branches(schema: Any, root: dict) -> Iterator[dict]:
    """``schema`` and every schema that may apply beside it (allOf/anyOf/oneOf, then/else), resolved."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return
    yield schema
    for keyword in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(keyword) or []:
            yield from _branches(sub, root)
    for keyword in ("then", "else"):
        if keyword in schema:
            yield from _branches(schema[keyword], root)


def _below(schemas: list[Any], key: Any, root: dict) -> list[Any]:
    """The schemas that may apply to the value under ``key`` (a property name or a list index)."""
    out = []
    for schema in schemas:
        for branch in _branches(schema, root):
            if isinstance(key, int):
                prefix = branch.get("prefixItems") or []
                sub = prefix[key] if key < len(prefix) else branch.get("items")
            elif key in (branch.get("properties") or {}):
                sub = branch["properties"][key]
            else:
                patterns = branch.get("patternProperties") or {}
                matched = [patterns[p] for p in patterns if re.search(p, str(key))]
                sub = matched[0] if matched else branch.get("additionalProperties")
            if isinstance(sub, dict):
                out.append(sub)
    return out


def _description(path: list[Any], root: dict) -> str | None:
    """The description of the key at ``path`` (of the list, for a path that ends in list indices)."""
    while path and isinstance(path[-1], int):
        path = path[:-1]
    schemas: list[Any] = [root]
    for part in path:
        schemas = _below(schemas, part, root)
    found = [b["description"] for s in schemas for b in _branches(s, root) if isinstance(b.get("description"), str)]
    return found[0] if found else None


def _types(schema: Any, root: dict) -> set[str] | None:
    """The JSON types ``schema`` allows (``type``, ``const``/``enum``, ``$ref``, the union of its
    anyOf/oneOf branches); None where it sets none."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return None
    allowed: set[str] | None = None

    def narrow(types: set[str] | None) -> None:
        nonlocal allowed
        if types is not None:
            allowed = types if allowed is None else allowed & types

    if "type" in schema:
        narrow({schema["type"]} if isinstance(schema["type"], str) else set(schema["type"]))
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if values is not None:
        narrow({_json_type(v) for v in values})
    for sub in schema.get("allOf") or []:
        narrow(_types(sub, root))
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            branches = [_types(sub, root) for sub in schema[keyword]]
            narrow(None if None in branches else {t for b in branches if b is not None for t in b})
    return allowed


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "object")


def _coerced(text: str, schemas: list[Any], validator: Any) -> Any:
    """What ``text`` (a --config value) stands for where ``schemas`` apply: its number, boolean or null
    where the schema takes it (or says nothing), else the text where the schema takes that, else the value
    whose type it wants (so that the schema's own message says what is wrong)."""
    typed = _typed(text)
    if typed is _TEXT:
        return text
    if not schemas or any(validator.evolve(schema=s).is_valid(typed) for s in schemas):
        return typed
    if any(validator.evolve(schema=s).is_valid(text) for s in schemas):
        return text
    for schema in schemas:
        types = _types(schema, validator.schema)
        if types is None or any(validator.is_type(typed, t) for t in types):
            return typed
    return text


def coerce_text(config: dict, given: Mapping[str, Any], schema: str | Path = SCHEMA) -> None:
    """Read, in place, the values of ``config`` that ``given`` (the ``--config`` values) set as text as
    the schema wants them (``'32'`` as 32 where it wants an integer: ``_coerced``)."""
    validator = _validator(schema)
    root = validator.schema

    def walk(value: Any, text: Any, schemas: list[Any]) -> Any:
        if isinstance(text, Mapping) and isinstance(value, dict):
            for key, sub in text.items():
                if key in value:
                    value[key] = walk(value[key], sub, _below(schemas, key, root))
        elif isinstance(text, list) and isinstance(value, list) and len(text) == len(value):
            value[:] = [walk(v, t, _below(schemas, i, root)) for i, (v, t) in enumerate(zip(value, text, strict=True))]
        elif isinstance(text, str) and value == text:
            return _coerced(text, schemas, validator)
        return value

    walk(config, given, [root])
