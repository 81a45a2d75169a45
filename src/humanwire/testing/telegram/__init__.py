"""A contract fake of Telegram's Bot API, for testing a humanwire deployment (or anything
that talks to a Telegram bot's API and takes its webhook updates) offline.

::

    from humanwire.testing.telegram import TelegramFakeServer

    with TelegramFakeServer() as telegram:      # a local Telegram on a free loopback port
        fake = telegram.fake                    # one bot: fake.token, fake.username
        own = fake.add_bot("acme_bot")          # more: each its token, webhook, chats
        ada = fake.add_person("Ada")            # a chat that pressed Start already
        # point the code under test at it: api_base = telegram.api_base,
        # bot_token = fake.token; it calls setWebhook with its URL and secret
        ...
        [asked] = fake.sent_to(ada)
        fake.send(ada, "yes", reply_to=asked)   # Ada answers (a reply to the message)
        fake.click(asked, "hw:…:approve")       # or presses an inline button
        fake.wait_idle()
        assert fake.violations == []            # the code never sent Telegram a bad request

**What it checks.** Every Bot API request against the published description
(``telegram_bot_api.subset.json``, from PaulSonOfLars/telegram-bot-api-spec, MIT, licence
beside it) and the limits it states in prose (``spec.PROSE_LIMITS``); updates go to the
webhook with ``X-Telegram-Bot-Api-Secret-Token`` and are retried until answered 2xx
(``fake.FakeTelegram``).
"""

from .fake import (
    FakeBot,
    FakeTelegram,
    FakeTelegramChat,
    FakeTelegramMessage,
    FakeUpdateDelivery,
    Violation,
)
from .server import TelegramFakeServer
from .spec import BotApiSpec, SpecViolation, load_spec

__all__ = [
    "BotApiSpec",
    "FakeBot",
    "FakeTelegram",
    "FakeTelegramChat",
    "FakeTelegramMessage",
    "FakeUpdateDelivery",
    "SpecViolation",
    "TelegramFakeServer",
    "Violation",
    "load_spec",
]
