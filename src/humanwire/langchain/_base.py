"""The base of the humanwire LangChain tools: a kind of ``humanwire._tool_kinds`` (its
options, name, description, argument schema and client call) joined to LangChain's
``BaseTool``; clients, the ``(text, artifact)`` result and the error mapping."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from humanwire._tool_kinds import DEFAULT_WAIT_TIME, ModelToolCore
from humanwire._tooling import Operation
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["DEFAULT_WAIT_TIME", "HumanWireTool", "tool_error"]


def validation_error_text(exc: Exception) -> str:
    """What the model reads when its arguments do not fit the tool's schema."""
    return str(tool_error(exc))


def tool_error(exc: Exception) -> ToolException:
    """A service (or argument) failure as the ``ToolException`` the agent sees."""
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        message = f"{where}: {first['msg']}" if where else first["msg"]
        return ToolException(f"humanwire: invalid arguments: {message}")
    return ToolException(f"humanwire: {exc}")


def _pydantic_errors(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` raising a pydantic ``ValidationError`` for a bad option, as any LangChain
    tool (a pydantic model) does, where the kind raises ``ValueError``."""

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **options: Any) -> None:
        try:
            init(self, *args, **options)
        except ValidationError:
            raise
        except ValueError as exc:
            error: Any = {"type": "value_error", "loc": (), "input": options, "ctx": {"error": exc}}
            raise ValidationError.from_exception_data(type(self).__name__, [error]) from None

    checked.__dict__["_pydantic_errors"] = True
    return checked


class HumanWireTool(ModelToolCore, BaseTool):
    """Base of the humanwire tools: a LangChain ``BaseTool`` whose call is one
    :class:`~humanwire._tooling.Operation`, run on the sync client for ``invoke`` and on
    the async one for ``ainvoke`` (a real ``_arun``, not a thread).

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire``; the other one (or both)
    is built from the environment (``HUMANWIRE_API_KEY``, ``HUMANWIRE_BASE_URL``; the
    embedded service otherwise) the first time it is needed. LangChain's ``metadata=``
    (given to callbacks) is also every send's metadata on the service: string keys and
    values within docs/design.md's limits, echoed on the status and events.

    A LangChain tool is a pydantic model; the kind's settings (recipient, windows,
    form...) are plain attributes beside its fields.
    """

    client: Any = Field(default=None, exclude=True, repr=False)
    """A ``HumanWire`` or ``AsyncHumanWire``; built from the environment when left out."""
    async_client: Any = Field(default=None, exclude=True, repr=False)
    """An ``AsyncHumanWire`` for ``ainvoke`` when ``client`` is the sync one."""

    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool | str | Callable[[ToolException], str] | None = True
    # Arguments a model got wrong come back to it as an error message saying what to fix,
    # instead of an exception ending the run.
    handle_validation_error: bool | str | Callable[..., str] | None = validation_error_text

    if not TYPE_CHECKING:
        # ToolCore's attributes: plain ones, not pydantic fields.
        args_model: ClassVar[Any]
        clients: ClassVar[Any]
        send_metadata: ClassVar[Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls.__init__, "_pydantic_errors", False):
            cls.__init__ = _pydantic_errors(cls.__init__)  # type: ignore[method-assign]

    def __init__(
        self, *, name: str, description: str, args_model: type[BaseModel], **options: Any
    ) -> None:
        options.setdefault("args_schema", args_model)
        super().__init__(name=name, description=description, args_model=args_model, **options)
        # ToolCore took these; LangChain's fields show them too, and LangChain's metadata
        # (for callbacks) is every send's metadata (see _metadata).
        self.client, self.async_client = self.clients.client, self.clients.async_client
        self.metadata = dict(self.send_metadata) or None

    async def arun(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """LangChain's ``arun`` (callbacks, errors, the ToolMessage), not ToolCore's."""
        return await BaseTool.arun(self, *args, **kwargs)

    # -- clients ---------------------------------------------------------------------------
    @property
    def configured_client(self) -> HumanWire | AsyncHumanWire | None:
        """Whichever client was given, to ask it about its service before any request."""
        return cast("HumanWire | AsyncHumanWire | None", self.client or self.async_client)

    def sync_client(self) -> HumanWire:
        """The client given, else one on the async client's service and account."""
        from humanwire._client import sync_client_for

        client = sync_client_for(
            cast("HumanWire | None", self.client), cast("AsyncHumanWire | None", self.async_client)
        )
        self.client = client
        return client

    def aclient(self) -> AsyncHumanWire:
        from humanwire._client import async_client_for

        async_client = async_client_for(
            cast("HumanWire | None", self.client), cast("AsyncHumanWire | None", self.async_client)
        )
        self.async_client = async_client
        return async_client

    def _metadata(self) -> dict[str, Any]:
        # LangChain's metadata as it is now (a user may set it after construction).
        return {"metadata": dict(self.metadata)} if self.metadata else {}

    # -- calling the service -----------------------------------------------------------------
    def _call(self, arguments: dict[str, Any]) -> Operation[Any, tuple[str, Any]]:
        """The kind's client call for ``arguments`` (already checked against
        ``args_schema`` by LangChain), its result ``(text, typed response)``."""
        operation = self._operation(self.args_model.model_validate(arguments))
        finish = operation.finish
        return Operation(operation.send, lambda response: (finish(response), response))

    def _run(self, **arguments: Any) -> Any:
        try:
            return self._call(arguments).run(self.sync_client())
        except (HumanWireError, ValidationError) as exc:
            # A service failure is an error ToolMessage; a human who does not answer is not.
            raise tool_error(exc) from exc

    async def _arun(self, **arguments: Any) -> Any:
        try:
            return await self._call(arguments).arun(self.aclient())
        except (HumanWireError, ValidationError) as exc:
            raise tool_error(exc) from exc
