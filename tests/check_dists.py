"""Check built distributions (``tox -e packaging`` runs it after ``python -m build``): every wheel and
sdist of the repository's six distributions is there and carries the LICENSE and the metadata an
index shows (SPDX license expression, author, keywords, classifiers, project URLs, a markdown
description), and the backends and plugins bound the core's version.

    python tests/check_dists.py DIST_DIR
"""
from __future__ import annotations

import email
import os
import sys
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DISTS = ("ember", "ember_cpu_numpy", "ember_opencl", "ember_cuda_cupy", "ember_lookahead", "ember_rmsnorm")
CORE_BOUND = "ember<0.2,>=0.1.0"


def _check_metadata(name: str, text: str, where: str) -> list:
    msg = email.message_from_string(text)
    problems = []
    for field, want in (("License-Expression", "BSD-3-Clause"), ("Author", "the ember developers"),
                        ("Description-Content-Type", "text/markdown"), ("Requires-Python", ">=3.10")):
        if msg.get(field) != want:
            problems.append(f"{where}: {field} is {msg.get(field)!r}, not {want!r}")
    for field in ("Keywords", "Classifier", "Project-URL", "License-File"):
        if not msg.get_all(field):
            problems.append(f"{where}: no {field}")
    if len(msg.get_payload() or "") < 200:
        problems.append(f"{where}: the description (the index page) is missing or short")
    if "](" in (msg.get_payload() or "").replace("](https://", "").replace("](http://", ""):
        problems.append(f"{where}: the description has relative links, which break on an index page")
    requires = msg.get_all("Requires-Dist") or []
    if name != "ember" and CORE_BOUND not in requires:
        problems.append(f"{where}: does not require {CORE_BOUND} (has {requires})")
    if name == "ember" and not any(r.startswith("ember-cpu-numpy") and 'extra == "cpu"' in r for r in requires):
        problems.append(f"{where}: no ember[cpu] extra")
    return problems


def check(dist_dir: str) -> list:
    license_text = open(os.path.join(ROOT, "LICENSE"), encoding="utf-8").read()
    files = os.listdir(dist_dir)
    problems = []
    for name in DISTS:
        wheel = [f for f in files if f.startswith(f"{name}-") and f.endswith(".whl")]
        sdist = [f for f in files if f.startswith(f"{name}-") and f.endswith(".tar.gz")]
        if len(wheel) != 1 or len(sdist) != 1:
            problems.append(f"{name}: expected one wheel and one sdist, found {wheel + sdist}")
            continue
        with zipfile.ZipFile(os.path.join(dist_dir, wheel[0])) as z:
            info = next(n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            if z.read(f"{info}/licenses/LICENSE").decode() != license_text:
                problems.append(f"{wheel[0]}: licenses/LICENSE differs from the repository's LICENSE")
            problems += _check_metadata(name, z.read(f"{info}/METADATA").decode(), wheel[0])
        with tarfile.open(os.path.join(dist_dir, sdist[0])) as t:
            top = sdist[0][:-len(".tar.gz")]
            if t.extractfile(f"{top}/LICENSE").read().decode() != license_text:
                problems.append(f"{sdist[0]}: LICENSE differs from the repository's LICENSE")
            problems += _check_metadata(name, t.extractfile(f"{top}/PKG-INFO").read().decode(), sdist[0])
    return problems


if __name__ == "__main__":
    found = check(sys.argv[1])
    for p in found:
        print(p)
    print(f"{len(DISTS)} distributions checked: {'ok' if not found else f'{len(found)} problems'}")
    sys.exit(1 if found else 0)
