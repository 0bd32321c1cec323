"""Attribute-style lookup shared by the hardware and model zoos (``Hardware.A100``)."""
from __future__ import annotations


class ZooMeta(type):
    """``Cls.NAME`` calls ``Cls.get("NAME")``; ``dir(Cls)`` lists the zoo."""

    def __getattr__(cls, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return cls.get(name)
        except KeyError as e:  # so hasattr() and tab completion behave
            raise AttributeError(str(e)) from None

    def __dir__(cls):
        return sorted(set(super().__dir__()) | set(cls.names()))


def normalize_key(name) -> str:
    """Lookup form of a zoo name: case, dashes, dots and spaces do not matter."""
    return str(name).lower().replace("-", "_").replace(" ", "_").replace(".", "")
