"""tools/function_lengths.py (issue 38): raw string literals and "//" inside strings do not mislead the
C++ scanner, Python functions and file lengths are measured, and a --debt list allows what it names
at most as long as listed: a longer item or a new offender fails, naming it.

    function_lengths_test.py SOURCE_DIR WORK_DIR
"""
import pathlib
import subprocess
import sys
import textwrap
import unittest

SRC, OUT = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
SCRIPT = SRC / "tools" / "function_lengths.py"
sys.path.insert(0, str(SRC / "tools"))
import function_lengths as fl  # noqa: E402


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


class Scanner(unittest.TestCase):
    def test_raw_string_with_braces_is_text(self):
        code = 'std::string f() {\n  return R"CPP(int g() { return "}"; }\n}\n)CPP";\n}\nint h() {\n  return 1;\n}\n'
        self.assertEqual(sorted((n, name) for n, name, _ in fl.functions(code)), [(3, "h"), (5, "f")])

    def test_comment_marker_inside_a_string_is_text(self):
        code = 'void f() {\n  s += "// not a comment {";\n  s += "x";\n}\n'
        self.assertEqual([(n, name) for n, name, _ in fl.functions(code)], [(4, "f")])

    def test_python_functions(self):
        code = "def a():\n    return 1\n\n\nclass C:\n    def b(self):\n        x = 1\n        return x\n"
        self.assertEqual(sorted(fl.python_functions(code)), [(2, "a", 1), (3, "b", 6)])


class Debt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = OUT / "lengths"
        cls.dir.mkdir(parents=True, exist_ok=True)
        body = "".join(f"    x{k} = {k}\n" for k in range(8))
        (cls.dir / "long.py").write_text(f"def long_one():\n{body}    return 0\n")  # 10 lines
        (cls.dir / "short.py").write_text("def short_one():\n    return 0\n")

    def debt(self, text):
        f = self.dir / "debt.txt"
        f.write_text(textwrap.dedent(text))
        return run("--top", 0, "--max-lines", 5, "--max-file-lines", 9, "--debt", f, self.dir)

    def test_a_new_offender_fails_naming_it(self):
        r = self.debt("# nothing allowed\n")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("long_one is 10 lines, more than 5 (a new offender", r.stderr)
        self.assertIn("long.py: the file is 10 lines, more than 9 (a new offender", r.stderr)

    def test_listed_items_pass_at_their_length(self):
        r = self.debt(f"{self.dir.as_posix()}/long.py:long_one 10\n{self.dir.as_posix()}/long.py 10\n")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_an_item_longer_than_listed_fails(self):
        r = self.debt(f"{self.dir.as_posix()}/long.py:long_one 9\n{self.dir.as_posix()}/long.py 10\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("longer than the 9 its debt line allows", r.stderr)

    def test_a_shorter_item_is_named_so_the_list_shrinks(self):
        r = self.debt(f"{self.dir.as_posix()}/long.py:long_one 12\n{self.dir.as_posix()}/long.py 10\n"
                      f"{self.dir.as_posix()}/short.py:short_one 30\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("long_one: 10 lines now, its debt line says 12: lower it", r.stdout)
        self.assertIn("short_one: within the limit now: remove its debt line", r.stdout)

    def test_a_malformed_debt_line_is_a_usage_error(self):
        r = self.debt("long.py:long_one ten\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected `path[:function] LINES`", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
