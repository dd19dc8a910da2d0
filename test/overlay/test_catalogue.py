"""`verify catalogue`: upstream reports' repros on stock torch and on the overlay, on a synthetic base.

The synthetic `torch` package carries a bug (`double` adds one); the series fixes it and breaks
`triple`. Each repro below is a script checking one of them and printing the catalogue's
verdict line, so the tool's verdicts (fixed by the overlay, harm, no verdict) come from real runs.
"""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from synthetic import SyntheticProject

SOURCES = {"torch/arith.py": b"def double(x):\n    return x + x + 1\n\n\ndef triple(x):\n    return 3 * x\n"}

# issue -> the repro: double's bug (stock reproduces, the overlay fixes it), triple (the overlay
# breaks what stock gets right) and one that dies before printing a verdict.
REPROS = {
    11: "import torch.arith\nprint('double(2) =', torch.arith.double(2))\n"
        "print('REPRO 11', 'fixed' if torch.arith.double(2) == 4 else 'reproduces')\n",
    12: "import torch.arith\nprint('REPRO 12', 'fixed' if torch.arith.triple(2) == 6 else 'reproduces')\n",
    13: "import torch.arith\nraise SystemExit('no torch.arith.quadruple')\n",
    14: "print('REPRO 14 error: RuntimeError: compiled raised')\n",
}


class TestCatalogue(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        cls.p = SyntheticProject(Path(cls._tmp.name), extra=SOURCES)
        cls.p.tool("tree")
        arith = cls.p.tree / "torch/arith.py"
        arith.write_text(arith.read_text().replace("x + x + 1", "x + x").replace("3 * x", "3 * x + 1"))
        cls.p.git("commit", "-q", "-am", "[arith] Fix double")
        cls.p.tool("export")
        catalogue = cls.p.root / "test" / "catalogue"
        catalogue.mkdir(parents=True)
        for issue, text in REPROS.items():
            (catalogue / f"repro_{issue}.py").write_text(text)

    @classmethod
    def tearDownClass(cls) -> None:
        cls._tmp.cleanup()

    def catalogue(self, *issues: str) -> tuple[int, dict]:
        result = self.p.tool("verify", "catalogue", "--json", "-i", *issues, check=False)
        return result.returncode, json.loads(result.stdout) if result.stdout else {"stderr": result.stderr}

    def test_a_report_the_overlay_fixes_passes(self) -> None:
        code, info = self.catalogue("11", "#14")
        self.assertEqual(code, 0, info)
        fixed, error = info["reports"]
        self.assertEqual((fixed["stock"]["outcome"], fixed["overlay"]["outcome"]), ("reproduces", "fixed"))
        self.assertEqual(fixed["verdict"], "fixed by the overlay")
        self.assertEqual((error["overlay"]["outcome"], error["overlay"]["detail"]),
                         ("error", "RuntimeError: compiled raised"))
        self.assertFalse(info["harm"])

    def test_a_report_the_overlay_breaks_is_harm(self) -> None:
        code, info = self.catalogue("12")
        self.assertEqual(code, 1, info)
        [report] = info["reports"]
        self.assertEqual((report["stock"]["outcome"], report["overlay"]["outcome"]), ("fixed", "reproduces"))
        self.assertTrue(report["harm"])

    def test_a_repro_without_a_verdict_says_why(self) -> None:
        result = self.p.tool("verify", "catalogue", "-i", "13", check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("#13 overlay: no verdict: exit status 1: no torch.arith.quadruple", result.stdout)

    def test_an_unknown_issue_is_named_with_the_known_ones(self) -> None:
        result = self.p.tool("verify", "catalogue", "-i", "99", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("no repro for 99 in test/catalogue (issues: 11, 12, 13, 14)", result.stderr)


if __name__ == "__main__":
    unittest.main()
