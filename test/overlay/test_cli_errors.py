"""Every failure is one line on stderr naming the file and the fix, with one exit code per kind.

0 ok, 1 a check failed, 2 usage or input error, 3 the tool or its environment broke; a
traceback only with -v/--debug. Each environment failure is real where the machine allows it
(no git on PATH, a full device via /dev/full, pip without an index) and injected with
TORCH_OVERLAY_FAULT where it does not (a read-only directory when running as root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import REPO, SyntheticProject, make_wheel

sys.path.insert(0, str(REPO))
from torch_overlay.artifacts.openreg import OpenRegBuildError  # noqa: E402
from torch_overlay.cli import _failure  # noqa: E402


class CliTestCase(unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.p = SyntheticProject(self.tmp)

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def fails(self, code: int, *args: str, **env: str) -> str:
        """Run the tool, expect exit `code` and one `error:` line without a traceback; its stderr."""
        result = self.p.tool(*args, check=False, **env)
        self.assertEqual(result.returncode, code, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        self.assertEqual(len(errors), 1, result.stderr)
        return result.stderr


class TestUsageAndInput(CliTestCase):
    def test_help_documents_the_exit_codes(self) -> None:
        text = self.p.tool("--help").stdout
        self.assertIn("exit status:", text)
        for line in ("0  success", "1  a check failed", "2  usage or input error", "3  the tool or its environment broke"):
            self.assertIn(line, text)
        self.assertIn("-v, --debug", text)

    def test_closed_output_pipe_is_not_an_error(self) -> None:
        # `status | head -1`: the reader is gone before the tool writes; like git, exit 0 quietly.
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            result = subprocess.run([sys.executable, "-m", "torch_overlay", "status"], cwd=self.p.root,
                                    env=self.p.env(), stdout=write_end, stderr=subprocess.PIPE, text=True)
        finally:
            os.close(write_end)
        self.assertEqual((result.returncode, result.stderr), (0, ""))

    def test_unknown_command_is_a_usage_error(self) -> None:
        self.assertEqual(self.p.tool("frobnicate", check=False).returncode, 2)

    def test_each_verify_mode_takes_only_its_own_options(self) -> None:
        # argparse's usage error (exit 2, the usage line), before anything runs.
        for args in (["verify", "--record"], ["verify", "patches", "--record"], ["verify", "patches", "--part", "test_programs"],
                     ["verify", "patches", "--tier", "full"], ["verify", "against"],
                     ["verify", "against", "2.10.0", "--tier", "full"], ["verify", "gate", "-p", "0001"],
                     ["verify", "gate", "--against", "2.10.0"], ["verify", "gate", "--shard", "1", "2", "--record"],
                     ["verify", "merge"], ["verify", "merge", "x.json", "--shard", "1", "2"],
                     ["verify", "merge", "x.json", "--keep"], ["bench", "--tier", "slow"]):
            with self.subTest(args=args):
                result = self.p.tool(*args, check=False)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertTrue(result.stderr.startswith("usage: "), result.stderr)

    def test_verify_without_a_mode_proves_the_patches(self) -> None:
        # The same error as `verify patches -p 0099`: the options went to the patches mode.
        for args in (["verify", "-p", "0099"], ["verify", "patches", "-p", "0099"]):
            with self.subTest(args=args):
                self.assertIn("no patch 0099 in the series", self.fails(2, *args))

    def test_an_old_verify_flag_is_told_its_new_spelling(self) -> None:
        for flag, new in (("--regressions", "verify gate"), ("--against", "verify against VERSION"),
                          ("--merge", "verify merge RECORD...")):
            with self.subTest(flag=flag):
                result = self.p.tool("verify", flag, check=False)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(f"`verify {flag}` is now `{new}`", result.stderr)

    def test_malformed_pin_names_file_and_line(self) -> None:
        (self.p.root / "overlay.toml").write_text('default-base = "2.9.1"\n[bases."2.9.1"]\nrevision = \n')
        stderr = self.fails(2, "tree")
        self.assertIn("overlay.toml", stderr)
        self.assertIn("line 3", stderr)

    def test_malformed_series_names_file_and_line(self) -> None:
        (self.p.patches_dir / "series").write_text("# comment\n0001-missing.patch\n")
        stderr = self.fails(2, "tree")
        self.assertIn("series:2: '0001-missing.patch' is not an existing NNNN-slug.patch file", stderr)

    def test_out_of_date_readme_table_is_a_failed_check(self) -> None:
        (self.p.root / "README.md").write_text("<!-- patch-table:start -->\nold\n<!-- patch-table:end -->\n"
                                               "<!-- regressions-table:start -->\n<!-- regressions-table:end -->\n")
        self.fails(1, "readme", "--check")


class TestTreeState(CliTestCase):
    def corrupt(self, text: str) -> None:
        if not self.p.tree.exists():
            self.p.tool("tree")
        (self.p.tree / ".git" / "torch-overlay.json").write_text(text)

    def test_corrupt_state_is_one_line_with_the_way_out(self) -> None:
        self.corrupt('{"base_sha256": "ab", "applied": [')
        for command in ("tree", "export", "status"):
            with self.subTest(command=command):
                stderr = self.fails(3, command)
                self.assertIn("torch-overlay.json is corrupt", stderr)
                self.assertIn("tree --force", stderr)
        self.p.tool("tree", "--force")  # the way out works
        self.assertEqual(self.p.git("status", "--porcelain"), "")

    def test_hand_edited_state(self) -> None:
        self.corrupt(json.dumps({"base_sha256": "ab", "applied": [], "surprise": 1}))
        self.assertIn("torch-overlay.json is corrupt", self.fails(3, "tree"))
        self.corrupt(json.dumps({"base_sha256": 1, "base_commit": None, "applied": []}))
        self.assertIn("torch-overlay.json is corrupt", self.fails(3, "tree"))
        self.corrupt(json.dumps({"base_sha256": "ab", "base_commit": "HEAD~1", "applied": []}))
        self.assertIn("base_commit and head must be full commit hashes", self.fails(3, "export"))

    def test_debug_adds_the_traceback(self) -> None:
        self.corrupt("not json")
        for args in (["--debug", "tree"], ["tree", "-v"]):
            result = self.p.tool(*args, check=False)
            self.assertEqual(result.returncode, 3)
            self.assertIn("Traceback", result.stderr)
            self.assertTrue(result.stderr.rstrip().splitlines()[-1].startswith("error: "), result.stderr)
        self.assertIn("Traceback", self.p.tool("tree", check=False, TORCH_OVERLAY_DEBUG="1").stderr)


class TestEnvironment(CliTestCase):
    def test_git_missing(self) -> None:
        empty = self.tmp / "empty-bin"
        empty.mkdir()
        stderr = self.fails(3, "tree", PATH=str(empty))
        self.assertIn("git was not found on PATH", stderr)

    def offline(self, links: Path) -> dict[str, str]:
        """pip with no index and only `links` to find wheels in: fast and network-free."""
        links.mkdir(exist_ok=True)
        self.p.wheel.unlink()
        return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def test_download_failure_gives_the_pip_command_to_retry(self) -> None:
        stderr = self.fails(3, "fetch", **self.offline(self.tmp / "links"))
        self.assertIn("pip could not download torch==2.9.1", stderr)
        self.assertIn("-m pip download torch===2.9.1 --no-deps", stderr)
        self.assertIn(f"--dest {self.p.wheel.parent}", stderr)
        self.assertEqual(list(self.p.wheel.parent.iterdir()), [self.p.wheel.parent / ".lock"])

    def test_a_pinned_wheel_is_fetched_whatever_the_users_constraints_cap(self) -> None:
        """A user's pip configuration capping torch (a constraint file, as `pip config` or
        PIP_CONSTRAINT sets one) does not stop the file the pin names; their index settings apply."""
        links = self.tmp / "links"
        env = self.offline(links)
        shutil.copy2(make_wheel(self.tmp / "built"), links)
        constraints = self.tmp / "constraints.txt"
        constraints.write_text("torch<=2.8.0\n")
        config = self.tmp / "pip.conf"
        config.write_text(f"[global]\nconstraint = {constraints}\n")
        for how in ({"PIP_CONFIG_FILE": str(config)}, {"PIP_CONSTRAINT": str(constraints)}):
            with self.subTest(how=next(iter(how))):
                self.p.wheel.unlink(missing_ok=True)
                result = self.p.tool("fetch", check=False, **env, **how)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.strip(), str(self.p.wheel))

    def test_downloaded_file_failing_its_hash_is_refused(self) -> None:
        links = self.tmp / "links"
        env = self.offline(links)
        make_wheel(links, extra={"torch/other.py": b"OTHER = 1\n"})  # same name, other bytes
        stderr = self.fails(3, "fetch", **env)
        self.assertIn("does not match the pin", stderr)
        self.assertIn("served another file than the pinned one", stderr)
        self.assertIn("pip download", stderr)
        self.assertFalse(self.p.wheel.exists())
        self.assertEqual([p.name for p in self.p.wheel.parent.iterdir()], [".lock"])

    def test_disk_full_while_writing_the_wheel(self) -> None:
        self.p.tool("tree")
        out = self.tmp / "dist"
        out.mkdir()
        name = self.p.tool("status", "--json").stdout
        version = json.loads(name)["overlay_version"]
        wheel = out / f"torch-{version}-{self.p.wheel.name.split('-', 2)[2]}"
        (out / f".{wheel.name}.partial").symlink_to("/dev/full")  # every write: ENOSPC
        stderr = self.fails(3, "wheel", "-o", str(out))
        self.assertIn(f"no space left on the device writing {wheel}", stderr)
        self.assertEqual(list(out.iterdir()), [])  # nothing half-written, not even the partial

    def test_read_only_cache(self) -> None:
        shutil.rmtree(self.p.cache / "base", ignore_errors=True)
        if os.geteuid() == 0:  # root writes anywhere: inject the error the kernel would give
            stderr = self.fails(3, "tree", TORCH_OVERLAY_FAULT="extract:1:EROFS")
        else:
            self.p.cache.chmod(0o555)
            try:
                stderr = self.fails(3, "tree")
            finally:
                self.p.cache.chmod(0o755)
        self.assertIn(f"cannot write {self.p.cache}", stderr)
        self.assertIn("TORCH_OVERLAY_CACHE", stderr)
        self.assertFalse(self.p.tree.exists())

    def test_other_failures_map_to_one_line_and_exit_3(self) -> None:
        self.assertEqual(_failure(OpenRegBuildError("Building OpenReg failed: see build.log")),
                         ("Building OpenReg failed: see build.log", 3))
        message, code = _failure(KeyError("x"))
        self.assertEqual(code, 3)
        self.assertEqual(message, "internal error: KeyError: 'x' (run again with --debug for the traceback)")
        self.assertEqual(_failure(FileNotFoundError(2, "No such file or directory", "cmake"))[0],
                         "cmake was not found on PATH; install it and run the command again")


if __name__ == "__main__":
    unittest.main()
