"""The README's Python snippets run as pasted: the mechanisms on their own, the means and
the training job against a real aggregator (``URL`` and the two tokens are the only names
the README leaves to the reader, as it says).

Each block is found under its heading and run with ``exec``; what it prints is what the
README's comments promise: the estimate without a server, ``InsufficientReportsError``
below the release minimum, a training job in a host collection with a layout, and a
device that refuses a label outside the layout's two values.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ldp_shared.rand
from ldp_client import LDPClient
from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms import OptimizedUnaryEncoding
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, z_bar

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"


def python_block(heading: str, index: int = 0) -> str:
    """The ``index``-th ``python`` block of the README section under ``## heading``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.DOTALL)
    assert len(blocks) > index, f"no python block {index} under {heading!r}"
    return str(blocks[index])


def run(block: str, server: str | None = None) -> tuple[dict[str, Any], str]:
    names: dict[str, Any] = {"__name__": "readme"}
    if server is not None:
        names |= {"URL": server, "ADMIN_TOKEN": ADMIN, "ANALYST_TOKEN": ANALYST}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), names)
    return names, out.getvalue()


def test_the_mechanisms_snippet_defines_its_values_and_estimates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    block = python_block("The SDK in ten lines", 1)
    assert "values =" in block
    # the snippet's perturbation draws from the shared secure generator: seeded here
    monkeypatch.setattr(ldp_shared.rand, "_shared", seeded_rng(16))
    names, out = run(block)
    estimate, values = names["estimate"], names["values"]
    assert estimate.estimate.shape == (16,) and estimate.n == 10_000
    # every f̂ within the Bonferroni bar of the values' own shares (α = 1e-4 over 16)
    shares = np.bincount(values, minlength=16) / len(values)
    bar = z_bar(16)
    assert (abs(estimate.estimate - shares) < bar * estimate.stderr).all()
    # power: the same bits estimated as if ε were 2 miss the shares
    wrong = OptimizedUnaryEncoding(d=16, epsilon=2.0).estimate(names["bits"].sum(axis=0), n=10_000)
    assert (abs(wrong.estimate - shares) >= bar * wrong.stderr).any()
    assert out.count("[") == 2


def test_the_means_snippet_says_it_is_below_the_release_minimum(server: str) -> None:
    block = python_block("Numbers: means of bounded values")
    assert "InsufficientReportsError" in block
    _, out = run(block, server)
    assert "at least 100" in out and "Traceback" not in out, out
    with LDPClient(server) as client:  # 99 more: the minimum is reached, the mean released
        client.submit("people", [{"age": 42, "sex": "female"}] * 99)
    with LDPClient(server, token=ANALYST) as analyst:
        assert analyst.means("people", "age").n_reports == 100


def test_the_training_snippet_runs_in_a_host_collection_with_its_layout(server: str) -> None:
    block = python_block("Logistic regression from perturbed gradients")
    names, out = run(block, server)
    assert out.strip() == "0"  # round 0 is open
    job = names["job"]
    assert job.spec.layout.negative == "benign" and job.collection == "clinic"
    with LDPClient(server) as device:
        record = {"radius": 14.2, "texture": 19.3, "smoker": "no"}
        for label in (1.0, True, "PD"):
            with pytest.raises(InvalidRecordError, match="not one of the layout's values"):
                device.participate("clinic", job.id, {**record, "diagnosis": label})
    with LDPClient(server, token=ANALYST) as analyst:
        assert analyst.training_job("clinic", job.id).received == 1  # only the snippet's report
