"""Fetch autograd 1.9.1's source distribution (pinned by sha256) and extract its tests and
examples into a cache outside git. Nothing of autograd is committed to this repository."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

VERSION = "1.9.1"
SHA256 = "7818c5c69ddf9efb7da74097bd741a4c7920133f41966f68537223a15ef798bc"
ARCHIVE = f"autograd-{VERSION}.tar.gz"
# The parts of the sdist the harness uses; the autograd package itself is never extracted,
# so it cannot be imported from the working directory by accident.
PARTS = ("tests", "examples")


class IndexUnreachable(Exception):
    """pip could not download the sdist (no network, index down): the caller skips."""


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "chainrule-compat"
    return Path(os.environ.get("CHAINRULE_COMPAT_CACHE", default))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def download(cache: Path) -> Path:
    """The verified archive in ``cache``, downloaded with pip if it is not there yet."""
    archive = cache / ARCHIVE
    if not archive.exists():
        cache.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--disable-pip-version-check", "--dest", str(cache), f"autograd=={VERSION}"]
        result = subprocess.run(pip, capture_output=True, text=True)
        if result.returncode != 0 or not archive.exists():
            said = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise IndexUnreachable("pip download failed: " + " | ".join(said))
    digest = sha256_of(archive)
    if digest != SHA256:
        archive.unlink()  # a truncated or altered download must not be reused
        raise RuntimeError(f"{archive} has sha256 {digest}, expected {SHA256}; deleted it, "
                           "run again to download it afresh")
    return archive


def extract(archive: Path, cache: Path) -> Path:
    """Extract tests/ and examples/ once; return the directory that holds them."""
    root = cache / f"autograd-{VERSION}"
    done = root / ".extracted"
    if done.exists():
        return root
    prefix = f"autograd-{VERSION}/"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers()
                   if m.name.startswith(tuple(prefix + part + "/" for part in PARTS))]
        tar.extractall(cache, members=members, filter="data")
    done.write_text(SHA256 + "\n")
    return root


def fetch(cache: Path | None = None) -> Path:
    """Directory with autograd's tests/ and examples/, downloading what is missing."""
    cache = cache_dir() if cache is None else cache
    return extract(download(cache), cache)
