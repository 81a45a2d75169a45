from twilio_support import fake_twilio, live

__all__ = ["fake_twilio", "live"]
