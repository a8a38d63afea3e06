"""Rewrite each built-in folder's ``parsed.json`` after a spec file was edited::

    python -m pytest_roofline.specs          # rewrite
    python -m pytest_roofline.specs --check  # exit 1 when a file is out of date

``parsed.json`` holds every spec file's mapping, so that a test session reads built-in specs
without importing PyYAML (see ``pytest_roofline.specfiles.load_builtin``). A file out of date
is never used stale: its entries no longer match the edited YAML, which is then parsed.
"""

from __future__ import annotations

import sys

from ..specfiles import PARSED_NAME, builtin_dir, parsed_folder


def main(argv: list[str]) -> int:
    check = "--check" in argv
    unknown = [a for a in argv if a != "--check"]
    if unknown:
        print(f"unknown argument(s) {' '.join(unknown)}; usage: python -m "
              f"pytest_roofline.specs [--check]", file=sys.stderr)
        return 2
    stale = []
    for kind, what in (("hardware", "spec file"), ("models", "model file")):
        path = builtin_dir(kind) / PARSED_NAME
        text = parsed_folder(path.parent, what)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        if check:
            stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run: python -m pytest_roofline.specs",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
