"""The tool's layering, its command line's boundary, and which of its tests need torch.

* The import contracts of pyproject.toml (`[tool.importlinter]`) hold: the core (pin, base,
  tree, wheel) never imports a command built on it (prove, upstream, bench, the command line),
  and the tool never imports torch. `lint-imports` checks them here, as a suite of
  `python test/run_test.py`, so CI fails on a lower layer importing a higher one.
* argparse stays in the command line: the rest of the tool takes typed parameters.
* The tool's tests that have nothing to do with torch import no torch, so they run before torch
  is installed, and start faster.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "torch_overlay"
TESTS = Path(__file__).resolve().parent

# import-linter's console script, run by this interpreter: the one whose packages are checked.
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"

# The tool's tests that run without torch. They drive the tool on synthetic projects, whose
# `torch` is a few stub modules run in child processes, or check the tool's own files; torch's
# TestCase would add nothing but the time to import torch.
TORCH_FREE = (
    "test_bench",
    "test_build_from_source",
    "test_catalogue",
    "test_cli_errors",
    "test_doc_paths",
    "test_faults",  # its OpenReg case imports torch in the test itself, to build against it
    "test_layering",
    "test_lint",
    "test_lost_work",
    "test_other_bases",  # drives the other bases' trees in child processes
    "test_prove",
    "test_readme",
    "test_records",
    "test_regressions",
    "test_release_order",
    "test_roll",
    "test_run_test",
    "test_stage",
    "test_tree",
    "test_wheel",
    "test_wheel_tags",
    "test_workflows",
)
# The tests that import torch, and why.
NEEDS_TORCH = {
    "test_build_backend": "installs the built torch and imports it; torch's parametrize",
    "test_cuda_variants": "runs a device-generic suite with the installed torch",
    "test_openreg_build": "builds OpenReg against the installed torch",
    "test_openreg_install": "OpenReg's distribution, loaded by `import torch`",
    "test_other_python": "installs the built torch under other Pythons and imports it",
    "test_real_base": "checks the installed torch is the overlay",
}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with root/pyproject.toml's contracts, on root's torch_overlay."""
    return subprocess.run([sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=root,
                          capture_output=True, text=True)


def argparse_outside_main(path: Path) -> list[int]:
    """Lines of `path` that use argparse outside a function called `main`.

    A module run as a script of its own (`python -m torch_overlay.artifacts.openreg`, the bench's
    programs) parses its command line in its `main` and passes typed values on.
    """
    module = ast.parse(path.read_text(), str(path))
    names = {alias.asname or alias.name for node in ast.walk(module) if isinstance(node, ast.Import)
             for alias in node.names if alias.name == "argparse"}
    names |= {alias.asname or alias.name for node in ast.walk(module)
              if isinstance(node, ast.ImportFrom) and node.module == "argparse" for alias in node.names}
    mains = [range(node.lineno, (node.end_lineno or node.lineno) + 1) for node in ast.walk(module)
             if isinstance(node, ast.FunctionDef) and node.name == "main"]
    return [node.lineno for node in ast.walk(module) if isinstance(node, ast.Name) and node.id in names
            and not any(node.lineno in lines for lines in mains)]


class TestImportContracts(unittest.TestCase):
    def test_contracts_are_kept(self) -> None:
        result = lint_imports(REPO)
        self.assertEqual(result.returncode, 0, f"lint-imports:\n{result.stdout}{result.stderr}")

    def test_a_broken_contract_is_reported(self) -> None:
        # A throwaway copy where a core module imports the command line, and another torch.
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            shutil.copytree(PACKAGE, root / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(REPO / "pyproject.toml", root)
            with (root / PACKAGE.name / "pinning" / "base.py").open("a") as f:
                f.write("\nfrom ..cli import main  # noqa: E402\n")
            with (root / PACKAGE.name / "fork" / "tree.py").open("a") as f:
                f.write("\nimport torch  # noqa: E402\n")
            result = lint_imports(root)
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("torch_overlay.pinning.base -> torch_overlay.cli", result.stdout)
        self.assertIn("torch_overlay.fork.tree -> torch", result.stdout)


class TestCommandLineBoundary(unittest.TestCase):
    def test_argparse_stays_in_the_command_line(self) -> None:
        misplaced = [f"{path.relative_to(REPO)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
                     if path != PACKAGE / "cli.py" for line in argparse_outside_main(path)]
        self.assertEqual(misplaced, [], "argparse outside torch_overlay/cli.py: take typed parameters and let "
                                        "cli.py turn the parsed arguments into them")

    def test_the_check_sees_argparse_outside_main(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            sample = Path(tmp) / "sample.py"
            sample.write_text("import argparse\n\n\ndef run(args: argparse.Namespace) -> None:\n    pass\n\n\n"
                              "def main() -> None:\n    argparse.ArgumentParser()\n")
            self.assertEqual(argparse_outside_main(sample), [4])


class TestToolTestsNeedNoTorch(unittest.TestCase):
    def test_every_test_file_is_listed_once(self) -> None:
        files = sorted(path.stem for path in TESTS.glob("test_*.py"))
        listed = sorted([*TORCH_FREE, *NEEDS_TORCH])
        self.assertEqual(files, listed, "list each test file in TORCH_FREE or NEEDS_TORCH")

    def test_torch_free_tests_import_no_torch(self) -> None:
        # One interpreter imports them in turn and names the first after which torch is loaded.
        code = ("import importlib, sys\n"
                f"sys.path.insert(0, {str(TESTS)!r})\n"
                f"for name in {TORCH_FREE!r}:\n"
                "    importlib.import_module(name)\n"
                "    if 'torch' in sys.modules:\n"
                "        sys.exit(f'importing {name} imports torch')\n")
        result = subprocess.run([sys.executable, "-c", code], cwd=TESTS, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
    unittest.main()
