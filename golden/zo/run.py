"""One training run of a whole network on the network engine, prepared once: ``NetRun``.

Every consumer of a run -- ``pezo train-int8 --net`` (``golden.zo.int8_net``), the co-simulations (``pezo.sim.cosim``:
``pezo sim engine | board | uart``), the driver on the board (``python -m pezo.driver``), benchmarks and
experiments -- starts from the same five things, made here and nowhere else:

* ``data``      -- the run's ``NetData`` (``golden.zo.user_data.load_run_data``: a user's file or the built-in set);
* ``weights``   -- the start int8 weights per layer (``golden.zo.net_init.init_weights``, given the data, so a start
  that needs the validation split, ``last_init="probe"``, works on every path);
* ``biases``    -- the network file's int32 biases (None: every bias starts at zero);
* the batch schedule -- ``schedule(steps)``: [steps, batch] training indices (``golden.zo.int8_head.batch_schedule``,
  seeded by ``train.seed``); ``batches(steps)`` the int8 inputs and labels it picks;
* ``act_exponent`` -- the inputs' power-of-two exponent s_x (x = q * 2^s_x).

``design_train_config`` is the one constructor of "the training config of this design": a built design's
``NetConfig`` (the map in its ``config.json``) back to the ``NetTrainConfig`` whose engine it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pezo.golden.engine.net_file import load_net
from pezo.golden.engine.network import NetConfig
from pezo.golden.zo.int8_head import batch_schedule
from pezo.golden.zo.net_config import NetTrainConfig, split_config
from pezo.golden.zo.net_data import NetData
from pezo.golden.zo.net_init import init_weights
from pezo.golden.zo.user_data import load_run_data


@dataclass(frozen=True, eq=False)
class NetRun:
    """A ``NetTrainConfig`` with its data, start weights and biases (module docstring). Build with ``prepare``."""

    train: NetTrainConfig
    data: NetData
    weights: tuple
    init: dict
    biases: list | None

    @classmethod
    def prepare(cls, train: NetTrainConfig, data: NetData | None = None) -> NetRun:
        """Load ``train``'s data (unless given) and make its start. ValueError (one line) for data that does not fit
        the network or a start that cannot be made."""
        if not isinstance(train, NetTrainConfig):
            raise ValueError(f"train must be a NetTrainConfig, got {type(train).__name__}")
        data = data if data is not None else load_run_data(train)
        weights, init = init_weights(train, data.x["train"], data)
        biases = load_net(train.net).biases
        return cls(train, data, tuple(weights), init, None if biases is None else list(biases))

    @property
    def net(self) -> NetConfig:
        """The layer program the golden engine runs (``train.net_config``)."""
        return self.train.net_config

    @property
    def loss(self):
        """The loss unit's settings (``train.loss_config``)."""
        return self.train.loss_config

    @property
    def act_exponent(self) -> int:
        return self.data.act_exponent

    @property
    def train_size(self) -> int:
        return len(self.data.y["train"])

    @property
    def flat_weights(self) -> np.ndarray:
        """The start weights in the engine's stream order (layer by layer, row-major), int64."""
        return np.concatenate([np.asarray(w).ravel() for w in self.weights])

    def schedule(self, steps: int) -> np.ndarray:
        """[steps, batch] training indices (ValueError if the batch exceeds the training split)."""
        return batch_schedule(self.train_size, self.train.array.batch, steps, self.train.seed)

    def batches(self, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """The int8 inputs [steps, batch, ...] and labels [steps, batch] of ``steps`` steps."""
        rows = self.schedule(steps)
        return self.data.x["train"][rows], self.data.y["train"][rows]

    def examples(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``count`` training examples and labels (the on-chip data memory's contents)."""
        return self.data.x["train"][:count], self.data.y["train"][:count]

    @property
    def rtl_config(self) -> NetConfig:
        """The ``NetConfig`` the RTL runs: with a split C < L the engine carries its backprop tail. ValueError (one
        line naming ``--split``) for what the RTL cannot run: the host-g loss with a tail, a non-square array."""
        return rtl_config(self.train)


def rtl_config(train: NetTrainConfig) -> NetConfig:
    """``NetRun.rtl_config`` of a config alone (checked before any data is loaded)."""
    net = train.net_config
    if train.split_c == len(train.layers):
        return net
    if train.loss != "on-chip":
        raise ValueError(
            f"--split {train.split} needs --loss on-chip: the engine's backprop tail runs inside its TRAIN steps "
            "(the host-g mode has no tail)"
        )
    try:
        return net.replace(backprop=True)
    except ValueError as exc:
        raise ValueError(f"--split {train.split}: {exc}") from None


def design_train_config(
    design: NetConfig,
    seed: int = 1,
    g_mode: str = "sign",
    net: str | None = None,
    data: str | None = None,
    split=None,
    bp_bits: int | None = None,
) -> NetTrainConfig:
    """The ``NetTrainConfig`` whose engine is ``design`` (a built design's layer program): its stream and array,
    the network ``net`` (default the design's built-in name; an ONNX model is imported, calibrated on ``data``),
    ``seed`` (data split, start weights, batch order) and ``g_mode``; ``split`` / ``bp_bits`` the elastic trainer's
    partition (its default ``bp_bits``; needs a design with the backprop tail). ValueError, one line, when the
    network is not the design's or the split does not fit it."""
    if net is not None and str(net).lower().endswith(".onnx"):
        from pezo.golden.zo.model_import import cached_import

        net = str(cached_import(net, data, seed)[0])
    train = NetTrainConfig(
        net=net or design.name,
        data=data,
        stream=design.stream,
        array=design.array,
        stream_seed=design.stream.seed,
        seed=seed,
        g_mode=g_mode,
    )
    if split is not None:
        try:  # outside 0..L or a conv layer in the tail: the option's one error
            chosen = split_config(train.net, split, **({} if bp_bits is None else {"bp_bits": bp_bits}))
            train = train.replace(split=split, bp_bits=chosen.bp_bits)
        except ValueError as exc:
            raise ValueError(f"--{exc}" if str(exc).startswith("split ") else str(exc)) from None
        if train.split_c < len(train.layers) and not design.backprop:
            raise ValueError(
                f"--split {split} needs a design with the backprop tail (pezo build --design engine --backprop)"
            )
    elif bp_bits is not None:
        raise ValueError("--bp-bits is a setting of the backprop tail: give --split too")
    if train.net_config.replace(backprop=design.backprop) != design:
        raise ValueError(
            "the design's engine is not this network (pezo build --design engine --net N|PATH built it; give the "
            "same --net here)"
        )
    return train
