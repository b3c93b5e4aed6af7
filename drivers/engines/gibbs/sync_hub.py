"""Messages between the driver and long-running Spark tasks: the transport of the Gibbs engine's resident mode.

One Spark job per synchronisation costs 40-100 ms of scheduling however little the tasks do; a resident sampler
instead runs one *barrier* stage (Spark gang-schedules its tasks, as XGBoost-on-Spark does for its allreduce)
whose tasks stay alive for the whole run and exchange one message pair with the driver per synchronisation over
a TCP connection to a :class:`SyncHub` on the driver. (Spark's own ``BarrierTaskContext.allGather`` was measured
at ~1 s per round here: its JVM side polls once a second.)

A message is a JSON header and numpy arrays (dtype, shape and raw bytes; nothing is pickled), framed by
lengths. Every connection opens with the run's random token, so a stray connection is refused (read within
bounds: a stranger cannot stall or crash the hub, see :class:`SyncHub`). No Spark here.
"""
from __future__ import annotations

import json
import secrets
import select
import selectors
import socket
import struct
import time

import numpy as np

_LENGTH = struct.Struct("!Q")
#: the largest header a frame may announce (hyperparameters and plans: kilobytes; K in the millions fits)
MAX_HEADER = 64 << 20
#: the largest first frame (the token and the partition); anything longer is a stranger's
MAX_HELLO = 4096
#: connections that have not yet sent their first frame, at most (the oldest is dropped for a new one)
MAX_PENDING = 64
#: seconds a connection has to send its first frame
HELLO_SECONDS = 10.0


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


def _frame_lengths(lengths, max_header: int, max_body: int | None) -> tuple[int, int]:
    """The header and body sizes of a frame's 16 length bytes, refused above the caps."""
    head_size, body_size = _LENGTH.unpack_from(lengths, 0)[0], _LENGTH.unpack_from(lengths, 8)[0]
    if head_size > max_header:
        raise HubError(f"a message header of {head_size} bytes (at most {max_header})")
    if max_body is not None and body_size > max_body:
        raise HubError(f"a message body of {body_size} bytes (at most {max_body})")
    return head_size, body_size


def _parse_header(head_bytes) -> dict:
    """A frame's header: a JSON object, or :class:`HubError`."""
    try:
        header = json.loads(bytes(head_bytes).decode("utf-8"))
    except ValueError as exc:
        raise HubError(f"a message header that is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise HubError(f"a message header that is a JSON {type(header).__name__}, not an object")
    return header


def _array_layout(header: dict, body_size: int) -> list:
    """``(dtype, shape, bytes)`` of each array a header announces; they must fill the body exactly."""
    specs = header.pop("arrays", None)
    if not isinstance(specs, list):
        raise HubError("a message header without its list of arrays")
    layout, total = [], 0
    for spec in specs:
        try:
            dtype, shape = spec
            dt = np.dtype(dtype) if isinstance(dtype, str) else None
        except (TypeError, ValueError):
            dt, shape = None, None
        if dt is None or dt.kind not in "biufc" or not isinstance(shape, list) \
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise HubError(f"a message array that is not a numeric dtype and shape: {str(spec)[:80]}")
        size = dt.itemsize
        for n in shape:
            size *= n
        layout.append((dt, tuple(shape), size))
        total += size
        if total > body_size:
            break
    if total != body_size:
        raise HubError(f"a message whose arrays ({total} bytes) do not fill its body ({body_size} bytes)")
    return layout


def recv_message(sock: socket.socket, max_header: int = MAX_HEADER,
                 max_body: int | None = None) -> tuple[dict, list]:
    """``(header, arrays)`` of one frame (:func:`send_message`); a malformed frame, or one above the caps
    (``max_body`` None: the body is not capped), is :class:`HubError` before its bytes are read."""
    head_size, body_size = _frame_lengths(_recv_exactly(sock, 16), max_header, max_body)
    header = _parse_header(_recv_exactly(sock, head_size))
    layout = _array_layout(header, body_size)
    body = _recv_exactly(sock, body_size) if body_size else bytearray()
    arrays, offset = [], 0
    for dt, shape, size in layout:
        arrays.append(np.frombuffer(body, dtype=dt, count=size // dt.itemsize, offset=offset).reshape(shape))
        offset += size
    return header, arrays


def _parse_hello(frame: bytes, token: str):
    """The partition a connection's first frame introduces, or None: not the run's token, not a hello."""
    try:
        head_size, body_size = _frame_lengths(frame, MAX_HELLO, 0)
    except HubError:
        return None
    if len(frame) != 16 + head_size:
        return None
    try:
        hello = _parse_header(frame[16:])
    except HubError:
        return None
    claimed, partition = hello.get("token"), hello.get("partition")
    if not isinstance(claimed, str) or not secrets.compare_digest(claimed.encode("utf-8"), token.encode("utf-8")):
        return None
    if not isinstance(partition, int) or isinstance(partition, bool):
        return None
    return partition


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
    a task that dies (its socket closes, or its job fails) ends the wait with :class:`HubError`.

    Any local process can connect while the hub accepts: a connection is read without blocking, only up to a
    first frame of :data:`MAX_HELLO` bytes, and must show the run's token within :data:`HELLO_SECONDS`; a
    stranger (wrong token, malformed or oversized frame, silence) is hung up on and the hub keeps accepting, at
    most :data:`MAX_PENDING` connections waiting at once. ``max_reply`` caps a reply's body (bytes)."""

    def __init__(self, host: str, num_partitions: int, alive, connect_timeout: float = 120.0,
                 advertise: str | None = None, max_reply: int | None = None):
        """Listens on ``host`` (any free port); tasks are told ``advertise`` (default ``host``)."""
        self.num_partitions = int(num_partitions)
        self.alive = alive
        self.connect_timeout = float(connect_timeout)
        self.max_reply = max_reply
        self.token = secrets.token_hex(16)
        self._server = socket.create_server((host, 0))
        self._server.setblocking(False)
        self.address = (advertise or host, self._server.getsockname()[1])
        self._tasks: dict[int, socket.socket] = {}
        self.refused = 0            # connections hung up on while accepting

    def _hang_up(self, selector, pending: dict, sock: socket.socket) -> None:
        selector.unregister(sock)
        del pending[sock]
        sock.close()
        self.refused += 1

    def _read_hello(self, selector, pending: dict, sock: socket.socket) -> None:
        """Read what a waiting connection sent; register it as its partition's task once its hello is whole."""
        buf = pending[sock][1]
        try:
            chunk = sock.recv(16 + MAX_HELLO + 1 - len(buf))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            return self._hang_up(selector, pending, sock)
        buf += chunk
        if len(buf) < 16:
            return
        head_size = _LENGTH.unpack_from(buf, 0)[0]
        if head_size > MAX_HELLO or _LENGTH.unpack_from(buf, 8)[0] != 0 or len(buf) > 16 + head_size:
            return self._hang_up(selector, pending, sock)
        if len(buf) < 16 + head_size:
            return
        partition = _parse_hello(bytes(buf), self.token)
        if partition is None or partition in self._tasks or not 0 <= partition < self.num_partitions:
            return self._hang_up(selector, pending, sock)
        selector.unregister(sock)
        del pending[sock]
        sock.setblocking(True)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._tasks[partition] = sock

    def accept_all(self) -> None:
        """Wait until every partition's task has connected (or fail: a task died, the job ended, a timeout)."""
        deadline = time.monotonic() + self.connect_timeout
        pending: dict[socket.socket, list] = {}     # connection -> [accepted at, bytes so far]
        selector = selectors.DefaultSelector()
        selector.register(self._server, selectors.EVENT_READ)
        try:
            while len(self._tasks) < self.num_partitions:
                now = time.monotonic()
                if now > deadline:
                    raise HubError(f"{len(self._tasks)} of {self.num_partitions} tasks connected in "
                                   f"{self.connect_timeout:.0f} s")
                if not self.alive():
                    raise HubError("the resident job ended before every task connected")
                for sock in [s for s, (began, _) in pending.items() if now - began > HELLO_SECONDS]:
                    self._hang_up(selector, pending, sock)
                for key, _ in selector.select(0.2):
                    if key.fileobj is not self._server:
                        if key.fileobj in pending:
                            self._read_hello(selector, pending, key.fileobj)
                        continue
                    try:        # one connection per round: those waiting are read before more arrive
                        sock, _ = self._server.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:     # out of file descriptors: those waiting go first
                        continue
                    if len(pending) >= MAX_PENDING:
                        self._hang_up(selector, pending, min(pending, key=lambda s: pending[s][0]))
                    sock.setblocking(False)
                    pending[sock] = [time.monotonic(), bytearray()]
                    selector.register(sock, selectors.EVENT_READ)
        finally:
            for sock in list(pending):
                self._hang_up(selector, pending, sock)
            selector.close()
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
                    replies[p] = recv_message(sock, max_body=self.max_reply)
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
