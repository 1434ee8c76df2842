"""The perturbation strategies, one registry: what each ``PerturbConfig.strategy`` is built from.

``STRATEGIES`` (in the order of ``golden.config.STRATEGIES``: otf, pregen, gaussian) maps a strategy's
name to its ``Strategy``: the generator component and its Verilog top name (``pezo verilog``,
``boards.flow.report``), the cocotb / Amaranth bench of ``sim.benches``, the generator as the stream unit
instantiates it (``hw.rng.perturb``), the config fields that apply to it, and its names in tables
(``boards.flow.comparison_rows``). Behaviour that differs per strategy (budgets, the otf scale LUT and alignment)
stays with the code it belongs to; this module only removes the name-to-thing maps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from amaranth.lib import wiring

from pezo.golden import config as golden_config
from pezo.golden.config import PerturbConfig
from pezo.golden.engine.zo_engine import ENGINE_STRATEGIES
from pezo.hw.rng.grng import GaussianArray
from pezo.hw.rng.pool import PoolReader
from pezo.hw.rng.urng import URNGArray


@dataclass(frozen=True)
class Strategy:
    """One perturbation strategy.

    name          -- ``PerturbConfig.strategy``: otf, pregen or gaussian.
    label         -- a human name for tables and help texts.
    generator     -- ``config -> wiring.Component``: the bare generator unit (the component class), what
                     ``pezo verilog`` / ``pezo report`` build for unit ``generator``.
    top_name      -- the generator's Verilog top-module name.
    bench         -- the ``sim.benches`` bench key of the generator.
    fields        -- the ``PerturbConfig`` fields that apply to this strategy and not to every strategy.
    stream_source -- ``config -> wiring.Component``: the generator as the perturbation stream unit
                     (``hw.rng.perturb.PerturbationStream``) instantiates it, always rewindable.
    start_input   -- the source's input the stream pulses at a perturbation's start (what ``restore``
                     returns to): the pool's ``next_perturbation``, the arrays' ``save`` (otf: driven by
                     the stream's aligning controller, at rotation pointer 0).
    always_rewindable -- the bare generator rewinds whatever ``config.rewind`` says (the pool's start
                     register), so ``rewind`` does not name a variant.
    design_name   -- ``config -> str``: the short design name of ``boards.flow.comparison_rows`` (``otf 32 x 14``).
    """

    name: str
    label: str
    generator: Callable[[PerturbConfig], wiring.Component]
    top_name: str
    bench: str
    fields: tuple[str, ...]
    stream_source: Callable[[PerturbConfig], wiring.Component]
    start_input: str
    always_rewindable: bool
    design_name: Callable[[PerturbConfig], str]

    @property
    def engine(self) -> bool:
        """Whether the ZO engine (``hw.engine.zo_engine.ZOEngine``) takes this strategy's stream."""
        return self.name in ENGINE_STRATEGIES

    def config_fields(self, config: PerturbConfig) -> dict:
        """``fields`` of ``config`` as a dict (in ``fields`` order)."""
        return {field: getattr(config, field) for field in self.fields}


def _rewindable(component: type) -> Callable[[PerturbConfig], wiring.Component]:
    def build(config: PerturbConfig) -> wiring.Component:
        return component(config.replace(rewind=True))

    build.__qualname__ = build.__name__ = f"rewindable_{component.__name__}"
    return build


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(
            name="otf",
            label="on-the-fly URNG array (PeZO)",
            generator=URNGArray,
            top_name="pezo_urng_array",
            bench="urng",
            fields=("n_rngs", "rng_bits"),
            stream_source=_rewindable(URNGArray),
            start_input="save",
            always_rewindable=False,
            design_name=lambda c: (
                f"otf {c.n_rngs} x {c.rng_bits}"
                + (f" leap {c.lfsr_leap}" if c.lfsr_leap != 1 else "")
                + (f" {c.lfsr_bit_order}" if c.lfsr_bit_order != golden_config.DEFAULT_BIT_ORDER else "")
            ),
        ),
        Strategy(
            name="pregen",
            label="pre-generated pool in BRAM (PeZO)",
            generator=PoolReader,
            top_name="pezo_pool_reader",
            bench="pool",
            fields=("pool_size", "pool_bits", "lanes", "banks"),
            stream_source=PoolReader,
            start_input="next_perturbation",
            always_rewindable=True,
            design_name=lambda c: f"pregen {c.pool_size}x{c.pool_bits}b/{c.banks} banks",
        ),
        Strategy(
            name="gaussian",
            label="CLT Gaussian RNG array (MeZO)",
            generator=GaussianArray,
            top_name="pezo_gaussian_array",
            bench="gaussian",
            fields=("lanes",),
            stream_source=_rewindable(GaussianArray),
            start_input="save",
            always_rewindable=False,
            design_name=lambda c: f"gaussian x {c.lanes}",
        ),
    )
}
assert tuple(STRATEGIES) == golden_config.STRATEGIES, "hw.strategies and golden.config.STRATEGIES disagree"


def strategy(name: str) -> Strategy:
    """The ``Strategy`` called ``name``; ValueError (naming the choices) for anything else."""
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {name!r}") from None
