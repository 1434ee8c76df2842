"""The strategy registry (``hw.strategies``): one entry per ``golden.config.STRATEGIES``, used by the
stream unit, the benches and the reports."""

import pytest
from amaranth.lib import wiring

from pezo.boards.flow.comparison_rows import Design
from pezo.boards.flow.report import ENGINE_STRATEGIES, top_name, unit_component
from pezo.golden import config as golden_config
from pezo.golden.config import PerturbConfig
from pezo.golden.engine.zo_engine import ENGINE_STRATEGIES as GOLDEN_ENGINE_STRATEGIES
from pezo.hw.strategies import STRATEGIES, Strategy, strategy
from pezo.sim.benches import BENCHES, bench_name


def test_registry_follows_golden_config_order():
    assert tuple(STRATEGIES) == golden_config.STRATEGIES == ("otf", "pregen", "gaussian")
    assert all(isinstance(s, Strategy) and s.name == name for name, s in STRATEGIES.items())


def test_strategy_lookup_and_error():
    assert strategy("pregen") is STRATEGIES["pregen"]
    with pytest.raises(ValueError, match=r"^strategy must be one of otf, pregen, gaussian, got 'x'$"):
        strategy("x")


def test_strategy_is_frozen():
    with pytest.raises(AttributeError):
        STRATEGIES["otf"].top_name = "other"


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_generator_top_bench_and_fields(name):
    s = strategy(name)
    config = PerturbConfig(strategy=name)
    generator = s.generator(config)
    assert isinstance(generator, wiring.Component)
    assert type(generator) is type(unit_component(config))
    assert top_name(config) == s.top_name
    assert bench_name(config) == s.bench and s.bench in BENCHES
    assert isinstance(BENCHES[s.bench](config, 10, 1).component(), type(generator))
    assert set(s.fields) <= set(config.to_dict())
    assert s.config_fields(config) == {f: getattr(config, f) for f in s.fields}
    source = s.stream_source(config.replace(rewind=False))
    assert type(source) is type(generator)
    assert s.start_input in source.signature.members
    assert s.engine == (name in GOLDEN_ENGINE_STRATEGIES)


def test_tables_and_engine_names_come_from_the_registry():
    assert ENGINE_STRATEGIES == {"engine-otf": "otf", "engine-pregen": "pregen"}
    assert Design(PerturbConfig()).name == "otf 32 x 14"
    assert Design(PerturbConfig(rewind=True)).name == "otf 32 x 14 + rewind"
    assert Design(PerturbConfig(strategy="pregen", rewind=True)).name == "pregen 4095x12b/8 banks"
    assert Design(PerturbConfig(strategy="gaussian", rewind=True), "stream").name == "gaussian x 8 stream"


def test_bench_name_of_units():
    config = PerturbConfig()
    assert [bench_name(config, u) for u in ("generator", "stream", "scale")] == ["urng", "stream", "scale"]
    with pytest.raises(ValueError, match="unit must be one of"):
        bench_name(config, "host")
