"""The engine's named networks (``--net``): layer programs for ``golden.engine.network.NetConfig``.

* ``digits-mlp`` -- scikit-learn's 8 x 8 digits, INT8 MLP 64-32-32-10 (ReLU), trained from scratch.
  Every width is a multiple of 8, so it tiles the default 8 x 8 array with no padding.
* ``rt-mlp``     -- all-MiniLM-L6-v2 sentence embeddings of Rotten Tomatoes, 384-64-2 (ReLU) head.
* ``rt-head``    -- the same embeddings, the bias-free linear 384-2 head of the first engine.

The requantisation shifts are part of the network (constants of the generated circuit); the trainer
(``golden.zo.int8_net``) scales its initial weights to them. The shifts were chosen by training
(``benchmarks/results/engine_net``): digits-mlp 10/9 and rt-mlp 9 start the weights at a standard
deviation of ~30-50 LSB, coarse enough for one-LSB ZO steps (7/7 starts layer 1 at ~5 LSB: 50 % test
accuracy against 80 % at 10/9 after 4 000 steps of batch 64).
"""

from __future__ import annotations

from pezo.golden.engine.conv import Conv2D
from pezo.golden.engine.network import Layer, NetConfig

DIGITS_CNN = (
    Conv2D(1, 8, 8, 8, kernel=3, padding=1, pool="max", shift=9, relu=True),
    Conv2D(8, 4, 4, 16, kernel=3, padding=1, pool="max", shift=8, relu=True),
    Layer(64, 32, shift=8, relu=True),
    Layer(32, 10),
)
NETS = {
    "digits-mlp": (Layer(64, 32, shift=10, relu=True), Layer(32, 32, shift=9, relu=True), Layer(32, 10)),
    "digits-cnn": DIGITS_CNN,
    "rt-mlp": (Layer(384, 64, shift=9, relu=True), Layer(64, 2)),
    "rt-head": (Layer(384, 2),),
}
NET_NAMES = tuple(NETS)


def net_config(name: str, **fields) -> NetConfig:
    """The ``NetConfig`` of network ``name`` with the flat array/stream fields in ``fields`` (rows, cols,
    batch, strategy, ...)."""
    if name not in NETS:
        raise ValueError(f"net must be one of {', '.join(NET_NAMES)}, got {name!r}")
    return NetConfig.from_dict({"layers": NETS[name], "name": name, **fields})
