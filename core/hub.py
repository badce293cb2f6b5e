"""``ember.hub``: PyTorch's download cache for weights (``load_state_dict_from_url``,
``download_url_to_file``, ``get_dir``/``set_dir``), with its layout: files go to
``<hub_dir>/checkpoints``, where ``hub_dir`` is ``$TORCH_HOME/hub`` (``$TORCH_HOME`` defaults to
``$XDG_CACHE_HOME/torch``, that to ``~/.cache``), so ember and PyTorch share one cache. A file
already there is loaded without touching the network; ``file://`` URLs work. ``hub.load``,
``hub.list`` and ``hub.help`` (models from a repository's ``hubconf.py``) are not supported.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from urllib.error import URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from . import serialization

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
#: ``name-<sha256 prefix>.ext``: the hash ``check_hash`` verifies
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024

_hub_dir: list = [None]


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME,
                                                                              DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The hub cache directory: the one ``set_dir`` gave, else ``$TORCH_HOME/hub``."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d) -> None:
    """Use ``d`` as the hub cache directory."""
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def _progress_bar(total, enabled: bool):
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024)
    return None


def _reserve_partial(dst: str):
    """A new file ``<dst>.<random>.partial``, opened exclusively for writing."""
    for _ in range(tempfile.TMP_MAX):
        candidate = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            return open(candidate, "x+b")  # noqa: SIM115  (closed by the caller)
        except FileExistsError:
            pass
    raise FileExistsError(f"no usable temporary file name found beside {dst}")


def _open_url(url: str, dst: str):
    try:
        return urlopen(Request(url, headers={"User-Agent": "ember.hub"}))
    except URLError as e:
        raise URLError(f"ember.hub could not download {url} to {dst}: {e.reason}. Without network, place the "
                       f"file at {dst} and it is used as is") from e


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to the file ``dst`` (through a temporary file beside it, so a broken download
    never leaves a partial ``dst``); with ``hash_prefix``, the file's SHA-256 must start with it
    (``RuntimeError`` otherwise). Without network, ``URLError`` names the URL and the file."""
    dst = os.path.expanduser(os.fspath(dst))
    partial = _reserve_partial(dst)
    try:
        hasher = None if hash_prefix is None else hashlib.sha256()
        with _open_url(url, dst) as response:
            sizes = response.info().get_all("Content-Length")
            bar = _progress_bar(int(sizes[0]) if sizes else None, progress)
            try:
                for block in iter(lambda: response.read(READ_DATA_CHUNK), b""):
                    partial.write(block)
                    if hasher is not None:
                        hasher.update(block)
                    if bar is not None:
                        bar.update(len(block))
            finally:
                if bar is not None:
                    bar.close()
        partial.close()
        if hasher is not None:
            digest = hasher.hexdigest()
            if not digest.startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(partial.name, dst)
    finally:
        partial.close()
        if os.path.exists(partial.name):  # a failed download leaves nothing behind
            os.remove(partial.name)


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip of one file (PyTorch's weights before 1.6 were often shipped so), not a torch.save zip."""
    if not zipfile.is_zipfile(filename):
        return False
    with zipfile.ZipFile(filename) as zf:
        members = zf.infolist()
    return len(members) == 1 and not members[0].is_dir()


def _legacy_zip_load(filename: str, model_dir: str, map_location, weights_only: bool):
    with zipfile.ZipFile(filename) as zf:
        member = zf.infolist()[0]
        target = os.path.realpath(os.path.join(model_dir, member.filename))
        if os.path.commonpath([target, os.path.realpath(model_dir)]) != os.path.realpath(model_dir):
            raise RuntimeError(f"{filename}: the zip member {member.filename!r} would be written outside {model_dir}")
        zf.extract(member, model_dir)
    return serialization.load(target, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = False):
    """Load the file at ``url`` with ``ember.load``, downloading it into ``model_dir`` (default
    ``<get_dir()>/checkpoints``) unless it is there already. The file's name is the URL's last
    part (or ``file_name``); with ``check_hash`` a name ``name-<sha256 prefix>.ext`` is verified.
    ``weights_only`` defaults to False, as PyTorch's (load only files you trust; True is safer)."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = os.path.basename(urlparse(url).path) if file_name is None else file_name
    local = os.path.join(model_dir, name)
    if not os.path.exists(local):  # the cache is trusted: no network when the file is there
        sys.stdout.write(f'Downloading: "{url}" to {local}\n')
        found = HASH_REGEX.search(name) if check_hash else None
        download_url_to_file(url, local, found.group(1) if found else None, progress=progress)
    if _is_legacy_zip_format(local):
        return _legacy_zip_load(local, model_dir, map_location, weights_only)
    return serialization.load(local, map_location=map_location, weights_only=weights_only)


def _no_hubconf(name: str):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"ember.hub.{name} is not supported: ember does not run repositories' hubconf.py "
                                  "entry points (they build PyTorch models). Build the model in ember and load its "
                                  "weights with ember.hub.load_state_dict_from_url(url)")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Raises NotImplementedError: hubconf.py repositories are not supported."
    return fn


load = _no_hubconf("load")
list = _no_hubconf("list")  # noqa: A001  (PyTorch's name)
help = _no_hubconf("help")  # noqa: A001  (PyTorch's name)
