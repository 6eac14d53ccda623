"""The green agent's defaults that ``swe-green serve`` shows in its help (read without
importing the server)."""

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9009
# seconds between progress heartbeats while instances run
DEFAULT_HEARTBEAT = 20.0
