"""Variant `packed` of benchmarks/dali_stages.py: the DALI backend feeding every per-sample number of a batch in
one float32 array, taken apart by the graph, instead of one external source per argument (four in train, five in
eval, four more with colour jitter).

The producer thread bounds the DALI backend on a GPU (docs/benchmarks.md, the GPU checks), and each `feed_input`
is a call that may wait for the GIL, which the loader's reading threads hold most of the time. On the 2-core CPU
machine the difference did not show beyond the spread: DALI's own CPU work shares those cores. This variant lets
a GPU run measure it. It delivers base's batches (the integers among the numbers are exact in float32, and the
graph casts them back to the types base feeds); `dali_stages.py` checks the first batch of every run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_WIDTH = {"anchor": 2, "shape": 2}  # every other input is one number per sample
_CAST = {"anchor": "INT32", "shape": "INT32", "flip": "INT32", "resized": "BOOL"}  # as base feeds them


def install() -> None:
    """Patch the DALI backend in this process to feed its numbers packed."""
    from fastdata.images import dali_backend, dali_graph

    named = dali_graph.GraphArgs.inputs.fget  # one name per external source, as base feeds them
    base_feeds = dali_graph.feeds

    def numbers(args: Any) -> list[str]:
        return [n for n in named(args) if n not in ("encoded", "random")]

    def inputs(args: Any) -> tuple[str, ...]:
        return ("encoded", "params") + (("random",) if args.user_random else ())

    def feeds(args: Any, batch: list, **kw: Any) -> list:
        out = dict(zip(named(args), base_feeds(args, batch, **kw)))
        rows = len(batch)
        packed = np.concatenate([np.asarray(out[n], dtype=np.float32).reshape(rows, -1) for n in numbers(args)],
                                axis=1)
        return [out["encoded"], packed] + ([out["random"]] if args.user_random else [])

    def sources(args: Any) -> dict[str, Any]:
        import nvidia.dali.types as types
        from nvidia.dali import fn

        src = {name: fn.external_source(name=name, no_copy=False) for name in inputs(args)}
        params, k = src.pop("params"), 0
        for n in numbers(args):
            w = _WIDTH.get(n, 1)
            col = params[k:k + w] if w > 1 else params[k]
            src[n] = fn.cast(col, dtype=getattr(types, _CAST[n])) if n in _CAST else col
            k += w
        return src

    dali_graph.GraphArgs.inputs = property(inputs)
    dali_graph.sources = sources
    dali_backend.feeds = feeds  # the backend imported `feeds` by name
