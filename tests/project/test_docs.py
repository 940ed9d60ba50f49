"""Every code block of README.md and vignettes/*.md runs (rules in tests/_docs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._docs import DocError, parse_blocks, run_document

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md"] + sorted((ROOT / "vignettes").glob("*.md"))


# What a document's prose says its printed output shows.
CLAIMS = {
    "tree.md": [
        "effective", "0.4200", "0.2800",
        "True\n",  # each active once per epoch; resume equals the run
        "root.children[0][protein='P10']",
        "root.children[1].weight is used only under a parent with mode 'replacement'",
        "16 [64, 40]",
    ],
    "metric-learning.md": [
        "10,338 rows, 1,000 classes of 2-100 rows",
        "epoch 1: 93 batches of 32 classes x 4 rows",
        "ClassesPerBatch        93       100.0%              0                    0",
        "MPerClassSampler       80        43.4%             51",
    ],
    "trainers.md": [
        "8 micro-batches, 4 optimizer steps",
        "positives per micro-batch: [1, 1, 1, 1, 1, 1, 2, 2]",
        "6 batches of 8 pairs, 8 distinct questions each",
    ],
    "multi-label.md": [
        "MultiLabel                         0.0%                         0.0",
        "plain shuffle                     39.4%",
        "MultiLabel        160                            0",
        "{'a': (1, 1), 'b': (1, 1), 'c': (0, 2)}",
        "min_per_label=1 is not met for label(s) 'c'",
    ],
    "sharded-storage.md": [
        "min_per_stratum      123 [2763, 2762]       [40, 34]",
        "targets              149 [3778, 3825]       [70, 38]",
        "123 batches, every row once: True",
        "16 batches per message: 123 batches, the same as one per message: True",
        "row groups of 20 x 500 rows -> row groups of 25 x 400 rows",
        "12 tar reads for 12 shards",
    ],
}
# Documents whose python blocks must not dwindle (the claims above come from them).
MIN_PYTHON_BLOCKS = {"tree.md": 9, "metric-learning.md": 5, "multi-label.md": 6,
                     "sharded-storage.md": 7}


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_document_blocks_run(path, tmp_path):
    output = []
    counts = run_document(path, ROOT, tmp_path, standalone=path.name == "README.md",
                          output=output)
    # A document whose blocks all got marked "not run" would test nothing.
    assert sum(counts.values()) > 0, f"{path.name} has no block that runs"
    assert counts["python"] >= MIN_PYTHON_BLOCKS.get(path.name, 0)
    printed = "".join(output)
    for claim in CLAIMS.get(path.name, []):
        assert claim in printed, f"{path.name}: the output shows no {claim!r}"


def test_claims_name_documents_that_exist():
    assert set(CLAIMS) | set(MIN_PYTHON_BLOCKS) <= {p.name for p in DOCUMENTS}


def _write(tmp_path, text):
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    return doc


def test_a_broken_snippet_fails(tmp_path):
    doc = _write(tmp_path, "# t\n\n```python\nimport numpy as np\nprint(undefined_name)\n```\n")
    with pytest.raises(DocError, match=r"(?s)doc\.md:3.*NameError: name 'undefined_name'"):
        run_document(doc, tmp_path, tmp_path / "scratch", standalone=False)


def test_readme_snippets_stand_alone(tmp_path):
    doc = _write(tmp_path, "```python\nx = 1\n```\n\n```python\nprint(x)\n```\n")
    run_document(doc, tmp_path, tmp_path / "a", standalone=False)
    with pytest.raises(DocError, match="NameError"):
        run_document(doc, tmp_path, tmp_path / "b", standalone=True)


def test_failing_bash_and_r_blocks_fail(tmp_path):
    with pytest.raises(DocError, match="exit code 3"):
        run_document(_write(tmp_path, "```bash\nexit 3\n```\n"), tmp_path, tmp_path / "s",
                     standalone=False)
    with pytest.raises(DocError, match="R block"):
        run_document(_write(tmp_path, "```r\nstop('no')\n```\n"), tmp_path, tmp_path / "s",
                     standalone=False)


def test_unmarked_blocks_of_other_languages_are_refused_and_marks_are_honoured():
    with pytest.raises(DocError, match="must be python, r, bash or text"):
        parse_blocks("```console\n$ ls\n```\n", "d.md")
    blocks = parse_blocks("<!-- not run: needs a GPU -->\n```python\nboom()\n```\n"
                          "```text\noutput\n```\n", "d.md")
    assert [(b.language, b.not_run) for b in blocks] == [("python", True), ("text", False)]
