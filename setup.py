"""Only the runbooks' packaging (issue 24 #2): the notebooks live in notebooks/ (where
JupyterLab users open them) and ship in the wheel as ``reassign_kit/runbooks/*.ipynb``, so
``reassign-kit runbook run NAME`` works from any install. Everything else is pyproject.toml."""

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithRunbooks(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads notebooks/ in the checkout (runbook.notebooks_dir)
        here = os.path.dirname(os.path.abspath(__file__))
        dest = os.path.join(self.build_lib, "reassign_kit", "runbooks")
        os.makedirs(dest, exist_ok=True)
        for nb in sorted(glob.glob(os.path.join(here, "notebooks", "*.ipynb"))):
            shutil.copy2(nb, dest)


setup(cmdclass={"build_py": BuildWithRunbooks})
