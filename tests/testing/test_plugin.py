"""The plugin, as a user's test suite sees it (run by ``pytester``)."""

from __future__ import annotations

import pytest


def test_plugin_fixtures_in_a_users_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_agent_gets_an_answer(humanwire_client, human):
            human.reply("yes")
            result = humanwire_client.messages.sms(
                message="Go?", to="+12025550100", wait_time=5
            )
            assert result.response == "Human response: yes"

        def test_each_test_has_its_own_account(humanwire_client, human, humanwire_service):
            assert human.deliveries() == []
            assert humanwire_service.base_url.startswith("http://127.0.0.1:")
        """
    )
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(passed=2)
