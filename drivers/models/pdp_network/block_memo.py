"""What ``pdp-network``'s model object remembers per block between the engine's hooks (issue 28, 3): the compiled
network and the block's vocabulary of every block it serves (a resident task may serve several partitions, so
one entry per block, not only the last), and the counts of the state a sweep left, so the hooks that follow
(``table_counts``, ``partition_stats``, ``segment_topic`` and the next sweep) do not rebuild them from (z, s).
Counts are recalled only for the very z and s arrays they were remembered with (O(1), no copy): the engine treats
a partition's state as the model's own, only ``pdp-network``'s sweep writes z and s in place, and it takes the
counts out of the memory before it writes (a state restored, shipped or copied is a new array: recounted)."""
from __future__ import annotations


#: blocks remembered per kind of value (oldest dropped first)
SIZE = 8


class BlockMemo:
    """Values keyed by a block object (held, so its id is not reused while remembered) and a key."""

    def __init__(self, size: int = SIZE):
        self.size = size
        self._items = {}

    def get(self, block, key=None):
        item = self._items.get((id(block), key))
        return item[1] if item is not None and item[0] is block else None

    def put(self, block, value, key=None):
        self._items.pop((id(block), key), None)
        self._items[(id(block), key)] = (block, value)
        while len(self._items) > self.size:
            self._items.pop(next(iter(self._items)))
        return value

    def pop(self, block, key=None):
        item = self._items.pop((id(block), key), None)
        return item[1] if item is not None and item[0] is block else None


class CountsMemo(BlockMemo):
    """The counts a sweep left, valid for the same z and s arrays (module docstring)."""

    def remember(self, block, state: dict, counts: dict) -> None:
        self.put(block, (state["z"], state["s"], counts))

    def recall(self, block, state: dict) -> dict | None:
        """The remembered counts (the caller must not change them), or None."""
        item = self.get(block)
        if item is None or item[0] is not state["z"] or item[1] is not state["s"]:
            return None
        return item[2]

    def take(self, block, state: dict) -> dict | None:
        """:meth:`recall` and forget (for a caller that changes the counts: a sweep)."""
        counts = self.recall(block, state)
        self.pop(block)
        return counts
