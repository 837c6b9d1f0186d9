"""The structure checker (scripts/check_structure.py): what it counts as a function and
how long, on small C++ texts, so that its verdict over the tree can be trusted."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "check_structure", os.path.join(HERE, "..", "..", "scripts", "check_structure.py"))
check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(check)


def body(n):
    return "".join(f"  x += {i};\n" for i in range(n))


class FunctionsTest(unittest.TestCase):
    def test_counts_a_free_function_from_its_brace_to_its_close(self):
        text = "namespace a {\nint f(int x) {\n" + body(3) + "  return x;\n}\n}  // namespace a\n"
        self.assertEqual(check.functions(text), [("f", 2, 6)])

    def test_control_blocks_and_lambdas_belong_to_their_function(self):
        text = ("void g() {\n  if (a) {\n    b();\n  }\n  auto l = [](int v) {\n"
                "    return v;\n  };\n  for (;;) {\n  }\n}\n")
        self.assertEqual(check.functions(text), [("g", 1, 10)])

    def test_methods_inside_a_class_and_qualified_definitions(self):
        text = ("struct S {\n  int m() const {\n    return 1;\n  }\n};\n"
                "S::S() : v_(1) {\n  v_ = 2;\n}\nint S::n() const noexcept {\n  return v_;\n}\n")
        self.assertEqual([(n, s) for n, s, _ in check.functions(text)],
                         [("m", 2), ("S::S", 6), ("S::n", 9)])

    def test_braces_in_comments_and_strings_do_not_count(self):
        text = ('void h() {\n  // }\n  const char* s = "}{";\n  /* { */\n'
                '  auto r = R"(})";\n}\nvoid k() {\n}\n')
        self.assertEqual(check.functions(text), [("h", 1, 6), ("k", 7, 2)])

    def test_initializer_braces_are_not_functions(self):
        text = "int v[] = {1, 2, 3};\nstd::vector<int> w{1, 2};\nenum class E { kA };\n"
        self.assertEqual(check.functions(text), [])

    def test_a_long_function_is_reported_by_length(self):
        text = "void long_one() {\n" + body(check.MAX_FUNCTION_LINES) + "}\n"
        [(name, start, length)] = check.functions(text)
        self.assertEqual((name, start), ("long_one", 1))
        self.assertGreater(length, check.MAX_FUNCTION_LINES)


class SqlTest(unittest.TestCase):
    def test_statements_are_recognised_in_string_literals(self):
        self.assertTrue(check.SQL.search('db.exec("SELECT id FROM trials");'))
        self.assertTrue(check.SQL.search('q("  INSERT OR IGNORE INTO t VALUES (1)")'))
        self.assertTrue(check.SQL.search('q("PRAGMA user_version")'))
        self.assertFalse(check.SQL.search('log("select a switch");'))
        self.assertFalse(check.SQL.search('log("SELECTED");'))


if __name__ == "__main__":
    unittest.main()
