"""The server's side of `resources.access.RunAccess`: runs found through the run store, each
visible only to its owner over isolated HTTP (server/owners.py); a run read through a keyed
handle is named with it (`RunInfo.id`), so the links a resource gives keep working."""

from __future__ import annotations

from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.ledger import RunFolderError
from rooflens.analyzers.pipeline.steps import STEP_ORDER
from rooflens.analyzers.report.csv_cells import ESCAPED
from rooflens.resources.access import Caller, JobInfo, RunInfo, RunNotVisible

from .jobs import JobNotFound, find_job
from .paths import PathRefused
from .runs import Run, RunNotFound
from .state import AppState


class ServerRunAccess:
    def run(self, caller: Caller, run_id: str) -> RunInfo:
        st: AppState = caller.state
        try:
            run = st.runs.get(run_id, st.owner(caller.headers))
            folder = st.policy.folder_without_links(run.folder)
        except (RunNotFound, PathRefused, RunFolderError) as exc:
            raise RunNotVisible(str(exc)) from None
        return _info(run, _categories(st, run, RunFolder(folder)))

    def runs(self, caller: Caller) -> list[RunInfo]:
        st: AppState = caller.state
        return [_info(run) for run in st.runs.visible(st.owner(caller.headers))]

    def job(self, caller: Caller, job_id: str) -> JobInfo:
        st: AppState = caller.state
        try:
            folder, record = find_job(st, job_id, st.owner(caller.headers))
        except (JobNotFound, PathRefused, RunFolderError) as exc:
            raise RunNotVisible(str(exc)) from None
        return JobInfo(id=record.job_id, folder=folder, csv_escaped=record.csv_cells == ESCAPED)

    def step_names(self) -> tuple[str, ...]:
        return STEP_ORDER

    def page_bytes(self, caller: Caller) -> int:
        st: AppState = caller.state
        return st.config.max_result_bytes


def manifest_categories(st: AppState, run: Run) -> tuple[tuple[str, str], ...]:
    """(key, display name) of the run's categories, empty before they are prepared."""
    return _categories(st, run, RunFolder(st.policy.folder_without_links(run.folder)))


def _categories(st: AppState, run: Run, folder: RunFolder) -> tuple[tuple[str, str], ...]:
    held = st.runs.results.get(run.run_id)
    data = held.category_data if held is not None else None
    manifest = data.manifest if data is not None else folder.read_manifest()
    if manifest is None:
        return ()
    return tuple((c.name, c.display_name) for c in manifest.categories)


def _info(run: Run, categories: tuple[tuple[str, str], ...] = ()) -> RunInfo:
    return RunInfo(
        id=run.id,
        folder=run.folder,
        trace_name=run.record.trace.name,
        platform=run.platform,
        created=run.record.created,
        steps=tuple(run.record.steps),
        categories=categories,
        compared_with=compared.trace.name if (compared := run.record.compare_with) else None,
        csv_escaped=run.record.csv_cells == ESCAPED,
    )
