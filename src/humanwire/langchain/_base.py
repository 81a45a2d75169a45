"""What every humanwire tool shares: clients, result format, error mapping, windows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.tools import BaseTool, ToolException
from pydantic import Field, ValidationError, field_validator

from humanwire._tooling import Operation
from humanwire.approval import check_follow_up_time, check_wait_time
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["HumanWireBaseTool", "is_async_client", "tool_error"]

DEFAULT_WAIT_TIME = 300.0
"""How long a tool holds the request for the human's answer unless told otherwise."""


def is_async_client(client: object) -> bool:
    from humanwire._client import AsyncHumanWire

    return isinstance(client, AsyncHumanWire)


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


class HumanWireBaseTool(BaseTool):
    """Base of the humanwire tools.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire``; the other one (or both)
    is built from the environment (``HUMANWIRE_API_KEY``, ``HUMANWIRE_BASE_URL``; the
    embedded service otherwise) the first time it is needed. LangChain's ``metadata=``
    (given to callbacks) is also every send's metadata on the service: string keys and
    values within docs/design.md's limits, echoed on the status and events.
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

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        if self.client is not None and is_async_client(self.client):
            if self.async_client is None:
                self.async_client = self.client
            self.client = None

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

    def send_metadata(self) -> dict[str, Any]:
        """``{"metadata": …}`` for a send when the tool has LangChain's ``metadata`` (also
        the interaction's metadata on the service: string keys and values, docs/design.md
        "Metadata"), else nothing."""
        return {"metadata": dict(self.metadata)} if self.metadata else {}

    # -- calling the service -----------------------------------------------------------------
    def _operation(self, *args: Any, **arguments: Any) -> Operation[Any, Any]:
        """The client call for these arguments and how its response becomes the
        ``(text, artifact)`` result: written once, run by ``_run`` and ``_arun``."""
        raise NotImplementedError

    def _run(self, **arguments: Any) -> Any:
        client = self.sync_client()
        try:
            return self._operation(**arguments).run(client)
        except (HumanWireError, ValidationError) as exc:
            # A service failure is an error ToolMessage; a human who does not answer is not.
            raise tool_error(exc) from exc

    async def _arun(self, **arguments: Any) -> Any:
        client = self.aclient()
        try:
            return await self._operation(**arguments).arun(client)
        except (HumanWireError, ValidationError) as exc:
            raise tool_error(exc) from exc


class WindowedTool(HumanWireBaseTool):
    """A tool that waits for an answer: ``wait_time`` and ``follow_up_time`` are set at
    construction and checked against the service's bounds (1-600 s, 1-60000 s)."""

    wait_time: float | None = DEFAULT_WAIT_TIME
    follow_up_time: float | None = None

    @field_validator("wait_time")
    @classmethod
    def _check_wait_time(cls, value: float | None) -> float | None:
        return check_wait_time(value)

    @field_validator("follow_up_time")
    @classmethod
    def _check_follow_up_time(cls, value: float | None) -> float | None:
        return check_follow_up_time(value)

    def windows(self) -> dict[str, float]:
        """The window arguments for the client, unset ones left out."""
        windows: dict[str, float] = {}
        if self.wait_time is not None:
            windows["wait_time"] = self.wait_time
        if self.follow_up_time is not None:
            windows["follow_up_time"] = self.follow_up_time
        return windows
