"""Optional imports, written once for every framework adapter: import the framework an
adapter joins, or fail at ``import humanwire.<adapter>`` with an ``ImportError`` that names
the extra to install (``import humanwire`` itself never loads a framework).

An adapter's ``__init__`` holds one :class:`Extra` and calls :meth:`Extra.require` before
it imports anything of its framework::

    INSTALL_HINT = Extra(
        "humanwire.openai_agents", "openai-agents", "the OpenAI Agents SDK (openai-agents)",
        modules=("agents",),
    ).require()
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from importlib import import_module

__all__ = ["Extra"]


@dataclass(frozen=True)
class Extra:
    """The framework an adapter needs: ``adapter`` (its module), the ``extra`` that
    installs it, what is missing (``needs``, as the hint says it), the ``modules`` whose
    import proves it is there, and a ``note`` added to the hint (a clash to avoid)."""

    adapter: str
    extra: str
    needs: str
    modules: tuple[str, ...]
    note: str = ""

    @property
    def hint(self) -> str:
        """What the ``ImportError`` says: what is missing and the command to install it."""
        note = f" ({self.note})" if self.note else ""
        return (
            f"{self.adapter} needs {self.needs}, which is not installed. Install the "
            f'extra: pip install "humanwire[{self.extra}]"{note}'
        )

    def available(self) -> bool:
        """Whether every module is installed (found, not imported)."""
        try:
            return all(importlib.util.find_spec(module) is not None for module in self.modules)
        except ModuleNotFoundError:  # a parent package is missing
            return False

    def require(self) -> str:
        """Import the modules (the framework's first import is paid here, once) or raise
        an ``ImportError`` with :attr:`hint`; returns the hint (the adapter's
        ``INSTALL_HINT``)."""
        for module in self.modules:
            try:
                import_module(module)
            except ImportError as exc:
                raise ImportError(self.hint, name=exc.name) from exc
        return self.hint
