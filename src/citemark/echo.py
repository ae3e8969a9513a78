"""The planted-marker echo check (SPEC §3.10): does a pipeline cite what it was given?

`run_echo_check` (also at the top level) plants a fresh high-entropy marker in a
positive document, a different one in a lexically similar decoy, and a third
nowhere, then asks the pipeline and re-reads its citations from the files. This
module holds the rest of that surface: the default cases, the planned corpus
(`plan_echo`, `EchoPlan`, `PlannedCase`) and each case's result.

Example:
    ```python
    from citemark.echo import DEFAULT_ECHO_CASES, plan_echo

    plan = plan_echo(7, DEFAULT_ECHO_CASES[:1])
    print(len(plan.cases), plan.cases[0].absent_marker.startswith("CM-ECHO-"))
    #> 1 True
    ```
"""

from __future__ import annotations

from citemark._judging.echo.plan import (
    DEFAULT_ECHO_CASES,
    EchoCase,
    EchoPlan,
    PlannedCase,
    plan_echo,
)
from citemark._judging.echo.run import (
    EchoCaseResult,
    EchoReport,
    run_echo_check,
    run_echo_check_sync,
)
from citemark._public import publish

__all__ = [
    "DEFAULT_ECHO_CASES",
    "EchoCase",
    "EchoCaseResult",
    "EchoPlan",
    "EchoReport",
    "PlannedCase",
    "plan_echo",
    "run_echo_check",
    "run_echo_check_sync",
]

publish(globals(), __name__, __all__)
