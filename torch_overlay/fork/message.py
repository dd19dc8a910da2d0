"""A patch's commit message, split into the sections of the project's upstream-style template.

    [component] Title

    Root cause: ...
    Fix: ...
    Why this is the right long-term fix: ...
    Upstream: pytorch/pytorch#NNNN
    Fixes #NNNN
    Test Plan:
    python test/run_test.py -i <suite>

    Origin: backport, https://github.com/pytorch/pytorch/pull/NNNN
    Forwarded: not-needed
    Applied-Upstream: 2.13.0
    Impact: silent-correctness

From these the PR body for upstream is written (`pr_body`). The last paragraph is where the
patch stands upstream, as git trailers with DEP-3's keys (`upstream_status`):

    Origin            `backport, <upstream PR URL>...` (upstream's fix, carried here) or `other`
                      (written for this fork; the message says why upstream lacks it)
    Forwarded         `no` (upstream has no such fix: stage it), `not-needed` (upstream has its
                      own fix) or the URL it was sent to
    Applied-Upstream  the first release measured to carry upstream's fix, whole or in part
                      (`verify against VERSION`); absent while none does
    Fork-Only         why the patch is not for upstream, for the few that are not

and what the bug costs a user of stock torch, which decides whether the fix meets upstream's
criteria for a cherry-pick into a patch release (`cherry_pick`):

    Impact            `silent-correctness` (a wrong result, or a program eager refuses run
                      anyway), `crash` (a program eager runs fails under torch.compile) or
                      `performance` (recompiles, compile time, kernels)

The test that shows whether a base still needs a patch is its regression suite, the test files
it adds (`Patch.test_files`): `verify patches` and `verify against` run exactly those.
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass, field

from ..core.errors import OverlayError
from .series import Patch

PULL_URL = "https://github.com/pytorch/pytorch/pull/"
TRAILER_KEYS = ("Origin", "Forwarded", "Applied-Upstream", "Fork-Only", "Impact")
# Upstream's patch releases take low-risk fixes for silent correctness, crashes, regressions
# against the previous release and a few other critical classes; performance work waits for the
# next minor release.
CHERRY_PICK = {
    "silent-correctness": "meets the release cherry-pick criteria: a low-risk fix for a silent correctness bug",
    "crash": "meets the release cherry-pick criteria: a fix for a crash (a program eager runs fails under "
             "torch.compile)",
    "performance": "does not meet the release cherry-pick criteria on its own: it saves recompiles or compile "
                   "time and fixes no wrong result or crash (it qualifies only as a fix for a regression "
                   "against the previous release)",
}
SECTIONS = {"root cause": "root_cause", "fix": "fix", "why this is the right long-term fix": "why",
            "upstream": "upstream"}


@dataclass
class Message:
    title: str
    root_cause: str = ""
    fix: str = ""
    why: str = ""
    preamble: str = ""  # text before the first section
    fixes: list[int] = field(default_factory=list)
    references: list[str] = field(default_factory=list)  # "Upstream: ..." lines
    test_commands: list[str] = field(default_factory=list)


def commit_body(patch_text: str) -> str:
    """The message body of a `git format-patch` mail: after the headers, before `---`, without
    the trailers."""
    return split_trailers(_full_body(patch_text))[0]


def _full_body(patch_text: str) -> str:
    mail = email.message_from_string(patch_text, policy=email.policy.default)
    payload = mail.get_payload(decode=True)
    body = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(mail.get_payload())
    return re.split(r"^---$", body, maxsplit=1, flags=re.M)[0].strip("\n")


def split_trailers(body: str) -> tuple[str, dict[str, list[str]]]:
    """The body without its last paragraph when that paragraph is trailers of TRAILER_KEYS, and them."""
    head, _, last = body.rpartition("\n\n")
    lines = last.splitlines()
    pairs = [re.match(r"^([A-Za-z-]+): (.+)$", line) for line in lines]
    if not lines or not all(m and m.group(1) in TRAILER_KEYS for m in pairs):
        return body, {}
    trailers: dict[str, list[str]] = {}
    for m in pairs:
        assert m is not None
        trailers.setdefault(m.group(1), []).append(m.group(2).strip())
    return head.rstrip("\n"), trailers


@dataclass(frozen=True)
class UpstreamStatus:
    """Where a patch stands upstream: its message's trailers, checked."""

    prs: tuple[int, ...]  # the upstream PRs it backports (none: written for this fork)
    forwarded: str  # "no", "not-needed" or where it was sent
    applied_upstream: str  # the first release measured to carry upstream's fix; "" while none does
    fork_only: str  # why it is not for upstream; "" for the others

    @property
    def is_backport(self) -> bool:
        return bool(self.prs)

    def describe(self, prs: str) -> str:
        """One phrase for the README's patch table; `prs`: the backported PRs as the table shows them."""
        if self.fork_only:
            return f"fork-only: {self.fork_only}"
        if self.is_backport:
            return f"backport of {prs}"
        return "not upstream: to forward" if self.forwarded == "no" else f"forwarded: {self.forwarded}"


def _trailer(patch: Patch, key: str, required: bool = True) -> str:
    """The value of the patch's one `key:` trailer ("" for an optional one it lacks)."""
    values = split_trailers(_full_body(patch.text))[1].get(key, [])
    if len(values) > 1 or (required and not values):
        raise OverlayError(f"{patch.path.name}: needs exactly one `{key}:` trailer, has {len(values)} "
                           f"(the last paragraph of its message; see torch_overlay/fork/message.py)")
    return values[0] if values else ""


def impact(patch: Patch) -> str:
    """The patch's `Impact:` (a key of CHERRY_PICK), or an error naming the patch."""
    value = _trailer(patch, "Impact")
    if value not in CHERRY_PICK:
        raise OverlayError(f"{patch.path.name}: `Impact: {value}` is not one of {', '.join(CHERRY_PICK)}")
    return value


def cherry_pick(patch: Patch) -> str:
    """Whether the fix meets upstream's release cherry-pick criteria, as the PR body says it."""
    try:
        return CHERRY_PICK[impact(patch)]
    except OverlayError as e:
        return f"not assessed ({e})"


def upstream_status(patch: Patch) -> UpstreamStatus:
    """The patch's trailers, or an error naming the patch and what is missing or wrong."""
    origin, forwarded = _trailer(patch, "Origin"), _trailer(patch, "Forwarded")
    applied = _trailer(patch, "Applied-Upstream", required=False)
    fork_only = _trailer(patch, "Fork-Only", required=False)
    kind, _, urls = origin.partition(",")
    prs = tuple(int(n) for n in re.findall(re.escape(PULL_URL) + r"(\d+)", urls))
    if kind not in ("backport", "other") or (kind == "backport") != bool(prs):
        raise OverlayError(f"{patch.path.name}: `Origin: {origin}` is neither `backport, {PULL_URL}N` nor `other`")
    cited = set(cited_prs(parse(patch)))
    if not set(prs) <= cited:
        missing = ", ".join(f"#{n}" for n in prs if n not in cited)
        raise OverlayError(f"{patch.path.name}: backports {missing}, which its `Upstream:` paragraph does not name "
                           "(it says how the backport differs from each upstream PR)")
    if forwarded not in ("no", "not-needed") and not forwarded.startswith("https://"):
        raise OverlayError(f"{patch.path.name}: `Forwarded: {forwarded}` is not `no`, `not-needed` or a URL")
    if bool(fork_only) != (forwarded == "not-needed" and not prs):
        raise OverlayError(f"{patch.path.name}: a fork-only patch (`Fork-Only: why`) is the one patch written here "
                           "that is `Forwarded: not-needed`")
    return UpstreamStatus(prs, forwarded, applied, fork_only)


def parse(patch: Patch) -> Message:
    message = Message(title=patch.title)
    current = "preamble"
    parts: dict[str, list[str]] = {"preamble": []}
    in_test_plan = False
    for line in commit_body(patch.text).splitlines():
        header = re.match(r"^([A-Za-z -]+):\s*(.*)$", line)
        key = header.group(1).strip().lower() if header else ""
        if re.match(r"^Fixes #(\d+)", line):
            message.fixes.extend(int(n) for n in re.findall(r"#(\d+)", line))
            continue
        if key == "test plan":
            in_test_plan = True
            continue
        if in_test_plan:
            if line.strip():
                message.test_commands.append(line.strip())
            continue
        if header and key in SECTIONS:
            current = SECTIONS[key]
            parts[current] = [header.group(2)] if header.group(2) else []
            continue
        parts.setdefault(current, []).append(line)
    for name, lines in parts.items():
        text = "\n".join(lines).strip()
        if name == "upstream":  # a reference, kept as written: "Upstream: pytorch/pytorch#N (...)"
            message.references.append("Upstream: " + " ".join(text.split()))
        else:
            setattr(message, name, text[:1].upper() + text[1:])  # "Fix: route ..." -> "Route ..."
    return message


def cited_prs(message: Message) -> tuple[int, ...]:
    """The upstream PRs the `Upstream:` paragraph names (`pytorch/pytorch#N`)."""
    return tuple(int(n) for ref in message.references for n in re.findall(r"pytorch/pytorch#(\d+)", ref))


def suites(message: Message) -> list[str]:
    """The test suites named by `run_test.py -i` in the test plan."""
    found: list[str] = []
    for command in message.test_commands:
        match = re.search(r"run_test\.py\s+(?:.*\s)?-i\s+(.+)$", command)
        if match:
            found.extend(s for s in match.group(1).split() if not s.startswith("-"))
    return found


def pr_body(patch: Patch, proven: str = "") -> str:
    """Upstream's PR template filled from the message; `proven`: where the tests were seen to fail
    without the patch and pass with it."""
    m = parse(patch)
    tests = "\n".join(f"- `{f}`" for f in patch.test_files) or "- (none)"
    commands = "\n".join(m.test_commands) or "(none given)"
    lines = [f"# {m.title}", "", "## Summary", ""]
    lines += _backport_request(patch)
    if m.preamble:
        lines += [m.preamble, ""]
    lines += [_first_sentence(m.root_cause) or m.title, ""]
    lines += [f"Fixes #{n}" for n in m.fixes] + ([""] if m.fixes else [])
    lines += ["## Root cause", "", m.root_cause or "(not stated)", "", "## Fix", "", m.fix or "(not stated)", ""]
    if m.why:
        lines += ["## Why this is the right long-term fix", "", m.why, ""]
    if m.references:
        lines += ["## References", "", *[f"- {r}" for r in m.references], ""]
    lines += ["## Test plan", "", "New regression tests:", "", tests, "", "```", commands, "```", ""]
    if proven:
        lines += [f"They fail without the fix and pass with it ({proven}).", ""]
    lines += ["## Release cherry-pick", "", cherry_pick(patch)[:1].upper() + cherry_pick(patch)[1:] + ".", ""]
    return "\n".join(lines)


def _backport_request(patch: Patch) -> list[str]:
    """For a backport: upstream's own PRs are what the release needs, picked onto its branch,
    not this patch as a new fix for main (which has them)."""
    try:
        prs = upstream_status(patch).prs
    except OverlayError:
        return []
    if not prs:
        return []
    named = ", ".join(f"#{n}" for n in prs)
    return [f"Backport of {named}, already merged upstream and missing from this release: the request is a "
            f"cherry-pick of {named} onto the release branch. This body and its tests show the bug and the fix on "
            "the release; the Upstream reference below says how this patch differs from upstream's.", ""]


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?\.)(\s|$)", flat)
    return match.group(1) if match else flat
