"""Agreement between a judge and human labels: pure functions, and no model anywhere.

A label is a boolean: ``True`` for faithful, ``False`` for unfaithful. Every
function here takes the human labels and the judge's verdicts as two equally long
sequences, item by item, and computes with exact fractions, converting to `float`
only at the end, so a hand-computed value is reproduced exactly. A value that is
undefined (a rate over no items, a precision for a class the judge never
predicted, Cohen's kappa when chance agreement is 1) is ``None``, never a made-up
0 or 1.

Which class a judge fails on decides what a gate on it would enforce: a judge
with high agreement that misses every unfaithful answer would gate nothing while
looking calibrated (ADR decision 5). So the per-class figures and the
disagreements, listed by the human label, travel with every summary number.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "Agreement",
    "ClassAgreement",
    "ConfusionMatrix",
    "Disagreements",
    "Metric",
    "agreement_rate",
    "cohen_kappa",
    "confusion_matrix",
    "measure_agreement",
    "precision_recall",
]

Metric = Literal[
    "agreement_rate",
    "kappa",
    "faithful_precision",
    "faithful_recall",
    "unfaithful_precision",
    "unfaithful_recall",
    "coverage",
]
"""The agreement measures a threshold can be registered on."""

_CONFIG = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ConfusionMatrix(BaseModel):
    """Items counted by human label (first) and judge verdict (second)."""

    model_config = _CONFIG

    faithful_as_faithful: int
    """Labelled faithful, judged faithful."""

    faithful_as_unfaithful: int
    """Labelled faithful, judged unfaithful: a false alarm."""

    unfaithful_as_faithful: int
    """Labelled unfaithful, judged faithful: a miss, the error a gate cannot afford."""

    unfaithful_as_unfaithful: int
    """Labelled unfaithful, judged unfaithful."""

    @property
    def total(self) -> int:
        """All items counted."""
        return (
            self.faithful_as_faithful
            + self.faithful_as_unfaithful
            + self.unfaithful_as_faithful
            + self.unfaithful_as_unfaithful
        )


class ClassAgreement(BaseModel):
    """How well the judge finds one class."""

    model_config = _CONFIG

    precision: float | None
    """Of the items the judge put in this class, the share humans put there too;
    ``None`` when the judge put none there."""

    recall: float | None
    """Of the items humans put in this class, the share the judge put there too;
    ``None`` when humans put none there."""

    support: int
    """Items humans put in this class."""

    predicted: int
    """Items the judge put in this class."""


class Disagreements(BaseModel):
    """The items the judge got wrong, by the class humans gave them."""

    model_config = _CONFIG

    faithful: tuple[str, ...]
    """Ids labelled faithful that the judge called unfaithful."""

    unfaithful: tuple[str, ...]
    """Ids labelled unfaithful that the judge called faithful."""


class Agreement(BaseModel):
    """Every agreement figure for one judge against one set of labels."""

    model_config = _CONFIG

    items: int
    """Items compared."""

    agreement_rate: float | None
    """Share of items where judge and humans agree; ``None`` for no items."""

    kappa: float | None
    """Cohen's kappa; ``None`` when undefined (no items, or both always chose one
    and the same class, so chance agreement is 1)."""

    faithful: ClassAgreement
    """Precision and recall for the faithful class."""

    unfaithful: ClassAgreement
    """Precision and recall for the unfaithful class."""

    confusion: ConfusionMatrix
    """The counts every figure above is computed from."""

    disagreements: Disagreements
    """The ids behind the off-diagonal counts."""


def confusion_matrix(human: Sequence[bool], judge: Sequence[bool]) -> ConfusionMatrix:
    """Count items by human label and judge verdict (``True`` is faithful).

    Raises:
        ValueError: the sequences differ in length or hold something other than bools.

    Example:
        ```python
        from citemark import confusion_matrix

        matrix = confusion_matrix([True, True, False, False], [True, False, True, False])
        print(matrix.faithful_as_unfaithful, matrix.unfaithful_as_faithful, matrix.total)
        #> 1 1 4
        ```
    """
    _check(human, judge)
    counts = {(h, j): 0 for h in (True, False) for j in (True, False)}
    for pair in zip(human, judge, strict=True):
        counts[pair] += 1
    return ConfusionMatrix(
        faithful_as_faithful=counts[(True, True)],
        faithful_as_unfaithful=counts[(True, False)],
        unfaithful_as_faithful=counts[(False, True)],
        unfaithful_as_unfaithful=counts[(False, False)],
    )


def agreement_rate(human: Sequence[bool], judge: Sequence[bool]) -> float | None:
    """The share of items on which the judge agrees with the humans; ``None`` for none.

    Example:
        ```python
        from citemark import agreement_rate

        print(agreement_rate([True, True, False, False], [True, False, False, False]))
        #> 0.75
        ```
    """
    matrix = confusion_matrix(human, judge)
    if not matrix.total:
        return None
    agreed = matrix.faithful_as_faithful + matrix.unfaithful_as_unfaithful
    return float(Fraction(agreed, matrix.total))


def precision_recall(
    human: Sequence[bool], judge: Sequence[bool], label: bool
) -> tuple[float | None, float | None]:
    """Precision and recall of the judge for one class: ``True`` faithful, ``False`` not.

    Returns:
        ``(precision, recall)``; precision is ``None`` when the judge never chose
        ``label``, recall is ``None`` when the humans never did.

    Example:
        ```python
        from citemark import precision_recall

        human = [True, True, False, False]
        judge = [True, True, True, False]
        print(precision_recall(human, judge, False), precision_recall(human, judge, True))
        #> (1.0, 0.5) (0.6666666666666666, 1.0)
        ```
    """
    _check(human, judge)
    hits = sum(1 for h, j in zip(human, judge, strict=True) if h is label and j is label)
    predicted = sum(1 for j in judge if j is label)
    actual = sum(1 for h in human if h is label)
    return (
        float(Fraction(hits, predicted)) if predicted else None,
        float(Fraction(hits, actual)) if actual else None,
    )


def cohen_kappa(human: Sequence[bool], judge: Sequence[bool]) -> float | None:
    """Cohen's kappa: agreement corrected for the agreement chance alone would give.

    ``kappa = (p_o - p_e) / (1 - p_e)``, with ``p_o`` the observed agreement rate and
    ``p_e = p_h(F) p_j(F) + p_h(U) p_j(U)``, the agreement two raters with these
    class frequencies would reach by chance. 1 is perfect agreement, 0 is chance,
    below 0 is worse than chance.

    Returns:
        The kappa, or ``None`` when it is undefined: no items, or ``p_e == 1``
        (both sides gave every item one and the same label, so agreement says
        nothing about skill).

    Example:
        ```python
        from citemark import cohen_kappa

        print(cohen_kappa([True, True, False, False], [True, False, True, False]))
        #> 0.0
        print(cohen_kappa([True, False], [True, False]), cohen_kappa([True, True], [True, True]))
        #> 1.0 None
        ```
    """
    matrix = confusion_matrix(human, judge)
    n = matrix.total
    if not n:
        return None
    human_faithful = matrix.faithful_as_faithful + matrix.faithful_as_unfaithful
    judge_faithful = matrix.faithful_as_faithful + matrix.unfaithful_as_faithful
    observed = Fraction(matrix.faithful_as_faithful + matrix.unfaithful_as_unfaithful, n)
    chance = Fraction(
        human_faithful * judge_faithful + (n - human_faithful) * (n - judge_faithful), n * n
    )
    if chance == 1:
        return None
    return float((observed - chance) / (1 - chance))


def measure_agreement(
    ids: Sequence[str], human: Sequence[bool], judge: Sequence[bool]
) -> Agreement:
    """Compute every agreement figure at once, with the disagreeing ids by human class.

    Raises:
        ValueError: the three sequences differ in length, or a label is not a bool.

    Example:
        ```python
        from citemark import measure_agreement

        agreement = measure_agreement(
            ["a", "b", "c", "d"], [True, True, False, False], [True, True, True, False]
        )
        print(agreement.agreement_rate, agreement.unfaithful.recall)
        #> 0.75 0.5
        print(agreement.disagreements.unfaithful, agreement.disagreements.faithful)
        #> ('c',) ()
        ```
    """
    if len(ids) != len(human):
        msg = f"ids and labels must be equally long (got {len(ids)} ids and {len(human)} labels)"
        raise ValueError(msg)
    faithful = precision_recall(human, judge, label=True)
    unfaithful = precision_recall(human, judge, label=False)
    pairs = list(zip(ids, human, judge, strict=True))
    return Agreement(
        items=len(pairs),
        agreement_rate=agreement_rate(human, judge),
        kappa=cohen_kappa(human, judge),
        faithful=ClassAgreement(
            precision=faithful[0],
            recall=faithful[1],
            support=sum(1 for h in human if h),
            predicted=sum(1 for j in judge if j),
        ),
        unfaithful=ClassAgreement(
            precision=unfaithful[0],
            recall=unfaithful[1],
            support=sum(1 for h in human if not h),
            predicted=sum(1 for j in judge if not j),
        ),
        confusion=confusion_matrix(human, judge),
        disagreements=Disagreements(
            faithful=tuple(i for i, h, j in pairs if h and not j),
            unfaithful=tuple(i for i, h, j in pairs if not h and j),
        ),
    )


def _check(human: Sequence[bool], judge: Sequence[bool]) -> None:
    if len(human) != len(judge):
        msg = (
            f"human labels and judge verdicts must be equally long "
            f"(got {len(human)} and {len(judge)})"
        )
        raise ValueError(msg)
    if not all(isinstance(value, bool) for value in (*human, *judge)):
        msg = "labels and verdicts must be bools (True for faithful)"
        raise ValueError(msg)
