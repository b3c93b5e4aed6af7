"""Messages between the driver and long-running Spark tasks: the transport of the Gibbs engine's resident mode.

One Spark job per synchronisation costs 40-100 ms of scheduling however little the tasks do; a resident sampler
instead runs one *barrier* stage (Spark gang-schedules its tasks, as XGBoost-on-Spark does for its allreduce)
whose tasks stay alive for the whole run and exchange one message pair with the driver per synchronisation over
a TCP connection to a :class:`SyncHub` on the driver. (Spark's own ``BarrierTaskContext.allGather`` was measured
at ~1 s per round here: its JVM side polls once a second.)

A message is a JSON header and numpy arrays (dtype, shape and raw bytes; nothing is pickled), framed by
lengths. Every connection opens with the run's random token, so a stray connection is refused. No Spark here.
"""
from __future__ import annotations

import json
import secrets
import select
import socket
import struct
import time

import numpy as np

_LENGTH = struct.Struct("!Q")


class HubError(RuntimeError):
    """A resident task is gone or did not answer: the caller goes on another way."""


def _recv_exactly(sock: socket.socket, size: int) -> bytearray:
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise HubError("connection closed")
        got += n
    return buf


def send_message(sock: socket.socket, header: dict, arrays=()) -> None:
    """One frame: header length, header JSON (with each array's dtype and shape), then the arrays' bytes."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    head = dict(header, arrays=[[a.dtype.str, list(a.shape)] for a in arrays])
    head_bytes = json.dumps(head).encode("utf-8")
    body = sum(a.nbytes for a in arrays)
    sock.sendall(_LENGTH.pack(len(head_bytes)) + _LENGTH.pack(body) + head_bytes)
    for a in arrays:
        if a.nbytes:
            sock.sendall(memoryview(a).cast("B"))


def recv_message(sock: socket.socket) -> tuple[dict, list]:
    """``(header, arrays)`` of one frame (:func:`send_message`)."""
    lengths = _recv_exactly(sock, 16)
    head_size, body_size = _LENGTH.unpack_from(lengths, 0)[0], _LENGTH.unpack_from(lengths, 8)[0]
    header = json.loads(bytes(_recv_exactly(sock, head_size)).decode("utf-8"))
    body = _recv_exactly(sock, body_size) if body_size else bytearray()
    arrays, offset = [], 0
    for dtype, shape in header.pop("arrays"):
        dt = np.dtype(dtype)
        size = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        arrays.append(np.frombuffer(body, dtype=dt, count=size // dt.itemsize if dt.itemsize else 0,
                                    offset=offset).reshape(shape))
        offset += size
    return header, arrays


def connect(address: tuple[str, int], token: str, partition: int, timeout: float = 60.0) -> socket.socket:
    """A task's connection to the hub, introduced by the run's token and the task's partition."""
    sock = socket.create_connection(address, timeout=timeout)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    send_message(sock, {"token": token, "partition": int(partition)})
    return sock


class SyncHub:
    """The driver's end: accepts one connection per partition, then per synchronisation sends every partition
    its message and collects every reply. ``alive()`` (the Spark job still running) is polled while waiting, so
    a task that dies (its socket closes, or its job fails) ends the wait with :class:`HubError`."""

    def __init__(self, host: str, num_partitions: int, alive, connect_timeout: float = 120.0,
                 advertise: str | None = None):
        """Listens on ``host`` (any free port); tasks are told ``advertise`` (default ``host``)."""
        self.num_partitions = int(num_partitions)
        self.alive = alive
        self.connect_timeout = float(connect_timeout)
        self.token = secrets.token_hex(16)
        self._server = socket.create_server((host, 0))
        self._server.settimeout(0.2)
        self.address = (advertise or host, self._server.getsockname()[1])
        self._tasks: dict[int, socket.socket] = {}

    def accept_all(self) -> None:
        """Wait until every partition's task has connected (or fail: a task died, the job ended, a timeout)."""
        deadline = time.monotonic() + self.connect_timeout
        while len(self._tasks) < self.num_partitions:
            if time.monotonic() > deadline:
                raise HubError(f"{len(self._tasks)} of {self.num_partitions} tasks connected in "
                               f"{self.connect_timeout:.0f} s")
            if not self.alive():
                raise HubError("the resident job ended before every task connected")
            try:
                sock, _ = self._server.accept()
            except socket.timeout:
                continue
            sock.settimeout(10.0)
            try:
                hello, _ = recv_message(sock)
            except (OSError, HubError, ValueError):
                sock.close()
                continue
            partition = hello.get("partition")
            if hello.get("token") != self.token or not isinstance(partition, int) or partition in self._tasks \
                    or not 0 <= partition < self.num_partitions:
                sock.close()
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._tasks[partition] = sock
        self._server.close()        # a retried task cannot join a running exchange

    def exchange(self, messages) -> list[tuple[dict, list]]:
        """Send ``messages[p] = (header, arrays)`` to partition p's task; the replies in partition order."""
        self.send(messages)
        return self.receive()

    def send(self, messages) -> None:
        """``messages[p] = (header, arrays)`` to partition p's task."""
        for p in range(self.num_partitions):
            header, arrays = messages[p]
            try:
                send_message(self._tasks[p], header, arrays)
            except OSError as exc:
                raise HubError(f"partition {p}: {exc}") from None

    def receive(self) -> list[tuple[dict, list]]:
        """Every task's reply to the last message, in partition order."""
        replies: dict[int, tuple] = {}
        waiting = {sock: p for p, sock in self._tasks.items()}
        while waiting:
            ready, _, _ = select.select(list(waiting), [], [], 0.5)
            if not ready and not self.alive():
                raise HubError("the resident job ended during an exchange")
            for sock in ready:
                p = waiting.pop(sock)
                try:
                    replies[p] = recv_message(sock)
                except (OSError, ValueError, HubError) as exc:
                    raise HubError(f"partition {p}: {exc}") from None
        return [replies[p] for p in range(self.num_partitions)]

    def close(self, farewell: dict | None = None) -> None:
        for sock in self._tasks.values():
            try:
                if farewell is not None:
                    send_message(sock, farewell)
            except OSError:
                pass
            finally:
                sock.close()
        self._tasks.clear()
        self._server.close()
