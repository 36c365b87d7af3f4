"""The Jupyter server extension behind the lab's kernel panel: per-kernel counters.

``{base_url}pagelab/kernels/stream?interval_ms=100&events=page-faults,...`` is a WebSocket: after
every sampling tick it sends, as JSON, every running kernel of this server that belongs to its
user, with its series (name, unit, source, reason, note) and the samples this socket has not seen
yet (rows of [t, value, ...], null where unknown). ``GET {base_url}pagelab/kernels?...&since=T``
answers the same once, with the samples taken after ``T``. An open socket or a GET keeps the
sampling thread alive; none for IDLE_S seconds stops it. ``GET {base_url}pagelab/watch`` says
whether it samples, without keeping it alive. All go through Jupyter's authentication (token or
login) and authorization (the "kernels" resource). Enabled by
jupyter-config/jupyter_server_config.d/pagelab.json.
"""

import json
import math

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.utils import ensure_async, url_path_join
from tornado import web
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from . import _events
from ._errors import PagelabError
from ._kernelwatch import KernelWatch
from ._version import __version__


def local_kernels(kernel_manager):
    """kernel id -> (pid, kernel) for kernels whose provisioner started a local process."""
    out = {}
    for kid in kernel_manager.list_kernel_ids():
        kernel = kernel_manager.get_kernel(kid)
        pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
        if isinstance(pid, int) and pid > 0:
            out[kid] = (pid, kernel)
    return out


def _query(handler):
    """interval_ms and events from the query string; a bad one is a 400 with one sentence."""
    try:
        interval_ms = int(handler.get_argument("interval_ms", "100"))
    except ValueError:
        raise web.HTTPError(400, "interval_ms must be an integer") from None
    events = handler.get_argument("events", None)
    try:
        _events.events(events or None)
    except PagelabError as e:
        raise web.HTTPError(400, str(e)) from None
    return interval_ms, events


def reply(watch, kernel_manager, interval_ms, events, since):
    """What the panel gets: the watch's samples after ``since`` with each kernel's name and
    state, for the kernels the server runs now (this also keeps the watch sampling)."""
    kernels = local_kernels(kernel_manager)
    data = watch.request({k: pid for k, (pid, _) in kernels.items()}, interval_ms, events, since)
    for k in data["kernels"]:
        kernel = kernels[k["id"]][1]
        k["name"] = kernel.kernel_name
        k["execution_state"] = getattr(kernel, "execution_state", "unknown")
    data["version"] = __version__
    return data


class _WatchHandler(APIHandler):
    """An API handler on the shared KernelWatch, behind Jupyter's kernel permissions."""

    auth_resource = "kernels"

    def initialize(self, watch):
        self.watch = watch


class KernelCountersHandler(_WatchHandler):
    @web.authenticated
    @authorized
    def get(self):
        interval_ms, events = _query(self)
        try:
            since = float(self.get_argument("since", "-inf"))
        except ValueError:
            raise web.HTTPError(400, "since must be a number") from None
        if math.isnan(since):
            raise web.HTTPError(400, "since must be a number")
        self.finish(json.dumps(reply(self.watch, self.kernel_manager, interval_ms, events, since)))


class KernelStreamHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """The panel's stream: one message per sampling tick, pushed by Stream."""

    auth_resource = "kernels"

    def initialize(self, stream):
        self.stream = stream
        self.since = -math.inf

    async def get(self, *args, **kwargs):
        user = self.current_user
        if not user:
            raise web.HTTPError(403)
        if not await ensure_async(
            self.authorizer.is_authorized(self, user, "read", self.auth_resource)
        ):
            raise web.HTTPError(403)
        self.interval_ms, self.events = _query(self)
        await super().get(*args, **kwargs)

    def open(self):
        self.stream.add(self)

    def on_message(self, message):
        pass  # the stream only speaks; settings change by reconnecting

    def on_close(self):
        self.stream.discard(self)


class Stream:
    """The open sockets, sent the new samples after each tick (on the server's event loop)."""

    def __init__(self, watch, kernel_manager):
        self.watch = watch
        self.kernel_manager = kernel_manager
        self.sockets = set()
        self.loop = None  # the server's event loop, known once a socket opens on it
        watch.on_tick = self._tick

    def _tick(self):
        # from the sampling thread: ask the event loop to publish; never touch a socket here
        if self.loop is not None and self.sockets:
            self.loop.add_callback(self.publish)

    def add(self, socket):
        self.loop = IOLoop.current()
        self.sockets.add(socket)
        self.publish()  # at once: the list of kernels, and the thread started

    def discard(self, socket):
        self.sockets.discard(socket)

    def publish(self):
        for socket in list(self.sockets):
            data = reply(
                self.watch, self.kernel_manager, socket.interval_ms, socket.events, socket.since
            )
            socket.since = max(
                [socket.since] + [k["samples"][-1][0] for k in data["kernels"] if k["samples"]]
            )
            try:
                socket.write_message(json.dumps(data))
            except WebSocketClosedError:
                self.discard(socket)


class WatchStateHandler(_WatchHandler):
    @web.authenticated
    @authorized
    def get(self):
        self.finish(json.dumps(self.watch.peek()))


def _load_jupyter_server_extension(serverapp):
    watch = KernelWatch()
    stream = Stream(watch, serverapp.kernel_manager)
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "pagelab", "kernels"), KernelCountersHandler, {"watch": watch}),
            (
                url_path_join(base, "pagelab", "kernels", "stream"),
                KernelStreamHandler,
                {"stream": stream},
            ),
            (url_path_join(base, "pagelab", "watch"), WatchStateHandler, {"watch": watch}),
        ],
    )
    serverapp.log.info("pagelab: per-kernel counters at %spagelab/kernels[/stream]", base)
