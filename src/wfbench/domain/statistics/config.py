"""How a pair is analysed: confidence, bootstrap resamples, MDE power and the seed."""

from __future__ import annotations

import attrs

from wfbench.domain.errors import InputError

__all__ = ["DEFAULT_ANALYSIS", "DEFAULT_CONFIDENCE", "DEFAULT_POWER", "DEFAULT_RESAMPLES", "AnalysisConfig"]

DEFAULT_CONFIDENCE = 0.9
DEFAULT_RESAMPLES = 2000
DEFAULT_POWER = 0.8


def _unit_interval(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise InputError("must be a number strictly between 0 and 1", field=attribute.name)


def _resamples(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 1_000_000:
        raise InputError("must be an integer from 100 to 1000000", field="resamples")


def _seed(_instance: object, _attribute: object, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InputError("must be a non-negative integer or null", field="seed")


@attrs.frozen
class AnalysisConfig:
    """How the pair is analysed: two-sided ``confidence``, bootstrap ``resamples``, MDE ``power``."""

    confidence: float = attrs.field(default=DEFAULT_CONFIDENCE, validator=_unit_interval)
    resamples: int = attrs.field(default=DEFAULT_RESAMPLES, validator=_resamples)
    power: float = attrs.field(default=DEFAULT_POWER, validator=_unit_interval)
    #: ``None``: derive the seed from the evidence (:func:`derive_seed`).
    seed: int | None = attrs.field(default=None, validator=_seed)

    @property
    def alpha(self) -> float:
        """The one-sided level: each tail of the two-sided interval (rounded to 12 places, so
        a 90 % interval gives exactly 0.05)."""
        return round((1.0 - self.confidence) / 2.0, 12)


#: The defaults: 90 % two-sided intervals, B = 2,000, power 0.8, seed derived from the evidence.
DEFAULT_ANALYSIS = AnalysisConfig()
