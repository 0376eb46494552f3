"""The verbs of a facade (`CallCenter`, `Operations`, `ShipmentQueue`, `TaskQueue`): each is
the method of the part that owns it, looked up on the part at each call, so that the
signature is written once, on the part, and a subclass of the facade may still override
a verb as any method (`operations.system.RecordedShipmentQueue.fail`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, overload


class Verb[**P, R]:
    """`make_available = Verb("availability", Availability.make_available)`: the facade's
    `make_available` is its part `availability`'s."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]):
        self.part, self.name = part, method.__name__

    @overload
    def __get__(self, facade: None, owner: type) -> Verb[P, R]: ...

    @overload
    def __get__(self, facade: object, owner: type) -> Callable[P, R]: ...

    def __get__(self, facade: object | None, owner: type) -> Verb[P, R] | Callable[P, R]:
        if facade is None:
            return self
        return getattr(getattr(facade, self.part), self.name)
