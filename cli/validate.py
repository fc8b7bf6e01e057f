"""`rooflens validate DIR`: every validator over a run folder; exit 0 only when all pass.
A job folder (analyze-job) is checked against its ledger, and each rank's run against its own.

The folder must first be one run's complete, unmodified output (`verify` against the ledger
in run.json): artifacts of two traces, or files changed after the run, never validate.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from rooflens.analyzers import layout
from rooflens.analyzers.findings.contract.validate import validate_findings_file
from rooflens.analyzers.findings.drafting.drafts import tier_for
from rooflens.analyzers.findings.validation.analysis_checks import validate_report
from rooflens.analyzers.findings.validation.run_checks import validate_run
from rooflens.analyzers.job.job_folder import read_job, verify_job
from rooflens.analyzers.pipeline.ledger import RUN_FILE, RunFolderError, read_record, verify

from .common import EXIT_OK, EXIT_PROBLEMS, fail, print_json

FINDINGS_FOLDERS = ("system_findings", "category_findings")


def validate_job(folder: Path, out: TextIO, *, as_json: bool) -> int:
    """A job folder (analyze-job): its ledger, and each rank's run against its own ledger.
    A rank's analyses are validated by `rooflens validate JOB/ranks/rank-N`."""
    problems = verify_job(folder)
    try:
        record = read_job(folder)
    except RunFolderError:
        record = None
    for rank in record.ranks if record else []:
        if rank.run_folder:
            problems += [f"{rank.run_folder}: {p}" for p in verify(folder / rank.run_folder)]
    if as_json:
        print_json(
            {
                "job": str(folder.absolute()),
                "valid": not problems,
                "job_id": record.job_id if record else None,
                "problems": problems,
            }
        )
    else:
        for line in problems:
            out.write(f"{line}\n")
        out.write("All checks passed.\n" if not problems else "Some checks failed (see above).\n")
    return EXIT_PROBLEMS if problems else EXIT_OK


def findings_problems(run_dir: Path) -> list[str]:
    """`<file>: line N: [rule] message` for every findings file of the run."""
    out = []
    for folder in FINDINGS_FOLDERS:
        for path in sorted((run_dir / folder).glob("*_findings.md")):
            key = path.name.removesuffix("_findings.md")
            out.extend(
                f"{folder}/{path.name}: {p}" for p in validate_findings_file(path, tier_for(key))
            )
    return out


def run_validate(run_dir: str, out: TextIO | None = None, *, as_json: bool = False) -> int:
    out = out or sys.stdout
    folder = Path(run_dir)
    if (folder / layout.JOB_FILE).is_file():
        return validate_job(folder, out, as_json=as_json)
    if not (folder / "category_data" / "category_manifest.json").is_file():
        report_only = (folder / RUN_FILE).is_file()
        what = "holds a perf report only" if report_only else "is not a run folder"
        return fail(
            f"{folder} {what} (no category_data/category_manifest.json); "
            "create a run to validate with `rooflens analyze TRACE --out DIR`"
        )
    problems = verify(folder)
    problems += findings_problems(folder)
    if (folder / "analysis.md").is_file():
        problems += [f"analysis.md: {p}" for p in validate_report(folder)]
    else:
        problems.append("analysis.md: missing; `rooflens analyze` writes it")
    run = validate_run(folder)
    passed = not problems and run.passed
    if as_json:
        try:
            record = read_record(folder)
        except RunFolderError:
            record = None
        print_json(
            {
                "run": str(folder.absolute()),
                "valid": passed,
                "run_id": record.run_id if record else None,
                "trace": record.trace.model_dump(mode="json") if record else None,
                "problems": problems,
                "checks": run.model_dump(mode="json"),
            }
        )
        return EXIT_OK if passed else EXIT_PROBLEMS
    for line in problems:
        out.write(f"{line}\n")
    out.write(run.summary() + "\n")
    out.write("All checks passed.\n" if passed else "Some checks failed (see above).\n")
    return EXIT_OK if passed else EXIT_PROBLEMS
