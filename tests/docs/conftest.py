"""Fixtures of the documentation's tests: the service's address and key in the
environment, as a page's code that builds its client with ``HumanWire()`` reads them."""

from framework_support import service_environment

__all__ = ["service_environment"]
