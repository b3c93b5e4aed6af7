"""Compile the project's numba kernels before their first use: ``python -m drivers.kernel_cache warm``.

numba compiles a kernel at its first call, for that call's argument types, and keeps the machine code in the
``__pycache__`` beside its source (``cache=True``; :mod:`inference` drops it when a kernel's source changes). In
a fresh install every first call pays that compilation, one kernel after another in one process (and the same
kernel again in each Spark worker that reaches it first): 95 CPU seconds for the kernel tests alone.
``deploy/setup.sh`` runs ``warm``, which compiles every (kernel, argument types) pair listed in
``kernel_signatures.json`` in one process per core, so the first jobs and the test run load machine code instead.
A kernel or a signature missing from the list is compiled at its first call, as before; a listed one that no longer
exists is skipped. The results are the same: the cache holds what the first call would have compiled.

``record`` rewrites the list from the cache index files a run left behind (maintainers: after the test suite), the
kernels' own signatures only (calls from other kernels with literal or omitted arguments are compiled with their
callers).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import os
import pickle
import re
import sys
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the packages whose modules hold kernels (``inference.__init__`` keeps their caches consistent)
KERNEL_TREES = ("inference", os.path.join("drivers", "models"))
SIGNATURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_signatures.json")

_ARRAY = re.compile(r"^(readonly )?array\((\w+), (\d+)d, ([CFA])\)$")
_INDEX = re.compile(r"^(?P<stem>[^.]+)\.(?P<name>.+)-\d+\.py\d+\.nbi$")


def parse_type(text: str):
    """The numba type written as ``str(type)``: ``array(float64, 2d, C)``, ``int64``, ``bool``, ..."""
    from numba.core import types

    match = _ARRAY.match(text)
    if match:
        return types.Array(getattr(types, match[2]), int(match[3]), match[4], readonly=bool(match[1]))
    if text == "bool":
        return types.boolean
    kind = getattr(types, text, None)
    if not isinstance(kind, types.Type):
        raise ValueError(f"not a type this list can hold: {text!r}")
    return kind


def _compile_module(module_name: str, kernels: dict) -> tuple[int, int, list[str]]:
    """Compile one module's listed signatures: (compiled, skipped, what was skipped and why)."""
    from numba.core.dispatcher import Dispatcher

    done, skipped, why = 0, 0, []
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        return 0, sum(map(len, kernels.values())), [f"{module_name}: {exc}"]
    for name, signatures in kernels.items():
        dispatcher = getattr(module, name, None)
        if not isinstance(dispatcher, Dispatcher):
            skipped += len(signatures)
            why.append(f"{module_name}.{name}: not a kernel")
            continue
        for signature in signatures:
            try:
                dispatcher.compile(tuple(parse_type(t) for t in signature))
                done += 1
            except Exception as exc:  # a changed kernel: compiled at its first call instead
                skipped += 1
                why.append(f"{module_name}.{name}{tuple(signature)}: {type(exc).__name__}")
    return done, skipped, why


def warm(path: str = SIGNATURES, processes: int | None = None) -> dict:
    """Compile every listed signature, modules spread over ``processes`` (default: the cores)."""
    with open(path, encoding="utf-8") as f:
        listed = json.load(f)
    processes = max(1, min(processes or os.cpu_count() or 1, len(listed) or 1))
    start, done, skipped, why = time.time(), 0, 0, []
    # the largest modules first, so the processes finish together
    order = sorted(listed, key=lambda m: -sum(map(len, listed[m].values())))
    with concurrent.futures.ProcessPoolExecutor(processes) as pool:
        for d, s, w in pool.map(_compile_module, order, [listed[m] for m in order]):
            done, skipped, why = done + d, skipped + s, why + w
    return {"compiled": done, "skipped": skipped, "why": why, "seconds": time.time() - start,
            "processes": processes}


def record(path: str = SIGNATURES, checkouts: tuple = (PROJECT,)) -> dict:
    """Rewrite the list from the ``.nbi`` cache index files under the kernel packages of ``checkouts`` (this one,
    or several worktrees whose runs compiled different kernels: their union)."""
    listed: dict = {}
    for checkout, tree in ((c, t) for c in checkouts for t in KERNEL_TREES):
        for root, dirs, files in os.walk(os.path.join(checkout, tree)):
            if os.path.basename(root) != "__pycache__":
                continue
            package = os.path.relpath(os.path.dirname(root), checkout).replace(os.sep, ".")
            for file in sorted(files):
                match = _INDEX.match(file)
                if not match or "<locals>" in match["name"] or "." in match["name"]:
                    continue
                module = f"{package}.{match['stem']}" if match["stem"] != "__init__" else package
                for signature in _index_signatures(os.path.join(root, file)):
                    if any(t.startswith(("Literal", "omitted")) for t in signature) or not _readable(signature):
                        continue
                    kernels = listed.setdefault(module, {}).setdefault(match["name"], [])
                    if signature not in kernels:
                        kernels.append(signature)
    listed = {m: {k: sorted(v) for k, v in sorted(listed[m].items())} for m in sorted(listed)}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(listed, f, indent=1, sort_keys=True)
        f.write("\n")
    return listed


def _readable(signature: list[str]) -> bool:
    """Whether ``warm`` can read every type of ``signature`` (a tuple argument, e.g. a kernel's workspace, is
    compiled at its first call instead)."""
    try:
        for t in signature:
            parse_type(t)
    except (ValueError, TypeError, KeyError, AttributeError):
        return False
    return True


def _index_signatures(path: str) -> list[list[str]]:
    """The argument types of every overload in one of numba's index files (our own cache: a version string,
    then the pickled (source stamp, {(signature, target, ...): file}))."""
    with open(path, "rb") as f:
        pickle.load(f)
        _stamp, overloads = pickle.loads(f.read())
    return [[str(t) for t in key[0]] for key in overloads]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m drivers.kernel_cache", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("warm", "record"))
    parser.add_argument("--processes", type=int, default=None, help="compiling processes (default: the cores)")
    parser.add_argument("--from", dest="checkouts", action="append", default=None, metavar="CHECKOUT",
                        help="record: read the caches of this checkout (repeatable; default: this one)")
    args = parser.parse_args(argv)
    if args.action == "record":
        listed = record(checkouts=tuple(args.checkouts or (PROJECT,)))
        print(f"{sum(len(s) for k in listed.values() for s in k.values())} signatures of "
              f"{sum(map(len, listed.values()))} kernels in {len(listed)} modules -> {SIGNATURES}")
        return
    result = warm(processes=args.processes)
    print(f"compiled {result['compiled']} kernel signatures in {result['seconds']:.0f} s "
          f"({result['processes']} processes)" + (f"; {result['skipped']} skipped" if result["skipped"] else ""))
    for line in result["why"][:10]:
        print(f"  skipped {line}", file=sys.stderr)


if __name__ == "__main__":
    main()
