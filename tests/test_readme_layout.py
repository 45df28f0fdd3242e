"""README's Layout section names every package and module of benchmarks/
where it is, so it cannot describe a layout that moved."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _layout() -> str:
    text = (REPO / "README.md").read_text()
    return re.search(r"## Layout\n\n```\n(.*?)```", text, re.S).group(1)


def test_readme_layout_names_every_module_of_benchmarks_in_its_package():
    layout = _layout()
    blocks = re.split(r"\n  (?=\S)", layout)  # one block per top-level entry of benchmarks/
    missing = []
    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        rel = path.relative_to(REPO / "benchmarks")
        if path.name in ("__init__.py", "__main__.py") or "assets" in rel.parts:
            continue
        if rel.parts[0] == "models" and path.name != "spec.py":  # "a file per family"
            continue
        folder = "/".join(rel.parts[:-1])
        own = [b for b in blocks if b.startswith(f"{folder}/")] if folder else blocks
        if not any(re.search(rf"(?<![\w/]){re.escape(path.name)}", b) for b in own):
            missing.append(str(rel))
    assert missing == [], f"README's Layout does not place: {missing}"



def test_readme_layout_names_every_file_of_deploy():
    """deploy/'s entry names each shipped file (a Dockerfile's ignore file by
    its extension), so a script cannot ship unmentioned."""
    block = re.search(r"^deploy/ .*?(?=^\S)", _layout(), re.S | re.M).group(0)
    missing = []
    for path in sorted((REPO / "deploy").rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(REPO / "deploy")
        name = ".dockerignore" if path.name.endswith(".dockerignore") else path.name
        if path.suffix == ".sbatch":
            name = path.stem
        folder_named = len(rel.parts) == 1 or f"{rel.parts[0]}/" in block
        if not (folder_named and name in block):
            missing.append(str(rel))
    assert missing == [], f"README's Layout does not name: {missing}"

def test_readme_says_what_make_test_needs_besides_python():
    """Each tool a prerequisite of ``make test`` installs or runs is named in the README."""
    makefile = (REPO / "Makefile").read_text()
    prerequisites = re.search(r"^test: (.*)$", makefile, re.M).group(1).split()
    readme = (REPO / "README.md").read_text().split("## Quick start")[0]
    needs = {"browser": ["chromium", "apt-get", "sudo"], "lint-tools": ["npm", "node", "network"]}
    for target in prerequisites:
        if target == "install":
            continue
        assert target in needs, f"say in README what `make {target}` needs, and list it here"
        assert all(word in readme for word in needs[target]), target


def test_the_glossary_gives_each_overloaded_word_one_meaning():
    glossary = (REPO / "docs" / "glossary.md").read_text()
    words = re.findall(r"^\| \*\*([a-z ]+)\*\* \|", glossary, re.M)
    for word in ("program", "contender", "measure", "phase", "reference", "baseline nights", "experiment"):
        assert words.count(word) == 1, word
    assert "docs/glossary.md" in (REPO / "README.md").read_text()


def test_the_docs_and_help_say_contender_not_runner_for_one_side_of_a_timing():
    # "runner" is the program (runner.py) or a CI machine (a job runner, as
    # docs/nightly.md says); the bridge's runner kinds (docs/backends.md) are its own.
    from benchmarks import cli

    contender = re.compile(r"\b(each|per|XLA|another) runners?\b|\brunners?'s?\b(?! kinds)|<runner>")
    texts = {p.name: p.read_text() for p in [REPO / "README.md", *(REPO / "docs" / name for name in
                                                                    ("flags.md", "columns.md", "methodology.md"))]}
    texts["--help"] = cli.build_parser().format_help()
    for name, text in texts.items():
        text = re.sub(r"\b(CI|job|GitHub's|Ubuntu's|the nightly's) runners?('s)?", "", text)
        found = [m.group(0) for m in contender.finditer(" ".join(text.split()))]
        assert not found, (name, found)
