"""People approve Claude Agent SDK tool calls, on the SDK's own seams: the
``can_use_tool`` permission callback and a ``PreToolUse`` hook, through one
:class:`HumanApprovals`.

- **In the run** (the default): before a gated call runs, an approval request goes out
  (``POST /approvals``: the tool name and its arguments) and the gate waits for the
  decision. Approved, the approval is consumed on the service for this call's action and
  the call is allowed; rejected or timed out, it is denied with the reason and the
  person's comment, which the model reads as the tool's error result.
- **Paused** (``pause=True``): the ``PreToolUse`` hook sends the request without waiting,
  saves the pause (the session id, the call) in a :class:`~humanwire._pauses.FileRecordStore`
  and answers ``defer``: the CLI ends the run (``terminal_reason == "tool_deferred"``)
  and the process may exit. Later, in any process with the same store, HOME and cwd (the
  CLI keeps the transcript under ``$HOME/.claude/projects``), :meth:`HumanApprovals.resume`
  or :meth:`HumanApprovals.resume_from_webhook` opens the session again
  (``resume=session_id``, no new prompt); the CLI offers the deferred call to the hook
  again, which allows or denies it with the person's decision.
- **Questions**: Claude Code's own ``AskUserQuestion`` tool, reaching ``can_use_tool``, is
  answered by a person (each question sent on the approver's channel, the reply given
  back as the tool's ``answers``).

**Keys.** Every request's Idempotency-Key is made of the session id, the tool use id and
the digest of the call's action: unique per session, bound to the action (a model or a
fake reusing ``toolu_1`` in another session, or for another action, is asked afresh).
``can_use_tool`` is not told the session: the gate's ``PreToolUse`` hook notes it for
each tool use (give the gate's :meth:`~HumanApprovals.hooks` too, or build the options
with :meth:`~HumanApprovals.options`); without it each call is keyed by a fresh id.

**Runs once, fails closed.** An approval is consumed on the service before the call is
allowed; used already, the call is denied ("was not run again"). A pause is claimed from
the store before it is resumed, so a second resume (a webhook delivered twice, another
process) finds nothing to resume. A request that cannot be sent (service stopped, bad
key) denies the call: ``<tool> was not run: its approval could not be requested``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookContext,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SdkMcpTool,
    ToolPermissionContext,
)

from humanwire._pauses import (
    RESUME_KEY,
    Answer,
    AnswerKind,
    FileRunStore,
    LazyApprover,
    PauseResumer,
    action_key,
    approver_source,
    ask_person,
    idempotency_key,
    metadata_value,
    pause_window,
    read_decision,
    reply_text,
    request_approval,
    resume_expired,
    resume_from_webhook,
    resume_once,
    settle_approval,
    unrequested_text,
)
from humanwire._tool_clients import ToolClients
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver
from humanwire.errors import HumanWireError
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, Event

if TYPE_CHECKING:
    from claude_agent_sdk.types import HookEvent, HookJSONOutput

    from humanwire._client import AsyncHumanWire

__all__ = [
    "ASK_USER_QUESTION",
    "CALL_KEY",
    "RESUME_CLAUDE",
    "SESSION_KEY",
    "DeferredCall",
    "HumanApprovals",
    "answer_for",
    "run_session",
]

RESUME_CLAUDE = "claude_agent_sdk"
"""A send's ``metadata[humanwire_resume]``: tells this adapter's deliveries from other
adapters' (each leaves the others' alone)."""
SESSION_KEY = "claude_session_id"
CALL_KEY = "claude_tool_use_id"
"""A send's metadata keys: the CLI session a resume opens again, the tool use."""
ASK_USER_QUESTION = "AskUserQuestion"
"""Claude Code's own tool for asking the user: answered by a person through the gate."""

PermissionResult = PermissionResultAllow | PermissionResultDeny
_HOOK_MARGIN = 30.0
"""Seconds a hook may run past the approval's own wait (the CLI's default is 60)."""


@dataclass(frozen=True)
class DeferredCall:
    """A call the ``PreToolUse`` hook deferred, as it is saved: the CLI session it
    belongs to, the tool use the CLI offers again on resume, and its approval request."""

    session_id: str
    tool_use_id: str
    tool_name: str
    arguments: dict[str, Any]
    interaction_id: str

    @property
    def kind(self) -> AnswerKind:
        """What it waits for (an :class:`~humanwire._pauses.Awaited`): an approval."""
        return "approval"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeferredCall:
        return cls(
            session_id=str(data["session_id"]),
            tool_use_id=str(data["tool_use_id"]),
            tool_name=str(data["tool_name"]),
            arguments=dict(data["arguments"]),
            interaction_id=str(data["interaction_id"]),
        )


def _short(tool_name: str) -> str:
    """``send_payment`` of ``mcp__<server>__send_payment``; other names as they are."""
    if tool_name.startswith("mcp__") and tool_name.count("__") >= 2:
        return tool_name.split("__", 2)[2]
    return tool_name


def _hook_output(decision: str, reason: str = "") -> HookJSONOutput:
    output: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason:
        output["permissionDecisionReason"] = reason
    return cast("HookJSONOutput", {"hookSpecificOutput": output})


def answer_for(question: Mapping[str, Any], reply: str) -> str:
    """An ``AskUserQuestion`` question's answer from a person's ``reply``: the label of
    the option it names (by number or by label, any case), else the reply as they wrote
    it (the model reads a free answer too)."""
    text = reply.strip()
    options = [
        str(o.get("label", "")) for o in question.get("options") or [] if isinstance(o, Mapping)
    ]
    picked: list[str] = []
    for part in re.split(r"\s*,\s*", text) if question.get("multiSelect") else [text]:
        if part.isdigit() and 1 <= int(part) <= len(options):
            picked.append(options[int(part) - 1])
            continue
        match = next((label for label in options if label.casefold() == part.casefold()), None)
        if match is None:
            return text
        picked.append(match)
    return ", ".join(picked) if picked else text


def _question_text(question: Mapping[str, Any]) -> str:
    lines = [f"An AI agent asks: {question.get('question', '')}"]
    options = [o for o in question.get("options") or [] if isinstance(o, Mapping)]
    for number, option in enumerate(options, 1):
        about = f" ({option['description']})" if option.get("description") else ""
        lines.append(f"{number}. {option.get('label', '')}{about}")
    if options:
        several = " (several: separate with commas)" if question.get("multiSelect") else ""
        lines.append(f"Reply with a number or your own answer{several}.")
    return "\n".join(lines)


class HumanApprovals(LazyApprover):
    """Asks a person before each call of ``tools`` (names, short or as the CLI lists them,
    or the tools themselves; ``None``: every call that reaches the gate) runs, through one
    :class:`~humanwire.approval.Approver` (give one, or its options: ``to``, ``channel``,
    ``wait_time``, ``follow_up_time``, ``on_timeout``, ``client``).

    ::

        gate = HumanApprovals(["send_payment"], to="+14155550123")
        options = gate.options(mcp_servers={"pay": pay_server})
        # can_use_tool=gate.can_use_tool and hooks=gate.hooks(), merged into the options

    ``when(name, arguments)`` narrows the gate. A call the gate does not gate is allowed
    (the gate is only asked about calls the CLI's own permissions did not settle).
    ``pause=True`` makes the ``PreToolUse`` hook defer each gated call and save the pause
    under ``store`` (a directory; default ``./humanwire-claude-pauses``); a resume in
    another process needs the same store. Approvals and questions that pause stay open
    ``window`` seconds (default: the approver's ``follow_up_time``, else an hour).
    ``questions=False`` leaves ``AskUserQuestion`` to the CLI's own permissions.
    """

    def __init__(
        self,
        tools: Iterable[str | SdkMcpTool[Any]] | None = None,
        approver: Approver | None = None,
        *,
        when: Callable[[str, dict[str, Any]], bool] | None = None,
        pause: bool = False,
        store: str | os.PathLike[str] | FileRunStore[DeferredCall] | None = None,
        window: float | None = None,
        questions: bool = True,
        **approver_options: Any,
    ) -> None:
        names = None if tools is None else {t if isinstance(t, str) else t.name for t in tools}
        if names is not None and not names:
            raise ValueError("tools: name at least one tool that needs approval, or None")
        self.tools = None if names is None else frozenset(names)
        self.when = when
        self.pause = pause
        self.questions = questions
        self._approver = approver_source(approver, **approver_options)
        self._clients: ToolClients | None = None
        self._window = window
        self._store_given = store
        self._store: FileRunStore[DeferredCall] | None = None
        # tool use id -> session id, noted by the hook for can_use_tool (told no session)
        self._sessions: dict[str, str] = {}
        # (session id, tool use id) -> (allowed, reason), for a resumed session's hook
        self._decided: dict[tuple[str, str], tuple[bool, str]] = {}
        self.decisions: list[ApprovalDecision] = []
        """Every decision this gate acted on, in order (for logs and tests)."""

    # -- who is asked, where pauses wait ------------------------------------------------
    @property
    def clients(self) -> ToolClients:
        if self._clients is None:
            self._clients = ToolClients.of(self.approver)
        return self._clients

    @property
    def window(self) -> float:
        return pause_window(self.approver, self._window)

    @property
    def store(self) -> FileRunStore[DeferredCall]:
        """Where deferred calls wait, by session id (made on first use)."""
        if self._store is None:
            given = self._store_given
            if isinstance(given, FileRunStore):
                self._store = given
            else:
                self._store = FileRunStore(
                    given or "humanwire-claude-pauses",
                    read=DeferredCall.from_dict,
                    key_of=lambda call: call.session_id,
                )
        return self._store

    def gates(self, tool_name: str, arguments: dict[str, Any]) -> bool:
        """Whether this call needs a person's approval."""
        if tool_name == ASK_USER_QUESTION and self.questions:
            return False  # answered, not approved
        if self.tools is not None and not ({tool_name, _short(tool_name)} & self.tools):
            return False
        return self.when is None or bool(self.when(tool_name, arguments))

    # -- the SDK's seams ------------------------------------------------------------------
    def hooks(self) -> dict[HookEvent, list[HookMatcher]]:
        """``ClaudeAgentOptions(hooks=...)``: the gate's ``PreToolUse`` hook (it notes each
        call's session for ``can_use_tool``; with ``pause=True`` it defers gated calls)."""
        timeout = self.approver.wait_time + _HOOK_MARGIN
        return {
            "PreToolUse": [HookMatcher(matcher=None, hooks=[self.pre_tool_use], timeout=timeout)]
        }

    def options(
        self, options: ClaudeAgentOptions | None = None, **fields: Any
    ) -> ClaudeAgentOptions:
        """``options`` (or ``ClaudeAgentOptions(**fields)``) with this gate as its
        ``can_use_tool`` and its hook added to the options' own hooks."""
        base = options if options is not None else ClaudeAgentOptions(**fields)
        hooks: dict[Any, list[HookMatcher]] = {k: list(v) for k, v in (base.hooks or {}).items()}
        for event, matchers in self.hooks().items():
            hooks[event] = [*matchers, *hooks.get(event, [])]
        return dataclasses.replace(base, can_use_tool=self.can_use_tool, hooks=hooks)

    async def can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        """The SDK's ``CanUseTool``: a person approves a gated call, answers an
        ``AskUserQuestion``; other calls are allowed."""
        tool_use_id = str(getattr(context, "tool_use_id", None) or "")
        session_id = self._sessions.pop(tool_use_id, "") or f"call-{uuid.uuid4().hex}"
        if tool_name == ASK_USER_QUESTION and self.questions:
            return await self._answer_questions(session_id, tool_use_id, tool_input)
        if not self.gates(tool_name, tool_input):
            return PermissionResultAllow(updated_input=tool_input)
        allowed, reason = await self._decide(session_id, tool_use_id, tool_name, tool_input)
        if allowed:
            return PermissionResultAllow(updated_input=tool_input)
        return PermissionResultDeny(message=reason)

    async def pre_tool_use(
        self, input_data: Any, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        """The SDK's ``PreToolUse`` hook: notes the call's session; with ``pause=True``
        defers a gated call (a resumed session's call gets the person's decision);
        otherwise leaves the decision to ``can_use_tool``."""
        data = dict(input_data)
        session_id = str(data.get("session_id") or "")
        call_id = str(tool_use_id or data.get("tool_use_id") or "")
        name = str(data.get("tool_name") or "")
        arguments = dict(data.get("tool_input") or {})
        decided = self._decided.pop((session_id, call_id), None)
        if decided is not None:  # a resumed session's deferred call: settled already
            allowed, reason = decided
            return _hook_output("allow" if allowed else "deny", reason)
        if session_id and call_id:
            self._sessions[call_id] = session_id
        if not self.pause or not self.gates(name, arguments):
            return cast("HookJSONOutput", {})
        return await self._defer(session_id, call_id, name, arguments)

    # -- in the run -----------------------------------------------------------------------
    def _key(self, session_id: str, call_id: str, request: ApprovalRequest) -> str:
        return action_key("approval", RESUME_CLAUDE, session_id, call_id, request=request)

    def _metadata(self, session_id: str, call_id: str) -> dict[str, str]:
        return {
            RESUME_KEY: RESUME_CLAUDE,
            SESSION_KEY: metadata_value("session id", session_id),
            CALL_KEY: metadata_value("tool use id", call_id or "none"),
        }

    async def _decide(
        self, session_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> tuple[bool, str]:
        """Ask and wait in the run: whether the call may run, and else why not."""
        request = ApprovalRequest(name, arguments)
        try:
            approver = self.approver
            client = await self.clients.get()
            kwargs = approver.approval_kwargs(
                request,
                idempotency_key=self._key(session_id, call_id, request),
                metadata=self._metadata(session_id, call_id),
            )
            response = await client.approvals.create(**kwargs)
            decision = await approver.adecided(response, client)
        except HumanWireError as exc:
            # Fail closed: an approval nobody could be asked for is no approval.
            return await self._apply(name, arguments, exc)
        return await self._apply(name, arguments, decision)

    async def _apply(
        self, name: str, arguments: dict[str, Any], decision: ApprovalDecision | HumanWireError
    ) -> tuple[bool, str]:
        """Consume an approval for this call's action (once, right before it runs);
        whether it may run, and else the reason the model reads."""
        used, refusal = await settle_approval(
            self.clients.get, decision, ApprovalRequest(name, arguments)
        )
        if used is None:
            return False, refusal
        self.decisions.append(used)
        return used.approved, refusal

    async def _answer_questions(
        self, session_id: str, call_id: str, tool_input: dict[str, Any]
    ) -> PermissionResult:
        """``AskUserQuestion``: each question sent to the person, the replies its
        ``answers``; nobody answering in time denies it with the no-response text."""
        questions = [q for q in tool_input.get("questions") or [] if isinstance(q, Mapping)]
        try:
            client = await self.clients.get()
            replies = await asyncio.gather(
                *(
                    self._ask(client, session_id, call_id, index, question)
                    for index, question in enumerate(questions)
                )
            )
        except HumanWireError as exc:
            return PermissionResultDeny(
                message=f"humanwire: the question could not be asked ({exc})"
            )
        if any(reply is None for reply in replies):
            return PermissionResultDeny(message=DEFAULT_NO_RESPONSE_TEMPLATE)
        answers = {
            str(question.get("question", "")): answer_for(question, str(reply))
            for question, reply in zip(questions, replies, strict=True)
        }
        return PermissionResultAllow(updated_input={**tool_input, "answers": answers})

    async def _ask(
        self,
        client: AsyncHumanWire,
        session_id: str,
        call_id: str,
        index: int,
        question: Mapping[str, Any],
    ) -> str | None:
        text = _question_text(question)
        answer = await ask_person(
            self,
            "question",
            text,
            key=idempotency_key("question", RESUME_CLAUDE, session_id, call_id, index, text),
            metadata=self._metadata(session_id, call_id),
            timeout=None,
            window=self.approver.wait_time,
            client=client,
        )
        if isinstance(answer, HumanWireError):
            raise answer
        if answer is None or answer == DEFAULT_NO_RESPONSE_TEMPLATE:
            return None
        return str(answer).removeprefix(reply_text(""))

    # -- paused ---------------------------------------------------------------------------
    async def _defer(
        self, session_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> HookJSONOutput:
        """Send the approval request without waiting, save the pause, defer the call."""
        request = ApprovalRequest(name, arguments)
        try:
            approval = await request_approval(
                self,
                request,
                key=self._key(session_id, call_id, request),
                metadata=self._metadata(session_id, call_id),
            )
        except HumanWireError as exc:
            return _hook_output("deny", unrequested_text(name, exc))
        self.store.save(DeferredCall(session_id, call_id, name, arguments, approval.interaction_id))
        return _hook_output("defer", f"humanwire: waiting for a person's approval of {name}")

    def paused(self, session_id: str) -> DeferredCall | None:
        """The call ``session_id`` deferred (saved, not resumed yet), or ``None``."""
        return self.store.load(session_id)

    async def resume(
        self, session_id: str, options: ClaudeAgentOptions, *, timeout: float | None = 0
    ) -> ResultMessage | None:
        """Open the paused ``session_id`` again once its approval is decided (waiting at
        most ``timeout`` seconds; ``0``: look once; ``None``: until it is decided or
        closes) and run it on: the CLI offers the deferred call to the hook, which allows
        or denies it. ``options`` as the session was started with (same cwd, same HOME);
        the gate's hooks are added. ``None`` when nothing is paused (resumed already) or
        the approval is still open."""
        call = self.paused(session_id)
        if call is None:
            return None
        client = await self.clients.get()
        decision = await read_decision(client, call.interaction_id, timeout=timeout)
        if decision is None:
            return None
        return await self._resume_call(call, decision, options)

    async def resume_from_webhook(
        self,
        options: ClaudeAgentOptions,
        body: bytes | str | Mapping[str, Any] | Event,
        headers: Mapping[str, str] | None = None,
        *,
        secret: str | None = None,
    ) -> ResultMessage | None:
        """Resume the session an ``approval.decided`` delivery answers (verified with
        ``secret`` first); the decision is read from the service. ``None`` for another
        adapter's delivery, a pause not saved, or one resumed already."""
        return await resume_from_webhook(self._resumer(options), body, headers, secret=secret)

    async def resume_expired(self, options: ClaudeAgentOptions) -> list[ResultMessage]:
        """Resume every saved pause whose approval is decided or closed (a webhook
        missed), looking once at each. Run it from a scheduler."""
        return await resume_expired(self._resumer(options))

    def _resumer(self, options: ClaudeAgentOptions) -> PauseResumer[DeferredCall, ResultMessage]:
        async def resume(call: DeferredCall, answers: dict[str, Answer]) -> ResultMessage | None:
            decision = answers.get(call.tool_use_id)
            if not isinstance(decision, ApprovalDecision):
                return None
            return await self._resume_call(call, decision, options)

        return PauseResumer(
            framework=RESUME_CLAUDE,
            pending=lambda call: {call.tool_use_id: call},
            resume=resume,
            client=self.clients.get,
            load=self.store.load,
            keys=self.store.keys,
            pause_key=SESSION_KEY,
            call_key=CALL_KEY,
        )

    async def _resume_call(
        self, call: DeferredCall, decision: ApprovalDecision, options: ClaudeAgentOptions
    ) -> ResultMessage | None:
        async def run_on(claimed: DeferredCall) -> ResultMessage | None:
            # Once per deferred call, in any process sharing the store: a session whose
            # call was settled has nothing left to run, and the CLI, resumed with no
            # prompt, would wait for one.
            if not await self.store.consume(claimed.interaction_id):
                return None
            settled = await self._apply(claimed.tool_name, claimed.arguments, decision)
            key = (claimed.session_id, claimed.tool_use_id)
            self._decided[key] = settled
            try:
                resumed = dataclasses.replace(options, resume=claimed.session_id)
                return await run_session(self.options(resumed))
            finally:
                self._decided.pop(key, None)

        return await resume_once(self.store, call.session_id, run_on, expected=call)


async def run_session(
    options: ClaudeAgentOptions, prompt: str | None = None
) -> ResultMessage | None:
    """Run one turn of a ``ClaudeSDKClient`` on ``options`` (``prompt`` sent first; none
    for a resumed session, which goes on from its deferred call) and return its
    ``ResultMessage``."""
    result: ResultMessage | None = None
    async with ClaudeSDKClient(options=options) as client:
        if prompt is not None:
            await client.query(prompt)
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                result = message
    return result
