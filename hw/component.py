"""The base of every pezo component: a signature determined by one frozen config (``PerturbConfig``,
or ``EngineConfig`` for the PE-array engine)."""

from __future__ import annotations

from amaranth.lib import wiring

from pezo.golden.config import PerturbConfig


class ConfigSignature(wiring.Signature):
    """A signature built from a config: checks the config's type (one ValueError), keeps it, and
    compares equal to another signature of the same class and config. Subclasses define
    ``members_for(config)`` (and may raise ValueError there for configs they cannot build), and may
    set ``config_type``."""

    config_type: type = PerturbConfig

    def __init__(self, config):
        if not isinstance(config, self.config_type):
            raise ValueError(f"config must be a {self.config_type.__name__}, got {type(config).__name__}")
        self.config = config
        super().__init__(self.members_for(config))

    def members_for(self, config: PerturbConfig) -> dict:
        raise NotImplementedError

    def __eq__(self, other):
        return type(other) is type(self) and other.config == self.config

    def __repr__(self):
        return f"{type(self).__qualname__}({self.config!r})"


class ConfigComponent(wiring.Component):
    """A component whose ports are ``self.Signature(config)`` (a ``ConfigSignature`` subclass)."""

    Signature: type[ConfigSignature]

    def __init__(self, config):
        self.config = config
        super().__init__(self.Signature(config))
