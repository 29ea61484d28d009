"""The synchronous client is generated from the asynchronous one and kept in step."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "unasync.py"
PACKAGE = ROOT / "client" / "ldp_client"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_client_py_is_what_async_client_py_generates():
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_check_fails_when_one_side_was_edited(tmp_path: Path):
    source = tmp_path / "async_client.py"
    target = tmp_path / "client.py"
    shutil.copy(PACKAGE / "async_client.py", source)
    shutil.copy(PACKAGE / "client.py", target)
    check = [
        sys.executable,
        str(SCRIPT),
        "--check",
        "--source",
        str(source),
        "--target",
        str(target),
    ]
    assert subprocess.run(check, capture_output=True, timeout=60).returncode == 0

    target.write_text(target.read_text() + "\n# a hand edit\n")
    stale = subprocess.run(check, capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1
    assert "+# a hand edit" not in stale.stdout and "-# a hand edit" in stale.stdout

    write = [sys.executable, str(SCRIPT), "--source", str(source), "--target", str(target)]
    assert subprocess.run(write, capture_output=True, timeout=60).returncode == 0
    assert subprocess.run(check, capture_output=True, timeout=60).returncode == 0
    assert target.read_text() == (PACKAGE / "client.py").read_text()


def test_the_generated_module_is_marked_and_has_no_async_left():
    generated = load_script().unasync((PACKAGE / "async_client.py").read_text())
    assert generated.startswith("# GENERATED from async_client.py by `python scripts/unasync.py`")
    for token in ("async ", "await ", "asyncio", "AsyncLDPClient", "aclose", "__aenter__"):
        assert token not in generated, token
    assert (
        "class LDPClient(\n    NaiveBayesMethods,\n    ItemsetMethods,\n    TrainingMethods,\n"
        "    KnnMethods,\n    TrendMethods,\n    ListMethods,\n    PlanMethods,\n"
        "    ShuffledMethods,\n):" in generated
    )
    assert "def close(self) -> None:" in generated
    methods = load_script().unasync(
        (PACKAGE / "itemset_methods_async.py").read_text(), "itemset_methods_async.py"
    )
    assert methods.startswith("# GENERATED from itemset_methods_async.py")
    for token in ("async ", "await ", "asyncio", "AsyncItemsetMethods"):
        assert token not in methods, token
    assert "class ItemsetMethods:" in methods and "time.sleep(poll_interval)" in methods
    knn = load_script().unasync(
        (PACKAGE / "knn_methods_async.py").read_text(), "knn_methods_async.py"
    )
    for token in ("async ", "await ", "asyncio", "AsyncKnnMethods"):
        assert token not in knn, token
    assert "class KnnMethods:" in knn
    trend = load_script().unasync(
        (PACKAGE / "trend_methods_async.py").read_text(), "trend_methods_async.py"
    )
    for token in ("async ", "await ", "asyncio", "AsyncTrendMethods"):
        assert token not in trend, token
    assert "class TrendMethods:" in trend
    lists = load_script().unasync(
        (PACKAGE / "list_methods_async.py").read_text(), "list_methods_async.py"
    )
    for token in ("async ", "await ", "asyncio", "AsyncListMethods", "AsyncIterator"):
        assert token not in lists, token
    assert "class ListMethods:" in lists and "yield from page" in lists
    plans = load_script().unasync(
        (PACKAGE / "plan_methods_async.py").read_text(), "plan_methods_async.py"
    )
    for token in ("async ", "await ", "asyncio", "AsyncPlanMethods"):
        assert token not in plans, token
    assert "class PlanMethods:" in plans
    shuffled = load_script().unasync(
        (PACKAGE / "shuffled_methods_async.py").read_text(), "shuffled_methods_async.py"
    )
    for token in ("async ", "await ", "asyncio", "AsyncShuffledMethods"):
        assert token not in shuffled, token
    assert "class ShuffledMethods:" in shuffled
    bayes = load_script().unasync(
        (PACKAGE / "naive_bayes_methods_async.py").read_text(), "naive_bayes_methods_async.py"
    )
    for token in ("async ", "await ", "asyncio", "AsyncNaiveBayesMethods"):
        assert token not in bayes, token
    assert "class NaiveBayesMethods:" in bayes


def test_every_pair_is_checked():
    """The script knows every generated module, and each is in the package."""
    pairs = load_script().PAIRS
    assert [(s.name, t.name) for s, t in pairs] == [
        ("async_client.py", "client.py"),
        ("itemset_methods_async.py", "itemset_methods.py"),
        ("training_methods_async.py", "training_methods.py"),
        ("knn_methods_async.py", "knn_methods.py"),
        ("trend_methods_async.py", "trend_methods.py"),
        ("list_methods_async.py", "list_methods.py"),
        ("plan_methods_async.py", "plan_methods.py"),
        ("shuffled_methods_async.py", "shuffled_methods.py"),
        ("naive_bayes_methods_async.py", "naive_bayes_methods.py"),
    ]
    assert all(s.exists() and t.exists() for s, t in pairs)
