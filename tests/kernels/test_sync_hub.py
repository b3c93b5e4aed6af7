"""drivers/engines/gibbs/sync_hub.py: the messages between the driver and resident tasks (no Spark)."""
from __future__ import annotations

import json
import socket
import struct
import threading
import time

import numpy as np
import pytest

from drivers.engines.gibbs import sync_hub
from drivers.engines.gibbs.sync_hub import HubError, SyncHub, connect, recv_message, send_message


def test_messages_carry_arrays_exactly():
    a, b = socket.socketpair()
    arrays = [np.arange(12, dtype=np.int32).reshape(3, 4), np.array([0.1, -2.5e-300, np.inf]),
              np.zeros((0, 5), dtype=np.int64), np.array([2**40], dtype=np.uint64)]
    send_message(a, {"kind": "sync", "hyper": {"alpha": [0.1, 0.2]}}, arrays)
    header, got = recv_message(b)
    assert header == {"kind": "sync", "hyper": {"alpha": [0.1, 0.2]}}
    for x, y in zip(arrays, got):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
    a.close()
    with pytest.raises(HubError, match="closed"):
        recv_message(b)


def _task(address, token, partition, rounds, out):
    sock = connect(address, token, partition)
    for _ in range(rounds):
        header, arrays = recv_message(sock)
        send_message(sock, {"partition": partition, "got": header["n"]}, [arrays[0] * (partition + 1)])
    out[partition] = recv_message(sock)[0]
    sock.close()


def test_hub_exchanges_in_partition_order_and_refuses_strangers():
    hub = SyncHub("127.0.0.1", 2, alive=lambda: True, connect_timeout=20)
    stranger = socket.create_connection(hub.address)
    send_message(stranger, {"token": "not the run's", "partition": 0})
    out = {}
    threads = [threading.Thread(target=_task, args=(hub.address, hub.token, p, 3, out)) for p in (1, 0)]
    for t in threads:
        t.start()
    hub.accept_all()
    assert stranger.recv(1) == b""                 # the stranger was hung up on
    for n in range(3):
        replies = hub.exchange([({"n": n}, [np.full(4, n)])] * 2)
        assert [h["partition"] for h, _ in replies] == [0, 1] and all(h["got"] == n for h, _ in replies)
        np.testing.assert_array_equal(replies[1][1][0], np.full(4, 2 * n))
    hub.close({"kind": "stop"})
    for t in threads:
        t.join(5)
    assert out == {0: {"kind": "stop"}, 1: {"kind": "stop"}}


def test_a_task_that_dies_ends_the_wait():
    hub = SyncHub("127.0.0.1", 1, alive=lambda: True, connect_timeout=20)
    sock = None

    def task():
        nonlocal sock
        sock = connect(hub.address, hub.token, 0)
        recv_message(sock)
        sock.close()                                 # dies without answering
    thread = threading.Thread(target=task)
    thread.start()
    hub.accept_all()
    with pytest.raises(HubError, match="partition 0"):
        hub.exchange([({"n": 0}, [])])
    thread.join(5)
    hub.close()


def test_no_task_connects():
    hub = SyncHub("127.0.0.1", 2, alive=lambda: False, connect_timeout=20)
    with pytest.raises(HubError, match="ended before every task connected"):
        hub.accept_all()
    hub.close()


# ---- strangers: any local process can connect while the hub accepts (issue 25)

def _frame(header_bytes: bytes, body: int = 0) -> bytes:
    return struct.pack("!QQ", len(header_bytes), body) + header_bytes


_HOSTILE = {
    "missing arrays field": _frame(json.dumps({"token": "guess", "partition": 0}).encode()),
    "a JSON list": _frame(b"[1, 2, 3]"),
    "random bytes": np.random.default_rng(7).bytes(4096),
    "a 2**63 length header": struct.pack("!QQ", 2**63, 0),
    "a 2**63 body": struct.pack("!QQ", 2, 2**63) + b"{}",
    "the token with a huge body": _frame(b"{}", body=2**40),
}


def _honest_run(hub, rounds=3):
    """Two honest tasks exchanging with ``hub``: the replies, as an undisturbed run gets them."""
    out = {}
    threads = [threading.Thread(target=_task, args=(hub.address, hub.token, p, rounds, out)) for p in (1, 0)]
    for t in threads:
        t.start()
    hub.accept_all()
    replies = [hub.exchange([({"n": n}, [np.arange(5, dtype=np.int64) * (n + 1)])] * 2) for n in range(rounds)]
    hub.close({"kind": "stop"})
    for t in threads:
        t.join(5)
    assert out == {0: {"kind": "stop"}, 1: {"kind": "stop"}}
    return [[(h, [a.tolist() for a in arrays]) for h, arrays in r] for r in replies]


_UNDISTURBED = [[({"partition": p, "got": n}, [(np.arange(5) * (n + 1) * (p + 1)).tolist()]) for p in (0, 1)]
                for n in range(3)]


@pytest.mark.parametrize("name", sorted(_HOSTILE))
def test_a_hostile_frame_is_hung_up_on_and_the_run_goes_on(name):
    hub = SyncHub("127.0.0.1", 2, alive=lambda: True, connect_timeout=20)
    hostile = socket.create_connection(hub.address)
    hostile.sendall(_HOSTILE[name])
    assert _honest_run(hub) == _UNDISTURBED
    hostile.settimeout(5)
    try:
        assert hostile.recv(1) == b""                # hung up on
    except ConnectionResetError:
        pass
    assert hub.refused >= 1
    hostile.close()


def test_idle_connections_neither_keep_tasks_out_nor_last(monkeypatch):
    monkeypatch.setattr(sync_hub, "HELLO_SECONDS", 0.5)
    hub = SyncHub("127.0.0.1", 2, alive=lambda: True, connect_timeout=8)
    failed = []
    accepting = threading.Thread(target=_record, args=(failed, hub.accept_all))
    accepting.start()
    slow = socket.create_connection(hub.address)
    slow.sendall(b"\x00" * 9)                        # half a length header, then silence
    slow.settimeout(3)
    assert slow.recv(1) == b"" and accepting.is_alive()     # hung up on after HELLO_SECONDS
    idle = [socket.create_connection(hub.address) for _ in range(200)]
    began, out = time.monotonic(), {}
    threads = [threading.Thread(target=_task, args=(hub.address, hub.token, p, 1, out)) for p in (0, 1)]
    for t in threads:
        t.start()
    accepting.join(10)
    assert not failed and len(hub._tasks) == 2 and time.monotonic() - began < 5
    replies = hub.exchange([({"n": 0}, [np.arange(5, dtype=np.int64)])] * 2)
    assert [[(h, [a.tolist() for a in arrays]) for h, arrays in replies]] == _UNDISTURBED[:1]
    hub.close({"kind": "stop"})
    for t in threads:
        t.join(5)
    for sock in idle + [slow]:
        sock.close()


def _record(failed, call):
    try:
        call()
    except Exception as exc:        # noqa: BLE001
        failed.append(exc)


@pytest.mark.parametrize("frame, error", [
    (_frame(b"[1]"), "JSON list"),
    (_frame(b'{"kind": "sync"}'), "without its list of arrays"),
    (_frame(b"\xff\xfe"), "not JSON"),
    (_frame(b'{"arrays": [["|O", [1]]]}', 8), "numeric dtype"),
    (_frame(b'{"arrays": [["<f8", [-1]]]}', 8), "numeric dtype"),
    (_frame(b'{"arrays": [["<f8", [2]]]}', 8), "do not fill"),
    (struct.pack("!QQ", 2**63, 0), "header of"),
], ids=["list", "no arrays", "not utf-8", "object dtype", "negative shape", "short body", "2**63 header"])
def test_a_malformed_frame_is_one_hub_error(frame, error):
    a, b = socket.socketpair()
    b.settimeout(5)
    a.sendall(frame)
    with pytest.raises(HubError, match=error):
        recv_message(b)
    a.close()
    b.close()


def test_a_reply_above_the_cap_ends_the_exchange_not_the_driver():
    hub = SyncHub("127.0.0.1", 1, alive=lambda: True, connect_timeout=20, max_reply=64)

    def task():
        sock = connect(hub.address, hub.token, 0)
        recv_message(sock)
        sock.sendall(struct.pack("!QQ", 2, 2**30) + b"{}")
        try:
            sock.recv(1)
        except ConnectionResetError:
            pass
        sock.close()
    thread = threading.Thread(target=task)
    thread.start()
    hub.accept_all()
    with pytest.raises(HubError, match="partition 0: a message body of 1073741824 bytes"):
        hub.exchange([({"n": 0}, [])])
    hub.close()
    thread.join(5)
