"""The growth bench's own rules: surfaces are found by module, named once, and judged by ratio.

No timing is asserted here: the rows are built from made-up samples, so what is tested is
how the bench reads a ratio, never how fast anything runs.
"""

from __future__ import annotations

import pytest

from bench import growth_bench
from bench.growth.measure import Sample, Surface, in_process


def _surface(name: str = "a surface") -> Surface:
    return Surface(name, "items", 10, in_process(lambda n: list(range(n)), sorted, repeat=1))


def test_every_surface_has_a_name_of_its_own_and_a_positive_size() -> None:
    found = growth_bench.surfaces()
    names = [s.name for s in found]
    assert len(names) == len(set(names))
    assert all(s.size > 0 and s.unit for s in found)


@pytest.mark.parametrize(
    ("small", "large", "over"),
    [
        pytest.param(Sample(1.0, 1 << 20), Sample(2.0, 2 << 20), False, id="linear growth passes"),
        pytest.param(Sample(1.0, 1 << 20), Sample(4.0, 2 << 20), True, id="quadratic time fails"),
        pytest.param(Sample(1.0, 1 << 20), Sample(2.0, 4 << 20), True, id="quadratic memory fails"),
        pytest.param(
            Sample(1.0, 1024), Sample(2.0, 8 * 1024), False, id="memory under the floor is flat"
        ),
        pytest.param(Sample(1.0, None), Sample(2.1, None), False, id="unmeasured memory is shown"),
    ],
)
def test_a_row_is_over_the_target_exactly_when_a_ratio_is(
    small: Sample, large: Sample, over: bool
) -> None:
    line, flagged = growth_bench.row(_surface(), 10, [small], [large])
    assert flagged is over
    assert ("!" in line) is over


def test_an_in_process_sample_measures_time_and_memory() -> None:
    sample = _surface().sample(1000)
    assert sample.seconds >= 0
    assert sample.peak_bytes is not None and sample.peak_bytes > 0
