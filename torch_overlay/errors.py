"""The one exception type the command line turns into a clean error message."""


class OverlayError(Exception):
    """A user-facing failure: the message names what is wrong and how to fix it."""
