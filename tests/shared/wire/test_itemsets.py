"""The job-id check shared by the aggregator's routes and the SDK."""

from __future__ import annotations

import pytest

from ldp_shared.errors import NotFoundError
from ldp_shared.wire.itemsets import check_job_id


def test_an_id_a_job_can_have_passes_unchanged() -> None:
    assert check_job_id("abcdefghijklmnop", "training") == "abcdefghijklmnop"
    assert check_job_id("A_b-" * 8, "itemset") == "A_b-" * 8


@pytest.mark.parametrize("job_id", ["nope", "x" * 33, "abcdefghijklmno/", None, 17])
def test_an_id_no_job_can_have_is_not_found_in_one_line(job_id: object) -> None:
    with pytest.raises(NotFoundError, match=r"^no itemset job can have the id ") as caught:
        check_job_id(job_id, "itemset")
    assert "ids are 16 to 32 letters, digits, '-' or '_'" in str(caught.value)


def test_a_long_id_is_shown_cut() -> None:
    with pytest.raises(NotFoundError) as caught:
        check_job_id("y" * 500, "training")
    assert "y" * 41 not in str(caught.value) and "..." in str(caught.value)
