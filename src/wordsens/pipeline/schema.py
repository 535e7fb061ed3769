"""The configuration against its JSON Schema (workflow/schemas/config.schema.yaml): validated and
filled with the schema's defaults the way Snakemake does it (``snakemake.utils.validate`` with
``set_default=True``), every error named at once, one line each, an unknown key with the closest
known one. Torch is not imported.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA", "ConfigError", "apply_schema", "schema_problems"]

# The schema of the checkout this package belongs to (an editable install, or src/ on sys.path).
SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration that cannot run; ``problems`` names each key and its fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))


def _key(path: Iterable[Any]) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _unknown_keys(error: Any) -> list[str] | None:
    """One line per key that an object's schema does not know (an ``additionalProperties: false``
    error), with the closest known key (``difflib``) as a "did you mean"; None for other errors."""
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


def _schema_problem(error: Any) -> str:
    """One line from a jsonschema error: the dotted key, what is wrong, and the key's description."""
    text = f"{_key(error.absolute_path)}: {error.message}"
    if error.context:  # oneOf/anyOf: what each alternative wanted
        text += " (" + "; ".join(sorted({sub.message for sub in error.context})) + ")"
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    if description and error.absolute_path:
        text += f" -- {' '.join(description.split())}"
    return text


def apply_schema(config: dict, schema: str | Path) -> None:
    """The schema's checks and defaults, in place (``snakemake.utils.validate`` with ``set_default``).
    Snakemake stops at the first error; the ``ConfigError`` names every one (``schema_problems``)."""
    from jsonschema import ValidationError
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate as snakemake_validate

    try:
        snakemake_validate(config, str(schema), set_default=True)
    except WorkflowError as err:
        found = schema_problems(config, schema)
        cause = err.__context__
        raise ConfigError(
            found or [_schema_problem(cause) if isinstance(cause, ValidationError) else str(err)]
        ) from None


def schema_problems(config: dict, schema: str | Path = SCHEMA) -> list[str]:
    """Every error of ``config`` (left unchanged) against the schema, one line each, in the order of
    the keys; an unknown key with the closest known one. Defaults are filled (on a copy) as Snakemake
    fills them, so that the errors are the ones Snakemake's validation meets one at a time."""
    import copy

    import yaml
    from jsonschema import Draft202012Validator, validators

    with open(schema) as fh:
        loaded = yaml.safe_load(fh)
    properties = Draft202012Validator.VALIDATORS["properties"]

    def with_defaults(validator: Any, props: dict, instance: Any, sub: dict) -> Any:
        if isinstance(instance, dict):
            for name, subschema in props.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from properties(validator, props, instance, sub)

    validator = validators.extend(Draft202012Validator, {"properties": with_defaults})(loaded)
    out: list[str] = []
    errors = sorted(validator.iter_errors(copy.deepcopy(config)), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        out += _unknown_keys(error) or [_schema_problem(error)]
    return list(dict.fromkeys(out))
