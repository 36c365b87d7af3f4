"""The Jupyter server extension behind the lab's kernel panel: per-kernel counters.

``{base_url}pagelab/kernels/stream?interval_ms=100&events=page-faults,...`` is a WebSocket: every
``interval_ms`` it sends, as JSON, every running kernel of this server that belongs to its user,
with the series of the events this socket asked for (name, unit, source, reason, note) and the
samples it has not seen yet (rows of [t, value, ...], null where unknown). A bad query, or a
server where the panel is turned off, gets one message ``{"error": sentence}`` and the close code
4400 or 4403. ``GET {base_url}pagelab/kernels?...&since=T`` answers the same once, with the
samples taken after ``T`` (a bad query: a JSON 400 with the sentence). ``GET
{base_url}pagelab/watch`` says how the sampling goes, without keeping it alive. All go through
Jupyter's authentication (token or login) and authorization (the "kernels" resource). Enabled by
jupyter-config/jupyter_server_config.d/pagelab.json; configured by ``PagelabKernels``.
"""

import json
import math

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.utils import ensure_async, url_path_join
from tornado import web
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError, WebSocketHandler
from traitlets import Float, TraitError, validate
from traitlets.config import Configurable

from .._version import __version__
from ..core.errors import PagelabError
from ..counters.sampler import MAX_HZ
from .kernelwatch import KernelWatch


class PagelabKernels(Configurable):
    """The kernel panel's server side (``c.PagelabKernels.max_rate_hz = 2`` in a Jupyter server
    config, or ``--PagelabKernels.max_rate_hz=2``)."""

    max_rate_hz = Float(
        MAX_HZ,
        config=True,
        help=f"""The most samples a second the server takes of each kernel, whatever the
        panels ask for (at most {MAX_HZ}); a panel asking faster gets this rate. 0 turns the
        kernel panel off: its endpoints answer with a sentence saying so.""",
    )

    @validate("max_rate_hz")
    def _check_rate(self, proposal):
        if not 0 <= proposal["value"] <= MAX_HZ:
            raise TraitError(f"max_rate_hz must be between 0 and {MAX_HZ}, not {proposal['value']}")
        return proposal["value"]


def local_kernels(kernel_manager):
    """kernel id -> (pid, kernel) for kernels whose provisioner started a local process."""
    out = {}
    for kid in kernel_manager.list_kernel_ids():
        kernel = kernel_manager.get_kernel(kid)
        pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
        if isinstance(pid, int) and pid > 0:
            out[kid] = (pid, kernel)
    return out


def _watch_kernels(watch, kernel_manager):
    """Tell the watch which kernels the server runs now; returns them (local_kernels)."""
    kernels = local_kernels(kernel_manager)
    watch.set_kernels({k: pid for k, (pid, _) in kernels.items()})
    return kernels


def _describe(data, kernels):
    """Each kernel of a reply with its name and state, and the package's version."""
    for k in data["kernels"]:
        kernel = kernels[k["id"]][1]
        k["name"] = kernel.kernel_name
        k["execution_state"] = getattr(kernel, "execution_state", "unknown")
    data["version"] = __version__
    return data


def _client(handler):
    """The watch's Client for a request's query: HTTPError 403 with a sentence where the panel
    is turned off, 400 with one for a bad query."""
    try:
        return handler.watch.client(
            handler.get_argument("interval_ms", "100"), handler.get_argument("events", None)
        )
    except PagelabError as e:
        raise web.HTTPError(403 if handler.watch.max_hz <= 0 else 400, str(e)) from None


class _WatchHandler(APIHandler):
    """An API handler on the shared KernelWatch, behind Jupyter's kernel permissions."""

    auth_resource = "kernels"

    def initialize(self, watch):
        self.watch = watch


class KernelCountersHandler(_WatchHandler):
    @web.authenticated
    @authorized
    def get(self):
        client = _client(self)
        try:
            since = float(self.get_argument("since", "-inf"))
        except ValueError:
            raise web.HTTPError(400, "since must be a number") from None
        if math.isnan(since):
            raise web.HTTPError(400, "since must be a number")
        kernels = _watch_kernels(self.watch, self.kernel_manager)
        self.finish(json.dumps(_describe(self.watch.poll(client, since), kernels)))


class WatchStateHandler(_WatchHandler):
    @web.authenticated
    @authorized
    def get(self):
        self.finish(json.dumps({**self.watch.peek(), "max_rate_hz": self.watch.max_hz}))


class KernelStreamHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """The panel's stream: one message per interval of its own, pushed by Feed."""

    auth_resource = "kernels"

    def initialize(self, feed):
        self.feed = feed
        self.watch = feed.watch
        self.client = None

    async def pre_get(self):
        """Authorization before the upgrade: the user may read the "kernels" resource."""
        user = self.current_user
        if not await ensure_async(
            self.authorizer.is_authorized(self, user, "read", self.auth_resource)
        ):
            raise web.HTTPError(403)

    @ws_authenticated
    async def get(self, *args, **kwargs):
        await self.pre_get()
        await super().get(*args, **kwargs)

    def open(self, *args, **kwargs):
        super().open(*args, **kwargs)
        # the query is checked after the upgrade: a browser sees no HTTP error's body, but it
        # reads this message and the close code
        try:
            self.client = _client(self)
        except web.HTTPError as e:
            self.write_message(json.dumps({"error": e.log_message}))
            # 4400 or 4403, the status a GET would get; a close reason holds 123 bytes at most
            reason = e.log_message.encode()[:120].decode(errors="ignore")
            self.close(4000 + e.status_code, reason)
            return
        self.feed.add(self)

    def on_message(self, message):
        pass  # the stream only speaks; settings change by reconnecting

    def on_close(self):
        self.feed.discard(self)


class Feed:
    """The open sockets, each sent its samples when the watch says it is due (on the server's
    event loop, never on the sampling thread)."""

    def __init__(self, watch, kernel_manager):
        self.watch = watch
        self.kernel_manager = kernel_manager
        self.sockets = {}  # Client -> socket
        self.loop = None  # the server's event loop, known once a socket opens on it
        watch.on_tick = self._tick

    def _tick(self, due):
        # from the sampling thread: ask the event loop to publish; never touch a socket here
        if self.loop is not None and self.sockets:
            self.loop.add_callback(self.publish, due)

    def add(self, socket):
        self.loop = IOLoop.current()
        self.sockets[socket.client] = socket
        _watch_kernels(self.watch, self.kernel_manager)
        self.watch.subscribe(socket.client)  # its first message comes with the next tick

    def discard(self, socket):
        if self.sockets.pop(socket.client, None) is not None:
            self.watch.unsubscribe(socket.client)

    def publish(self, due):
        kernels = _watch_kernels(self.watch, self.kernel_manager)  # for the next tick
        # not GET pollers, nor sockets closed since the tick
        clients = [c for c in due if c in self.sockets]
        for data, group in self.watch.replies(clients):
            text = json.dumps(_describe(data, kernels))
            for client in group:
                socket = self.sockets[client]
                try:
                    socket.write_message(text)
                except WebSocketClosedError:
                    self.discard(socket)


def _load_jupyter_server_extension(serverapp):
    config = PagelabKernels(parent=serverapp)
    watch = KernelWatch(max_hz=config.max_rate_hz, log=serverapp.log)
    feed = Feed(watch, serverapp.kernel_manager)
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "pagelab", "kernels"), KernelCountersHandler, {"watch": watch}),
            (
                url_path_join(base, "pagelab", "kernels", "stream"),
                KernelStreamHandler,
                {"feed": feed},
            ),
            (url_path_join(base, "pagelab", "watch"), WatchStateHandler, {"watch": watch}),
        ],
    )
    state = f"at most {config.max_rate_hz:g} Hz" if config.max_rate_hz else "turned off"
    serverapp.log.info(
        "pagelab: per-kernel counters at %spagelab/kernels[/stream], %s", base, state
    )
