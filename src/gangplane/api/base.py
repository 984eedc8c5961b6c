"""The base of every wire type: camelCase on the wire, snake_case in Python.

Two flavours:
- ``ApiModel`` rejects unknown fields. It is used for the Trainer API, whose CRD schemas are structural, so an
  unknown field is a user mistake (kubectl's default strict field validation rejects it too).
- ``OpenModel`` keeps unknown fields and writes them back unchanged. It is used for Kubernetes core shapes
  (pod templates, containers, JobSet and Job specs) where gangplane models only what it reads: a field it does not
  know must never be silently dropped.

Serialisation writes only what was set (given by the user, defaulted or assigned), so a manifest round-trips to
the same document.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from gangplane.api.jsondata import Object as Object  # re-exported: the one alias
from gangplane.api.jsondata import clone as clone

_COMMON = {"alias_generator": to_camel, "populate_by_name": True, "serialize_by_alias": True}


class ApiModel(BaseModel):
    """A closed wire type: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", **_COMMON)  # type: ignore[typeddict-item]

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, only fields that were set, no nulls; ``apiVersion``/``kind`` first."""
        data = self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
        if "api_version" in type(self).model_fields and "kind" in type(self).model_fields:
            data = {**self.model_dump(mode="json", by_alias=True, include={"api_version", "kind"}), **data}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls.model_validate(data)

    def copy_deep(self) -> Self:
        return self.model_copy(deep=True)


class OpenModel(ApiModel):
    """An open wire type: unknown fields are kept as given and written back."""

    model_config = ConfigDict(extra="allow", **_COMMON)  # type: ignore[typeddict-item]
