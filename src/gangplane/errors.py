"""The exception tree of gangplane, and field errors.

Validation never raises on the first problem: validators return lists of ``FieldError`` and callers raise
``Invalid`` (HTTP 422) or ``Forbidden`` (HTTP 403) carrying all of them, as the Kubernetes API server does.

    GangplaneError
    ├── ApiError                  an error with a Kubernetes ``Status`` reason and HTTP code
    │   ├── Invalid               422: schema / CEL-equivalent failures, with field causes
    │   ├── Forbidden             403: webhook-style denials, with field causes
    │   ├── NotFound              404
    │   ├── AlreadyExists         409
    │   ├── Conflict              409: stale resourceVersion or field-manager conflict
    │   ├── Gone                  410: watch resourceVersion too old
    │   ├── BadRequest            400: a body or parameter that cannot be decoded
    │   ├── RequestEntityTooLarge 413: a body or object over the size limits
    │   └── Unauthorized          401
    └── ManifestError             a file that cannot be read or parsed (no field path)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class CauseType(StrEnum):
    """Kubernetes ``metav1.CauseType`` values used by field errors."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    DUPLICATE = "FieldValueDuplicate"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    NOT_FOUND = "FieldValueNotFound"
    TYPE_INVALID = "FieldValueTypeInvalid"
    UNKNOWN_FIELD = "FieldValueUnknown"
    INTERNAL = "InternalError"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem at one field path, e.g. ``spec.trainer.numNodes``."""

    path: str
    type: CauseType
    detail: str
    value: Any = None

    def __str__(self) -> str:
        shown = f": {self.value!r}" if self.value is not None else ""
        return f"{self.path}{shown}: {self.detail}"

    def as_cause(self) -> dict[str, str]:
        return {"reason": str(self.type), "message": self.detail, "field": self.path}


class GangplaneError(Exception):
    """Root of every error gangplane raises on purpose."""


class ManifestError(GangplaneError):
    """A manifest file that cannot be read or parsed."""


class ApiError(GangplaneError):
    """An error that maps onto a Kubernetes ``Status`` object."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str, *, kind: str = "", name: str = "", causes: Iterable[FieldError] = ()):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.name = name
        self.causes = list(causes)

    def status(self) -> dict[str, Any]:
        """The Kubernetes ``Status`` body for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.as_cause() for c in self.causes]
        if details:
            body["details"] = details
        return body


class _FieldErrorsApiError(ApiError):
    """Message in the API server's style: ``Kind "name" is invalid: [path: detail, ...]``."""

    verb = "is invalid"

    def __init__(self, kind: str, name: str, errors: Iterable[FieldError]):
        errs = list(errors)
        listed = ", ".join(str(e) for e in errs)
        shown = f"[{listed}]" if len(errs) > 1 else listed
        super().__init__(f'{kind} "{name}" {self.verb}: {shown}', kind=kind, name=name, causes=errs)


class Invalid(_FieldErrorsApiError):
    code = 422
    reason = "Invalid"


class Forbidden(_FieldErrorsApiError):
    code = 403
    reason = "Forbidden"
    verb = "is forbidden"


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason = "Conflict"


class Gone(ApiError):
    code = 410
    reason = "Expired"


class Unauthorized(ApiError):
    code = 401
    reason = "Unauthorized"


class BadRequest(ApiError):
    code = 400
    reason = "BadRequest"


class RequestEntityTooLarge(ApiError):
    code = 413
    reason = "RequestEntityTooLarge"
