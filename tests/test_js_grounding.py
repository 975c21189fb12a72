"""The first message's source code on JavaScript and TypeScript
(sandbox/ecosystems/node/grounding.py):
from the failing tests, through their imports (ES modules, CommonJS, TypeScript, a folder's
index, re-exports), to the definitions they reach, by a real parser. Pure logic over real files
in a temporary repository; the runners' reports are real (tests/js_reports.py)."""

from __future__ import annotations

from pathlib import Path

from sandbox.ecosystems import language_paths
from sandbox.ecosystems.node.grounding import implicated_code, implicated_files
from sandbox.ecosystems.node.resolve import Modules
from sandbox.ecosystems.node.source import exports, imports, parse_bytes
from sandbox.testrun.junit import TestFailure
from tests.js_reports import project, report, run_of, text_failures, xml_failures

POLICY = language_paths()

# A small shop: CommonJS in lib/ (a package whose main is lib/index.js), TypeScript with types
# in src/, a JSX view, and tests of both module kinds. The bugs: format's one decimal, the
# descending sort of cheapest, and a cart's total that skips the first item.
SHOP = {
    "package.json": '{"name": "shop", "main": "lib/index.js"}\n',
    "lib/index.js": (
        "'use strict';\n"
        "const { total } = require('./cart');\n"
        "const money = require('./money');\n"
        "// require('./old-cart') is gone: see cart.js\n"
        "const banner = `require('./banner') ${money.round(1)}`;\n"
        "\n"
        "module.exports = { total, format: money.format, banner };\n"
    ),
    "lib/cart.js": (
        "const { round } = require('./money');\n"
        "\n"
        "function total(items) {\n"
        "  let sum = 0;\n"
        "  for (let i = 1; i < items.length; i++) sum += items[i].price;\n"
        "  return round(sum);\n"
        "}\n"
        "\n"
        "function unused() {\n"
        "  return 0;\n"
        "}\n"
        "\n"
        "module.exports = { total, unused };\n"
    ),
    "lib/money.js": (
        "exports.round = (x) => Math.round(x * 100) / 100;\n"
        "\n"
        "exports.format = function (x) {\n"
        "  return '$' + x.toFixed(1);\n"
        "};\n"
    ),
    "src/price.ts": (
        "export interface Item {\n"
        "  name: string;\n"
        "  price: number;\n"
        "}\n"
        "\n"
        "export type Discount = (x: number) => number;\n"
        "export const discount: Discount = (x) => x * 0.9;\n"
        "\n"
        "export default class PriceList<T extends Item> {\n"
        "  private items: T[] = [];\n"
        "\n"
        "  add(item: T): this {\n"
        "    this.items.push(item);\n"
        "    return this;\n"
        "  }\n"
        "\n"
        "  cheapest(): T | undefined {\n"
        "    return [...this.items].sort((a, b) => b.price - a.price)[0];\n"
        "  }\n"
        "}\n"
    ),
    "src/view.jsx": (
        "import { format } from '../lib/index.js';\n"
        "\n"
        "export function Price({ value }) {\n"
        '  return <span className="price">{format(value)}</span>;\n'
        "}\n"
        "\n"
        "export const Unused = () => <b>{'require(\"./nope\")'}</b>;\n"
    ),
    "test/shop.test.ts": (
        "import { describe, expect, it } from 'vitest';\n"
        "import shop from '../lib';\n"
        "import PriceList, { type Item } from '../src/price.js';\n"
        "import * as view from '../src/view.jsx';\n"
        "\n"
        "describe('shop', () => {\n"
        "  it('formats two decimals', () => {\n"
        "    expect(shop.format(2)).toBe('$2.00');\n"
        "  });\n"
        "  it('finds the cheapest', () => {\n"
        "    const list = new PriceList<Item>().add({ name: 'a', price: 1 });\n"
        "    expect(list.add({ name: 'b', price: 2 }).cheapest()?.name).toBe('a');\n"
        "  });\n"
        "  it('renders', () => {\n"
        "    expect(view.Price({ value: 1 })).toBeTruthy();\n"
        "  });\n"
        "});\n"
    ),
    "test/legacy.test.js": (
        "const test = require('node:test');\n"
        "const assert = require('node:assert');\n"
        "const { total } = require('../lib/cart');\n"
        "const shop = require('shop');\n"
        "\n"
        "test('totals every item', () => {\n"
        "  assert.strictEqual(total([{ price: 1 }, { price: 2 }]), 3);\n"
        "});\n"
        "\n"
        "test('has a banner', () => {\n"
        "  assert.ok(shop.banner);\n"
        "});\n"
    ),
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def failed(test_id: str, traceback: str) -> TestFailure:
    return TestFailure(test_id=test_id, kind="failure", message="", traceback=traceback)


def heads(code: str) -> list[str]:
    return [block.splitlines()[0] for block in code.split("\n\n") if block]


def test_imports_are_read_by_a_parser_not_from_templates_comments_or_jsx_text(tmp_path):
    ws = write(tmp_path, SHOP)
    modules = Modules(workspace=ws, deadline=float("inf"))
    assert [i.specifier for i in modules.imports("lib/index.js")] == ["./cart", "./money"]
    assert [i.specifier for i in modules.imports("src/view.jsx")] == ["../lib/index.js"]
    bindings = {i.specifier: i.bindings for i in modules.imports("test/shop.test.ts")}
    assert [(b.local, b.imported) for b in bindings["../src/price.js"]] == [
        ("PriceList", "default"), ("Item", "Item"),
    ]  # fmt: skip
    assert [(b.local, b.imported) for b in bindings["../src/view.jsx"]] == [("view", "*")]
    # TypeScript's CommonJS forms: `import m = require()` and `export =`.
    src = parse_bytes("old.ts", b"import m = require('./m');\nexport = { parse: m.parse };\n")
    assert src is not None and [(e.name, e.local) for e in exports(src)] == [
        ("default", "default"), ("parse", "m.parse"),
    ]  # fmt: skip


def test_specifiers_resolve_as_node_and_typescript_resolve_them(tmp_path):
    ws = write(tmp_path, SHOP)
    modules = Modules(workspace=ws, deadline=float("inf"))
    resolved = {
        spec: modules.resolve(importer, spec)
        for importer, spec in [
            ("test/shop.test.ts", "../lib"),  # a folder: its package.json main, else index
            ("test/shop.test.ts", "../src/price.js"),  # TypeScript's .js for a .ts file
            ("lib/index.js", "./cart"),  # no suffix: Node's order
            ("test/legacy.test.js", "shop"),  # the repository's own package, by name
            ("test/legacy.test.js", "node:test"),
            ("test/legacy.test.js", "vitest"),
            ("lib/index.js", "../../outside"),
        ]
    }
    assert resolved == {
        "../lib": "lib/index.js", "../src/price.js": "src/price.ts", "./cart": "lib/cart.js",
        "shop": "lib/index.js", "node:test": None, "vitest": None, "../../outside": None,
    }  # fmt: skip


def test_each_failing_test_leads_to_the_definitions_it_reaches(tmp_path):
    ws = write(tmp_path, SHOP)
    shop, legacy = "test/shop.test.ts::shop > ", "test/legacy.test.js::"
    run = run_of(
        [
            failed(shop + "formats two decimals", " ❯ test/shop.test.ts:8:28"),
            failed(shop + "finds the cheapest", " ❯ test/shop.test.ts:12:64"),
            failed(legacy + "totals every item", "at /workspace/test/legacy.test.js:7:10"),
        ]
    )
    code = implicated_code(run, workspace=ws, paths=POLICY)
    # `shop.format` is lib/index.js's `format: money.format`, money.js's `exports.format`; the
    # class a test constructs is shown whole (its methods with it); `total` through the cart;
    # then what those call: total's `round`, a destructured require of money.js.
    assert heads(code.text) == [
        "lib/money.js: format, lines 3-5 of 5",
        "src/price.ts: PriceList, lines 9-20 of 20",
        "lib/cart.js: total, lines 3-7 of 13",
        "lib/money.js: round, lines 1-1 of 5",
    ]
    assert code.shows_code
    assert "18|     return [...this.items].sort((a, b) => b.price - a.price)[0];" in code.text
    assert "\n5|   for (let i = 1; i < items.length; i++) sum += items[i].price;" in code.text
    for absent in ("unused", "discount", "Unused", "interface Item"):
        assert absent not in code.text
    assert implicated_files(run, workspace=ws, paths=POLICY) == [
        "lib/money.js", "src/price.ts", "lib/cart.js",
    ]  # fmt: skip
    # Within the lines asked for, the first ones whole.
    assert heads(implicated_code(run, workspace=ws, paths=POLICY, max_lines=12).text) == [
        "lib/money.js: format, lines 3-5 of 5", "lib/cart.js: total, lines 3-7 of 13",
        "lib/money.js: round, lines 1-1 of 5",
    ]  # fmt: skip


def test_a_test_is_found_by_its_title_and_a_namespace_import_by_its_members(tmp_path):
    ws = write(tmp_path, SHOP)
    # No stack line in the test file: the test's title finds its callback.
    run = run_of([failed("test/shop.test.ts::shop > renders", "AssertionError: expected")])
    code = implicated_code(run, workspace=ws, paths=POLICY).text
    # Price, then the `format` it calls: lib/index.js's `format: money.format`.
    assert heads(code) == [
        "src/view.jsx: Price, lines 3-5 of 7", "lib/money.js: format, lines 3-5 of 5",
    ]  # fmt: skip
    assert '4|   return <span className="price">{format(value)}</span>;' in code


def test_a_frame_in_the_source_comes_first_and_is_shown_as_its_function(tmp_path):
    ws = write(tmp_path, SHOP)
    stack = (
        "TypeError: Cannot read properties of undefined (reading 'price')\n"
        "    at total (/workspace/lib/cart.js:5:61)\n"
        "    at TestContext.<anonymous> (/workspace/test/legacy.test.js:7:22)\n"
        "    at Test.runInAsyncScope (node:async_hooks:206:9)"
    )
    run = run_of([failed("test/legacy.test.js::totals every item", stack)])
    assert heads(implicated_code(run, workspace=ws, paths=POLICY).text) == [
        "lib/cart.js: total, lines 3-7 of 13", "lib/money.js: round, lines 1-1 of 5",
    ]  # fmt: skip


def test_the_real_runners_projects(tmp_path):
    vitest = project("vitest", tmp_path / "v")
    code = implicated_code(run_of(xml_failures("vitest.junit.xml")), workspace=vitest, paths=POLICY)
    # Range.clamp threw (its class shown whole, first); `mean` through src/stats/index.ts, and
    # the `sum` it calls.
    assert heads(code.text) == [
        "src/stats/range.ts: Range, lines 1-12 of 12", "src/stats/mean.ts: mean, lines 3-6 of 6",
        "src/sum.ts: sum, lines 1-1 of 1",
    ]  # fmt: skip
    jest = project("jest", tmp_path / "j")
    code = implicated_code(run_of(xml_failures("jest.junit.xml")), workspace=jest, paths=POLICY)
    # `module.exports = function words`, and slugify through index.js's destructured require.
    assert heads(code.text) == [
        "lib/util/words.js: words, lines 1-3 of 3", "lib/util/slug.js: slugify, lines 2-5 of 6",
    ]  # fmt: skip
    ts_jest = project("ts-jest", tmp_path / "t")
    run = run_of(text_failures("ts-jest.txt", r"^  ● (.*)$"))
    code = implicated_code(run, workspace=ts_jest, paths=POLICY)
    assert heads(code.text) == ["src/parse.ts: parse, lines 6-9 of 9"]  # `export default`
    cjs = project("node-test-cjs", tmp_path / "c")
    run = run_of(xml_failures("node-test-cjs.junit.xml"), output=report("node-test-cjs.tap.txt"))
    code = implicated_code(run, workspace=cjs, paths=POLICY)
    # A module that threw as it loaded: its top-level code around the line.
    assert heads(code.text)[0] == "lib/defaults.js: top-level code, lines 1-7 of 7"
    assert "5| const level = levels.find((l) => l.startsWith('warn')).toUpperCase();" in code.text


def test_tests_dependencies_refused_and_linked_files_are_never_shown(tmp_path):
    ws = write(tmp_path / "ws", SHOP)
    (ws / "node_modules" / "dep").mkdir(parents=True)
    (ws / "node_modules" / "dep" / "index.js").write_text("module.exports = () => 1;\n")
    (tmp_path / "secret.js").write_text("exports.format = function () { return 'key'; };\n")
    (ws / "lib" / "money.js").unlink()
    (ws / "lib" / "money.js").symlink_to(tmp_path / "secret.js")
    stack = (
        "    at /workspace/node_modules/dep/index.js:1:24\n"
        "    at helper (/workspace/test/shop.test.ts:3:1)\n"
        " ❯ test/shop.test.ts:8:28"
    )
    run = run_of([failed("test/shop.test.ts::shop > formats two decimals", stack)])
    assert implicated_code(run, workspace=ws, paths=POLICY).text == ""
    hidden = language_paths().with_overrides(read_deny=["test/**"])
    assert implicated_code(run, workspace=write(tmp_path / "b", SHOP), paths=hidden).text == ""


def test_the_parse_is_bounded_in_size_and_time(tmp_path):
    big = b"const a = [" + b"1, " * 200_000 + b"];\n"
    assert parse_bytes("a.js", big, timeout_s=0.0) is None  # stopped by its deadline
    assert parse_bytes("a.js", big) is not None
    ws = write(tmp_path, SHOP)
    small = len(SHOP["lib/money.js"])
    assert len(SHOP["lib/cart.js"]) > small
    modules = Modules(workspace=ws, deadline=float("inf"), max_bytes=small)
    assert modules.source("lib/cart.js") is None and modules.source("lib/money.js") is not None
    late = Modules(workspace=ws, deadline=0.0)
    assert late.source("lib/money.js") is None
    src = parse_bytes("a.js", b"import x from './a'\nconst y = require(`./b`);\n")
    assert src is not None and [i.specifier for i in imports(src)] == ["./a", "./b"]
