"""A distributed job from Python: `rooflens.analyze_job(traces)` analyses every rank on Dask
(an embedded cluster of worker processes, or the scheduler named) and returns a `Job` held in
memory, the analysis `rooflens analyze-job` and the server's `load_job` run; nothing is
written until `Job.save` (docs/python-api.md#a-distributed-job).

Ranks are summarised in their workers, never written as runs of their own: a rank to look at
closely is one trace, for `rooflens.analyze`.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .job.cluster import ClusterChoice, cluster_warnings
from .job.inputs import job_inputs
from .job.job_folder import check_job_destination
from .job.job_run import JobResult, ranks_table, write_job_folder
from .job.job_run import analyze_job as run_job
from .job.overview import JobOverview, job_overview
from .job.rank_task import NO_RUN
from .job.records import JobAnalysis
from .job.report import job_report_md
from .job.tables import implicit_sync_table, straggler_table
from .perf.platforms import get_platform
from .pipeline.ledger import staged_output

NOT_WRITTEN = Path("(in memory)")  # where ranks would write runs: nowhere, with NO_RUN


def analyze_job(
    traces: str | Path | Sequence[str | Path],
    *,
    platform: str | None = None,
    rank_regex: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
) -> Job:
    """Analyse the ranks of one job: `traces` is a folder, a glob, or a list of them and of
    files (one trace per rank, the rank read from the trace or from `rank_regex`'s first
    group). `workers` sizes the embedded cluster (default: the machine and the job);
    `scheduler` sends the ranks to a running Dask scheduler instead. What the cluster choice
    warns of becomes a Python warning. Raises JobInputError for files that are not one job,
    JobFailed when no rank could be analysed, UnknownPlatform for a platform not known."""
    if platform:
        get_platform(platform)
    specs = [traces] if isinstance(traces, str | Path) else list(traces)
    inputs = job_inputs([str(s) for s in specs], rank_regex)
    choice = ClusterChoice.from_args(scheduler, workers).resolved([f.path for f in inputs.files])
    for warning in cluster_warnings(choice):
        warnings.warn(warning, stacklevel=2)
    result = run_job(inputs, NOT_WRITTEN, choice, platform=platform, until=NO_RUN)
    return Job(result, choice, platform)


@dataclass
class Job:
    """One analysed job in memory (see `analyze_job`)."""

    result: JobResult
    choice: ClusterChoice
    platform: str | None

    @property
    def analysis(self) -> JobAnalysis:
        """Everything the job report shows: collectives matched across ranks, waits,
        stragglers, findings (times in µs unless a name says otherwise)."""
        return self.result.analysis

    @property
    def overview(self) -> JobOverview:
        """The headline figures in ms: straggler, longest waiter, findings."""
        return job_overview(self.analysis)

    @property
    def ranks(self) -> pd.DataFrame:
        """One row per rank: its trace, status (or why it failed), GPU timeline and wait."""
        return ranks_table(self.result)

    @property
    def collectives(self) -> pd.DataFrame:
        """Each matched collective: who arrived last and how long the others waited."""
        return implicit_sync_table(self.analysis.collectives)

    @property
    def stragglers(self) -> pd.DataFrame:
        return straggler_table(list(self.analysis.waits))

    @property
    def report(self) -> str:
        """`job_analysis.md`, without the plot and the links to rank runs a saved job has."""
        return job_report_md(self.analysis)

    def save(self, folder: str | Path, *, force: bool = False) -> Path:
        """Write the job as `rooflens analyze-job --until none --out folder` does (tables,
        plot, report, overview and `job.json`), staged and swapped into place; an existing
        job folder of other traces is replaced only with `force`. Returns the folder."""
        out = Path(folder)
        check_job_destination(out, [str(f.path) for f in self.result.inputs.files], force=force)
        with staged_output(out) as stage:
            write_job_folder(stage, self.result, self.choice, self.platform, NO_RUN)
        return out

    def __repr__(self) -> str:
        done, failed = len(self.result.done), len(self.result.failed)
        return f"Job({done} ranks analysed, {failed} failed, platform={self.platform!r})"

    def _repr_html_(self) -> str:
        v = self.overview
        rows = (
            "".join(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(str(c))}</td>"
                    for c in (f"P{f.p_number}", f.title, f"{f.mid_ms:,.3f}")
                )
                + "</tr>"
                for f in v.findings[:10]
            )
            or '<tr><td colspan="3">nothing ranked</td></tr>'
        )
        head = html.escape(repr(self))
        return (
            f"<div><strong>{head}</strong><table><thead><tr><th>P</th><th>finding</th>"
            f"<th>mid saving (ms)</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )
