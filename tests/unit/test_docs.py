"""The documentation cannot drift from the code: every relative link in README.md and docs/ resolves
(file, and heading anchor as GitHub makes it), every command and long option the CLI's parser knows is in
docs/reference/cli.md, and every setting streams/config.py knows is in docs/reference/configuration.md."""

from __future__ import annotations

import argparse
import re
import unicodedata
from dataclasses import fields
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

ROOT = REPO
DOCS = ROOT / "docs"
CLI_DOC = DOCS / "reference" / "cli.md"
CONFIGURATION_DOC = DOCS / "reference" / "configuration.md"
# The section of cli.md that documents the options several Kafka commands share.
SHARED_OPTIONS_HEADING = "Options shared by the Kafka commands"

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def prose_lines(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks (a link or heading inside one is not one)."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        lines.append("" if fenced else line)
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text as rendered (code marks and link targets gone),
    lower-cased, punctuation dropped (letters, digits, marks, `_`, `-` and spaces kept), spaces → `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "_- " or _is_mark(ch))
    return text.replace(" ", "-")


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 … for repeated headings."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(path):
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    links = []
    for line in prose_lines(path):
        line = INLINE_CODE.sub("", line)
        links += LINK.findall(line) + IMAGE.findall(line)
    return [link for link in links if not re.match(r"[a-z][a-z0-9+.-]*:", link, re.IGNORECASE)]


def link_problems(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for link in relative_links(path):
        target, _, anchor = link.partition("#")
        target_path = (path.parent / target).resolve() if target else path
        where = f"{path.relative_to(root)}: ({link})"
        if not target_path.exists():
            problems.append(f"{where}: no file {target}")
        elif anchor and target_path.suffix == ".md" and anchor not in anchors(target_path):
            problems.append(f"{where}: no heading #{anchor} in {target_path.relative_to(root)}")
    return problems


def test_the_docs_exist() -> None:
    for name in (
        "README.md",
        "docs/README.md",
        "docs/reference/cli.md",
        "docs/reference/configuration.md",
        "docs/performance.md",
        "LICENSE",
    ):
        assert (ROOT / name).is_file(), name


def test_the_readme_is_two_screens() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert link_problems(path) == []


def test_the_link_check_sees_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A title\n\n## Späte Ereignisse: `late` events\n\n"
        "[ok](#a-title) [ok](#späte-ereignisse-late-events) [gone](missing.md) [bad](#no-such-heading) [web](https://example.com/x)\n"
        "```\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    problems = link_problems(page, root=tmp_path)
    assert len(problems) == 2
    assert "no file missing.md" in problems[0] and "no heading #no-such-heading" in problems[1]


# --- the command line -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from streams.cli.main import build_parser

    return build_parser()


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert subparsers, "callqa's parser has no commands"
    return dict(subparsers[0].choices)


def long_options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(
        {
            option
            for action in parser._actions
            for option in action.option_strings
            if option.startswith("--") and option != "--help"
        }
    )


def subcommands(parser: argparse.ArgumentParser) -> list[str]:
    """The fixed words a command takes as its first argument (`tail results`, `publish rules`)."""
    return [
        str(choice)
        for action in parser._actions
        if not action.option_strings and action.choices and not isinstance(action, argparse._SubParsersAction)
        for choice in action.choices
    ]


def sections(path: Path) -> dict[str, str]:
    """The text under each `## ` heading of a page."""
    found: dict[str, list[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {heading: "\n".join(lines) for heading, lines in found.items()}


def mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def cli_problems(doc: Path) -> list[str]:
    documented = sections(doc)
    shared = documented.get(SHARED_OPTIONS_HEADING, "")
    problems = []
    known = commands()
    for name, parser in known.items():
        section = documented.get(f"callqa {name}")
        if section is None:
            problems.append(f"command {name}: no section '## callqa {name}'")
            continue
        problems += [
            f"command {name}: option {option} undocumented"
            for option in long_options(parser)
            if not mentions(section, option) and not mentions(shared, option)
        ]
        problems += [
            f"command {name}: `callqa {name} {word}` undocumented"
            for word in subcommands(parser)
            if f"callqa {name} {word}" not in section
        ]
    problems += [
        f"section '{heading}' documents no command"
        for heading in documented
        if heading.startswith("callqa ") and heading.split()[1] not in known
    ]
    return problems


def test_every_command_and_long_option_is_in_the_cli_reference() -> None:
    assert cli_problems(CLI_DOC) == []


def test_the_cli_check_sees_an_option_left_out(tmp_path: Path) -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    section = sections(CLI_DOC)["callqa replay"]
    doc = tmp_path / "cli.md"
    doc.write_text(text.replace(section, section.replace("--alerts-out", "--alerts-file")), encoding="utf-8")
    assert cli_problems(doc) == ["command replay: option --alerts-out undocumented"]


def test_the_cli_check_sees_a_command_left_out(tmp_path: Path) -> None:
    doc = tmp_path / "cli.md"
    doc.write_text(CLI_DOC.read_text(encoding="utf-8").replace("## callqa compare", "## Compare"), encoding="utf-8")
    assert cli_problems(doc) == ["command compare: no section '## callqa compare'"]


# --- configuration ----------------------------------------------------------------------------------


def known_variables() -> set[str]:
    """Every variable the settings read: `CALLQA_<NAME>` for each field of `Settings`, and the
    CALLQA_* variables that are not settings (`OTHER_VARIABLES`: the settings file, the collector)."""
    from streams import config

    names = {f"CALLQA_{f.name.upper()}" for f in fields(config.Settings)}
    return names | set(getattr(config, "OTHER_VARIABLES", ()))


def documented_variables(doc: Path) -> set[str]:
    """The variables named in the first cell of a table row."""
    found = set()
    for line in doc.read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            found |= set(re.findall(r"`((?:CALLQA|OPENAI)_[A-Z0-9_]+)`", cells[1]))
    return found


def configuration_problems(doc: Path) -> list[str]:
    documented = documented_variables(doc)
    known = known_variables()
    problems = [f"{name} undocumented" for name in sorted(known - documented)]
    mentioned = set(re.findall(r"\bCALLQA_[A-Z0-9_]*[A-Z0-9]\b", doc.read_text(encoding="utf-8")))
    problems += [
        f"{name} is documented but is no setting" for name in sorted(mentioned - known) if name not in ("CALLQA_BROKR",)
    ]  # (the page's example of a mistyped name)
    return problems


def test_every_configuration_variable_is_in_the_reference() -> None:
    assert configuration_problems(CONFIGURATION_DOC) == []


def test_the_configuration_check_sees_a_variable_left_out(tmp_path: Path) -> None:
    lines = [
        line
        for line in CONFIGURATION_DOC.read_text(encoding="utf-8").splitlines()
        if not line.startswith("| `CALLQA_JUDGE_QUEUE_SIZE`")
    ]
    doc = tmp_path / "configuration.md"
    doc.write_text("\n".join(lines), encoding="utf-8")
    assert configuration_problems(doc) == ["CALLQA_JUDGE_QUEUE_SIZE undocumented"]
