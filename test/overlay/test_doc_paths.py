"""Every repository path the docs and the tool's messages point to exists.

Scanned: the Markdown files, overlay.toml's comments, the GitHub workflows, and every string
literal (messages, docstrings) of torch_overlay/ and scripts/. A path is a token that starts with
one of this repository's top-level directories; it must name an existing file or directory, and
a glob (`patches/*/*.patch`) must match one.

Paths of the fork tree are not this repository's and are told apart by rule, not by a list of
exceptions: `torch/...` is the base wheel's package (never a directory here, so never scanned);
`build/...` is where the tool writes its outputs (git-ignored, so not scanned); and a `test/...`
path that is not here must be a file the patch series touches (their regression suites live
in the fork tree's test/, e.g. the README's patch table), or one of the few `EXAMPLES` below.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import unittest
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from torch_overlay.fork.series import read_series  # noqa: E402

# The top-level directories of this repository that docs and messages send readers to.
REPO_DIRS = ("scripts", "torch_overlay", "test", "patches", "benchmarks", ".github")
# At the start of a word only: `pytorch/test/test-reports/` is upstream's and a URL's path is
# the web's. The source-build workflow checks this repository out as `overlay/`.
PATH_TOKEN = re.compile(r"(?<![\w./-])(?:overlay/)?((?:" + "|".join(map(re.escape, REPO_DIRS)) + r")/[\w./*-]*)")
# Fork-tree files the docs name for illustration: the README's walk-through of writing a new
# patch edits a test file that by design does not exist yet.
EXAMPLES = frozenset({"test/inductor/test_my_fix.py"})
# Directories under the repository whose Markdown is not the project's own (outputs, caches).
NOT_DOCS = frozenset({"build", "dist", ".git", ".pytest_cache", "__pycache__"})


def path_tokens(text: str) -> Iterator[str]:
    for match in PATH_TOKEN.finditer(text):
        yield match.group(1).rstrip(".")  # a path that ends a sentence keeps its own dots only


def fork_tree_files(repo: Path) -> frozenset[str]:
    series = [p for base in sorted((repo / "patches").iterdir()) if base.is_dir() for p in read_series(base)]
    return frozenset(name for patch in series for name in patch.files)


def exists(repo: Path, token: str) -> bool:
    if "*" in token:
        return any(repo.glob(token))
    return (repo / token).is_dir() if token.endswith("/") else (repo / token).exists()


def missing_paths(text: str, repo: Path = REPO, fork_tree: frozenset[str] | None = None) -> list[str]:
    """The path tokens of `text` that name nothing in `repo` (or in the fork tree the series touches)."""
    fork_tree = fork_tree_files(repo) if fork_tree is None else fork_tree
    return [token for token in path_tokens(text)
            if not exists(repo, token) and token not in fork_tree and token not in EXAMPLES]


def string_literals(source: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def toml_comments(text: str) -> Iterator[str]:
    return (line for line in text.splitlines() if line.lstrip().startswith("#"))


def markdown_files(repo: Path) -> Iterable[Path]:
    return sorted(p for p in repo.rglob("*.md") if NOT_DOCS.isdisjoint(p.relative_to(repo).parts))


def scanned_texts(repo: Path) -> Iterator[tuple[Path, str]]:
    """(file, text) of every doc, comment block and message that may name a repository path."""
    for path in markdown_files(repo):
        yield path, path.read_text()
    yield repo / "overlay.toml", "\n".join(toml_comments((repo / "overlay.toml").read_text()))
    for path in sorted((repo / ".github" / "workflows").glob("*.yml")):
        yield path, path.read_text()
    for path in sorted([*(repo / "torch_overlay").rglob("*.py"), *(repo / "scripts").glob("*.py")]):
        yield path, "\n".join(string_literals(path.read_text()))


class TestScanner(unittest.TestCase):
    """The scanner itself: what it takes for a path, and that it reports a missing one."""

    FORK_TREE = frozenset({"test/inductor/test_fix.py"})

    def missing(self, text: str) -> list[str]:
        return missing_paths(text, REPO, self.FORK_TREE)

    def test_reports_a_path_to_a_missing_file(self) -> None:
        text = "A source build is needed (scripts/build_from_source.sh)."
        self.assertEqual(self.missing(text), ["scripts/build_from_source.sh"])

    def test_existing_files_directories_and_globs_pass(self) -> None:
        text = "See scripts/build_from_source.py, then test/overlay/ and `patches/*/*.patch`; torch_overlay/artifacts/wheel.py."
        self.assertEqual(list(path_tokens(text)), ["scripts/build_from_source.py", "test/overlay/", "patches/*/*.patch",
                                                   "torch_overlay/artifacts/wheel.py"])
        self.assertEqual(self.missing(text), [])

    def test_a_directory_form_must_be_a_directory(self) -> None:
        self.assertEqual(self.missing("test/run_test.py/ and benchmarks/nothing/"),
                         ["test/run_test.py/", "benchmarks/nothing/"])

    def test_fork_tree_paths_must_be_ones_the_series_touches(self) -> None:
        self.assertEqual(self.missing("test/inductor/test_fix.py and test/inductor/test_typo.py"),
                         ["test/inductor/test_typo.py"])

    def test_the_overlay_checkout_of_a_workflow_is_this_repository(self) -> None:
        self.assertEqual(self.missing("python overlay/scripts/build.py"), ["scripts/build.py"])

    def test_paths_inside_other_paths_and_urls_are_not_ours(self) -> None:
        text = "pytorch/test/test-reports/ https://github.com/org/repo/blob/main/scripts/x.py build/tree/test/y.py"
        self.assertEqual(list(path_tokens(text)), [])

    def test_string_literals_include_f_string_parts_and_docstrings(self) -> None:
        source = 'def f(name):\n    """Runs scripts/a.py."""\n    return f"see scripts/b.py for {name}"\n'
        self.assertEqual(sorted(path_tokens("\n".join(string_literals(source)))), ["scripts/a.py", "scripts/b.py"])


class TestDocPaths(unittest.TestCase):
    def test_every_named_repository_path_exists(self) -> None:
        fork_tree = fork_tree_files(REPO)
        missing = [f"{path.relative_to(REPO)}: {token}" for path, text in scanned_texts(REPO)
                   for token in missing_paths(text, REPO, fork_tree)]
        self.assertEqual(missing, [], "paths named in docs or messages that do not exist")

    def test_the_scan_covers_docs_workflows_and_messages(self) -> None:
        scanned = {path.relative_to(REPO).as_posix() for path, _ in scanned_texts(REPO)}
        for expected in ("README.md", "benchmarks/README.md", "overlay.toml", ".github/workflows/source-build.yml",
                         "torch_overlay/fork/series.py", "scripts/build_from_source.py"):
            self.assertIn(expected, scanned)


def tracked_dirs() -> set[str]:
    """Every directory of the repository that holds a tracked file (the root excluded)."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return {parent.as_posix() for f in files for parent in Path(f).parents if parent != Path(".")}


def layout_table() -> str:
    readme = (REPO / "README.md").read_text()
    return readme[readme.index("## Layout"):readme.index("\n## ", readme.index("## Layout") + 1)]


class TestLayoutTable(unittest.TestCase):
    def test_every_folder_is_in_the_layout_table(self) -> None:
        # The cpp extension's own folders are the extension's (its README maps them), and __pycache__
        # is not tracked; every other folder, down to the tool's packages, has a row.
        own = {d for d in tracked_dirs() if not d.startswith("test/cpp_extensions/") or d.count("/") < 2}
        table = layout_table()
        missing = sorted(d for d in own if f"`{d}/" not in table and f"`{d}`" not in table)
        self.assertEqual(missing, [], "README's Layout table leaves out these folders")


if __name__ == "__main__":
    unittest.main()
