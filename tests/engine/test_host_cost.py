"""The preview's cost lines leave the real dynamic-provider host on stderr, which the engine shows."""

from __future__ import annotations

import os

from tests.engine.inputs import JobShape, recorded


def test_a_preview_check_prints_the_price_the_worst_case_and_the_cap_warning(fake_vertex, start_host):
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    # A first preview: image, args and identity unknown; the shape, timeout and cap are known.
    checked = host.check(recorded(JobShape(max_cost_usd=0.1), preview=True))
    assert list(checked.failures) == []
    lines = host.stderr().splitlines()
    # n1-standard-8 + 1 x T4 on demand in us-central1 (the cited table: the fake Vertex serves no catalog).
    assert (
        "[engine-boundary] cost of shape: 1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD): USD 0.84/h, "
        "USD 0.14 for timeout_seconds 600" in lines
    )
    assert any(
        line.startswith("[engine-boundary] WARNING: worst case USD 0.14 is over max_cost_usd USD 0.10")
        for line in lines
    )
