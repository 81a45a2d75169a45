"""The service's share of a call's turn, turn by turn (``[voice] mode = "gather"``) and
over ConversationRelay (``"relay"``), with a chat model that streams at a fixed pace
(``humanwire.testing.voice.PacedChatModel``: first token after ``--first-token`` s, then
one token every ``--per-token`` s; the answer is three sentences in the turn's JSON).

The service runs in-process (``ServiceRunner``: uvicorn on loopback, SQLite), its REST
side on the Twilio contract fake (whose callee keeps ringing); this script plays Twilio's
side of each call by hand: the signed TwiML request of an answered call, then

- gather: the signed ``<Gather>`` result (``SpeechResult``) at t0, the TwiML answer at
  t1. Time to first word = t1 − t0 (the carrier speaks once it has the document); the
  service's share = t1 − t0 − the model's whole answer.
- relay: the signed WebSocket, ``setup``, then a final ``prompt`` at t0 and the first
  ``text`` token at t1. Time to first word = t1 − t0; the service's share = t1 − t0 −
  the model's time to the token carrying the first words (the JSON's ``{"text":``
  comes first).

Then ``--calls`` (100) relay calls at once, each answering ``--turns`` turns, each answer
``0..--think`` s (uniform) after the agent's turn (``--think 0``: all in lockstep, the
worst case): p50 / p99 of the service's share under that load. Both the service and
this load generator share one process (and the GIL), so the figures are an upper bound.

Run::

    python benchmarks/bench_voice.py
    python benchmarks/bench_voice.py --calls 100 --turns 3 --first-token 0.3 --per-token 0.02
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import httpx
from langchain_core.messages import BaseMessage
from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]
from websockets.asyncio.client import ClientConnection, connect

from humanwire import HumanWire
from humanwire.server.config import TwilioConfig
from humanwire.server.runtime.runner import ServiceRunner, tune_gc_for_service
from humanwire.server.voice import SpokenStream
from humanwire.testing.service import fast_config
from humanwire.testing.twilio import CalleeScript, FakeTwilio, TwilioFakeServer
from humanwire.testing.voice import PacedChatModel, tokens

SENDER = "+14155550142"
ANSWER = (
    '{"text": "Thanks, that helps a lot. I have you down for the morning shift on '
    'Friday, from eight until two. Is there anything you need from us before then?", '
    '"action": "say"}'
)


def reply(messages: Sequence[BaseMessage]) -> str:
    system = str(messages[0].content)
    return "A short summary." if "summarise" in system else ANSWER


def first_words_after(model: PacedChatModel) -> float:
    """The model's own time to the token that carries the answer's first words."""
    spoken = SpokenStream()
    for index, token in enumerate(tokens(ANSWER)):
        if spoken.feed(token):
            return model.first_token + index * model.per_token
    raise AssertionError("no words")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * share), len(ordered) - 1)]


class Bench:
    def __init__(self, mode: str, model: PacedChatModel, fake: TwilioFakeServer) -> None:
        self.fake = fake.fake
        config = replace(
            fast_config(Path(tempfile.mkdtemp()) / "bench.db"),
            twilio=TwilioConfig(
                account_sid=self.fake.account_sid,
                auth_token=self.fake.auth_token,
                api_base=fake.base_url,
                sms_from=SENDER,
            ),
            voice_chat_model=model,
            voice_mode=mode,
            voice_relay_silence=600.0,
            phone_call_limit=3600.0,
        )
        self.runner = ServiceRunner(config, "127.0.0.1", 0)
        self.runner.start()
        self.client = HumanWire(api_key=self.runner.create_account("bench"), base_url=self.base)
        self.validator = RequestValidator(self.fake.auth_token)
        self.http: httpx.AsyncClient | None = None

    @property
    def base(self) -> str:
        return self.runner.base_url

    def stop(self) -> None:
        self.client.close()
        self.runner.stop()

    def call(self) -> tuple[str, str]:
        """A placed call: (interaction id, the call sid this script answers it as)."""
        human = "+1202555" + f"{secrets.randbelow(10_000):04d}"
        self.fake.callee(human, CalleeScript(ring_seconds=3600))
        # each its own text: the same text to many numbers is what the spam guard stops
        prompt = f"Confirm the Friday shift (ref {secrets.token_hex(4)})."
        created = self.client.calls.create(to=human, prompt=prompt)
        return created.interaction_id, "CA" + secrets.token_hex(16)

    def signed(self, url: str, params: dict[str, str]) -> dict[str, str]:
        return {"X-Twilio-Signature": self.validator.compute_signature(url, params)}

    async def post(self, http: httpx.AsyncClient, url: str, params: dict[str, str]) -> str:
        response = await http.post(url, data=params, headers=self.signed(url, params))
        response.raise_for_status()
        return response.text

    def params(self, sid: str, **more: str) -> dict[str, str]:
        return {
            "CallSid": sid,
            "AccountSid": self.fake.account_sid,
            "CallStatus": "in-progress",
            "Direction": "outbound-api",
            **more,
        }

    # -- gather -------------------------------------------------------------------------
    async def gather_turns(self, turns: int) -> list[float]:
        interaction, sid = self.call()
        voice = f"{self.base}/providers/twilio/voice?interaction={interaction}"
        times = []
        async with httpx.AsyncClient(timeout=60) as http:
            await self.post(http, voice, self.params(sid, AnsweredBy="human"))
            for turn in range(1, turns + 1):
                url = f"{voice}&turn={turn}"
                start = time.perf_counter()
                await self.post(http, url, self.params(sid, SpeechResult="Yes, Friday is fine"))
                times.append(time.perf_counter() - start)
        return times

    # -- relay --------------------------------------------------------------------------
    async def relay_turns(
        self,
        turns: int,
        call: tuple[str, str] | None = None,
        think: float = 0.0,
        ready: asyncio.Barrier | None = None,
    ) -> list[float]:
        """The first-token times of ``turns`` turns; with ``ready``, every call is
        connected and past its opening before any is timed."""
        interaction, sid = call or self.call()
        voice = f"{self.base}/providers/twilio/voice?interaction={interaction}"
        if self.http is None:
            self.http = httpx.AsyncClient(timeout=60)
        await self.post(self.http, voice, self.params(sid, AnsweredBy="human"))
        url = self.base.replace("http://", "ws://") + "/providers/twilio/relay"
        url += f"?interaction={interaction}"
        times = []
        async with connect(url, additional_headers=self.signed(url, {})) as socket:
            await socket.send(json.dumps({"type": "setup", "callSid": sid}))
            await until_last(socket)  # the opening
            if ready is not None:
                await ready.wait()
            for _ in range(turns):
                # a person pauses before answering: calls do not answer in lockstep
                await asyncio.sleep(random.uniform(0, think))
                prompt = {"type": "prompt", "voicePrompt": "Yes, Friday is fine", "last": True}
                start = time.perf_counter()
                await socket.send(json.dumps(prompt))
                first = await next_token(socket)
                times.append(first - start)
                await until_last(socket)
        return times


async def next_token(socket: ClientConnection) -> float:
    while True:
        message = json.loads(await socket.recv())
        if message["type"] == "text" and message["token"]:
            return time.perf_counter()


async def until_last(socket: ClientConnection) -> None:
    while True:
        message = json.loads(await socket.recv())
        if message["type"] == "text" and message["last"]:
            return


def ms(value: float) -> str:
    return f"{value * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first-token", type=float, default=0.3)
    parser.add_argument("--per-token", type=float, default=0.02)
    parser.add_argument("--turns", type=int, default=5, help="turns per call")
    parser.add_argument("--calls", type=int, default=100, help="concurrent relay calls")
    parser.add_argument(
        "--tune-gc",
        action="store_true",
        help="the collector as `humanwire serve` sets it (tune_gc_for_service)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="under load, each answer comes 0..THINK s after the agent's turn "
        "(0: all calls answer at once, in lockstep)",
    )
    args = parser.parse_args()
    model = PacedChatModel(reply, first_token=args.first_token, per_token=args.per_token)
    whole = model.duration(ANSWER)
    first = first_words_after(model)
    print(
        f"model: first token {ms(args.first_token)}, then {ms(args.per_token)} a token; "
        f"a three-sentence answer: {len(tokens(ANSWER))} tokens, whole {ms(whole)}, "
        f"first words after {ms(first)}"
    )
    with TwilioFakeServer(FakeTwilio()) as fake:
        fake.fake.add_number(SENDER)
        results: dict[str, list[float]] = {}
        for mode in ("gather", "relay"):
            bench = Bench(mode, model, fake)
            try:
                turns = bench.gather_turns if mode == "gather" else bench.relay_turns
                results[mode] = asyncio.run(turns(args.turns))
            finally:
                bench.stop()
        gather = statistics.median(results["gather"])
        relay = statistics.median(results["relay"])
        print(f"gather: time to first word {ms(gather)}; service's share {ms(gather - whole)}")
        print(f"relay:  time to first word {ms(relay)}; service's share {ms(relay - first)}")
        print(f"relay / gather time to first word: {relay / gather:.2f}")

        bench = Bench("relay", model, fake)
        try:
            calls = [bench.call() for _ in range(args.calls)]  # placed before the clock runs
            if args.tune_gc:
                tune_gc_for_service()

            async def many() -> list[float]:
                ready = asyncio.Barrier(len(calls))
                runs = await asyncio.gather(
                    *(bench.relay_turns(args.turns, c, args.think, ready) for c in calls)
                )
                return [t - first for run in runs for t in run]

            started = time.perf_counter()
            shares = asyncio.run(many())
            took = time.perf_counter() - started
        finally:
            bench.stop()
        print(
            f"{args.calls} concurrent relay calls, {args.turns} turns each, answers "
            f"0..{args.think:g} s after each turn ({took:.1f} s): "
            f"service's share p50 {ms(percentile(shares, 0.5))}, "
            f"p99 {ms(percentile(shares, 0.99))}, max {ms(max(shares))}"
        )


if __name__ == "__main__":
    main()
