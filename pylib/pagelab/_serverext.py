"""The Jupyter server extension behind the lab's kernel panel: per-kernel counters over HTTP.

``GET {base_url}pagelab/kernels?interval_ms=100&events=page-faults,...&since=T`` returns, as
JSON, every running kernel of this server that belongs to its user, with its series (name, unit,
source, reason, note) and the samples taken after ``T`` (seconds on the watch's clock; rows of
[t, value, ...], null where unknown). Polling it keeps the sampling thread alive; nobody polling
for IDLE_S seconds stops it. ``GET {base_url}pagelab/watch`` says whether it samples, without
keeping it alive. Both go through Jupyter's authentication (token or login) and authorization
(the "kernels" resource). Enabled by jupyter-config/jupyter_server_config.d/pagelab.json.
"""

import json
import math

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

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


class KernelCountersHandler(APIHandler):
    auth_resource = "kernels"

    def initialize(self, watch):
        self.watch = watch

    @web.authenticated
    @authorized
    def get(self):
        try:
            interval_ms = int(self.get_argument("interval_ms", "100"))
            since = float(self.get_argument("since", "-inf"))
        except ValueError:
            raise web.HTTPError(400, "interval_ms must be an integer and since a number") from None
        if math.isnan(since):
            raise web.HTTPError(400, "since must be a number")
        kernels = local_kernels(self.kernel_manager)
        try:
            data = self.watch.request(
                {k: pid for k, (pid, _) in kernels.items()},
                interval_ms,
                self.get_argument("events", None),
                since,
            )
        except PagelabError as e:  # an unknown event name from the settings
            raise web.HTTPError(400, str(e)) from None
        for k in data["kernels"]:
            kernel = kernels[k["id"]][1]
            k["name"] = kernel.kernel_name
            k["execution_state"] = getattr(kernel, "execution_state", "unknown")
        data["version"] = __version__
        self.finish(json.dumps(data))


class WatchStateHandler(APIHandler):
    auth_resource = "kernels"

    def initialize(self, watch):
        self.watch = watch

    @web.authenticated
    @authorized
    def get(self):
        self.finish(json.dumps(self.watch.peek()))


def _load_jupyter_server_extension(serverapp):
    watch = KernelWatch()
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "pagelab", "kernels"), KernelCountersHandler, {"watch": watch}),
            (url_path_join(base, "pagelab", "watch"), WatchStateHandler, {"watch": watch}),
        ],
    )
    serverapp.log.info("pagelab: per-kernel counters at %spagelab/kernels", base)
