"""The plugin, as a user's test suite sees it (run by ``pytester``)."""

from __future__ import annotations

import pytest

# In a process of its own: pytester's in-process run drops, when it ends, every module
# it imported first, and modules imported lazily by the service (httpcore's backends,
# cryptography's Python half beside its compiled one) then come back as new classes
# that the old ones do not match: later tests in the same worker failed with
# "Expected instance of hashes.HashAlgorithm" or an unmapped httpcore.ConnectError.
ARGS = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")


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
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=2)


def test_the_config_fixture_can_be_overridden(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from humanwire.testing import fast_config

        @pytest.fixture(scope="session")
        def humanwire_config(tmp_path_factory):
            config = fast_config(tmp_path_factory.mktemp("hw") / "custom.db")
            config.spam_recipients = 2
            return config
        """
    )
    pytester.makepyfile(
        """
        def test_custom(humanwire_service):
            assert humanwire_service.config.spam_recipients == 2
            assert humanwire_service.config.db_path.endswith("custom.db")
            assert humanwire_service.config.public_url == humanwire_service.base_url
        """
    )
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=1)
