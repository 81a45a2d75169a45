from slack_support import fake_slack, slack_live
from twilio_support import fake_twilio, live

__all__ = ["fake_slack", "fake_twilio", "live", "slack_live"]
