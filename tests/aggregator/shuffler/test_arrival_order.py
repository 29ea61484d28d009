"""Arrival order through the shuffler, read as an attacker would: the forwarded batch on
the wire, the shuffler's own file, and the aggregator's database files.

Reports are sent one request each in a known order. For each place the test takes the
Spearman rank correlation between send order and the order recovered there, and
accepts "no order" when its two-sided p-value is above ``ALPHA``. In production the
shuffle, the shuffler's row ids and the reports' ids come from the operating system's
CSPRNG; here each is a generator seeded ``SEED`` (the forwarder's injectable
``shuffler``; the row and report ids patched), so the p-values are the same every run
and ``ALPHA`` is a fixed level, not a false-alarm rate. Power: with shuffling switched off
(sequential row ids in the shuffler, no permutation) the batch check finds the order
with p below ``ALPHA``. The file reader's own power is shown by
tests/aggregator/test_order_at_rest.py; here the aggregator's writer (one batch, one
transaction, rows in random-id order) leaves no order in its files even when the batch
arrives unshuffled, so the files check guards against a regression of either party.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from ldp_aggregator.shuffler import app as shuffler_app
from ldp_aggregator.shuffler import store as shuffler_store
from ldp_client import reports as sdk_reports
from ldp_shared.rand import seeded_rng
from ldp_shared.sealing import SealingKey, seal_report, to_text

from ..conftest import make_records
from ..forensics import Arrival, measure
from ..forensics.sqlite_files import current_image, page_positions, read_files
from .conftest import Parties
from .test_shuffled_path import device

N = 400
ALPHA = 1e-4
SEED = 20261127


def send_in_order(parties: Parties, forward_every: int = N) -> tuple[list[str], list[str]]:
    """Seal and send ``N`` reports one request each, forwarding after every
    ``forward_every``; their blobs and ids in send order."""
    config = parties.create()
    with device(parties) as sdk:
        reports = sdk.privatize_many("survey", make_records(N, seed=11))
    info = parties.aggregator.get("/v1/collections/survey/sealing-key").json()
    key = SealingKey.published(info["key_id"], info["public_key"])
    blobs = []
    for report in reports:
        blob = to_text(seal_report(report.model_dump_json().encode(), key, "survey",
                                   config["config_hash"]))  # fmt: skip
        answer = parties.shuffler.post(
            "/v1/collections/survey/sealed-reports", json={"blobs": [blob]}
        )
        assert answer.status_code == 202
        blobs.append(blob)
        if len(blobs) % forward_every == 0:
            assert parties.forward() == forward_every
    return blobs, [r.id for r in reports]


def batch_p_value(parties: Parties, blobs: list[str]) -> float:
    """Send order against the order in the forwarded batches, concatenated."""
    sent = {blob: k for k, blob in enumerate(blobs)}
    positions = [sent[blob] for batch in parties.forwarded for blob in batch["blobs"]]
    assert sorted(positions) == list(range(N))
    return float(spearmanr(range(N), positions).pvalue)


def files_p_value(tmp_path: Path, ids: list[str]) -> float:
    main, wal = read_files(tmp_path / "ldp.db")
    recovered = page_positions(current_image(main, wal), set(ids))
    leak = measure("aggregator files", Arrival(ids=ids, request=list(range(N))), recovered)
    assert leak.recovered > 0.9 * N
    ranked = sorted(ids, key=lambda i: recovered.get(i, (float("inf"),)))
    placed = [i for i in ranked if i in recovered]
    order = {report_id: k for k, report_id in enumerate(ids)}
    return float(spearmanr(range(len(placed)), [order[i] for i in placed]).pvalue)


def seed_the_order(parties: Parties, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch shuffle, the shuffler's row ids and the reports' ids from generators
    seeded ``SEED`` (each of them is the OS CSPRNG outside tests)."""
    parties.shuffler.app.state.forwarder.shuffler = random.Random(SEED)  # type: ignore[attr-defined]
    rows = random.Random(SEED + 1)
    monkeypatch.setattr(shuffler_store, "_random_id", lambda: rows.randbytes(16))
    monkeypatch.setattr(sdk_reports, "_id_source", seeded_rng(SEED + 2))


def test_send_order_does_not_survive_the_shuffler(
    sqlite_parties: Parties, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parties = sqlite_parties
    seed_the_order(parties, monkeypatch)
    blobs, ids = send_in_order(parties)
    batch, files = batch_p_value(parties, blobs), files_p_value(tmp_path, ids)
    print(f"send order against the batch: p = {batch:.4g}; against the files: p = {files:.4g}")
    assert batch > ALPHA and files > ALPHA


def test_power_without_shuffling_the_order_is_found(
    parties: Parties, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = itertools.count()
    monkeypatch.setattr(shuffler_store, "_random_id", lambda: next(counter).to_bytes(16, "big"))
    monkeypatch.setattr(shuffler_app._RANDOM, "shuffle", lambda rows: None)
    blobs, _ = send_in_order(parties)
    assert batch_p_value(parties, blobs) < ALPHA
