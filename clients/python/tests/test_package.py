"""The package itself: it imports without a warning, and its source stays Python 3.9 code."""

import ast
import glob
import os
import subprocess
import sys
import unittest

from support import ROOT

SOURCES = sorted(glob.glob(os.path.join(ROOT, "src", "compactor_client", "*.py"))) + [
    os.path.join(ROOT, "examples", "agent_loop.py")
]


class PackageTest(unittest.TestCase):
    def test_imports_under_w_error(self) -> None:
        code = (
            "import compactor_client, compactor_client.types, agent_loop\n"
            "assert compactor_client.Client is compactor_client.CompactorClient\n"
            "print(compactor_client.__version__)"
        )
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), os.path.join(ROOT, "examples")]),
        )
        done = subprocess.run(
            [sys.executable, "-W", "error", "-X", "dev", "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "")
        self.assertRegex(done.stdout.strip(), r"^\d+\.\d+\.\d+$")

    def test_the_source_is_python_3_9(self) -> None:
        """Parsed as 3.9 grammar (no ``match``), with no ``X | Y`` in an annotation (3.10+ at runtime)."""
        self.assertGreater(len(SOURCES), 5)
        for path in SOURCES:
            with open(path, encoding="utf-8") as file:
                tree = ast.parse(file.read(), path, feature_version=(3, 9))
            future = any(
                isinstance(node, ast.ImportFrom) and node.module == "__future__" for node in ast.walk(tree)
            )
            self.assertFalse(future, "{}: annotations are evaluated at runtime here".format(path))
            annotations = []
            for node in ast.walk(tree):
                if isinstance(node, ast.AnnAssign):
                    annotations.append(node.annotation)
                elif isinstance(node, ast.arg) and node.annotation is not None:
                    annotations.append(node.annotation)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                    annotations.append(node.returns)
            for annotation in annotations:
                for inner in ast.walk(annotation):
                    union = isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.BitOr)
                    self.assertFalse(union, "{}:{}: X | Y needs Python 3.10".format(path, annotation.lineno))


if __name__ == "__main__":
    unittest.main()
