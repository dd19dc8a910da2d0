"""The GitHub workflows: actionlint-clean, and CI runs exactly the README's commands.

ci.yml and .ci/run must stay a copy of what a user does (README: `pip install -e . -r
test/requirements.txt`, then `python test/run_test.py`), so a green CI means the documented path
works; likewise gate.yml's GPU job runs the README's commands for one GPU, and its full-tier
matrix covers every corpus part.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
WORKFLOW_FILES = tuple(sorted(path.name for path in WORKFLOWS.glob("*.yml")))
SETUP = "pip install -e . -r test/requirements.txt"
# Used when README.md does not exist (yet).
DEFAULT_COMMANDS = [SETUP, "python test/run_test.py"]
# The README marks its ```bash block for a person with one GPU with this comment, just above it.
ONE_GPU_MARKER = "<!-- one-gpu-commands -->"
# Lines of a README snippet that prepare a shell rather than being the project's commands.
SHELL_SETUP = re.compile(r"^(python3?(\.\d+)? -m venv\b|source\s|\.\s+\S*activate\b)")


def find_actionlint() -> str | None:
    """The actionlint of this venv (in test/requirements.txt), else PATH's."""
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.is_file() else shutil.which("actionlint")


def readme_commands(readme: Path) -> list[str]:
    """The commands of the README's ```bash block that installs the overlay."""
    if not readme.is_file():
        return list(DEFAULT_COMMANDS)
    for block in re.findall(r"^```(?:bash|sh|shell|console)\n(.*?)^```", readme.read_text(), flags=re.M | re.S):
        commands = [line.strip().removeprefix("$ ") for line in block.splitlines()]
        commands = [c for c in commands if c and not c.startswith("#") and not SHELL_SETUP.match(c)]
        if any(c.startswith("pip install -e .") for c in commands):
            return commands
    raise AssertionError(f"{readme} has no ```bash block with `pip install -e .`")


def readme_block(readme: str, marker: str) -> list[str]:
    """The command lines of the ```bash block right after `marker`."""
    match = re.search(re.escape(marker) + r"\n```bash\n(.*?)^```", readme, flags=re.M | re.S)
    if match is None:
        raise AssertionError(f"README.md has no ```bash block right after {marker}")
    return [line.strip() for line in match.group(1).splitlines() if line.strip() and not line.startswith("#")]


def job(workflow: str, name: str) -> str:
    """The text of job `name` of a workflow: from its key to the next job's (two-space keys)."""
    match = re.search(rf"^  {re.escape(name)}:\n(.*?)(?=^  \S|\Z)", workflow, flags=re.M | re.S)
    if match is None:
        raise AssertionError(f"no job {name}")
    return match.group(1)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def run_commands(workflow: str) -> list[str]:
    """Every command line of the workflow's `run:` steps, in order (single-line and `|` blocks).

    A minimal reader for the shapes used in our workflows: PyYAML is not a dependency.
    """
    commands: list[str] = []
    lines = workflow.splitlines()
    index = 0
    while index < len(lines):
        match = re.match(r"^(\s*)(?:- )?run:\s*(.*)$", lines[index])
        index += 1
        if not match:
            continue
        indent, value = len(match.group(1)), match.group(2).strip()
        if value not in ("|", ">", "|-", ">-"):
            commands.append(value)
            continue
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > indent):
            if lines[index].strip() and not lines[index].strip().startswith("#"):
                commands.append(lines[index].strip())
            index += 1
    return commands


class TestWorkflows(unittest.TestCase):
    def test_actionlint_reports_nothing(self) -> None:
        actionlint = find_actionlint()
        self.assertIsNotNone(actionlint, f"no `actionlint` executable: run `{SETUP}` in this venv")
        assert actionlint is not None
        # shellcheck/pyflakes integration off: whether they happen to be installed must not
        # change the verdict between machines.
        proc = subprocess.run(
            [actionlint, "-no-color", "-shellcheck=", "-pyflakes=", *(str(WORKFLOWS / f) for f in WORKFLOW_FILES)],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )
        self.assertEqual(proc.stdout + proc.stderr, "")
        self.assertEqual(proc.returncode, 0)

    def test_ci_runs_exactly_the_readme_commands(self) -> None:
        expected = readme_commands(REPO / "README.md")
        self.assertEqual(expected, DEFAULT_COMMANDS)
        actual = run_commands((WORKFLOWS / "ci.yml").read_text())
        self.assertEqual(len(actual), len(expected), f"ci.yml runs {actual}, README says {expected}")
        for ci_command, readme_command in zip(actual, expected, strict=True):
            # CI may only add options (the shard, the XML reports) to a README command.
            self.assertTrue(
                ci_command == readme_command or ci_command.startswith(readme_command + " --"),
                f"ci.yml runs {ci_command!r} where the README says {readme_command!r}",
            )

    def test_ci_script_runs_exactly_the_readme_commands(self) -> None:
        script = (REPO / ".ci" / "run").read_text()
        # After the venv is activated, the script's commands are the README's, in order.
        after = script.split("/activate\"\n", 1)[1]
        commands = [line.strip() for line in after.splitlines() if line.strip() and not line.startswith("#")]
        self.assertEqual(commands, readme_commands(REPO / "README.md"))

    def test_actions_are_pinned_to_major_versions(self) -> None:
        for name in WORKFLOW_FILES:
            uses = re.findall(r"^\s*(?:- )?uses:\s*(\S+)", (WORKFLOWS / name).read_text(), flags=re.M)
            self.assertTrue(uses, name)
            for action in uses:
                self.assertRegex(action, r"^[\w.-]+/[\w.-]+@v\d+$", f"{name}: {action}")

    def test_the_cuda_job_runs_the_readme_commands_for_one_gpu(self) -> None:
        gate = (WORKFLOWS / "gate.yml").read_text()
        cuda = job(gate, "cuda")
        self.assertRegex(cuda, r"runs-on: \S*nvidia\.gpu\n")  # a GPU runner's label
        self.assertEqual(run_commands(cuda), readme_block((REPO / "README.md").read_text(), ONE_GPU_MARKER))

    def test_every_corpus_part_is_sharded_and_the_device_generic_ones_run_on_the_gpu(self) -> None:
        gate = (WORKFLOWS / "gate.yml").read_text()
        full_tier = job(gate, "full-tier")
        parts = sorted(path.stem for path in (REPO / "test" / "differential").glob("test_*.py"))
        self.assertRegex(full_tier, rf"part: \[{', '.join(parts)}\]\n")
        (command,) = [c for c in run_commands(full_tier) if "--shard" in c]
        total = re.search(r"--shard \$\{\{ matrix\.shard \}\} (\d+) ", command)
        assert total is not None, command
        self.assertRegex(full_tier, r"shard: \[" + ", ".join(map(str, range(1, int(total.group(1)) + 1))) + r"\]\n")
        # The GPU job runs every part (no --part): each must instantiate its CUDA variants.
        for part in parts:
            text = (REPO / "test" / "differential" / f"{part}.py").read_text()
            self.assertIn("instantiate_device_type_tests(", text, f"{part} is not device-generic")

    def test_readme_block_and_job_readers(self) -> None:
        readme = f"text\n{ONE_GPU_MARKER}\n```bash\na --b\n# note\n\nc\n```\nmore\n"
        self.assertEqual(readme_block(readme, ONE_GPU_MARKER), ["a --b", "c"])
        workflow = "jobs:\n  one:\n    steps:\n      - run: a\n  two:\n    steps:\n      - run: b\n"
        self.assertEqual(run_commands(job(workflow, "one")), ["a"])
        self.assertEqual(run_commands(job(workflow, "two")), ["b"])

    def test_run_commands_reader(self) -> None:
        workflow = ("steps:\n  - run: pip install -e .\n"
                    "  - name: x\n    run: |\n      # note\n      a --b\n\n      c\n  - uses: y@v1\n")
        self.assertEqual(run_commands(workflow), ["pip install -e .", "a --b", "c"])


if __name__ == "__main__":
    unittest.main()
