"""A rank task that kills its worker process for one rank (as an out-of-memory kill would),
so the fan-out's handling of a lost worker can be tested on a real cluster. Importable by
the workers: it lives in a package, not in a test module."""

from __future__ import annotations

import os

from rooflens.analyzers.job.rank_task import RankOutcome, RankTask, run_rank

DOOMED_RANK = 1


def run_or_die(task: RankTask) -> RankOutcome:
    if task.rank == DOOMED_RANK:
        os._exit(137)  # the process vanishes mid-task, as under the OOM killer
    return run_rank(task)
