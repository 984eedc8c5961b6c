"""Effective pod resource requests, as the Kubernetes scheduler computes them (requests only).

``max(sum(containers) + sum(sidecars), max over init containers of (init + sidecars started before it))``
plus ``overhead``. A resource given only under ``limits`` contributes nothing, as in upstream Trainer's
``SinglePodRequests`` (reference trainer-api.md §6.2).
"""

from __future__ import annotations

from decimal import Decimal

from gangplane.api.core import Container, PodSpec
from gangplane.api.quantity import format_quantity, is_binary, parse

Amounts = dict[str, Decimal]


def _requests(container: Container) -> Amounts:
    given = (container.resources.requests if container.resources else None) or {}
    return {name: parse(text) for name, text in given.items()}


def _add(a: Amounts, b: Amounts) -> Amounts:
    return {name: a.get(name, Decimal(0)) + b.get(name, Decimal(0)) for name in a.keys() | b.keys()}


def _max(a: Amounts, b: Amounts) -> Amounts:
    return {name: max(a.get(name, Decimal(0)), b.get(name, Decimal(0))) for name in a.keys() | b.keys()}


def pod_request_amounts(spec: PodSpec) -> Amounts:
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for init in spec.init_containers or []:
        if init.restart_policy == "Always":
            sidecars = _add(sidecars, _requests(init))
        else:
            init_peak = _max(init_peak, _add(_requests(init), sidecars))
    regular: Amounts = {}
    for container in spec.containers:
        regular = _add(regular, _requests(container))
    total = _max(_add(regular, sidecars), init_peak)
    overhead = {name: parse(text) for name, text in (spec.overhead or {}).items()}
    return _add(total, overhead)


def _binary_style(spec: PodSpec) -> dict[str, bool]:
    style: dict[str, bool] = {}
    for container in [*(spec.init_containers or []), *spec.containers]:
        for name, text in ((container.resources.requests if container.resources else None) or {}).items():
            style.setdefault(name, is_binary(text))
    return style


def pod_requests(spec: PodSpec) -> dict[str, str]:
    """The effective request of one pod, in canonical quantity form, resources sorted by name."""
    amounts = pod_request_amounts(spec)
    style = _binary_style(spec)
    return {name: format_quantity(amounts[name], binary=style.get(name, False)) for name in sorted(amounts)}
