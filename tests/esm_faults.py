"""Fault injection for the ESM emulation (``hotkeys.emulator.esm``): what production does to a consumer, drawn at
random. Test and benchmark machinery: the product's replay runs clean (``Deliveries``)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hotkeys.emulator.esm import Deliveries


@dataclass
class RandomFaults(Deliveries):
    """Lost responses and redelivered overlaps (each with ``lose_probability``), odd batch sizes, and
    a split's halves retried later half first (``reorder_probability``)."""

    rng: random.Random
    lose_probability: float = 0.2
    # 0: a split's halves are retried in order (and the generator is not consulted).
    reorder_probability: float = 0.0
    # How many splits were retried later half first.
    reordered: int = 0

    def second_half_first(self) -> bool:
        swap = self.reorder_probability > 0 and self.rng.random() < self.reorder_probability
        self.reordered += swap
        return swap

    def batch_size(self, limit: int) -> int:
        return self.rng.randint(1, limit)

    def lose_response(self) -> bool:
        return self.rng.random() < self.lose_probability

    def overlap(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not batch or self.rng.random() >= self.lose_probability:
            return []
        return batch[self.rng.randrange(len(batch)) :]
