"""Object metadata, owner references and conditions, plus pure helpers on them."""

from __future__ import annotations

from pydantic import Field

from gangplane.api.base import ApiModel, OpenModel


class OwnerReference(OpenModel):
    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(OpenModel):
    """``metav1.ObjectMeta``; server-managed fields are kept as strings exactly as the server wrote them."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


class Condition(ApiModel):
    """``metav1.Condition``."""

    type: str
    status: str = Field(pattern="^(True|False|Unknown)$")
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None

    def model_post_init(self, context: object, /) -> None:
        # reason and message are required on the wire (may be empty): always write them.
        self.model_fields_set.update({"reason", "message"})


def find_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    return next((c for c in conditions or [] if c.type == type_), None)


def is_true(conditions: list[Condition] | None, type_: str) -> bool:
    found = find_condition(conditions, type_)
    return found is not None and found.status == "True"


def set_condition(conditions: list[Condition], new: Condition) -> list[Condition]:
    """``meta.SetStatusCondition``: the transition time moves only when the status changes."""
    old = find_condition(conditions, new.type)
    if old is not None and old.status == new.status:
        new = new.model_copy(update={"last_transition_time": old.last_transition_time})
    return [new if c.type == new.type else c for c in conditions] if old else [*conditions, new]
