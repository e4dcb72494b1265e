"""JupyterLab's contents manager for this course: Jupytext's, serving a text notebook with the language_info
that its kernel will report, so that opening a notebook leaves it clean.

A Jupyter server extension: installed (pip install -e ., editable too) as the top-level module llmmath_lab and
enabled by jupyter_server_config.d/llmmath.json (installed into {sys.prefix}/etc/jupyter/jupyter_server_config.d/),
it makes ContentsManager below the server's contents manager, unless another one is configured.

Why. A text notebook keeps no language_info: its folder's jupytext.toml keeps only the kernelspec, because the
kernel's language_info names the Python version and would make a save change the file from machine to machine.
JupyterLab 4 (4.6 seen) then marks such a notebook dirty as soon as it is opened: NotebookModel.fromJSON clears
the dirty flag and then fills the missing language_info with a placeholder ({"name": ""}), which sets the flag;
and once the kernel is up, the notebook panel writes the kernel's language_info over it, a change again. The tab
showed the unsaved mark right after a double-click, and closing an untouched chapter asked "Save changes?".
JupyterLab writes metadata only when it differs from what is there, so a notebook served with exactly the
language_info of its kernel stays clean. On a save, the folder's jupytext.toml drops language_info again: the
file on disk is byte for byte what it was (tests/test_browser.py checks both).

Only for a kernelspec that runs this server's own Python with ipykernel (the course's python3 kernel), whose
language_info is known here without starting it; any other notebook is served as Jupytext serves it.
"""

from __future__ import annotations

import copy
import functools
import os
import sys

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

_Jupytext = build_async_jupytext_contents_manager_class(AsyncLargeFileManager)

# the names jupyter_client replaces by sys.executable when it starts a kernel (KernelManager.format_kernel_cmd)
_THIS_PYTHON = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}


def _runs_this_python(executable: str) -> bool:
    if executable in _THIS_PYTHON:
        return True
    try:
        return os.path.samefile(executable, sys.executable)
    except OSError:
        return False


def kernel_language_info(kernel_spec_manager, name: str) -> dict | None:
    """The language_info that kernel ``name`` reports, where it is this Python's ipykernel; else None."""
    try:
        spec = kernel_spec_manager.get_kernel_spec(name)
    except Exception:  # no such kernel, an unreadable kernel.json: serve the notebook as it is
        return None
    argv = list(spec.argv or [])
    if spec.language.lower() != "python" or not argv or not _runs_this_python(argv[0]) or not any(
            a.startswith("ipykernel") for a in argv[1:]):
        return None
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:
        return None
    return copy.deepcopy(IPythonKernel.language_info)


class ContentsManager(_Jupytext):
    """Jupytext's contents manager (py:percent notebooks and plain .py files open as notebooks), serving a text
    notebook that names this Python's kernel with that kernel's language_info (see the module's docstring)."""

    @functools.wraps(_Jupytext.get)  # the same signature: jupyter_server asks it whether get takes require_hash
    async def get(self, path, *args, **kwargs):
        model = await super().get(path, *args, **kwargs)
        nb = model.get("content") if model.get("type") == "notebook" else None
        if nb is None or path.endswith(".ipynb") or "language_info" in nb.get("metadata", {}):
            return model
        name = nb["metadata"].get("kernelspec", {}).get("name")
        info = self._language_info(name) if name else None
        if info is not None:
            nb["metadata"]["language_info"] = info
        return model

    def _language_info(self, name: str) -> dict | None:
        cache = self.__dict__.setdefault("_llmmath_language_info", {})
        if name not in cache:
            ksm = getattr(self.parent, "kernel_spec_manager", None)
            if ksm is None:
                from jupyter_client.kernelspec import KernelSpecManager

                ksm = KernelSpecManager()
            cache[name] = kernel_language_info(ksm, name)
        return copy.deepcopy(cache[name])


def _jupyter_server_extension_points():
    return [{"module": "llmmath_lab"}]


def _link_jupyter_server_extension(serverapp):
    """Linked before the server makes its contents manager; Jupytext's extension then finds one of its own kind
    in place and leaves it."""
    if serverapp.contents_manager_class is AsyncLargeFileManager:  # jupyter_server's default: nothing configured
        serverapp.contents_manager_class = ContentsManager
    else:
        serverapp.log.info("[llmmath_lab] leaving the configured contents manager %s in place",
                           serverapp.contents_manager_class.__name__)


def _load_jupyter_server_extension(serverapp):
    serverapp.log.info("[llmmath_lab] contents manager: %s.%s", type(serverapp.contents_manager).__module__,
                       type(serverapp.contents_manager).__name__)
