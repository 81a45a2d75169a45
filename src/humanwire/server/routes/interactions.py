"""``GET /interactions/{interactionId}/status`` (with the ``?wait=`` long-poll) and
``POST /interactions/{interactionId}/cancel``."""

from __future__ import annotations

from pydantic import TypeAdapter

from humanwire.types import InteractionStatus

from ._api import ApiCall, Operation, PathParam, Payload, QueryParam, named_in_path, query_wait

__all__ = ["operations"]


async def _status(call: ApiCall) -> Payload:
    wait = query_wait(call)
    return await call.engine.sends.interaction_status(
        call.account, call.path("interactionId"), wait, call.named
    )


async def _cancel(call: ApiCall) -> Payload:
    return await call.engine.interactions.cancel(call.account, call.path("interactionId"))


def operations() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/interactions/{interactionId}/status",
            _status,
            operation_id="getInteractionStatus",
            summary="Status of an interaction",
            description="`result` (the event that reported the response) once it completed "
            "with one. `?wait=N` holds until the status changes or N seconds pass.",
            tag="interactions",
            response=TypeAdapter(InteractionStatus),
            errors=(404,),
            path_params=(PathParam("interactionId", "Returned by an earlier request."),),
            names=named_in_path,
            query=(
                QueryParam(
                    "wait",
                    "Seconds to hold for a change (0 to 60; 0 holds nothing).",
                    {"type": "number", "minimum": 0, "maximum": 60},
                ),
            ),
        ),
        Operation(
            "POST",
            "/interactions/{interactionId}/cancel",
            _cancel,
            operation_id="cancelInteraction",
            summary="End a pending interaction",
            description="Stops listening for an answer now: the interaction ends without a "
            "response (an approval's `onTimeout` does not apply). Its status is returned; an "
            "ended interaction is returned as it is. 409 for a call under way.",
            tag="interactions",
            response=TypeAdapter(InteractionStatus),
            errors=(404, 409),
            path_params=(PathParam("interactionId", "Returned by an earlier request."),),
            names=named_in_path,
        ),
    ]
