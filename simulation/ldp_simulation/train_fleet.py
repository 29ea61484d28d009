"""``ldpcollect train``: a simulated fleet trains a logistic regression on an aggregator.

The bundled UCI breast-cancer data are split once (a fixed seed, 30% held out). The
training records are dealt to ``devices`` simulated devices (replicated, since each
device speaks once). An analyst creates a training job (its round size, rounds and
step planned from the number of devices, unless given); then every device asks the
aggregator for a place, computes the clipped, perturbed gradient (or capped loss) of its
own record at the round's weights with the SDK, and sends that one report. Devices run
``concurrency`` at a time, dealt to the aggregators in turn; a progress bar (tqdm) shows
the reports sent and the open round. The released model is then scored on the held-out
records, beside the majority class and the same plan with the noise off (the library's
:func:`~ldp_shared.analyses.logistic.training.train`, no server).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from ldp_client import AsyncLDPClient
from ldp_shared.analyses.logistic.training import plan_of, predict_proba, train
from ldp_shared.errors import RateLimitedError
from ldp_shared.learning.layout import FeatureLayout, NumericFeature
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.training import TrainedModel, TrainingJob, TrainingSpec
from ldp_simulation.datasets import NumericDataset, load_breast_cancer
from ldp_simulation.fleet import running_aggregator

COLLECTION = "training-demo"
SPLIT_SEED = 20_190_503
HELD_OUT = 0.3


@dataclass(frozen=True)
class TrainOptions:
    """The options of ``ldpcollect train``."""

    devices: int = 10_000
    epsilon: float = 4.0
    mechanism: str = "sampled-piecewise"
    round_size: int | None = None
    rounds: int | None = None
    concurrency: int = 16
    seed: int | None = None
    progress: bool = True


@dataclass(frozen=True)
class TrainResult:
    """What the run released and how well it predicts held-out records."""

    job: str
    mechanism: str
    epsilon: float
    devices: int
    """Devices that took part: the plan's rounds times their size (at most ``--devices``)."""
    round_size: int
    rounds: int
    accuracy: float
    auc: float
    majority: float
    noise_off_accuracy: float
    test_records: int
    seconds: float
    citation: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def split(data: NumericDataset) -> tuple[list[int], list[int]]:
    """Training and held-out rows (fixed seed)."""
    order = seeded_rng(SPLIT_SEED).permutation(len(data.values))
    cut = round(len(order) * HELD_OUT)
    return sorted(int(i) for i in order[cut:]), sorted(int(i) for i in order[:cut])


def layout_of(data: NumericDataset) -> FeatureLayout:
    """The job's layout: every feature within the data's bounds, and the diagnosis as the
    label with both its values (``benign`` class 1, ``malignant`` class 0)."""
    bounds = data.bounds()
    return FeatureLayout(
        numeric=[NumericFeature(name=n, lo=bounds[n][0], hi=bounds[n][1]) for n in data.features],
        label="diagnosis",
        positive="benign",
        negative="malignant",
    )


def device_records(data: NumericDataset, rows: Sequence[int], devices: int) -> list[dict[str, Any]]:
    """One record per device, the training rows replicated in a shuffled order."""
    gen = seeded_rng(SPLIT_SEED + 1)
    picks = np.resize(gen.permutation(np.asarray(rows)), devices)
    out = []
    for i in picks:
        record: dict[str, Any] = dict(zip(data.features, data.values[int(i)], strict=True))
        record["diagnosis"] = data.labels[int(i)]
        out.append(record)
    return out


def auc(scores: np.ndarray[Any, Any], labels: np.ndarray[Any, Any]) -> float:
    """ROC AUC: the chance a positive outscores a negative (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    if len(pos) == 0 or len(neg) == 0:
        return math.nan
    greater = (pos[:, None] > neg[None, :]).mean()
    ties = (pos[:, None] == neg[None, :]).mean()
    return float(greater + 0.5 * ties)


async def _drive(
    urls: Sequence[str],
    analyst_token: str,
    spec: TrainingSpec,
    records: list[dict[str, Any]],
    options: TrainOptions,
) -> tuple[TrainingJob, TrainedModel]:
    clients = [AsyncLDPClient(url, token=analyst_token, rng=_rng(options.seed)) for url in urls]
    try:
        job = await clients[0].create_training_job(COLLECTION, spec)
        places = (job.spec.round_size or 0) * (job.spec.rounds or 0)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for record in records[:places]:  # the plan's rounds may leave a few devices out
            queue.put_nowait(record)
        bar = tqdm(total=queue.qsize(), unit="device", desc="devices", disable=not options.progress)

        async def device_loop(k: int) -> None:
            client = clients[k % len(clients)]
            while not queue.empty():
                record = queue.get_nowait()
                try:
                    result = await client.participate(COLLECTION, job.id, record)
                except RateLimitedError as error:  # every place held: nothing was spent
                    queue.put_nowait(record)
                    await asyncio.sleep(error.retry_after or 1.0)
                    continue
                bar.update(1)
                if result.round_closed:
                    bar.set_postfix_str(f"round {result.round + 1} of {job.spec.rounds} closed")

        await asyncio.gather(*(device_loop(k) for k in range(options.concurrency)))
        bar.close()
        model = await clients[0].wait_training_job(COLLECTION, job.id, timeout=60.0)
        return job, model
    finally:
        for client in clients:
            await client.aclose()


def _rng(seed: int | None) -> np.random.Generator | None:
    return None if seed is None else seeded_rng(seed)


def simulate_training(
    urls: Sequence[str], admin_token: str, analyst_token: str, options: TrainOptions
) -> TrainResult:
    """Create the collection if needed, run the job with the fleet, score the model."""
    from ldp_client import LDPClient
    from ldp_simulation.fleet import ensure_collection

    started = time.perf_counter()
    data = load_breast_cancer()
    train_rows, test_rows = split(data)
    layout = layout_of(data)
    spec = TrainingSpec(
        layout=layout,
        mechanism=options.mechanism,
        epsilon=options.epsilon,
        devices=options.devices,
        round_size=options.round_size,
        rounds=options.rounds,
    )
    with LDPClient(urls[0], token=admin_token) as admin:
        ensure_collection(admin, _collection_spec())
    records = device_records(data, train_rows, options.devices)
    job, model = asyncio.run(_drive(urls, analyst_token, spec, records, options))
    x, y = encoded(data, layout, test_rows)
    scores = predict_proba(np.asarray(model.weights), x)
    majority = float(max(y.mean(), 1 - y.mean()))
    return TrainResult(
        job=job.id,
        mechanism=options.mechanism,
        epsilon=model.epsilon,
        devices=int(job.spec.round_size or 0) * model.rounds,
        round_size=int(job.spec.round_size or 0),
        rounds=model.rounds,
        accuracy=accuracy_of(np.asarray(model.weights), x, y),
        auc=auc(scores, y),
        majority=majority,
        noise_off_accuracy=_noise_off(job.spec, layout, data, train_rows, x, y),
        test_records=len(test_rows),
        seconds=time.perf_counter() - started,
        citation=data.citation,
    )


def encoded(
    data: NumericDataset, layout: FeatureLayout, rows: Sequence[int]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The encoded features and 0/1 labels of ``rows`` of ``data``."""
    columns = {n: [data.values[i][j] for i in rows] for j, n in enumerate(data.features)}
    return layout.encode(columns), layout.labels([data.labels[i] for i in rows])


def accuracy_of(
    weights: np.ndarray[Any, Any], x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]
) -> float:
    """Share of records whose predicted class (probability ≥ ½) is their label."""
    return float(((predict_proba(weights, x) >= 0.5) == (y == 1)).mean())


def _noise_off(
    spec: TrainingSpec,
    layout: FeatureLayout,
    data: NumericDataset,
    train_rows: list[int],
    x_test: np.ndarray[Any, Any],
    y_test: np.ndarray[Any, Any],
) -> float:
    """The job's plan with the noise off, one pass over as many devices (no server)."""
    plan = replace(plan_of(spec), mechanism=None)
    x, y = encoded(data, layout, train_rows)
    holders = np.resize(np.arange(len(train_rows)), plan.round_size * plan.rounds)
    model = train(plan, x, y, devices=holders, rng=seeded_rng(SPLIT_SEED))
    return accuracy_of(model.weights, x_test, y_test)


def _collection_spec() -> CollectionSpec:
    """A collection to hold the job (its attributes are not used by training)."""
    return CollectionSpec.model_validate(
        {
            "name": COLLECTION,
            "epsilon": 1.0,
            "attributes": [{"name": "diagnosis", "domain": ["benign", "malignant"]}],
        }
    )


def run_training_demo(options: TrainOptions) -> TrainResult:
    """A fresh aggregator on a temporary SQLite file, then :func:`simulate_training`."""
    admin_token, analyst_token = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="ldpcollect-train-") as folder:
        database_url = f"sqlite:///{Path(folder) / 'train.db'}"
        with running_aggregator(database_url, admin_token, analyst_token) as url:
            return simulate_training([url], admin_token, analyst_token, options)


def format_result(result: TrainResult) -> str:
    """The run as a few lines of text."""
    return "\n".join(
        [
            f"training job {result.job}: {result.mechanism}, exact ε = {result.epsilon:.6g} per"
            f" device, {result.devices:,} devices in {result.rounds} rounds of"
            f" {result.round_size:,}",
            f"held-out accuracy {result.accuracy:.4f} (ROC AUC {result.auc:.4f}) on"
            f" {result.test_records} records; majority class {result.majority:.4f}; the same"
            f" plan with the noise off {result.noise_off_accuracy:.4f}",
            f"data: {result.citation}",
            f"{result.seconds:.1f} s",
        ]
    )
