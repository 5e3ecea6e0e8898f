"""Running a contract over many generated cases and reporting what differed.

Case ``i`` of a run with seed ``S`` is drawn from ``numpy.random.default_rng([S, i])``, so
``--seed S --start i --programs 1`` reproduces one case alone.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
import warnings
from types import ModuleType

import numpy as onp

__all__ = ["Failure", "Refusal", "Report", "run"]


class Refusal(str):
    """A check's finding that is not a difference: the transform refused the case with a
    clear error (the contracts allow that). Counted, printed with ``--show-refusals``."""


@dataclasses.dataclass
class Failure:
    index: int
    case: object
    differences: list

    def __str__(self) -> str:
        lines = "\n".join(f"  - {d}" for d in self.differences)
        return f"case {self.index}:\n{self.case}\n{lines}"


@dataclasses.dataclass
class Report:
    name: str
    seed: int
    cases: int = 0
    seconds: float = 0.0
    failures: list = dataclasses.field(default_factory=list)
    refusals: list = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.name}: {self.cases} cases (seed {self.seed}), "
                f"{len(self.failures)} with differences, {len(self.refusals)} refused "
                f"clearly, {self.seconds:.1f} s")


def run(contract: ModuleType, programs: int, seed: int = 0, start: int = 0,
        max_failures: int | None = None, seconds: float | None = None) -> Report:
    """Generate and check ``programs`` cases of ``contract`` (stopping early after
    ``max_failures`` failures or ``seconds`` seconds)."""
    report = Report(contract.NAME, seed)
    t0 = time.perf_counter()
    for i in range(start, start + programs):
        rng = onp.random.default_rng([seed, i])
        case = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a check that compares warnings records them
                case = contract.generate(rng)
                found = contract.check(case)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # noqa: BLE001 (a harness or transform crash is a finding too,
            # and so is a transform's internal signal escaping: vmap's BatchUnsupported)
            found = ["the check itself raised:\n" + traceback.format_exc()]
        report.cases += 1
        diffs = [d for d in found if not isinstance(d, Refusal)]
        refused = [d for d in found if isinstance(d, Refusal)]
        if refused:
            report.refusals.append(Failure(i, case, refused))
        if diffs:
            report.failures.append(Failure(i, case, diffs))
            if max_failures is not None and len(report.failures) >= max_failures:
                break
        if seconds is not None and time.perf_counter() - t0 > seconds:
            break
    report.seconds = time.perf_counter() - t0
    return report
