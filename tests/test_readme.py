"""README.md starts with the two quick-start commands, and .ci/run runs the second one."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```", 2)[1]
    return [line.strip() for line in block.splitlines()[1:] if line.strip()]


def test_readme_opens_with_exactly_two_commands():
    text = (ROOT / "README.md").read_text()
    assert text.index("```") < text.index("\n## "), "the commands come before the first section"
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("cepopt demo")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in [line.strip() for line in ci]


def test_methods_doc_lists_every_registered_method():
    from cepopt.registry import families, methods

    text = (ROOT / "docs" / "METHODS.md").read_text()
    for family in families():
        for name in methods(family):
            assert f"| {family} | `{name}` |" in text, f"docs/METHODS.md lacks {family}/{name}"


def test_readme_stays_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines: move details to docs/"
