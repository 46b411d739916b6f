"""Agent kernels on a Jupyter Kernel/Enterprise Gateway, through the Jupyter server's kernel manager.

A server started with ``--gateway-url`` has a ``GatewayMappingKernelManager``: its kernels live on
the gateway, and so does their sandbox (a container, a pod, or the gateway's own user). nini
starts, interrupts and shuts its agent kernels down through that manager (REST calls to the
gateway), and talks to each kernel over the gateway's WebSocket with ``GatewayChannels``: the
client jupyter_server offers (``GatewayKernelClient``) sends no credentials on its WebSocket, so it
cannot reach a gateway that wants a token, and it waits for messages by spinning the event loop.

The kernel does not share the server's disk: ``mirror.py`` carries the workspace's files across.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
from typing import Any
from urllib.parse import quote, urlsplit

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from nini.errors import ErrorCode, NiniError

__all__ = ["GatewayChannels", "GatewayKernel", "configured_gateway_url", "gateway_url", "host_of"]

# execution_state values the server side of the WebSocket sends (no parent) when the gateway's
# restarter found the kernel process dead: its variables are gone, as after a local kernel's death
_DEATH_STATES = frozenset({"restarting", "dead"})


def gateway_url(multi_kernel_manager: Any) -> str | None:
    """The gateway URL of a Jupyter server whose kernel manager is the gateway's, else None."""
    if multi_kernel_manager is None or type(multi_kernel_manager).__name__ != "GatewayMappingKernelManager":
        return None
    from jupyter_server.gateway.gateway_client import GatewayClient

    client = GatewayClient.instance()
    return client.url if client.gateway_enabled else None


def configured_gateway_url() -> str | None:
    """The gateway a Jupyter server started here would use, for ``nini doctor`` (which runs outside
    the server): ``c.GatewayClient.url`` of jupyter_server_config, else JUPYTER_GATEWAY_URL
    (Jupyter's variable, which --gateway-url overrides). jupyter_server's GatewayClient is not
    imported: that takes seconds (jupyter_events, jsonschema)."""
    from jupyter_core.application import JupyterApp

    class _ServerConfig(JupyterApp):
        name = "jupyter-server"
        config_file_name = "jupyter_server_config"

    app = _ServerConfig()
    app.load_config_file()
    url = app.config.get("GatewayClient", {}).get("url") or os.environ.get("JUPYTER_GATEWAY_URL")
    return str(url) if url else None


def host_of(url: str) -> str:
    """``host:port`` of ``url``, without user, password, path or query: safe to show and record."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


class GatewayKernel:
    """One agent kernel on the gateway: the manager-side calls ``python_runner`` and ``KernelPool``
    make (interrupt, is_alive, shutdown), done through the server's kernel manager."""

    def __init__(self, server_manager: Any, kernel_id: str) -> None:
        self.server_manager = server_manager
        self.kernel_id = kernel_id
        self.channels: GatewayChannels | None = None
        self.has_kernel = True

    @classmethod
    async def start(cls, server_manager: Any, kernel_name: str | None) -> GatewayKernel:
        """Start a kernel of spec ``kernel_name`` (None: the gateway's default) on the gateway."""
        kwargs = {"kernel_name": kernel_name} if kernel_name else {}
        kernel_id = await server_manager.start_kernel(**kwargs)
        return cls(server_manager, kernel_id)

    async def interrupt_kernel(self) -> None:
        """The gateway interrupts its kernel (its spec's way: a signal or a message)."""
        await self.server_manager.interrupt_kernel(self.kernel_id)

    async def is_alive(self) -> bool:
        """False once the WebSocket closed or the gateway reported the process dead. A REST check
        could not tell: the gateway's restarter replaces a dead process under the same kernel id."""
        return self.has_kernel and self.channels is not None and not self.channels.died

    async def shutdown_kernel(self, now: bool = False) -> None:
        self.has_kernel = False
        if self.channels is not None:
            self.channels.stop_channels()
        try:
            await self.server_manager.shutdown_kernel(self.kernel_id, now=now)
        except Exception:  # already gone on the gateway (culled, or the gateway restarted)
            pass

    def client(self) -> GatewayChannels:
        from jupyter_server.gateway.gateway_client import GatewayClient

        gateway = GatewayClient.instance()
        url = "/".join(
            part.strip("/")
            for part in (gateway.ws_url or "", gateway.kernels_endpoint, quote(self.kernel_id), "channels")
        )
        options = gateway.load_connection_args()  # the gateway's token header, TLS and timeouts
        request = HTTPRequest(url, **{k: v for k, v in options.items() if k in _REQUEST_OPTIONS})
        self.channels = GatewayChannels(request)
        return self.channels


_REQUEST_OPTIONS = frozenset(
    "headers connect_timeout request_timeout validate_cert ca_certs client_key client_cert "
    "auth_username auth_password".split()
)


class GatewayChannels:
    """The kernel's five channels over one WebSocket (Jupyter's JSON message protocol), with the
    few methods of jupyter_client's ``AsyncKernelClient`` nini uses. ``get_*_msg`` raise
    ``queue.Empty`` on timeout, like jupyter_client's, and at once when the kernel died."""

    def __init__(self, request: HTTPRequest) -> None:
        self._request = request
        self.session = Session(key=b"")  # the gateway signs messages itself
        self._socket: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._queues: dict[str, asyncio.Queue[dict[str, Any]]] = {"shell": asyncio.Queue(), "iopub": asyncio.Queue()}
        self.died = False

    async def start_channels(self) -> None:
        try:
            self._socket = await websocket_connect(self._request, max_message_size=1 << 30)
        except Exception as exc:
            raise NiniError(ErrorCode.KERNEL_DIED, f"the gateway's kernel WebSocket did not open: {exc}") from exc
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="nini-gateway-channels")

    def stop_channels(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def wait_for_ready(self, timeout: float) -> None:
        """A kernel_info reply on the shell channel: the kernel is up and answering."""
        msg_id = self._send("shell", "kernel_info_request", {})
        deadline = asyncio.get_running_loop().time() + timeout
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            msg = await self.get_shell_msg(timeout=left)
            if msg["parent_header"].get("msg_id") == msg_id:
                return
        raise queue.Empty

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        stop_on_error: bool = True,
    ) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": allow_stdin,
            "stop_on_error": stop_on_error,
        }
        return self._send("shell", "execute_request", content)

    async def get_shell_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._get("shell", timeout)

    async def get_iopub_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._get("iopub", timeout)

    def _send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        if self._socket is None or self.died:
            raise queue.Empty  # callers check the kernel's life next
        msg = self.session.msg(msg_type, content)
        msg["channel"] = channel
        self._socket.write_message(json.dumps(msg, default=json_default))
        msg_id: str = msg["header"]["msg_id"]
        return msg_id

    async def _get(self, channel: str, timeout: float | None) -> dict[str, Any]:
        if self.died and self._queues[channel].empty():
            raise queue.Empty
        try:
            return await asyncio.wait_for(self._queues[channel].get(), timeout)
        except TimeoutError:
            raise queue.Empty from None

    async def _read(self) -> None:
        try:
            while self._socket is not None:
                text = await self._socket.read_message()
                if text is None:
                    break
                msg = json.loads(text)
                content = msg.get("content") or {}
                if msg.get("msg_type") == "status" and content.get("execution_state") in _DEATH_STATES:
                    break
                target = self._queues.get(msg.get("channel", ""))
                if target is not None:
                    target.put_nowait(msg)
        except Exception:  # a broken connection is the kernel's end, as far as nini can tell
            pass
        self.died = True
