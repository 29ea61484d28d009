"""One value followed through a trend: in each period its reports and its estimate with
its interval, or no estimate where the period is withheld. The dashboard's trend panel
and ``ldpcollect simulate --periods`` read a :class:`~ldp_shared.wire.trends.TrendResult`
this way (a data frame of every value: its ``to_frame()``)."""

from __future__ import annotations

from dataclasses import dataclass

from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire.trends import TrendResult


@dataclass(frozen=True)
class SeriesPoint:
    """One period of a followed value (``estimate`` ``None``: withheld, ``withheld`` says why)."""

    period: str
    n_reports: int
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    withheld: str | None = None


def series(result: TrendResult, value: str = "mean") -> list[SeriesPoint]:
    """``value``'s estimate in each period of ``result``, oldest first (a numeric
    attribute: its mean, whatever ``value``). :class:`InvalidQueryError` for a value
    that the trend does not estimate."""
    out: list[SeriesPoint] = []
    for point in result.points:
        head = (point.period, point.n_reports)
        if point.mean is not None:
            m = point.mean
            out.append(SeriesPoint(*head, m.mean, m.ci_low, m.ci_high))
        elif point.frequencies is not None:
            f = point.frequencies
            if value not in f.values:
                raise InvalidQueryError(
                    f"attribute {result.attribute!r} has no value {value!r}: choose one of its"
                    " values"
                )
            i = f.values.index(value)
            out.append(SeriesPoint(*head, f.estimate[i], f.ci_low[i], f.ci_high[i]))
        else:
            out.append(SeriesPoint(*head, withheld=point.withheld))
    return out
