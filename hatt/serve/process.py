"""uvicorn as ``hatt serve`` runs it: time limits on slow clients, and a bounded stop.

- ``timeout_keep_alive``: an idle kept-alive connection is closed after
  ``Settings.keep_alive_s`` (5 s);
- headers: uvicorn has no limit on how long a client may take to send a
  request's headers; :class:`HeaderTimeoutH11` closes a connection whose
  headers have not all arrived ``Settings.header_timeout_s`` (10 s) after it
  opened or after its previous answer. Their size: at most 16 KiB
  (:data:`hatt.serve.app.MAX_HEADER_BYTES`; the app answers 431, and h11 closes
  a connection whose headers are still incomplete at 64 KiB with a 400);
- the body: ``Settings.body_timeout_s`` (10 s, a 408) in :mod:`hatt.serve.app`;
- the port: :func:`bind` takes it before anything is loaded or announced, so a
  port in use is one clear error, not uvicorn's bind error after the URL was
  printed and a warm-up traceback (issue 63);
- SIGTERM / SIGINT (:class:`DrainingServer`): the server stops accepting
  connections and ``/readyz`` turns 503 at once; ``:explain`` requests stop
  at their next chunk (503 with ``Retry-After``); ``:predict`` requests in
  flight are drained; whatever still runs after ``Settings.shutdown_s``
  (10 s) is cancelled; then the process exits. A stop so takes at most
  ``shutdown_s`` plus one explain chunk.
"""

import errno
import socket

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from hatt.serve.app import MAX_HEADER_BYTES


class HeaderTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol, closing connections whose request headers come too slowly."""

    header_timeout_s = 10.0

    def connection_made(self, transport):
        super().connection_made(transport)
        self._header_timer = None
        self._arm()

    def _arm(self):
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm(self):
        if getattr(self, "_header_timer", None) is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _in_request(self):
        return self.cycle is not None and not self.cycle.response_complete

    def data_received(self, data):
        super().data_received(data)
        if self._in_request():  # the headers are in: the body has its own limit
            self._disarm()

    def on_response_complete(self):
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc):
        self._disarm()
        super().connection_lost(exc)

    def _headers_too_slow(self):
        self._header_timer = None
        if not self._in_request() and not self.transport.is_closing():
            self.transport.close()


class DrainingServer(uvicorn.Server):
    """uvicorn's server, telling the app to drain before it waits for connections."""

    def __init__(self, config, on_stop):
        super().__init__(config)
        self.on_stop = on_stop

    async def shutdown(self, sockets=None):
        self.on_stop()
        await super().shutdown(sockets)


def bind(host, port):
    """A listening-ready TCP socket bound to ``(host, port)`` (port 0: a free one).

    Raises:
        ValueError: the port is in use, not ours to take, or the host is no
            interface of this machine (the message says which, and the fix).
    """
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except (socket.gaierror, UnicodeError, OverflowError) as error:
        raise ValueError(
            f"Expected --host to name an interface of this machine (127.0.0.1, 0.0.0.0, ::1). "
            f"Received: --host {host!r} ({error})"
        ) from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise ValueError(
                f"port {port} is in use on {host}: pick another with --port (or stop what "
                "listens there)"
            ) from None
        root = " (ports below 1024 need root)" if error.errno == errno.EACCES else ""
        raise ValueError(
            f"Could not listen on {host} port {port} (--host, --port): "
            f"{error.strerror or error}{root}"
        ) from None
    sock.set_inheritable(True)
    return sock


def uvicorn_server(app, host, port, settings, log_level="info"):
    """A :class:`DrainingServer` for ``app`` with ``settings``' time limits."""

    protocol = type(
        "HattH11", (HeaderTimeoutH11,), {"header_timeout_s": float(settings.header_timeout_s)}
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        http=protocol,
        timeout_keep_alive=settings.keep_alive_s,
        # h11 refuses (400) a request whose headers are still incomplete past this; the app
        # answers 431 to one whose complete headers exceed MAX_HEADER_BYTES
        h11_max_incomplete_event_size=4 * MAX_HEADER_BYTES,
        timeout_graceful_shutdown=settings.shutdown_s,
    )
    return DrainingServer(config, app.state.server.drain)
