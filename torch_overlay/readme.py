"""The READMEs' tables, rendered from the series and the records in benchmarks/.

Nothing in them is typed by hand. README.md's patch table: ids, titles, issues, PRs and files
come from the patch files, and "first release with the fix" from `benchmarks/drift.json`
(`verify against V --record`); its gate section from `benchmarks/regressions.json`
(`verify gate --record`). The benchmark table, in README.md and in
benchmarks/README.md, is the one `bench` prints, from `benchmarks/results.json`
(`bench --output benchmarks/`). `python -m torch_overlay readme` rewrites every block between
its markers; `--check` fails, naming the file, when one is out of date.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .bench import BenchRecord, load_results
from .bench import render_table as render_bench_table
from .core import atomic
from .core.errors import CheckFailed, OverlayError
from .core.outcomes import CaseVerdict, Drift
from .core.project import Project, default_base
from .fork.message import impact, upstream_status
from .fork.series import Patch, read_dropped, read_series, series_file
from .pinning.pin import base_versions
from .proofs.drift_record import DriftRecord, PatchDriftRecord
from .proofs.gate_record import GateRecord
from .proofs.upstream import version_key

START, END = "<!-- patch-table:start -->", "<!-- patch-table:end -->"
GATE_START, GATE_END = "<!-- regressions-table:start -->", "<!-- regressions-table:end -->"
BENCH_START, BENCH_END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
README = Path("README.md")

# A rendered block: its start marker, its end marker, its text.
Block = tuple[str, str, str]


def bench_readme(project: Project) -> Path:
    """benchmarks/README.md, relative to the project root (as `blocks` names files)."""
    return (project.records_dir / "README.md").relative_to(project.root)


def first_release_carrying(drift: DriftRecord, patch: Patch) -> tuple[str, PatchDriftRecord] | None:
    """The lowest measured release carrying the fix, whole or as upstream's part of it, and its entry:
    what the patch's `Applied-Upstream:` trailer must name."""
    for version in sorted(drift.releases, key=version_key):
        entry = {p.file: p for p in drift.releases[version].patches}.get(patch.path.name)
        if entry is not None and entry.verdict in (Drift.ALREADY_UPSTREAM, Drift.PARTLY_UPSTREAM):
            return version, entry
    return None


def first_release_with_fix(drift: DriftRecord, patch: Patch) -> str:
    """The lowest measured release carrying the fix, whole or as upstream's part of it."""
    found = first_release_carrying(drift, patch)
    if found is not None:
        version, entry = found
        if entry.verdict == Drift.ALREADY_UPSTREAM:
            return version
        beyond = len(entry.beyond_upstream)
        return f"{version}: upstream fix present; {beyond} case{'s' if beyond != 1 else ''} beyond upstream"
    checked = sorted(drift.releases, key=version_key)
    measured = [v for v in checked if patch.path.name in {p.file for p in drift.releases[v].patches}]
    return f"none of {', '.join(measured)}" if measured else "not measured"


def _links(numbers: tuple[int, ...], kind: str) -> str:
    return ", ".join(f"[#{n}](https://github.com/pytorch/pytorch/{kind}/{n})" for n in numbers) or "-"


@dataclass(frozen=True)
class OtherBase:
    """Another base's series, for the patch table's column on it."""

    version: str
    patches: list[Patch] | None  # None: it has no series yet
    dropped: dict[str, str]  # patch file -> why (`# dropped:` lines of its series)

    def cell(self, patch: Patch) -> str:
        """Whether this base carries `patch` (a patch of another base: the same fix has the same title;
        each base numbers its own series)."""
        if self.patches is None:
            return "no series yet"
        carried = next((p for p in self.patches if p.title == patch.title), None)
        if carried is not None:
            return "carried" if carried.id == patch.id else f"carried as {carried.id}"
        why = self.dropped.get(patch.path.name)
        return f"dropped: {why}" if why is not None else "not ported yet"


def render_table(patches: list[Patch], drift: DriftRecord, others: Sequence[OtherBase] = ()) -> str:
    """One row per patch of the default base's series, and of another base's that it lacks; one
    column per other base saying whether that base carries the patch."""
    titles = {p.title for p in patches}
    extra = [p for other in others for p in other.patches or () if p.title not in titles]
    lines = [
        "| Id | Title | Impact | Upstream issue | Upstream | Files | First release with the fix |"
        + "".join(f" On {o.version} |" for o in others),
        "|---|---|---|---|---|---|---|" + "---|" * len(others),
    ]
    for p in [*patches, *extra]:
        files = "<br>".join(f"`{f}`" for f in p.files)
        title = p.title.replace("|", "\\|")
        status = upstream_status(p)
        upstream = status.describe(_links(status.prs, "pull"))
        lines.append(
            f"| {p.id} | {title} | {impact(p)} | {_links(p.upstream_issues, 'issues')} | {upstream} "
            f"| {files} | {first_release_with_fix(drift, p)} |" + "".join(f" {o.cell(p)} |" for o in others)
        )
    return "\n".join(lines)


def other_bases(project: Project) -> list[OtherBase]:
    """Every base but `project`'s, in the pin file's order."""
    found = []
    for version in base_versions(project.pin_file):
        if version != project.base:
            directory = project.with_base(version).patches_dir
            series = read_series(directory) if series_file(directory).exists() else None
            found.append(OtherBase(version, series, read_dropped(directory)))
    return found


def with_table(readme: str, table: str, start: str = START, end: str = END, name: Path = README) -> str:
    """`readme` (the text of file `name`) with the block between the `start` and `end` markers
    replaced by `table`."""
    if start not in readme or end not in readme:
        raise OverlayError(f"{name} lacks the {start} ... {end} markers")
    head, rest = readme.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{table}\n{end}{tail}"


def render_gate(record: GateRecord | None, record_file: Path, corpus: Sequence[str] = ()) -> str:
    """The differential gate's latest recorded run (`verify gate --record`, in
    `record_file`), or why none; `corpus` names every part, so that parts the record lacks are named too."""
    if record is None:
        return "Not recorded yet: `python -m torch_overlay verify gate --tier full --record`."
    from .proofs.regressions import render

    verdict = ("REGRESSIONS FOUND" if record.totals[CaseVerdict.REGRESSED]
               else "INCOMPLETE (a side timed out)" if record.timed_out()
               else "INCOMPLETE (cases missing)" if record.missing_cases() else "no regression")
    text = (f"{record.tier.capitalize()} tier, series `{record.series}`, Python {record.python}, "
            f"{record.date[:10]}: {verdict}.\n\n{render(record, record_file)}")
    missing = [name for name in corpus if name not in {p.part for p in record.parts}]
    if missing:
        text += ("\n\nNot recorded in this tier yet: " + ", ".join(f"`{name}`" for name in missing)
                 + f" (`python -m torch_overlay verify gate --tier {record.tier} --record --part NAME`).")
    return text


def render_bench(results: BenchRecord | None) -> str:
    """The benchmark table of `bench --output benchmarks/`'s record, or how to record one."""
    if results is None:
        return "Not measured yet: `python -m torch_overlay bench --output benchmarks/`."
    return render_bench_table(results)


def blocks(project: Project) -> dict[Path, list[Block]]:
    """Every file holding rendered blocks (relative to the project root) and its blocks."""
    from .proofs import drift, regressions

    project = project.with_base(default_base(project.pin_file))  # the README is about the default base
    patch_table = render_table(read_series(project.patches_dir), drift.load_record(project), other_bases(project))
    gate = render_gate(regressions.load_record(project), regressions.record_name(project),
                       [regressions.part_name(part) for part in regressions.corpus_files(project)])
    bench = render_bench(load_results(project.records_dir))
    return {
        README: [(START, END, patch_table), (GATE_START, GATE_END, gate), (BENCH_START, BENCH_END, bench)],
        bench_readme(project): [(BENCH_START, BENCH_END, bench)],
    }


def rendered(root: Path, name: Path, file_blocks: list[Block]) -> tuple[str, str]:
    """The file's current text and its text with every block re-rendered."""
    try:
        current = (root / name).read_text()
    except FileNotFoundError:
        raise OverlayError(f"{name} is missing") from None
    wanted = current
    for start, end, text in file_blocks:
        wanted = with_table(wanted, text, start, end, name)
    return current, wanted


def check(project: Project) -> None:
    """Raise CheckFailed, naming each file, when a rendered block is missing or out of date."""
    problems = []
    for name, file_blocks in blocks(project).items():
        try:
            current, wanted = rendered(project.root, name, file_blocks)
        except OverlayError as e:
            problems.append(str(e))
            continue
        if wanted != current:
            problems.append(f"{name}'s tables are out of date")
    if problems:
        raise CheckFailed(f"{'; '.join(problems)}: run `python -m torch_overlay readme`")


def write(project: Project) -> None:
    """Re-render every block of every file that holds one."""
    for name, file_blocks in blocks(project).items():
        current, wanted = rendered(project.root, name, file_blocks)
        if wanted != current:
            atomic.write_text(project.root / name, wanted)
