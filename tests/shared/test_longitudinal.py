"""The longitudinal machinery shared by device and server: the PRF the permanent step is
derived from, the accountant's two numbers, and the codec's memoised path."""

from __future__ import annotations

import hashlib
import hmac

import numpy as np
import pytest

from ldp_shared.codec import Privatizer
from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms.longitudinal import attribute_key, prf_uniforms
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

APPS = ["mail", "maps", "music", "news"]


def spec(**changes: object) -> CollectionSpec:
    attributes = [
        {"name": "app", "mechanism": "l-grr", "domain": APPS, "permanent_epsilon": 3.0},
        {"name": "mood", "mechanism": "grr", "domain": ["low", "high"]},
        {"name": "minutes", "mechanism": "dbitflippm", "lo": 0, "hi": 60, "buckets": 6, "bits": 2},
    ]
    return CollectionSpec.model_validate(
        {"name": "daily", "epsilon": 3.0, "attributes": attributes, **changes}
    )


def test_prf_uniforms_are_hmac_sha256_in_counter_mode() -> None:
    key, message = b"k" * 32, b"l-grr\n3"
    u = prf_uniforms(key, [message, b"other"], 6)
    assert u.shape == (2, 6) and np.all((u >= 0) & (u < 1))
    first = hmac.new(key, message + (0).to_bytes(4, "big"), hashlib.sha256).digest()
    second = hmac.new(key, message + (1).to_bytes(4, "big"), hashlib.sha256).digest()
    words = [int.from_bytes((first + second)[8 * i : 8 * i + 8], "big") for i in range(6)]
    assert u[0].tolist() == [(w >> 11) / 2**53 for w in words]
    assert not np.array_equal(u[0], u[1])
    assert np.array_equal(prf_uniforms(key, [message], 6)[0], u[0])  # a function


def test_attribute_keys_differ_per_attribute_and_secret() -> None:
    keys = {attribute_key(s, a) for s in (b"a" * 32, b"b" * 32) for a in ("x", "y")}
    assert len(keys) == 4


def test_the_accountant_states_both_numbers() -> None:
    privacy = build_config(spec()).privacy
    assert privacy.report.epsilon == pytest.approx(3.0, rel=1e-9)  # 1 + 1 + 1
    assert [e.spec.name for e in privacy.longitudinal] == ["app", "minutes"]
    assert privacy.attribute("app").epsilon == pytest.approx(1.0, rel=1e-12)
    assert privacy.longitudinal[0].permanent == pytest.approx(3.0, rel=1e-12)
    assert privacy.longitudinal[1].permanent == pytest.approx(1.0, rel=1e-12)
    # a ledger charges each fresh report the grr attribute only
    assert privacy.charged_per_report.epsilon == pytest.approx(1.0, rel=1e-12)
    sampled = build_config(spec(budget="sample")).privacy
    assert sampled.charged_per_report.epsilon == pytest.approx(3.0, rel=1e-9)  # the grr one


def test_an_unbounded_permanent_epsilon_is_refused() -> None:
    attributes = [{"name": "app", "mechanism": "l-grr", "domain": APPS, "permanent_epsilon": 80}]
    payload = {"name": "daily", "epsilon": 1.0, "attributes": attributes}
    with pytest.raises(ConfigurationError, match="attribute 'app': ε is too large"):
        build_config(CollectionSpec.model_validate(payload))


def test_the_codec_derives_the_permanent_step_from_the_secret() -> None:
    config = build_config(spec())
    records = [{"app": "maps", "mood": "low", "minutes": 33}] * 200
    one = Privatizer(config, b"s" * 32).privatize_many(records, seeded_rng(1))
    two = Privatizer(config, b"s" * 32).privatize_many(records, seeded_rng(2))
    minutes = config.attribute("minutes")
    part = slice(minutes.byte_offset, minutes.byte_offset + minutes.byte_length)
    # dBitFlipPM has no fresh step: one device, one value, one answer, whatever the rng
    assert len({row[part].tobytes() for row in np.vstack([one, two])}) == 1
    other = Privatizer(config, b"t" * 32).privatize_many(records[:1], seeded_rng(1))
    fresh = Privatizer(config).privatize_many(records, seeded_rng(1))  # no secret: devices
    assert len({row[part].tobytes() for row in fresh}) > 1
    assert other.shape == (1, config.report_bytes)
