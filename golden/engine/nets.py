"""The engine's named networks (``--net``): layer programs for ``golden.engine.network.NetConfig``.

* ``digits-mlp`` -- scikit-learn's 8 x 8 digits, INT8 MLP 64-32-32-10 (ReLU), trained from scratch.
  Every width is a multiple of 8, so it tiles the default 8 x 8 array with no padding.
* ``rt-mlp``     -- all-MiniLM-L6-v2 sentence embeddings of Rotten Tomatoes, 384-64-2 (ReLU) head.
* ``rt-head``    -- the same embeddings, the bias-free linear 384-2 head of the first engine.

The requantisation shifts are part of the network (constants of the generated circuit); the trainer
(``golden.zo.int8_net``) scales its initial weights to them.
"""

from __future__ import annotations

from pezo.golden.engine.network import Layer, NetConfig

NETS = {
    "digits-mlp": (Layer(64, 32, shift=7, relu=True), Layer(32, 32, shift=7, relu=True), Layer(32, 10)),
    "rt-mlp": (Layer(384, 64, shift=7, relu=True), Layer(64, 2)),
    "rt-head": (Layer(384, 2),),
}
NET_NAMES = tuple(NETS)


def net_config(name: str, **array) -> NetConfig:
    """The ``NetConfig`` of network ``name`` with the array/stream fields in ``array`` (rows, cols,
    batch, strategy, ...)."""
    if name not in NETS:
        raise ValueError(f"net must be one of {', '.join(NET_NAMES)}, got {name!r}")
    return NetConfig(layers=NETS[name], name=name, **array)
