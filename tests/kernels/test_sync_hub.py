"""drivers/sync_hub.py: the messages between the driver and resident tasks (no Spark)."""
from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from drivers.sync_hub import HubError, SyncHub, connect, recv_message, send_message


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
