"""Naive Bayes models of a label collection: train one, read its priors and per-feature
tables with their errors, and measure its accuracy on a labelled test file.

The test file is the analyst's own data in the clear: it is parsed from the request in
memory (the form's size is capped below Starlette's spooling threshold, so it never
reaches a temporary file), classified with ``naive_bayes.predict`` (the function
behind ``POST .../predict``) and dropped; nothing of it is stored or logged.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile

from ldp_aggregator import naive_bayes
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView, Redirect
from ldp_aggregator.ui.states import problem_view
from ldp_shared.errors import InvalidQueryError, LDPError
from ldp_shared.validation import one_line
from ldp_shared.wire.naive_bayes import (
    COUNT_REPAIRS,
    MAX_PREDICT_RECORDS,
    NaiveBayesModel,
    NaiveBayesTrainRequest,
)

FIX_THE_FILE = "Correct the file and upload it again; nothing of this one was kept."
COUNT_INTERVALS = {
    "score": "score intervals: every count the reports are consistent with, the variance"
    " taken at that count, with a continuity correction",
    "normal": "normal intervals: the count ± z standard errors",
}


def priors_chart(model: NaiveBayesModel) -> dict[str, Any]:
    """The bar chart of a model's class priors (in [0, 1]; no interval of their own)."""
    return {
        "title": f"Class priors of {model.label}",
        "labels": model.classes,
        "values": model.class_prior,
        "y_title": f"P({model.label} = c)",
        "y_min": 0,
        "y_max": 1,
    }


def _view(
    ctx: PanelContext, model_id: str, extra: dict[str, Any], status_code: int = 200
) -> PanelView:
    found, unreadable = naive_bayes.readable_models(ctx.state.engine, ctx.collection)
    models = sorted(found, key=lambda m: (m.created_day, m.n_reports), reverse=True)
    chosen = next((m for m in models if m.id == model_id), models[0] if models else None)
    context = {
        "chart": None if chosen is None else priors_chart(chosen),
        "models": models,
        "unreadable": unreadable,
        "model": chosen,
        "repairs": COUNT_REPAIRS,
        "record_names": ctx.config.record_names,
        "label": ctx.config.label.name if ctx.config.label else "",
        "count_intervals": COUNT_INTERVALS,
        **extra,
    }
    return PanelView("panels/naive_bayes.html", context, status_code=status_code)


def view(ctx: PanelContext) -> PanelView:
    return _view(ctx, ctx.param("model"), {})


def train(ctx: PanelContext, form: FormData) -> PanelView | Redirect:
    repair = str(form.get("repair", "posterior-mean"))
    try:
        alpha = float(str(form.get("alpha", "1")))
    except ValueError:
        raise InvalidQueryError("alpha must be a number, e.g. 1") from None
    if repair not in COUNT_REPAIRS:
        raise InvalidQueryError(f"repair must be one of {', '.join(COUNT_REPAIRS)}")
    try:
        request = NaiveBayesTrainRequest(alpha=alpha, repair=repair)
    except ValidationError as error:
        raise InvalidQueryError(one_line(error.errors())) from None
    model = naive_bayes.train_model(ctx.state.engine, ctx.collection, request)
    return Redirect(ctx.url("naive-bayes", model=model.id))


def read_labelled_csv(
    data: bytes, names: list[str], label: str
) -> tuple[list[dict[str, str]], list[str]]:
    """The records (without their label) and the labels of a CSV file whose header names
    every attribute of the collection, the label included."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidQueryError("the test file is not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [name for name in names if name not in header]
    if missing:
        raise InvalidQueryError(
            f"the test file's header lacks {', '.join(missing)}; its first line must name"
            f" the columns {', '.join(names)}"
        )
    records, labels = [], []
    for row in reader:
        labels.append(row[label])
        records.append({name: row[name] for name in names if name != label})
    if not records:
        raise InvalidQueryError("the test file has a header but no rows")
    return records, labels


def evaluate(ctx: PanelContext, form: FormData) -> PanelView | Redirect:
    model_id = str(form.get("model", ""))
    upload = form.get("file")
    try:
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise InvalidQueryError("choose a labelled CSV test file to upload")
        label = ctx.config.label.name if ctx.config.label else ""
        records, labels = read_labelled_csv(upload.file.read(), ctx.config.record_names, label)
        model = naive_bayes.get_model(ctx.state.engine, ctx.collection, model_id)
        unknown = sorted(set(labels) - set(model.classes))
        if unknown:
            raise InvalidQueryError(
                f"the test file has labels the model does not know ({', '.join(unknown[:5])});"
                f" its classes are {', '.join(model.classes)}"
            )
        predicted: list[str] = []
        for start in range(0, len(records), MAX_PREDICT_RECORDS):
            chunk = records[start : start + MAX_PREDICT_RECORDS]
            answer = naive_bayes.predict(ctx.state.engine, ctx.collection, model_id, chunk)
            predicted.extend(p.predicted for p in answer.predictions)
    except LDPError as error:
        refused = problem_view(ctx, error)
        problem = {**refused.context, "next_step": FIX_THE_FILE}
        return _view(ctx, model_id, {"evaluation_problem": problem}, refused.status_code)
    index = {c: i for i, c in enumerate(model.classes)}
    confusion = [[0] * len(model.classes) for _ in model.classes]
    for truth, guess in zip(labels, predicted, strict=True):
        confusion[index[truth]][index[guess]] += 1
    correct = sum(confusion[i][i] for i in range(len(model.classes)))
    evaluation = {
        "records": len(labels),
        "correct": correct,
        "accuracy": correct / len(labels),
        "confusion": confusion,
    }
    return _view(ctx, model_id, {"evaluation": evaluation})


def results(ctx: PanelContext) -> list[NaiveBayesModel]:
    """The model the page shows (the one chosen, else the newest)."""
    found, _unreadable = naive_bayes.readable_models(ctx.state.engine, ctx.collection)
    models = sorted(found, key=lambda m: (m.created_day, m.n_reports), reverse=True)
    chosen = next((m for m in models if m.id == ctx.param("model")), None)
    return [chosen] if chosen is not None else models[:1]


PANEL = Panel(
    slug="naive-bayes",
    title="Naive Bayes",
    view=view,
    applies=lambda config: config.label is not None and config.spec.knn is None,
    actions={"train": train, "evaluate": evaluate},
    results=results,
    results_key="id",
)
