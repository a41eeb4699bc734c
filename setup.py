"""Package layout that pyproject.toml cannot say on its own: the top-level ``guest_asm/`` folder
(example guests and their include files) is shipped inside the wheel as the package data
``emukern._guest_asm``, so a non-editable install has the examples while every path in the
repository (README, tests, benches) keeps using ``guest_asm/...``.  Everything else is in
pyproject.toml."""
from pathlib import Path

from setuptools import find_namespace_packages, setup

ROOT = Path(__file__).resolve().parent
ASM = ROOT / "guest_asm"
asm_packages = ["emukern._guest_asm"] + sorted(
    "emukern._guest_asm." + ".".join(d.relative_to(ASM).parts)
    for d in ASM.rglob("*") if d.is_dir() and "__pycache__" not in d.parts)

setup(
    packages=find_namespace_packages(include=["emukern*"], exclude=["*.__pycache__"]) + asm_packages,
    package_dir={"emukern._guest_asm": "guest_asm"},
    package_data={"emukern": ["machine/native/*.c", "selftests/*.toml", "oracle/*.c"],
                  **{p: ["*.S", "*.s", "*.inc", "*.c", "*.h", "*.txt"] for p in asm_packages}},
)
