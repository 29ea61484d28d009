"""A shuffled collection end to end: SDK seals, shuffler holds and forwards, aggregator
opens, judges and counts; and every bad input of the path."""

from __future__ import annotations

import base64

from ldp_client import LDPClient
from ldp_shared.sealing import SealingKey, seal_report, to_text

from ..conftest import (
    ADMIN,
    ANALYST,
    assert_stored_and_recounted,
    make_records,
    problem,
    spec_payload,
    state_of,
)
from .conftest import MIN_BATCH, SHUFFLER, Parties


def device(parties: Parties) -> LDPClient:
    return LDPClient("http://aggregator", transport=parties.device_transport, retries=0)


def test_reports_reach_the_estimate_only_through_the_shuffler(parties: Parties) -> None:
    parties.create(min_reports=5)
    records = make_records(3 * MIN_BATCH, seed=3)
    with device(parties) as sdk:
        reports = sdk.privatize_many("survey", records)
        held = sdk.submit_shuffled("survey", reports, shuffler_url="http://shuffler")
    assert held == len(reports)
    assert parties.forward() == len(reports)
    assert parties.forward() == 0  # deleted once acknowledged
    (batch,) = parties.forwarded
    assert len(batch["blobs"]) == len(reports)
    engine = state_of(parties.aggregator).engine
    stored = assert_stored_and_recounted(engine, "survey", {r.id for r in reports})
    assert stored == {r.id for r in reports}
    estimates: dict[str, dict[str, object]] = {}
    # the same reports uploaded directly to the same spec unshuffled give the same estimate
    direct = parties.aggregator.post(
        "/v1/collections", json=spec_payload("direct", min_reports=5), headers=ADMIN
    ).json()
    body = {"reports": [{**r.model_dump(), "config_hash": direct["config_hash"]} for r in reports]}
    assert parties.aggregator.post("/v1/collections/direct/reports", json=body).status_code == 200
    for name in ("survey", "direct"):
        answer = parties.aggregator.get(
            f"/v1/collections/{name}/frequencies", params={"attribute": "color"}, headers=ANALYST
        )
        assert answer.status_code == 200, answer.text
        estimates[name] = answer.json()
    assert estimates["survey"]["n_reports"] == len(reports)
    assert estimates["survey"]["counts"] == estimates["direct"]["counts"]


def test_below_min_batch_the_shuffler_holds_and_the_aggregator_refuses(parties: Parties) -> None:
    parties.create()
    with device(parties) as sdk:
        reports = sdk.privatize_many("survey", make_records(MIN_BATCH - 1, seed=4))
        sdk.submit_shuffled("survey", reports, shuffler_url="http://shuffler")
    assert parties.forward() == 0
    blobs = [to_text(b"\x01" + bytes(80))] * (MIN_BATCH - 1)
    answer = parties.aggregator.post(
        "/v1/collections/survey/shuffled-batches", json={"blobs": blobs}, headers=SHUFFLER
    )
    assert f"at least {MIN_BATCH} sealed reports" in problem(answer, 422, "invalid-request")


def test_a_direct_upload_to_a_shuffled_collection_is_refused(parties: Parties) -> None:
    parties.create()
    with device(parties) as sdk:
        reports = sdk.privatize_many("survey", make_records(3, seed=5))
    body = {"reports": [r.model_dump() for r in reports]}
    answer = parties.aggregator.post("/v1/collections/survey/reports", json=body)
    assert "is shuffled" in problem(answer, 409, "conflict")


def test_only_the_shuffler_token_sends_batches(parties: Parties) -> None:
    parties.create()
    blobs = [to_text(b"\x01" + bytes(80))] * MIN_BATCH
    path = "/v1/collections/survey/shuffled-batches"
    assert parties.aggregator.post(path, json={"blobs": blobs}).status_code == 401
    answer = parties.aggregator.post(path, json={"blobs": blobs}, headers=ANALYST)
    problem(answer, 403, "forbidden")


def test_tampered_and_unknown_key_blobs_are_counted_and_the_rest_goes_in(
    parties: Parties,
) -> None:
    config = parties.create()
    with device(parties) as sdk:
        reports = sdk.privatize_many("survey", make_records(MIN_BATCH, seed=6))
        key_info = parties.aggregator.get("/v1/collections/survey/sealing-key").json()
    key = SealingKey.published(key_info["key_id"], key_info["public_key"])
    sealed = [seal_report(r.model_dump_json().encode(), key, "survey", config["config_hash"])
              for r in reports]  # fmt: skip
    flipped = bytearray(sealed[0])
    flipped[-3] ^= 0x40
    stranger = SealingKey.generate()
    foreign = seal_report(reports[1].model_dump_json().encode(), stranger, "survey",
                          config["config_hash"])  # fmt: skip
    other_config = seal_report(reports[2].model_dump_json().encode(), key, "survey", "0" * 64)
    bad_bits = reports[3].model_copy(update={"bits": "AA=="}).model_dump_json().encode()
    judged_bad = seal_report(bad_bits, key, "survey", config["config_hash"])
    blobs = [bytes(flipped), foreign, other_config, judged_bad, *sealed[4:]]
    answer = parties.aggregator.post(
        "/v1/collections/survey/shuffled-batches",
        json={"blobs": [to_text(b) for b in blobs]},
        headers=SHUFFLER,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "received": MIN_BATCH,
        "accepted": MIN_BATCH - 4,
        "duplicate": 0,
        "rejected": 1,  # opened, then judged as a direct upload's report would be
        "tampered": 2,
        "unknown_key": 1,
    }
    engine = state_of(parties.aggregator).engine
    assert_stored_and_recounted(engine, "survey", {r.id for r in reports[4:]})
    metrics = parties.aggregator.get("/metrics").text
    assert 'ldpcollect_shuffled_batches_total{collection="survey"} 1.0' in metrics
    assert f'ldpcollect_shuffled_batch_size_sum{{collection="survey"}} {MIN_BATCH}.0' in metrics
    refused = 'ldpcollect_sealed_reports_refused_total{collection="survey",reason='
    assert refused + '"tampered"} 2.0' in metrics
    assert refused + '"unknown_key"} 1.0' in metrics


def test_the_shuffler_refuses_what_is_not_a_sealed_report(parties: Parties) -> None:
    parties.create()
    path = "/v1/collections/survey/sealed-reports"
    bad: list[list[str]] = [["***"], [to_text(b"\x02" + bytes(80))], []]
    for blobs in bad:
        answer = parties.shuffler.post(path, json={"blobs": blobs})
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
    raw = base64.b64encode(b"x").decode()
    assert parties.shuffler.post(path, content=raw).status_code == 422
    huge = {"blobs": ["A" * 1024 * 1024] * 9}
    assert parties.shuffler.post(path, json=huge).status_code == 413


def test_an_unshuffled_collection_publishes_no_sealing_key(parties: Parties) -> None:
    parties.aggregator.post(
        "/v1/collections",
        json={"name": "plain", "epsilon": 1.0,
              "attributes": [{"name": "c", "domain": ["a", "b"], "mechanism": "grr"}]},
        headers={"Authorization": "Bearer admin-token-for-tests-0123456789"},
    )  # fmt: skip
    answer = parties.aggregator.get("/v1/collections/plain/sealing-key")
    assert "not shuffled" in problem(answer, 409, "conflict")
