"""A patch's commit message, split into the sections of the project's upstream-style template.

    [component] Title

    Root cause: ...
    Fix: ...
    Why this is the right long-term fix: ...
    Upstream: pytorch/pytorch#NNNN
    Fixes #NNNN
    Test Plan:
    python test/run_test.py -i <suite>

From these the PR body for upstream is written (`pr_body`).
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass, field

from .series import Patch

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
    """The message body of a `git format-patch` mail: after the headers, before `---`."""
    mail = email.message_from_string(patch_text, policy=email.policy.default)
    payload = mail.get_payload(decode=True)
    body = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(mail.get_payload())
    return re.split(r"^---$", body, maxsplit=1, flags=re.M)[0].strip("\n")


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


def suites(message: Message) -> list[str]:
    """The test suites named by `run_test.py -i` in the test plan."""
    found: list[str] = []
    for command in message.test_commands:
        match = re.search(r"run_test\.py\s+(?:.*\s)?-i\s+(.+)$", command)
        if match:
            found.extend(s for s in match.group(1).split() if not s.startswith("-"))
    return found


def pr_body(patch: Patch) -> str:
    m = parse(patch)
    tests = "\n".join(f"- `{f}`" for f in patch.test_files) or "- (none)"
    commands = "\n".join(m.test_commands) or "(none given)"
    lines = [f"# {m.title}", "", "## Summary", ""]
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
    return "\n".join(lines)


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?\.)(\s|$)", flat)
    return match.group(1) if match else flat
