"""``ldpcollect demo``: a real aggregator, 100,000 simulated clients, honest estimates.

Starts ``ldpcollect serve`` as a subprocess on a free loopback port with a SQLite file in
a temporary folder, creates a collection for the bundled UCI Car Evaluation data, lets
one simulated client per record privatize and upload its record through the SDK over
real HTTP, then asks the aggregator for every attribute's frequencies and compares them
with the truth, which only the demo (never the aggregator) knows. A second collection,
labelled with the car's class, trains a naive Bayes model from the reports of a training
split and scores it on the held-out records (:mod:`ldp_simulation.demo_naive_bayes`).
"""

from __future__ import annotations

import math
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from ldp_client import LDPClient
from ldp_shared.errors import ConflictError, TransportError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire import FrequencyResult
from ldp_simulation.datasets import CategoricalDataset, load_car

DEMO_COLLECTION = "car-demo"
SERVER_START_TIMEOUT = 60.0


@dataclass(frozen=True)
class DemoOptions:
    epsilon: float = 4.0
    clients: int = 100_000
    mechanism: str = "oue"
    confidence: float = 0.95
    seed: int | None = None
    batch_size: int = 1000
    budget: str = "sample"  # the naive Bayes collection's budget mode: "split" or "sample"


@dataclass
class DemoResult:
    collection: str
    dataset: str
    mechanism: str
    n_reports: int
    epsilon: float
    confidence: float
    attributes: dict[str, FrequencyResult]
    truth: dict[str, list[float]]
    seconds: float
    citation: str
    extras: dict[str, Any] = field(default_factory=dict)
    itemsets_text: str = ""

    @property
    def coverage(self) -> float:
        """Fraction of all (attribute, value) intervals that contain the true frequency."""
        hits = total = 0
        for name, result in self.attributes.items():
            true = np.asarray(self.truth[name])
            inside = (np.asarray(result.ci_low) <= true) & (true <= np.asarray(result.ci_high))
            hits += int(inside.sum())
            total += inside.size
        return hits / total

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "dataset": self.dataset,
            "mechanism": self.mechanism,
            "n_reports": self.n_reports,
            "epsilon": self.epsilon,
            "confidence": self.confidence,
            "frequencies": {
                name: {
                    "values": r.values,
                    "true": self.truth[name],
                    "estimate": r.estimate,
                    "stderr": r.stderr,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "epsilon": r.epsilon,
                }
                for name, r in self.attributes.items()
            },
            "coverage": self.coverage,
            "seconds": self.seconds,
            "data_citation": self.citation,
            **self.extras,
        }


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_aggregator(database_url: str, admin_token: str, analyst_token: str) -> Iterator[str]:
    """Run ``ldpcollect serve`` in a subprocess until the block ends; yields its base URL."""
    port = free_port()
    env = dict(os.environ)
    env["LDPCOLLECT_DATABASE_URL"] = database_url
    env["LDPCOLLECT_ADMIN_TOKEN"] = admin_token
    env["LDPCOLLECT_ANALYST_TOKEN"] = analyst_token
    command = [
        sys.executable,
        "-m",
        "ldp_aggregator.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base_url, process)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(base_url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            last = stderr.strip().splitlines()[-1] if stderr.strip() else "no output"
            raise TransportError(f"the aggregator exited during start-up: {last}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TransportError(
        f"the aggregator at {base_url} was not ready after {SERVER_START_TIMEOUT}s"
    )


def demo_spec(dataset: CategoricalDataset, options: DemoOptions) -> CollectionSpec:
    """One attribute per column, the record's ε split evenly, a release minimum of 1,000."""
    return CollectionSpec.model_validate(
        {
            "name": DEMO_COLLECTION,
            "description": f"ldpcollect demo: {dataset.citation}",
            "epsilon": options.epsilon,
            "attributes": [
                {"name": name, "domain": domain, "mechanism": options.mechanism}
                for name, domain in dataset.domains.items()
            ],
            "release": {"min_reports": 1000},
        }
    )


def replicate(records: list[dict[str, str]], clients: int) -> list[dict[str, str]]:
    """Whole copies of the data set, enough for at least ``clients`` clients."""
    return records * max(1, math.ceil(clients / len(records)))


def true_frequencies(
    dataset: CategoricalDataset, records: list[dict[str, str]]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, domain in dataset.domains.items():
        index = {v: i for i, v in enumerate(domain)}
        counts = np.bincount([index[r[name]] for r in records], minlength=len(domain))
        out[name] = (counts / len(records)).tolist()
    return out


def ensure_collection(admin: LDPClient, spec: CollectionSpec) -> None:
    """Create the collection, or accept an existing one with exactly this spec."""
    try:
        admin.create_collection(spec)
    except ConflictError:
        existing = admin.get_config(spec.name)
        if existing.spec != spec:
            raise ConflictError(
                f"collection {spec.name!r} exists with another configuration"
            ) from None


def deal_records(
    base_urls: Sequence[str],
    collection: str,
    records: Sequence[dict[str, Any]],
    rng: np.random.Generator | None,
    batch_size: int,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Upload one client's report per record, dealing the batches to the aggregators in turn."""
    total = len(records)
    sent = 0

    def on_batch(count: int) -> None:
        nonlocal sent
        sent += count
        if progress is not None:
            progress(sent, total)

    clients = [LDPClient(url, rng=rng) for url in base_urls]
    try:
        for turn, start in enumerate(range(0, total, batch_size)):
            clients[turn % len(clients)].submit(
                collection,
                records[start : start + batch_size],
                batch_size=batch_size,
                progress=on_batch,
            )
    finally:
        for client in clients:
            client.close()


def simulate(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Callable[[int, int], None] | None = None,
) -> DemoResult:
    """Play one client per record against running aggregators, then read the estimates.

    The records are dealt to the aggregators in turn, one batch each, as a load balancer
    would; the estimates are read from the first one (all share one database).
    """
    started = time.perf_counter()
    dataset = load_car()
    records = replicate(dataset.records, options.clients)
    spec = demo_spec(dataset, options)
    rng = None if options.seed is None else seeded_rng(options.seed)
    with LDPClient(base_urls[0], token=admin_token) as admin:
        ensure_collection(admin, spec)
    deal_records(base_urls, DEMO_COLLECTION, records, rng, options.batch_size, progress)
    with LDPClient(base_urls[0], token=analyst_token) as analyst:
        results = {
            name: analyst.frequencies(DEMO_COLLECTION, name, confidence=options.confidence)
            for name in dataset.domains
        }
    first = next(iter(results.values()))
    # these modules build on this one (ensure_collection, replicate): import them late
    from ldp_simulation.demo_itemsets import ItemsetDemoOptions, simulate_itemsets
    from ldp_simulation.demo_naive_bayes import simulate_naive_bayes

    naive_bayes = simulate_naive_bayes(base_urls, admin_token, analyst_token, options, progress)
    itemsets, itemsets_text = simulate_itemsets(
        base_urls[0], admin_token, analyst_token, ItemsetDemoOptions(seed=options.seed), progress
    )
    return DemoResult(
        collection=DEMO_COLLECTION,
        dataset=dataset.name,
        mechanism=options.mechanism,
        n_reports=first.n_reports,
        epsilon=first.record_epsilon,
        confidence=options.confidence,
        attributes=results,
        truth=true_frequencies(dataset, records),
        seconds=time.perf_counter() - started,
        citation=dataset.citation,
        extras={"naive_bayes": naive_bayes.to_json(), "itemsets": itemsets},
        itemsets_text=itemsets_text,
    )


def run_demo(
    options: DemoOptions, progress: Callable[[int, int], None] | None = None
) -> DemoResult:
    """The whole demo: a fresh aggregator on a temporary SQLite file, then :func:`simulate`."""
    started = time.perf_counter()
    admin_token = secrets.token_urlsafe(24)
    analyst_token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="ldpcollect-demo-") as folder:
        database_url = f"sqlite:///{Path(folder) / 'demo.db'}"
        with running_aggregator(database_url, admin_token, analyst_token) as base_url:
            result = simulate([base_url], admin_token, analyst_token, options, progress)
    result.seconds = time.perf_counter() - started
    return result


def format_table(result: DemoResult) -> str:
    """A readable table per attribute: truth, estimate, standard error, interval, coverage."""
    level = f"{result.confidence:.0%}"
    lines = [
        f"ldpcollect demo: {result.n_reports:,} clients reported the {result.dataset} data "
        f"with {result.mechanism.upper()} at ε = {result.epsilon:.3g} per record",
        f"data: {result.citation}",
        "",
    ]
    for name, r in result.attributes.items():
        lines.append(f"{name}  (ε = {r.epsilon:.3g} for this attribute)")
        header = f"{'value':<8} {'true':>7} {'estimate':>9} {'stderr':>7}"
        lines.append(f"  {header}  {level + ' interval':<20} covers")
        for i, value in enumerate(r.values):
            true = result.truth[name][i]
            covers = "yes" if r.ci_low[i] <= true <= r.ci_high[i] else "NO"
            interval = f"[{r.ci_low[i]:.4f}, {r.ci_high[i]:.4f}]"
            row = f"{value:<8} {true:7.4f} {r.estimate[i]:9.4f} {r.stderr[i]:7.4f}"
            lines.append(f"  {row}  {interval:<20} {covers}")
        lines.append("")
    if "naive_bayes" in result.extras:
        from ldp_simulation.demo_naive_bayes import format_naive_bayes

        lines += [*format_naive_bayes(result.extras["naive_bayes"]), ""]
    if result.itemsets_text:
        lines += [result.itemsets_text, ""]
    lines.append(
        f"{result.coverage:.1%} of the {level} intervals cover the true frequency "
        f"(expected about {level}); {result.seconds:.1f} s in all."
    )
    return "\n".join(lines)
